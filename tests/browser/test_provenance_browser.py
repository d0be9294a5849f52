"""Source provenance in a real JupyterLab: a ``%%reactant_jit`` cell's explorer marks each IR line
with the cell line its op came from (hover: file, line, column), its Source list picks a line and
highlights that line's ops in the IR and the diff, and a click on a gutter mark picks its line."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.browser.conftest import open_in_lab, run_all_cells, wait_for_kernel_idle, write_notebook
from tests.browser.test_explorer_ux_browser import _shoot, _theme

NAME = "provenance.ipynb"
# Cell lines as JupyterLab numbers them: 1 is the %% line.
CELL = """%%reactant_jit
def f(x, y):
    a = jnp.sin(x)
    b = a * y + 1.0
    return jnp.sum(b)

f(jnp.ones(4), jnp.ones(4))"""
SIN_LINE, FMA_LINE = 3, 4


@pytest.fixture
def notebook(jupyterlab_server: Any, lab_page: Any) -> Iterator[str]:
    write_notebook(Path(jupyterlab_server.root) / NAME,
                   [nbformat.v4.new_code_cell("%load_ext reactant_lab\nimport jax.numpy as jnp"),
                    nbformat.v4.new_code_cell(CELL)])
    try:
        yield NAME
    finally:
        for session in jupyterlab_server.api("api/sessions"):
            if session.get("path", "").endswith(NAME):
                _delete(f"{jupyterlab_server.url}/api/sessions/{session['id']}")


def _delete(url: str) -> None:
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=30).close()
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise


def test_ir_lines_link_to_the_cell_and_a_source_line_highlights_its_ops(
        lab_page: Any, jupyterlab_server: Any, notebook: str, artifacts_dir: Path):
    page = lab_page
    open_in_lab(page, jupyterlab_server, notebook)
    wait_for_kernel_idle(page)
    run_all_cells(page, timeout=240_000)
    explorer = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".rl-explorer").first
    explorer.wait_for(timeout=120_000)

    # Stage 0 (the traced module) in the IR tab.
    explorer.locator(".rl-stage-table tbody tr").first.click()
    explorer.locator(".rl-tab-ir").click()
    ir = explorer.locator(".rl-text-mlir")
    sine = ir.locator(".rl-code .r", has_text="stablehlo.sine").first
    sine.wait_for(timeout=30_000)
    mark = sine.locator(".rl-src")
    assert mark.inner_text().strip() == f"py {SIN_LINE}"
    title = sine.get_attribute("title") or ""
    assert re.search(rf"^from Cell In\[\d+\]:{SIN_LINE}:\d+", title), title
    sine.hover()

    # The Source list: the cell's lines with their numbers; pick the line of `b = a * y + 1.0`.
    source = explorer.locator(".rl-source")
    line = source.locator(f'.rl-source-line[data-line="{FMA_LINE}"]')
    assert "b = a * y + 1.0" in line.inner_text()
    assert source.locator('.rl-source-line[data-line="2"]').inner_text().strip().startswith("2")
    line.click()
    hits = ir.locator(".rl-code .r.rl-src-hit")
    hits.first.wait_for(timeout=10_000)
    ops = " ".join(hits.all_inner_texts())
    assert "stablehlo.multiply" in ops and "stablehlo.add" in ops
    assert "stablehlo.sine" not in ops
    summary = source.locator(".rl-source-summary").inner_text()
    assert re.match(rf"line {FMA_LINE}: \d+ ops? in stage 0 \(traced\), \d+ in stage \d+", summary), summary
    assert "ops per stage: 0: " in source.locator(".rl-source-stages").inner_text()
    _shoot(explorer, "provenance-source-light")
    _theme(page, dark=True)
    _shoot(explorer, "provenance-source-dark")
    _theme(page, dark=False)

    # A click on a gutter mark picks its line.
    sine.locator(".rl-src").click()
    picked = source.locator(".rl-source-picked")
    picked.wait_for(timeout=10_000)
    assert picked.get_attribute("data-line") == str(SIN_LINE)
    assert "stablehlo.sine" in " ".join(ir.locator(".rl-code .r.rl-src-hit").all_inner_texts())

    # The diff of the next stage: marks and hover on both sides; the Source list is there too,
    # and the picked line's ops are marked on both sides.
    explorer.locator(".rl-stage-table tbody tr").nth(1).click()
    explorer.locator(".rl-tab-diff").click()
    diff = explorer.locator(".rl-diff")
    diff.locator(".rl-src").first.wait_for(timeout=30_000)
    explorer.locator(f'.rl-source .rl-source-line[data-line="{FMA_LINE}"]').click()
    cells = diff.locator(".rl-src-hit", has_text="stablehlo.add")
    cells.first.wait_for(timeout=10_000)
    assert re.search(rf"Cell In\[\d+\]:{FMA_LINE}:", cells.first.get_attribute("title") or "")
    _shoot(explorer, "provenance-diff-light")
