"""The explorer, round 3, in a real JupyterLab (Chromium), light and dark, live and saved:

- a side-by-side diff at 1,400 px never hides the op name, the result names or a changed token
  (the stage list narrows beside it; a long changed line wraps, or elides only unchanged runs);
- a module past the graph cap shows its summary in the theme's colours, says its note once, in
  the explorer's words, and offers "draw anyway" and "draw a slice" (live: from the kernel); two
  stages past the cap are compared live from the models and graph diff the kernel sends;
- a cell ending with ``ex`` after ``rl.explore(..., verify=True)`` shows the live explorer; the
  left-out patterns are one footnote whose ⚠ marks say where to read it, in the live explorer's
  words ("Reactant exact"); XLA's cost figures have names and an order; a bisection with nothing
  regressed says "no regression"; a saved notebook reopened with a new kernel logs no "widget
  model not found".

Screenshots go to test-artifacts/screenshots (docs/screenshots with REACTANT_LAB_SCREENSHOTS=1).
"""

from __future__ import annotations

import base64
import inspect
import json
import re
from typing import Any

import nbformat
import numpy as np
import pytest
from playwright.sync_api import expect

import reactant_lab as rl
from reactant_lab.analysis.graph_model import MODEL_MAX_OPS
from reactant_lab.explore import ExploreOptions, build_from_text
from reactant_lab.notebook.display import explorer_payload
from reactant_lab.render.payload import notebook_payload
from tests.browser.conftest import (
    keep_failure,
    live_explorer,
    open_in_lab,
    run_all_cells,
    run_notebook,
    save_and_reopen,
    wait_for_kernel_idle,
    write_notebook,
)
from tests.browser.test_explorer_ux_browser import _saved, _shoot, _theme

pytestmark = pytest.mark.skipif(not rl.enzyme_available(), reason="needs enzyme-ad")

WIDTH = 1_400
"""The issue's widget: 1,400 px of browser window."""

JACOBI = '''\
def jacobi_2d(steps, A, B):
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:]
                               + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:]
                               + B[2:, 1:-1] + B[:-2, 1:-1])
'''


def jacobi_2d(steps, A, B):
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:]
                               + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:]
                               + B[2:, 1:-1] + B[:-2, 1:-1])


def big_module(n: int) -> str:
    """A chain of ``n`` adds (past the explorer's graph cap) and, beside it, a result of one op."""
    body = "".join(f"    %{i} = stablehlo.add %{i - 1}, %arg0 : tensor<4xf32>\n"
                   for i in range(1, n))
    return ("module {\n  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, "
            "tensor<4xf32>) {\n    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>\n" + body
            + "    %s = stablehlo.sine %arg0 : tensor<4xf32>\n"
            + f"    return %{n - 1}, %s : tensor<4xf32>, tensor<4xf32>\n  }}\n}}\n")


BIG_OPS = MODEL_MAX_OPS + 20


@pytest.fixture(scope="module")
def stencil_payload() -> dict:
    rng = np.random.default_rng(7)
    ex = rl.explore(jacobi_2d, 20, rng.random((20, 20)), rng.random((20, 20)), verify=True)
    return json.loads(json.dumps(notebook_payload(explorer_payload(ex))))


@pytest.fixture(scope="module")
def big_payload() -> dict:
    ex = build_from_text(big_module(BIG_OPS), ExploreOptions(optimize="none"))
    return json.loads(json.dumps(notebook_payload(explorer_payload(ex))))


def _console(page: Any) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return errors


@pytest.fixture
def page(browser, jupyterlab_server, artifacts_dir, request):
    """A page 1,400 px wide (the issue's widget), page errors and console errors collected."""
    context = browser.new_context(viewport={"width": WIDTH, "height": 1000})
    p = context.new_page()
    p.errors = []
    p.on("pageerror", lambda e: p.errors.append(str(e)))
    p.console_errors = _console(p)
    try:
        yield p
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            keep_failure(p, jupyterlab_server, artifacts_dir, request.node.name)
        context.close(keep=report is not None and report.passed)
        jupyterlab_server.shutdown_kernels()


def _inside(inner: dict, outer: dict) -> bool:
    return (inner["x"] >= outer["x"] - 1 and inner["x"] + inner["width"] <= outer["x"]
            + outer["width"] + 1 and inner["y"] >= outer["y"] - 1
            and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 1)


def check_while_line(explorer: Any) -> None:
    """The rolled loop's line, changed by the pass: on both sides its result names and op name
    show, and every changed token is inside its cell (not cut by the column)."""
    row = explorer.locator(".rl-diff .r", has=explorer.page.locator(".cd.add",
                                                                    has_text="stablehlo.while"))
    expect(row).to_have_count(1)
    for side in ("del", "add"):
        cell = row.locator(f".cd.{side}")
        text = re.sub(r"\s+", " ", cell.inner_text())  # rows joined
        assert re.search(r"%0:\d+ = stablehlo\.while\(", text), text
        box = cell.bounding_box()
        marks = cell.locator(".x")
        assert marks.count() > 0
        for k in range(marks.count()):
            mark = marks.nth(k).bounding_box()
            assert mark is not None and _inside(mark, box), (side, k, marks.nth(k).inner_text())
    # Every changed row in view: its changed tokens are inside their cells.
    rows = explorer.locator(".rl-diff .rl-vrows .r")
    for r in range(rows.count()):
        for cell in (rows.nth(r).locator(".cd.del"), rows.nth(r).locator(".cd.add")):
            if cell.count() and cell.locator(".x").count():
                box = cell.bounding_box()
                for k in range(cell.locator(".x").count()):
                    assert _inside(cell.locator(".x").nth(k).bounding_box(), box)


def test_a_side_by_side_diff_at_1400_px_shows_every_op_and_change(jupyterlab_server, page,
                                                                  stencil_payload):
    explorer = _saved(jupyterlab_server, page, "stencil.ipynb", stencil_payload, 60_000)
    _theme(page, dark=False)
    expect(explorer.locator(".rl-diff-summary")).to_contain_text("stage 0 → stage 1")
    # The stage list narrows beside the side-by-side diff, and opens on request.
    expect(explorer.locator(".rl-body.rl-narrow-stages")).to_have_count(1)
    assert explorer.locator(".rl-stage-table th", has_text="time").is_hidden()
    check_while_line(explorer)
    wrapped = explorer.locator(".rl-diff .cd.rl-wrapped")
    assert wrapped.count() > 0  # long changed lines wrap rather than hide their changes
    _shoot(explorer.locator(".rl-body"), "diff-wrap-light")
    explorer.locator(".rl-stage-columns").click()
    expect(explorer.locator(".rl-body.rl-narrow-stages")).to_have_count(0)
    expect(explorer.locator(".rl-stage-table th", has_text="time")).to_be_visible()
    check_while_line(explorer)  # narrower columns: still whole on both sides
    explorer.locator(".rl-stage-columns").click()
    expect(explorer.locator(".rl-body.rl-narrow-stages")).to_have_count(1)

    # The left-out patterns: one footnote for the three optimize stages, the ⚠ marks name it.
    notes = explorer.locator(".rl-stage-notes")
    expect(notes.locator("li")).to_have_count(1)
    marks = explorer.locator(".rl-stage-table .rl-unavailable")
    assert marks.count() == 3
    assert all("note 1 under the stage list" in marks.nth(k).get_attribute("title")
               for k in range(3))
    notes.locator("summary").click()
    note = notes.locator("li").inner_text()
    assert "exact=True runs them" in note  # saved: the API's words (no checkbox here)
    names = re.findall(r"[a-z_][a-z_0-9]*<\d+>", note)
    assert names and len(names) == len(set(names))
    notes.locator("summary").click()  # closed again

    # XLA's cost figures by name, totals first.
    explorer.locator(".rl-tab-xla").click()
    heads = explorer.locator(".rl-xla-estimate tbody tr td:first-child").all_inner_texts()
    assert heads[0] == "floating-point operations", heads
    assert not any("{}" in h for h in heads), heads
    explorer.locator(".rl-tab-diff").click()

    _theme(page, dark=True)
    check_while_line(explorer)
    _shoot(explorer.locator(".rl-body"), "diff-wrap-dark")
    _theme(page, dark=False)
    assert not page.errors, page.errors


def _summary_pixel(explorer: Any) -> float:
    """The brightness (0-1) of the summary picture's background, drawn as the page shows it."""
    return explorer.locator(".rl-graph-img").evaluate("""img => new Promise(done => {
      const draw = () => {
        const c = document.createElement('canvas');
        c.width = img.naturalWidth; c.height = img.naturalHeight;
        const g = c.getContext('2d'); g.drawImage(img, 0, 0);
        const [r, gr, b] = g.getImageData(2, 2, 1, 1).data;
        done((0.2126 * r + 0.7152 * gr + 0.0722 * b) / 255);
      };
      img.complete && img.naturalWidth ? draw() : img.addEventListener('load', draw);
    })""")


def _check_summary(explorer: Any, saved: bool) -> None:
    """The summary's words: its note once, no API terms, the offer for this case."""
    graph = explorer.locator(".rl-graph")
    expect(graph.locator(".rl-graph-img")).to_be_visible(timeout=30_000)
    text = graph.inner_text()
    assert text.count("each edge counts the ops") == 1, text
    for api in ("max_ops", "result=PATH", "rl.graph_svg"):
        assert api not in text, (api, text)
    src = graph.locator(".rl-graph-img").get_attribute("src")
    picture = base64.b64decode(src.split(",", 1)[1]).decode()
    assert "each edge counts" not in picture  # said beside the picture, not in it too
    assert f"{BIG_OPS + 1:,} ops" in graph.locator(".rl-graph-note").inner_text()
    if saved:
        expect(graph.locator(".rl-graph-summary")).to_contain_text(
            "A live explorer (run the cell again, with its kernel) draws the whole graph")
        assert graph.locator(".rl-draw-anyway").count() == 0
    else:
        expect(graph.locator(".rl-draw-anyway")).to_be_visible()
        expect(graph.locator(".rl-draw-slice")).to_be_visible()


def test_a_module_past_the_graph_cap_saved_in_light_and_dark(jupyterlab_server, page,
                                                             big_payload):
    assert all("model" not in g for g in big_payload["graphs"])
    explorer = _saved(jupyterlab_server, page, "big.ipynb", big_payload, 60_000)
    _theme(page, dark=False)
    explorer.locator(".rl-tab-graph").click()
    _check_summary(explorer, saved=True)
    assert _summary_pixel(explorer) > 0.8
    _shoot(explorer, "graph-summary-light")
    _theme(page, dark=True)
    explorer.locator(".rl-tab-ir").click()
    explorer.locator(".rl-tab-graph").click()
    _check_summary(explorer, saved=True)
    assert _summary_pixel(explorer) < 0.2  # the theme's background, not a white picture
    _shoot(explorer, "graph-summary-dark")
    _theme(page, dark=False)
    assert not page.errors, page.errors


LIVE_BIG = (
    "from reactant_lab.explore import ExploreOptions, build_from_text\n"
    "from reactant_lab.notebook.widget import ExplorerWidget\n\n"
    + inspect.getsource(big_module)
    + f'\nExplorerWidget(build_from_text(big_module({BIG_OPS}), ExploreOptions(optimize="none")))')


def test_a_module_past_the_graph_cap_live_draws_a_slice_and_everything(jupyterlab_server, page):
    run_notebook(page, jupyterlab_server, "big_live.ipynb", LIVE_BIG)
    explorer = live_explorer(page, jupyterlab_server)
    _theme(page, dark=True)
    explorer.locator(".rl-tab-graph").click()
    _check_summary(explorer, saved=False)
    assert _summary_pixel(explorer) < 0.2
    _shoot(explorer, "graph-summary-live-dark")
    # One result's slice, from the model the kernel sends: the one op it depends on.
    explorer.locator(".rl-slice-result").select_option("result#1")  # names of module text
    explorer.locator(".rl-draw-slice").click()
    expect(explorer.locator(".rl-gsvg .rl-gn.k-op")).to_have_count(1, timeout=60_000)
    expect(explorer.locator(".rl-gsvg .rl-gn.k-op")).to_contain_text("%s = sine")
    expect(explorer.locator(".rl-graph-note")).to_contain_text("Showing only the producers")
    # Everything: back to the whole graph, over the box cap: draw anyway.
    explorer.locator(".rl-unslice").click()
    expect(explorer.locator(".rl-draw-anyway")).to_be_visible()
    explorer.locator(".rl-draw-anyway").click()
    expect(explorer.locator(".rl-gsvg .rl-gn").first).to_be_visible(timeout=120_000)
    assert explorer.locator(".rl-gsvg .rl-gn.k-op").count() > MODEL_MAX_OPS
    _theme(page, dark=False)
    assert not page.errors, page.errors


def two_stage_module(n: int) -> str:
    """``big_module`` with an op no result uses, which canonicalize drops: two stages past the
    graph cap, one box apart."""
    return big_module(n).replace(
        "    %s = stablehlo.sine", "    %dead = stablehlo.cosine %arg0 : tensor<4xf32>\n"
                                  "    %s = stablehlo.sine")


LIVE_TWO = (
    "from reactant_lab.explore import ExploreOptions, build_from_text\n"
    "from reactant_lab.notebook.widget import ExplorerWidget\n\n"
    + inspect.getsource(big_module) + "\n" + inspect.getsource(two_stage_module)
    + f'\nExplorerWidget(build_from_text(two_stage_module({BIG_OPS}), '
      'ExploreOptions(optimize="canonicalize")))')


def test_a_fetched_model_and_a_graph_diff_past_the_cap_live_and_saved(jupyterlab_server, page):
    """Both stages past the graph cap: live, a result's slice from the model the kernel sends,
    then "changes from" the stage before, whose model and graph diff the kernel sends too, the
    removed box found and drawn with its slice; saved, the summaries say what a live explorer
    draws."""
    run_notebook(page, jupyterlab_server, "big_diff.ipynb", LIVE_TWO)
    explorer = live_explorer(page, jupyterlab_server)
    _theme(page, dark=False)
    expect(explorer.locator(".rl-stage-table tr.selected")).to_have_attribute("data-stage", "1")
    explorer.locator(".rl-tab-graph").click()
    _check_summary(explorer, saved=False)
    # A fetched model: the slice of result#1, the sine
    explorer.locator(".rl-slice-result").select_option("result#1")
    explorer.locator(".rl-draw-slice").click()
    expect(explorer.locator(".rl-gsvg .rl-gn.k-op")).to_contain_text("= sine", timeout=60_000)
    # ... and "changes from" the stage before: the kernel sends stage 0's model and the diff
    explorer.locator(".rl-gdiff-toggle input").check()
    caption = explorer.locator(".rl-graph-note")
    expect(caption).to_contain_text("Changes from stage 0 to stage 1, shared boxes drawn once: "
                                    "0 added, 1 removed, 0 changed.", timeout=120_000)
    expect(explorer.locator(".rl-gdiff-legend")).to_contain_text("removed (only in stage 0): 1")
    expect(explorer.locator(".rl-graph-cap")).to_contain_text("over the default cap")
    explorer.locator(".rl-graph-search").fill("cosine")
    panel = explorer.locator(".rl-gpanel")
    expect(panel.locator(".rl-gp-status")).to_have_text("removed: in stage 0, not in stage 1")
    panel.locator(".rl-slice-only").click()
    removed = explorer.locator(".rl-gsvg .rl-gn.d-removed")
    expect(removed).to_have_count(1)
    expect(removed).to_contain_text("= cosine")
    _shoot(explorer.locator(".rl-graph"), "graph-diff-fetched-live-light")
    assert not page.errors, page.errors

    # Saved and reopened with a new kernel: the summaries, and why no changes are drawn.
    saved = save_and_reopen(page, jupyterlab_server)
    saved.locator(".rl-tab-graph").click()
    _check_summary(saved, saved=True)
    expect(saved.locator(".rl-graph-summary")).to_contain_text(
        "draws the whole graph, one result’s slice, or the changes from another stage, on "
        "request")
    expect(saved.locator(".rl-gdiff-toggle")).to_be_hidden()
    assert not page.errors, page.errors


EX_CELLS = [
    "%load_ext reactant_lab\nimport numpy as np\nimport reactant_lab as rl\n"
    "rng = np.random.default_rng(3)\nA, B = rng.random((20, 20)), rng.random((20, 20))",
    JACOBI + "\nex = rl.explore(jacobi_2d, 20, A, B, verify=True)\nex",
    "%%reactant_jit\ndef sine(v):\n    return np.sin(v) * 2 + 1\n\nsine(A[0])",
]


def test_ex_shows_the_live_explorer_and_a_saved_notebook_logs_no_missing_models(
        jupyterlab_server, page):
    path = write_notebook(jupyterlab_server.root / "ex.ipynb",
                          [nbformat.v4.new_code_cell(c) for c in EX_CELLS])
    open_in_lab(page, jupyterlab_server, path.name)
    wait_for_kernel_idle(page)
    run_all_cells(page)
    live = page.locator(".rl-explorer.rl-live")
    expect(live).to_have_count(2, timeout=120_000)
    explorer = live.first
    # The cell ending with `ex`: the explorer, verified, with its columns; not a static table.
    expect(explorer.locator(".rl-verify-note")).to_contain_text("Verified against NumPy eager")
    assert page.locator(".jp-OutputArea-output table.stages").count() == 0
    check_while_line(explorer)
    _theme(page, dark=False)
    _shoot(explorer.locator(".rl-body"), "diff-wrap-live-light")
    # The footnote in the live explorer's words: its checkbox, not the API's argument.
    notes = explorer.locator(".rl-stage-notes")
    notes.locator("summary").click()
    note = notes.locator("li").inner_text()
    assert "ticking “Reactant exact” above runs them" in note and "exact=True" not in note
    _shoot(explorer.locator(".rl-stages"), "stage-notes-light")

    # Find culprit on a correct program: no regression, said as such.
    sine = live.nth(1)
    sine.locator(".rl-metric").select_option("result")
    sine.locator(".rl-bisect-btn").click()
    panel = sine.locator(".rl-bisect")
    expect(panel).to_contain_text("No regression in the result", timeout=180_000)
    assert "No single culprit" not in panel.inner_text()
    assert "exact=True" not in panel.inner_text()
    expect(sine.locator(".rl-status")).to_contain_text("no regression")
    _theme(page, dark=True)
    _shoot(panel, "bisect-no-regression-dark")
    notes.locator("summary").scroll_into_view_if_needed()
    _shoot(explorer.locator(".rl-stages"), "stage-notes-dark")
    _theme(page, dark=False)
    assert not page.errors, page.errors

    # Saved, reopened with a new kernel: the saved explorers show, and nothing asks the widget
    # manager for models the new kernel does not have.
    page.keyboard.press("Control+s")
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)
    jupyterlab_server.shutdown_kernels()
    page.console_errors.clear()
    page.reload()
    wait_for_kernel_idle(page)
    expect(page.locator(".rl-explorer.rl-saved")).to_have_count(2, timeout=60_000)
    page.wait_for_timeout(4_000)  # past the widget manager's own wait for a model
    missing = [e for e in page.console_errors if "model not found" in e]
    assert not missing, missing
    assert not page.errors, page.errors
