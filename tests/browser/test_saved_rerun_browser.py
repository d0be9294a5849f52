"""Saved = on screen, in a real JupyterLab: a ``%%reactant_jit`` cell's explorer re-run from the
widget with another preset, then saved, leaves the re-run in the .ipynb (its payload, its HTML
fallback and its text summary), not the cell's first run; reopened without the kernel, the
saved explorer shows the re-run."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import nbformat
from playwright.sync_api import expect

from reactant_lab.render.payload import MIME_TYPE
from tests.browser.conftest import (
    live_explorer,
    open_in_lab,
    run_all_cells,
    wait_for_kernel_idle,
    write_notebook,
)

SETUP = "%load_ext reactant_lab\nimport numpy as np"
CELL = "%%reactant_jit\ndef f(v):\n    return np.cos(v) * 2 + 1\n\nf(np.linspace(0, 1, 8))"


def explorer_outputs(path: Path, within: float = 30.0) -> list[dict[str, Any]]:
    """The data of each explorer output the notebook file holds. Jupyter's save writes the file
    in place (its atomic writing keeps a backup, not the readers out): a read in the middle of
    one found it empty, so an unreadable file is read again, for up to ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
            break
        except json.JSONDecodeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    return [o["data"] for c in nb["cells"] if c["cell_type"] == "code"
            for o in c.get("outputs", []) if MIME_TYPE in o.get("data", {})]


def joined(value: str | list[str]) -> str:
    """A text of the notebook file (nbformat may store it as a list of lines)."""
    return "".join(value) if isinstance(value, list) else value


def saved_preset(path: Path) -> str | None:
    [data] = explorer_outputs(path)
    return data[MIME_TYPE]["meta"]["optimize"]


def test_a_rerun_before_save_is_what_the_saved_notebook_shows(jupyterlab_server, lab_page,
                                                               artifacts_dir):
    page = lab_page
    path = write_notebook(jupyterlab_server.root / "saved_rerun.ipynb",
                          [nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell(CELL)])
    open_in_lab(page, jupyterlab_server, path.name)
    wait_for_kernel_idle(page)
    run_all_cells(page)
    explorer = live_explorer(page, jupyterlab_server)
    rows = explorer.locator(".rl-stage-table tbody tr")
    expect(rows.nth(9)).to_be_visible()  # the "all" preset's ten stages, then XLA's own
    assert rows.count() > 10

    # Saved right after the run: the cell's own bundle.
    page.keyboard.press("Control+s")
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)
    deadline = time.monotonic() + 30
    while not explorer_outputs(path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert saved_preset(path) == "all"

    # Re-run from the widget with preset none (one stage), then save.
    explorer.locator(".rl-preset").select_option("none")
    explorer.locator(".rl-rerun").click()
    expect(explorer.locator(".rl-status")).to_contain_text("re-ran with preset none")
    expect(rows.first).to_contain_text("traced")  # one MLIR stage, then XLA's own
    expect(rows.nth(1)).to_contain_text("hlo")
    n_rows = rows.count()
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while saved_preset(path) != "none" and time.monotonic() < deadline:
        time.sleep(0.2)
    [data] = explorer_outputs(path)
    payload = data[MIME_TYPE]
    assert payload["meta"]["optimize"] == "none"
    first_xla = payload["xla"]["passes"]["first"]  # XLA's own stages follow the MLIR ones
    assert [s["name"] for s in payload["stages"]][:first_xla] == ["traced"]
    # the HTML fallback and the text summary are the re-run's too; the live view is kept
    html, text = joined(data["text/html"]), joined(data["text/plain"])
    assert "optimize=none" in html and "optimize=all" not in html
    assert "stablehlo" in html and "<script" not in html
    assert "traced" in text and "jit lowering" not in text
    assert "application/vnd.jupyter.widget-view+json" in data
    nbformat.validate(nbformat.read(path, as_version=4))
    page.screenshot(path=str(artifacts_dir / "saved-rerun-live.png"))
    assert not page.errors

    # Reopened once the kernel is gone: the saved explorer shows the re-run.
    jupyterlab_server.shutdown_kernels()
    page.reload()
    wait_for_kernel_idle(page)
    saved = page.locator(".rl-explorer.rl-saved").first
    saved.wait_for(timeout=60_000)
    expect(page.locator(".rl-explorer.rl-live")).to_have_count(0)
    expect(saved.locator(".rl-stage-table tbody tr")).to_have_count(n_rows)
    page.screenshot(path=str(artifacts_dir / "saved-rerun-reopened.png"))
