"""The JupyterLab extension in a real JupyterLab: it is installed and enabled, a notebook with saved
explorer outputs shows the explorer with no kernel at all, and MLIR is highlighted in .mlir
files, ```mlir Markdown blocks and %%reactant_mlir cells."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest
from playwright.sync_api import expect

import reactant_lab as rl
from reactant_lab.examples import mlp
from reactant_lab.notebook.widget import ExplorerWidget
from reactant_lab.render.payload import MIME_TYPE
from tests.browser.conftest import choose_no_kernel, open_in_lab, write_notebook
from tests.conftest import child_env

MLIR = """module {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"""
SPAN_COLORS = """(root) => Array.from(root.querySelectorAll('.cm-line span, code span'))
  .map(s => [s.textContent, getComputedStyle(s).color])"""


def test_extension_is_installed_and_enabled():
    out = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"],
                         capture_output=True, text=True, timeout=120, check=True, env=child_env())
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)
    line = next((ln for ln in text.splitlines() if "reactant-lab" in ln), "")
    assert re.search(r"reactant-lab v\S+ enabled OK", line), text


@pytest.fixture(scope="module")
def saved_bundle() -> dict:
    """What a live cell saves: the widget view merged with the static explorer bundle."""
    rng = np.random.default_rng()
    params = {"w1": rng.standard_normal((16, 32), np.float32),
              "b1": rng.standard_normal(32, np.float32),
              "w2": rng.standard_normal((32, 32), np.float32),
              "b2": rng.standard_normal(32, np.float32),
              "w3": rng.standard_normal((32, 4), np.float32),
              "b3": rng.standard_normal(4, np.float32)}
    ex = rl.explore(mlp, params, rng.standard_normal((8, 16), np.float32))
    data, _ = ExplorerWidget(ex)._repr_mimebundle_()
    return data


def test_saved_explorer_opens_without_a_kernel(jupyterlab_server, lab_page, saved_bundle,
                                               artifacts_dir):
    page = lab_page
    payload = saved_bundle[MIME_TYPE]
    future = {MIME_TYPE: {**payload, "schema_version": 99}, "text/plain": "from the future"}
    write_notebook(jupyterlab_server.root / "saved.ipynb", [
        nbformat.v4.new_code_cell("explore(mlp)", outputs=[
            nbformat.v4.new_output("display_data", data=saved_bundle)]),
        nbformat.v4.new_code_cell("explore(other)", outputs=[
            nbformat.v4.new_output("display_data", data=future)]),
    ], kernel=False)
    open_in_lab(page, jupyterlab_server, "saved.ipynb")
    choose_no_kernel(page)
    explorer = page.locator(".rl-explorer.rl-saved").first
    explorer.wait_for()
    assert jupyterlab_server.kernels() == []
    rows = explorer.locator(".rl-stage-table tbody tr")
    assert rows.count() == len(payload["stages"])
    summary = explorer.locator(".rl-diff-summary")
    first = next(d for d in payload["diffs"] if d["after"] == 1)
    assert summary.inner_text().startswith(f"stage 0 → stage 1: +{first['added']} added")
    assert explorer.locator(".rl-diff .cd.add").count() > 0
    assert explorer.locator(".rl-diff .cd.del").count() > 0

    explorer.locator('.rl-stage-table tr[data-stage="2"]').click()
    assert "stage 1 → stage 2: no structural change" in summary.inner_text()
    explorer.locator(".rl-base").select_option(value="0")
    assert summary.inner_text().startswith(f"stage 0 → stage 2: +{first['added']} added")
    explorer.locator(".rl-layout").select_option("unified")
    assert explorer.locator(".rl-diff .mk", has_text="+").count() > 0

    explorer.locator(".rl-hide-unchanged input").check()
    changed = {s["index"] for s in payload["stages"] if s["changed"]}
    expect(rows).to_have_count(len(changed | {0}))
    shown = [int(r.get_attribute("data-stage")) for r in rows.all()]
    assert shown == sorted({0} | changed)
    # The hidden stage 2 gives way to the listed stage whose module it kept.
    kept = max((i for i in changed if 0 < i <= 2), default=0)
    assert explorer.locator('.rl-stage-table tr[aria-selected="true"]').get_attribute(
        "data-stage") == str(kept)

    explorer.locator(".rl-tab-graph").click()
    expect(explorer.locator(".rl-gsvg .rl-gn.k-result").first).to_be_visible()
    assert explorer.locator(".rl-slice, .rl-hotspot").count() == 0  # no kernel asked
    explorer.locator(".rl-tab-timing").click()
    assert "XLA compile" in explorer.locator(".rl-timing").inner_text()

    refused = page.locator(".rl-problem").nth(1)
    assert "schema version 99" in refused.inner_text()
    page.screenshot(path=str(artifacts_dir / "saved-explorer.png"))
    assert not page.errors


def _colors(page, selector: str, ready=lambda colors: "add" in colors) -> dict[str, str]:
    """Token text -> colour of the highlighted spans under ``selector``, once ``ready`` holds
    (editors highlight asynchronously); the last reading when it never does."""
    deadline = time.monotonic() + 20
    while True:
        colors = dict(page.locator(selector).first.evaluate(SPAN_COLORS))
        if ready(colors) or time.monotonic() > deadline:
            return colors
        time.sleep(0.2)


def test_mlir_is_highlighted_in_files_markdown_and_magic_cells(jupyterlab_server, lab_page):
    page = lab_page
    (jupyterlab_server.root / "ops.mlir").write_text(MLIR + "\n")
    open_in_lab(page, jupyterlab_server, "ops.mlir")
    editor = page.locator(".jp-FileEditor .cm-content")
    editor.wait_for()
    file_colors = _colors(page, ".jp-FileEditor .cm-content")
    plain = editor.evaluate("e => getComputedStyle(e.querySelector('.cm-line')).color")
    for token in ("add", "stablehlo.", "%0", "tensor<4xf32>", "@main"):
        assert file_colors[token] != plain, token
    # Editable, and what is typed is highlighted too.
    page.locator(".jp-FileEditor .cm-line", has_text="return").click()
    page.keyboard.press("End")
    page.keyboard.type("\n%9 = stablehlo.multiply %0, %0 : tensor<4xf32>")
    typed = _colors(page, ".jp-FileEditor .cm-content", lambda c: "multiply" in c)
    assert typed.get("multiply") == file_colors["add"]
    assert page.locator(".lm-TabBar-tab.jp-mod-dirty", has_text="ops.mlir").count() == 1

    write_notebook(jupyterlab_server.root / "mlir.ipynb", [
        nbformat.v4.new_markdown_cell(f"IR:\n\n```mlir\n{MLIR}\n```"),
        nbformat.v4.new_code_cell(f"%%reactant_mlir canonicalize\n{MLIR}"),
        nbformat.v4.new_code_cell(MLIR),
    ])
    open_in_lab(page, jupyterlab_server, "mlir.ipynb")
    page.locator(".jp-RenderedMarkdown code span").first.wait_for()
    markdown = _colors(page, ".jp-RenderedMarkdown code")
    assert markdown["add"] == file_colors["add"]
    magic = _colors(page, ".jp-CodeCell >> nth=0")
    python = _colors(page, ".jp-CodeCell >> nth=1")
    assert magic["add"] == file_colors["add"] and magic["tensor<4xf32>"] == file_colors["tensor<4xf32>"]
    assert python["add"] != file_colors["add"]
    # Removing the magic line gives the cell back the notebook's language.
    page.locator(".jp-CodeCell >> nth=0").locator(".cm-line").first.click()
    page.keyboard.press("Home")
    page.keyboard.press("Shift+End")
    page.keyboard.press("Delete")
    back = _colors(page, ".jp-CodeCell >> nth=0", lambda c: c.get("add") == python["add"])
    assert back.get("add") == python["add"]
    assert not page.errors


@pytest.mark.parametrize("name", ["01_quickstart.ipynb", "02_numpy_kernels.ipynb"])
def test_committed_notebook_renders_its_explorers_without_a_kernel(jupyterlab_server, lab_page,
                                                                   artifacts_dir, name):
    """A notebook from notebooks/, as committed (outputs saved by a real run), opened with no
    kernel: every saved explorer renders from its payload."""
    source = Path(__file__).resolve().parents[2] / "notebooks" / name
    nb = nbformat.read(source, as_version=4)
    saved = [o["data"][MIME_TYPE] for c in nb.cells if c.cell_type == "code"
             for o in c.get("outputs", []) if MIME_TYPE in o.get("data", {})]
    assert saved, f"{name} has no saved explorer"
    nb.metadata.pop("kernelspec", None)  # so JupyterLab asks, and "No Kernel" is the answer
    nb.metadata.pop("language_info", None)
    nbformat.write(nb, jupyterlab_server.root / name)
    page = lab_page
    open_in_lab(page, jupyterlab_server, name)
    choose_no_kernel(page)
    explorers = page.locator(".rl-explorer.rl-saved")
    explorers.nth(len(saved) - 1).wait_for(timeout=60_000)
    assert explorers.count() == len(saved)
    assert jupyterlab_server.kernels() == []
    for i, payload in enumerate(saved):
        explorer = explorers.nth(i)
        explorer.scroll_into_view_if_needed()
        rows = explorer.locator(".rl-stage-table tbody tr")
        assert rows.count() == len(payload["stages"])
        assert payload["meta"]["function"] in explorer.inner_text()
    page.screenshot(path=str(artifacts_dir / f"committed-{name}.png"))
    assert not page.errors
