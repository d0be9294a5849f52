"""XLA's own stages in the explorer (a saved notebook in JupyterLab, no kernel): listed after the
MLIR stages, the fusion pass's diff showing the fusion appear, XLA's first HLO not diffed against
StableHLO, the optimized HLO drawn as a graph whose fusions name the StableHLO ops and Python
lines they came from, and the XLA tab and timing saying where the compile's time went. A fusion's
LLVM IR and assembly, picked from its graph panel, the kernels' list or the XLA tab, saved and
live (where the kernel sends what the saved output left out). Screenshots, light and dark, go to
test-artifacts/ (to docs/screenshots/ with REACTANT_LAB_SCREENSHOTS=1)."""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import expect

import reactant_lab as rl
from reactant_lab.notebook.display import explorer_payload
from reactant_lab.stages.xla import disassembler
from tests.browser.conftest import live_explorer, run_notebook, save_and_reopen
from tests.browser.test_explorer_ux_browser import _saved, _shoot, _theme

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from saved_size import heat  # the saved-size benchmark's stencil


@pytest.fixture(scope="module")
def stencil() -> tuple[rl.Exploration, dict]:
    u = np.random.default_rng(0).random((200, 200))
    ex = rl.explore(heat, u.copy(), 20)
    return ex, json.loads(json.dumps(explorer_payload(ex), sort_keys=True))


def test_xla_stages_in_a_saved_explorer(jupyterlab_server, browser, stencil):
    ex, payload = stencil
    first, last = ex.xla_stages[0].index, ex.xla_stages[-1].index
    fusion = next(s.index for s in ex.xla_stages if s.name == "fusion")
    context = browser.new_context(viewport={"width": 1440, "height": 860})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        explorer = _saved(jupyterlab_server, page, "xla.ipynb", payload)
        _theme(page, dark=False)
        rows = explorer.locator(".rl-stage-table tbody tr")
        expect(rows).to_have_count(len(ex.all_stages))
        expect(rows.nth(first)).to_contain_text("hlo")
        expect(rows.nth(fusion)).to_contain_text("fusion")

        # XLA's first HLO against the StableHLO before it: two IRs, said so, no diff.
        rows.nth(first).click()
        summary = explorer.locator(".rl-diff-summary")
        expect(summary).to_contain_text(f"Stage {first} is XLA's HLO and stage {first - 1} "
                                        "StableHLO: two IRs, no line diff")

        # The fusion pass: the fused computation and the fusion instruction appear (found: the
        # wrapped lines above it put the instruction below the rows drawn at first).
        rows.nth(fusion).click()
        expect(summary).to_contain_text(f"stage {fusion - 1} → stage {fusion}: +")
        explorer.locator(".rl-diff .rl-find-input").fill(" fusion(")
        expect(explorer.locator(".rl-diff .rl-find-count")).to_have_text(re.compile(r"^1 of \d+$"))
        expect(explorer.locator(".rl-diff", has_text=re.compile(r"fusion\("))).to_have_count(1)
        _shoot(explorer, "xla-fusion-diff-light")

        # The optimized HLO as a graph: each fusion a region titled with what it was made from.
        rows.nth(last).click()
        explorer.locator(".rl-tab-graph").click()
        boxes = explorer.locator(".rl-gsvg .rl-gn")
        boxes.first.wait_for()
        expect(explorer.locator(".rl-gsvg", has_text="from saved_size.py:31")).to_have_count(1)
        fused = explorer.locator(".rl-gsvg .rl-gn", has_text="add_dynamic-update-slice_fusion")
        # its panel (the box holds others: Enter opens it) says what it was made from, whole
        fused.first.focus()
        page.keyboard.press("Enter")
        expect(explorer.locator(".rl-graph")).to_contain_text(
            "from saved_size.py:31, 32: stablehlo.add ×4, stablehlo.multiply ×2")
        _shoot(explorer, "xla-hlo-graph-light")

        # Where the compile's time went, and the passes that ran.
        explorer.locator(".rl-tab-xla").click()
        facts = explorer.locator(".rl-xla-facts")
        expect(facts.locator(".rl-xla-passes")).to_contain_text(
            f"XLA's own stages are stages {first} to {last}")
        expect(facts.locator(".rl-xla-pass-table tbody tr")).to_have_count(
            min(12, len(payload["xla"]["passes"]["totals"])))
        expect(facts.locator(".rl-xla-kernels")).to_contain_text("fusion")
        _shoot(explorer, "xla-passes-light")
        explorer.locator(".rl-tab-timing").click()
        timing = explorer.locator(".rl-timing")
        for part in ("lowering to HLO", "HLO passes", "code generation", f"{fusion} fusion"):
            expect(timing).to_contain_text(part)

        _theme(page, dark=True)
        explorer.locator(".rl-tab-xla").click()
        _shoot(explorer, "xla-passes-dark")
        explorer.locator(".rl-tab-graph").click()
        boxes.first.wait_for()
        _shoot(explorer, "xla-hlo-graph-dark")
        rows.nth(fusion).click()
        explorer.locator(".rl-tab-diff").click()
        expect(summary).to_contain_text(f"stage {fusion - 1} → stage {fusion}: +")
        _shoot(explorer, "xla-fusion-diff-dark")
        _theme(page, dark=False)
        assert not errors
    finally:
        context.close()


FUSION = "add_dynamic-update-slice_fusion"
"""The kernel of the stencil's fused update."""


def _code_shows(explorer, what: str, kernel: str, text: str) -> None:
    """The code tab shows ``what`` (LLVM IR, assembly) of ``kernel``, containing ``text``."""
    view = explorer.locator(".rl-text-llvm" if what == "LLVM IR" else ".rl-text-asm")
    expect(explorer.locator('.rl-panel[data-tab="code"]')).to_have_count(1)
    expect(explorer.locator(".rl-kernel-table tr.selected")).to_have_attribute("data-kernel",
                                                                               kernel)
    expect(view.locator(".rl-text-head")).to_contain_text(f"{what} of kernel {kernel} · ")
    expect(view.locator(".rl-vrows")).to_contain_text(text, timeout=60_000)


def test_a_fusions_llvm_ir_and_assembly_in_a_saved_explorer(jupyterlab_server, lab_page,
                                                            stencil):
    ex, payload = stencil
    page = lab_page
    assert FUSION in [name for name, _ in ex.xla.kernels]
    explorer = _saved(jupyterlab_server, page, "kernels.ipynb", payload)
    _theme(page, dark=False)
    explorer.locator(".rl-stage-table tbody tr").nth(ex.xla_stages[-1].index).click()
    # From the fusion's panel in the optimized HLO's graph
    explorer.locator(".rl-tab-graph").click()
    fused = explorer.locator(".rl-gsvg .rl-gn", has_text=FUSION)
    fused.first.focus()
    page.keyboard.press("Enter")
    explorer.locator(".rl-gpanel .rl-gp-llvm").click()
    _code_shows(explorer, "LLVM IR", FUSION, f"@{FUSION}(")
    expect(explorer.locator(".rl-text-llvm .rl-vrows")).to_contain_text("define ")
    row = explorer.locator(".rl-kernel-table tr.selected")
    expect(row.locator(".rl-kernel-from")).to_contain_text("from saved_size.py:31, 32: "
                                                           "stablehlo.add ×4")
    expect(explorer.locator(".rl-kernel-table tbody tr")).to_have_count(len(ex.xla.kernels))
    _shoot(explorer.locator(".rl-main"), "kernel-llvm-ir-light")
    explorer.locator(".rl-code-asm").click()
    if disassembler() is None:  # said, where the payload was made without one
        expect(explorer.locator(".rl-code-note")).to_contain_text("needs objdump")
    else:
        _code_shows(explorer, "assembly", FUSION, f"<{FUSION}>:")
        _shoot(explorer.locator(".rl-main"), "kernel-asm-light")
    # another kernel from the list; and from the XLA tab's list of kernels
    explorer.locator(".rl-kernel-pick", has_text=re.compile("^wrapped_add$")).click()
    expect(explorer.locator(".rl-kernel-table tr.selected")).to_have_attribute("data-kernel",
                                                                               "wrapped_add")
    explorer.locator(".rl-tab-xla").click()
    explorer.locator(".rl-xla-kernel", has_text=FUSION).click()
    _code_shows(explorer, "LLVM IR", FUSION, "define ")

    _theme(page, dark=True)
    try:
        _code_shows(explorer, "LLVM IR", FUSION, "define ")
        _shoot(explorer.locator(".rl-main"), "kernel-llvm-ir-dark")
        if disassembler() is not None:
            explorer.locator(".rl-code-asm").click()
            _code_shows(explorer, "assembly", FUSION, f"<{FUSION}>:")
            _shoot(explorer.locator(".rl-main"), "kernel-asm-dark")
    finally:
        _theme(page, dark=False)
    assert not page.errors, page.errors


LIVE_KERNELS = (
    "import numpy as np\nimport reactant_lab as rl\n"
    "from reactant_lab.notebook.widget import ExplorerWidget\n"
    "from reactant_lab.render.payload import PayloadOptions\n\n" + inspect.getsource(heat)
    + "\nu = np.random.default_rng(0).random((200, 200))\n"
    # no kernel's code kept: the live explorer asks for each, a saved one says how to get it
    "ExplorerWidget(rl.explore(heat, u, 20), options=PayloadOptions(kernel_code=0))")


def test_a_fusions_code_comes_from_the_kernel_live_and_is_explained_saved(jupyterlab_server,
                                                                          lab_page):
    page = lab_page
    run_notebook(page, jupyterlab_server, "kernels-live.ipynb", LIVE_KERNELS)
    explorer = live_explorer(page, jupyterlab_server)
    explorer.locator(".rl-tab-code").click()
    _code_shows(explorer, "LLVM IR", FUSION, "define ")  # the first true fusion, shown first
    if disassembler() is None:
        explorer.locator(".rl-code-asm").click()
        expect(explorer.locator(".rl-code-note")).to_contain_text("needs objdump")
    else:
        explorer.locator(".rl-code-asm").click()
        _code_shows(explorer, "assembly", FUSION, f"<{FUSION}>:")
        _shoot(explorer.locator(".rl-kernel-code"), "kernel-asm-live-light")
    assert not page.errors, page.errors

    # Saved and reopened with a new kernel: the saved explorer says how to get the code.
    saved = save_and_reopen(page, jupyterlab_server)
    saved.locator(".rl-tab-code").click()
    note = saved.locator(".rl-code-note")
    expect(note).to_contain_text(f"The LLVM IR of {FUSION} was not saved with this output")
    expect(note).to_contain_text(f"in Python: ex.xla.llvm_ir('{FUSION}')")
    assert saved.locator(".rl-text-llvm .rl-vrows .r").count() == 0
    assert not page.errors, page.errors
