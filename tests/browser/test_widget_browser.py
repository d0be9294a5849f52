"""The live explorer widget in a real JupyterLab: a cell shows it for an MLP; its stage list, diffs,
graph (and one result's slice), timing panel and re-run controls work against the kernel; and the
display path holds: live while the kernel has the widget, the saved explorer once it is gone."""

from __future__ import annotations

import re

import nbformat
from playwright.sync_api import expect

from tests.browser.conftest import (
    live_explorer,
    open_in_lab,
    run_all_cells,
    wait_for_kernel_idle,
    write_notebook,
)

MLP_CELL = """\
import numpy as np
import reactant_lab as rl
from reactant_lab.examples import mlp
from reactant_lab.notebook.widget import ExplorerWidget

rng = np.random.default_rng(0)
params = {"w1": rng.standard_normal((16, 32), np.float32), "b1": np.zeros(32, np.float32),
          "w2": rng.standard_normal((32, 32), np.float32), "b2": np.zeros(32, np.float32),
          "w3": rng.standard_normal((32, 4), np.float32), "b3": np.zeros(4, np.float32)}
ExplorerWidget(rl.explore(mlp, params, rng.standard_normal((8, 16), np.float32)))"""

# Fourteen distinct stages of one module: the saved payload keeps only first-vs-last among its
# pairs, so any other pair is computed by the kernel on request.
MANY_CELL = """\
from reactant_lab.explore import ModuleSource
from reactant_lab.stages import Stage, StageTrace

body = [f"    %{i} = stablehlo.add %{i - 1}, %arg0 : tensor<4xf32>" for i in range(1, 40)]
stages = []
for k in range(14):
    if k:
        body[k] = body[k].replace("add", "multiply")
    text = ("module {\\n  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\\n"
            "    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>\\n" + "\\n".join(body)
            + "\\n    return %39 : tensor<4xf32>\\n  }\\n}\\n")
    stages.append(Stage(index=k, name=f"s{k}", group=f"s{k}", pipeline="p" if k else "",
                        ir=text, seconds=0.001, changed=True,
                        op_counts={"stablehlo.add": 40 - k}))
ExplorerWidget(rl.Exploration(traced=ModuleSource(stages[0].ir), compiled=None, stages=StageTrace(
    traced=None, optimize="custom", granularity="stage", no_nan=False, target="cpu",
    stages=tuple(stages))))"""


def test_live_widget_explores_reruns_and_falls_back_when_the_kernel_is_gone(
        jupyterlab_server, lab_page, artifacts_dir):
    page = lab_page
    write_notebook(jupyterlab_server.root / "live.ipynb",
                   [nbformat.v4.new_code_cell(MLP_CELL), nbformat.v4.new_code_cell(MANY_CELL)])
    open_in_lab(page, jupyterlab_server, "live.ipynb")
    wait_for_kernel_idle(page)
    run_all_cells(page)
    explorer = live_explorer(page, jupyterlab_server)
    rows = explorer.locator(".rl-stage-table tbody tr")
    expect(rows.nth(9)).to_be_visible()  # the "all" preset's ten stages, then XLA's own
    assert rows.count() > 10

    # A diff, then another stage's.
    summary = explorer.locator(".rl-diff-summary")
    expect(summary).to_have_text(re.compile(r"^stage 0 → stage 1: \+\d+ added"))
    assert explorer.locator(".rl-diff .cd.add").count() > 0
    explorer.locator('.rl-stage-table tr[data-stage="3"]').click()
    expect(summary).to_contain_text("stage 2 → stage 3: no structural change")

    # The graph (laid out in the page from the payload's model), and one result's backward
    # slice: any node is clickable, the slice needs no kernel.
    explorer.locator(".rl-tab-graph").click()
    result = explorer.locator(".rl-gsvg .rl-gn.k-result").first
    expect(result).to_be_visible()
    result.click()
    expect(explorer.locator(".rl-gpanel .rl-gp-title")).to_have_text("result")
    explorer.locator(".rl-gpanel .rl-slice-producers").click()
    expect(explorer.locator(".rl-gsvg.rl-sliced")).to_have_count(1)
    assert explorer.locator(".rl-gsvg .rl-gn.in-slice").count() > 1

    explorer.locator(".rl-tab-timing").click()
    timing = explorer.locator(".rl-timing")
    expect(timing).to_contain_text("XLA compile")
    expect(timing).to_contain_text("first call")
    page.screenshot(path=str(artifacts_dir / "live-widget.png"))

    # Re-run with other settings from the widget, without re-running the cell.
    explorer.locator(".rl-preset").select_option("none")
    explorer.locator(".rl-rerun").click()
    expect(rows.first).to_contain_text("traced")  # one MLIR stage, then XLA's own
    expect(rows.nth(1)).to_contain_text("hlo")
    expect(explorer.locator(".rl-status")).to_contain_text("re-ran with preset none")
    explorer.locator(".rl-preset").select_option("all")
    explorer.locator(".rl-granularity").select_option("pass")
    explorer.locator(".rl-rerun").click()
    expect(explorer.locator(".rl-status")).to_contain_text("re-ran with preset all")
    assert rows.count() > 10
    explorer.locator(".rl-pipeline").fill("no-such-pass")
    explorer.locator(".rl-rerun").click()
    status = explorer.locator('.rl-status[data-state="error"]')
    expect(status).to_contain_text("no-such-pass")
    assert "Traceback" not in status.inner_text()

    # A pair the saved payload lacks is diffed by the kernel on request.
    many = page.locator(".rl-explorer.rl-live").nth(1)
    many.locator('.rl-stage-table tr[data-stage="5"]').click()
    many.locator(".rl-base").select_option(value="2")
    expect(many.locator(".rl-diff-summary")).to_have_text(
        re.compile(r"^stage 2 → stage 5: \+3 added, −3 removed"))
    assert many.locator(".rl-diff .cd.add", has_text="multiply").count() == 3
    assert not page.errors

    # Saved and reopened while the kernel runs: live again; once the kernel is gone: saved.
    page.keyboard.press("Control+s")
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)
    page.reload()
    expect(page.locator(".rl-explorer.rl-live")).to_have_count(2, timeout=60_000)
    jupyterlab_server.shutdown_kernels()
    page.reload()
    wait_for_kernel_idle(page)
    expect(page.locator(".rl-explorer.rl-saved")).to_have_count(2, timeout=60_000)
    expect(page.locator(".rl-explorer.rl-live")).to_have_count(0)
