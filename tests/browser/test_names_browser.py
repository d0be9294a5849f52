"""Python names and the graph diff in a real JupyterLab (Chromium), light and dark. A saved NumPy
kernel ``heat(A, B, steps)`` whose loop carries ``t``: the signature pane, the graph's boxes and
the loop's header name A, B, t and steps; the IR names ``%arg0`` and the loop's block arguments as
hovers; "changes from" draws stage 0 and stage 1 as one graph (the inlined call removed, its body
moved into the loop) with a legend, a note where two stages share one graph, and dark-theme
colours. Live, a JAX MLP's ``params['w1']`` and its folded transposes, through the kernel's
widget. Screenshots go to test-artifacts/ (to docs/screenshots/ with
REACTANT_LAB_SCREENSHOTS=1)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from playwright.sync_api import expect

import reactant_lab as rl
from reactant_lab.notebook.display import explorer_payload
from tests.browser.conftest import live_explorer, run_notebook
from tests.browser.test_explorer_ux_browser import _saved, _shoot, _theme


def heat(A, B, steps):
    t = A.copy()
    for _ in range(steps):
        t[1:-1] = t[1:-1] + 0.1 * (t[2:] - 2 * t[1:-1] + t[:-2]) + 0.01 * B[1:-1]
    return t


LOOP_LINE = heat.__code__.co_firstlineno + 2
DARK = {"green": "rgb(86, 211, 100)", "red": "rgb(255, 161, 152)", "amber": "rgb(227, 179, 65)"}
LIGHT = {"green": "rgb(23, 98, 43)", "red": "rgb(168, 16, 27)", "amber": "rgb(122, 77, 0)"}


@pytest.fixture(scope="module")
def heat_payload() -> dict:
    rng = np.random.default_rng()
    ex = rl.explore(heat, rng.random(32), rng.random(32), 12)
    return json.loads(json.dumps(explorer_payload(ex)))


def _stroke(box) -> str:
    return box.locator(".rl-gbox").first.evaluate("b => getComputedStyle(b).stroke")


def test_names_and_the_graph_diff_of_a_saved_numpy_kernel(jupyterlab_server, lab_page,
                                                           heat_payload):
    page = lab_page
    assert heat_payload["graph_diffs"], "the saved payload carries the graph diffs"
    explorer = _saved(jupyterlab_server, page, "names.ipynb", heat_payload)
    expect(explorer.locator(".rl-stage-table tr.selected")).to_have_attribute("data-stage", "1")

    # The signature: names beside paths.
    explorer.locator(".rl-tab-signature").click()
    rows = explorer.locator(".rl-signature tr")
    expect(rows.filter(has_text="args[0]").first).to_contain_text("A")
    expect(rows.filter(has_text="args[1]").first).to_contain_text("B")
    expect(rows.filter(has=page.locator("td", has_text=re.compile("^t$")))).to_have_count(1)
    expect(rows.filter(has_text="steps")).to_contain_text("12")

    # The IR: %arg0 and the loop's block arguments name what they stand for, as hovers.
    explorer.locator(".rl-tab-ir").click()
    arg0 = explorer.locator(".rl-text-mlir .v.rl-named", has_text=re.compile(r"^%arg0$")).first
    expect(arg0).to_have_attribute("title", "A · float64[32] · args[0]")
    carried = explorer.locator(".rl-text-mlir .v.rl-named[title^='t: carried by the loop']")
    expect(carried.first).to_have_attribute(
        "title", f"t: carried by the loop (for _ in range(steps) — line {LOOP_LINE})")

    # The graph: argument and result boxes by name, the loop's header and carried values.
    explorer.locator(".rl-tab-graph").click()
    svg = explorer.locator(".rl-gsvg")
    expect(svg.locator(".rl-gn.k-arg").first).to_contain_text("A")
    expect(svg.locator(".rl-gn.k-arg").nth(1)).to_contain_text("B")
    expect(svg.locator(".rl-gn.k-result")).to_have_text(re.compile(r"^t"))
    loop = svg.locator(".rl-gn.k-region, .rl-gn.k-collapsed").first
    expect(loop).to_contain_text(f"for _ in range(steps) — line {LOOP_LINE}")
    expect(loop).to_contain_text("carries B, (counter), (index), t")
    expect(svg.locator(".rl-gn.k-entry").first).to_contain_text("B, (counter), (index), t")
    assert "i64[], f64[" not in loop.text_content(), "the names, not the types"
    svg.locator(".rl-gn.k-arg").first.click()
    expect(explorer.locator(".rl-gpanel .rl-gp-name")).to_have_text("A")
    expect(explorer.locator(".rl-gpanel .rl-gp-path")).to_have_text("args[0]")
    explorer.locator(".rl-gp-close").click()
    _shoot(explorer, "names-graph-light")

    # The graph diff: stage 1 against stage 0 (the stage before), drawn as one graph.
    explorer.locator(".rl-gdiff-toggle input").check()
    caption = explorer.locator(".rl-graph-note")
    expect(caption).to_contain_text(re.compile(
        r"^Changes from stage 0 to stage 1, shared boxes drawn once: \d+ added, \d+ removed, "
        r"\d+ changed\."))
    legend = explorer.locator(".rl-gdiff-legend")
    expect(legend).to_be_visible()
    expect(legend).to_contain_text("removed (only in stage 0)")
    removed = svg.locator(".rl-gn.d-removed", has_text="call @closed_call")
    expect(removed).to_have_count(1)
    assert svg.locator(".rl-gn.d-changed").count() > 0 and svg.locator(".rl-gn.d-same").count() > 0
    expect(svg.locator(".rl-gn.d-same.k-arg")).to_have_count(2)
    assert svg.locator(".rl-ge.d-removed").count() > 0
    assert _stroke(removed) == LIGHT["red"]
    assert _stroke(svg.locator(".rl-gn.d-changed").first) == LIGHT["amber"]
    removed.click()
    expect(explorer.locator(".rl-gpanel .rl-gp-status")).to_have_text(
        "removed: in stage 0, not in stage 1")
    expect(explorer.locator(".rl-gpanel .rl-gp-ir")).to_contain_text("of stage 0")
    explorer.locator(".rl-gp-close").click()
    _shoot(explorer.locator(".rl-graph"), "graph-diff-light")

    # Compared with a stage of the same structure: said, and the stage drawn alone.
    explorer.locator(".rl-gdiff-base").select_option("2")
    expect(caption).to_contain_text("Stage 2 has the same structure as stage 1: no box changed.")
    expect(legend).to_be_hidden()
    expect(svg.locator(".rl-gn.d-removed")).to_have_count(0)
    explorer.locator(".rl-gdiff-base").select_option("previous")
    expect(removed).to_have_count(1)

    # Dark theme: the marks take the theme's colours; the labels stay legible.
    _theme(page, dark=True)
    try:
        expect(removed).to_have_count(1)
        page.wait_for_function(
            "c => getComputedStyle(document.querySelector('.rl-gn.d-removed .rl-gbox')).stroke === c",
            arg=DARK["red"])
        assert _stroke(svg.locator(".rl-gn.d-changed").first) == DARK["amber"]
        added = svg.locator(".rl-gn.d-added")
        if added.count():
            assert _stroke(added.first) == DARK["green"]
        text = svg.locator(".rl-gn.d-changed .rl-gt").first.evaluate("t => getComputedStyle(t).fill")
        assert text != "rgb(0, 0, 0)", text
        _shoot(explorer.locator(".rl-graph"), "graph-diff-dark")
        explorer.locator(".rl-gdiff-toggle input").uncheck()
        expect(legend).to_be_hidden()
        _shoot(explorer, "names-graph-dark")
    finally:
        _theme(page, dark=False)
    assert not page.errors, page.errors


LIVE_CELL = """\
import numpy as np
import reactant_lab as rl
from reactant_lab.examples import mlp
from reactant_lab.notebook.widget import ExplorerWidget

rng = np.random.default_rng(0)
params = {"w1": rng.standard_normal((16, 32), np.float32), "b1": np.zeros(32, np.float32),
          "w2": rng.standard_normal((32, 32), np.float32), "b2": np.zeros(32, np.float32),
          "w3": rng.standard_normal((32, 4), np.float32), "b3": np.zeros(4, np.float32)}
ExplorerWidget(rl.explore(mlp, params, rng.standard_normal((8, 16), np.float32)))"""


def test_a_live_jax_explorer_names_params_and_diffs_its_graph(jupyterlab_server, lab_page):
    page = lab_page
    run_notebook(page, jupyterlab_server, "names-live.ipynb", LIVE_CELL)
    explorer = live_explorer(page, jupyterlab_server)
    explorer.locator(".rl-tab-graph").click()
    svg = explorer.locator(".rl-gsvg")
    expect(svg.locator(".rl-gn.k-arg", has_text="params['w1']")).to_have_count(1)
    expect(svg.locator(".rl-gn.k-arg", has_text=re.compile(r"^x"))).to_have_count(1)
    explorer.locator(".rl-gdiff-toggle input").check()
    expect(explorer.locator(".rl-graph-note")).to_contain_text("Changes from stage 0 to stage 1")
    # params['w2'].T.T: the transpose pair folds away
    expect(svg.locator(".rl-gn.d-removed", has_text="transpose")).to_have_count(2)
    explorer.locator(".rl-tab-signature").click()
    expect(explorer.locator(".rl-signature tr", has_text="args[0]['w3']")).to_contain_text(
        "params['w3']")
    assert not page.errors, page.errors
