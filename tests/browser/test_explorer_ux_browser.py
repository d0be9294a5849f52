"""The explorer as a daily tool, in Chromium: a change far right in a long line is in view in the
side-by-side diff, "changed lines only" and next / previous change; find, copy and download in
the IR, diff and HLO views (in JupyterLab and in the report, under its Content-Security-Policy);
XLA's source tables folded; benchmark ratios in words on the first tab; and, live, Enter in the
pipeline field re-runs and a re-run without a kernel says so. Screenshots of these views, light
and dark, go to test-artifacts/ (to docs/screenshots/ with REACTANT_LAB_SCREENSHOTS=1)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest
from playwright.sync_api import expect

import reactant_lab as rl
from reactant_lab.bench import BenchResult, Roofline
from reactant_lab.bench.result import blas_spin_caveat, make_row
from reactant_lab.notebook.display import explorer_payload
from reactant_lab.render.payload import MIME_TYPE, PayloadOptions, build_payload
from reactant_lab.render.report import report_html
from reactant_lab.render.texts import decode_text
from reactant_lab.stages import Stage, StageTrace
from tests.browser.conftest import (
    REPO,
    choose_no_kernel,
    live_explorer,
    open_in_lab,
    run_all_cells,
    wait_for_kernel_idle,
    write_notebook,
)

SCREENSHOTS = REPO / "docs" / "screenshots"
ATTRS = ", ".join(f"attr_{k} = {k * 1111}" for k in range(18))
"""A long attribute dictionary: the changed value comes after ~200 columns of it."""


def long_line_trace() -> StageTrace:
    """Two stages whose only change is a value past column 200 of a long line."""
    def module(value: int) -> str:
        return ("module {\n  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                + "".join(f"    %{i} = stablehlo.add %arg0, %arg0 : tensor<4xf32>\n"
                          for i in range(1, 30))
                + f'    %30 = stablehlo.custom_call @kernel(%29) {{mhlo.attrs = {{{ATTRS}, '
                  f"tile = {value} : i64}}}} : (tensor<4xf32>) -> tensor<4xf32>\n"
                + "".join(f"    %{i} = stablehlo.multiply %{i - 1}, %arg0 : tensor<4xf32>\n"
                          for i in range(31, 60))
                + "    return %59 : tensor<4xf32>\n  }\n}\n")
    stages = [Stage(index=k, name=name, group=name, pipeline="p" if k else "", ir=module(v),
                    seconds=0.001, changed=True, op_counts={"stablehlo.add": 29})
              for k, (name, v) in enumerate([("traced", 4096), ("retile", 8192)])]
    return StageTrace(traced=None, optimize="custom", granularity="stage", no_nan=False,
                      target="cpu", stages=tuple(stages))


def _f(x):
    return np.sin(x) * 2 + 1


@pytest.fixture(scope="module")
def real_payload() -> dict:
    """A compiled exploration (XLA's HLO with its source tables) with a benchmark attached."""
    ex = rl.explore(_f, np.ones(64, np.float32))
    roof = Roofline("cpu", peak_flops=1e9, peak_bytes_per_s=1e9, seconds=0.0)
    row = make_row("all", "preset", [1e-6, 1.01e-6, 0.99e-6], compile_s=0.1, flops=4e3,
                   bytes_accessed=None, roofline=roof, calls_per_sample=1)
    base = make_row("numpy", "baseline", [1.78e-6] * 3, compile_s=None, flops=None,
                    bytes_accessed=None, roofline=roof, calls_per_sample=1)
    why = ("jax.jit cannot trace the function: TypeError: the function reads a global that is "
           "rebound between calls. Pass it as an argument instead, and the baseline is timed.")
    bench = BenchResult("_f", "numpy", "cpu", (replace(row, ratio=0.562), replace(base, ratio=1.0)),
                        {"jax": why}, "numpy", roof,
                        (blas_spin_caveat("scipy-openblas", {}, 1.78e-3, compiled=True),))
    return json.loads(json.dumps(explorer_payload(ex, bench=bench), sort_keys=True))


def _saved(server: Any, page: Any, name: str, payload: dict, timeout: float = 30_000) -> Any:
    """A notebook ``name`` saved with an explorer of ``payload``, opened without a kernel; its
    explorer, once shown (within ``timeout`` ms)."""
    write_notebook(server.root / name, [nbformat.v4.new_code_cell("explore(f)", outputs=[
        nbformat.v4.new_output("display_data", data={MIME_TYPE: payload,
                                                     "text/plain": "explorer"})])], kernel=False)
    open_in_lab(page, server, name)
    choose_no_kernel(page)
    explorer = page.locator(".rl-explorer.rl-saved").first
    explorer.wait_for(timeout=timeout)
    return explorer


SHOT_BYTES = 240_000
"""A screenshot stays under this. A side-by-side diff of dense IR beside a stage list of 24
stages (XLA's own listed after the MLIR ones) in the dark theme is about 200 KB."""


def _shoot(target: Any, name: str) -> None:
    """Screenshot into test-artifacts/; into docs/screenshots/ (committed, linked from the
    README) only with REACTANT_LAB_SCREENSHOTS=1, so a test run leaves the checkout clean."""
    where = SCREENSHOTS if os.environ.get("REACTANT_LAB_SCREENSHOTS") == "1" else (
        REPO / "test-artifacts" / "screenshots")
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{name}.png"
    target.screenshot(path=str(path))
    assert path.stat().st_size < SHOT_BYTES, f"{path.name} is {path.stat().st_size} bytes"



def _theme(page: Any, dark: bool) -> None:
    """Switch JupyterLab's theme (a server-wide setting: later pages open in it too)."""
    name = "JupyterLab Dark" if dark else "JupyterLab Light"
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Settings$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Theme$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{name}$")).click()
    expect(page.locator(f'body[data-jp-theme-light="{str(not dark).lower()}"]')).to_have_count(
        1, timeout=30_000)
    # JupyterLab shows its splash (the animated logo) while the theme loads: a screenshot taken
    # before it is gone has the logo over the explorer
    expect(page.locator("#jupyterlab-splash")).to_have_count(0, timeout=30_000)
    page.keyboard.press("Escape")


def _inside(inner: dict, outer: dict) -> bool:
    return (inner["x"] >= outer["x"] - 1 and inner["x"] + inner["width"] <= outer["x"]
            + outer["width"] + 1)


def test_a_change_far_right_in_a_long_line_is_in_view(jupyterlab_server, lab_page):
    page = lab_page
    payload = build_payload(long_line_trace(), options=PayloadOptions(svg=False))
    explorer = _saved(jupyterlab_server, page, "long.ipynb", payload)
    line = next(ln for ln in decode_text(payload["texts"], 1).split("\n") if "tile =" in ln)
    assert line.index("tile = 8192") > 200
    changed = explorer.locator(".rl-diff .r", has=page.locator(".cd.add"))
    expect(changed).to_have_count(1)
    new = changed.locator(".cd.add .x", has_text="8192")
    old = changed.locator(".cd.del .x", has_text="4096")
    for mark, cell in ((new, changed.locator(".cd.add")), (old, changed.locator(".cd.del"))):
        expect(mark).to_be_visible()
        box, cell_box = mark.bounding_box(), cell.bounding_box()
        assert _inside(box, cell_box), (box, cell_box)  # not cut off by the column
        assert box["x"] + box["width"] <= page.viewport_size["width"]
    # An elided run opens the whole line on a click: both sides, wrapped in their columns.
    changed.locator(".cd.add .el").first.click()
    for side in ("add", "del"):
        whole = explorer.locator(f".rl-diff .cd.{side}.rl-wrapped")
        expect(whole).to_have_count(1)
        expect(whole.locator(".el")).to_have_count(0)
        assert _inside(whole.locator(".x").first.bounding_box(), whole.bounding_box())
    shown = explorer.locator(".rl-diff .cd.add.rl-wrapped").evaluate("e => e.textContent")
    assert "".join(shown.split()) == "".join(line.split())

    # Changed lines only; next / previous change, by button and key.
    rows = explorer.locator(".rl-diff .rl-vrows > *")
    everything = rows.count()
    explorer.locator(".rl-only-changed input").check()
    expect(rows).to_have_count(1)
    explorer.locator(".rl-only-changed input").uncheck()
    expect(rows).to_have_count(everything)
    explorer.locator(".rl-next-change").click()
    expect(explorer.locator(".rl-change-count")).to_have_text("change 1 of 1")
    expect(explorer.locator(".rl-diff .r.rl-current .cd.add")).to_have_count(1)
    explorer.locator(".rl-diff .rl-vlist").focus()
    page.keyboard.press("p")
    expect(explorer.locator(".rl-diff .r.rl-current")).to_have_count(1)
    assert "n / Alt+↓ next change" in explorer.locator(".rl-diff-tools").get_attribute("title")
    _theme(page, dark=False)
    _shoot(explorer, "diff-long-line-light")
    _theme(page, dark=True)
    expect(new).to_be_visible()
    _shoot(explorer, "diff-long-line-dark")
    _theme(page, dark=False)
    assert not page.errors


def test_find_copy_and_download_in_jupyterlab(jupyterlab_server, browser, real_payload, tmp_path):
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    try:
        explorer = _saved(jupyterlab_server, page, "find.ipynb", real_payload)
        _theme(page, dark=False)
        # The benchmark reads at a glance on the first tab.
        summary = explorer.locator(".rl-bench-summary")
        expect(summary).to_contain_text("all: 1.0 µs, 1.78× faster than numpy")
        explorer.locator(".rl-tab-ir").click()
        text = decode_text(real_payload["texts"], real_payload["stages"][1]["text"])
        want = text.lower().count("stablehlo.")
        find = explorer.locator(".rl-text-mlir .rl-find-input")
        find.fill("StableHLO.")
        count = explorer.locator(".rl-text-mlir .rl-find-count")
        expect(count).to_have_text(f"1 of {want}")
        expect(explorer.locator(".rl-text-mlir mark.rl-hit-current")).to_have_count(1)
        find.press("Enter")
        expect(count).to_have_text(f"2 of {want}")
        find.press("Shift+Enter")
        find.press("Shift+Enter")
        expect(count).to_have_text(f"{want} of {want}")
        _shoot(explorer, "ir-find-light")

        explorer.locator(".rl-text-mlir .rl-copy").click()
        expect(explorer.locator(".rl-text-mlir .rl-copy-note")).to_contain_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == text

        with page.expect_download() as info:
            explorer.locator(".rl-text-mlir .rl-download").click()
        got = info.value
        assert got.suggested_filename.endswith(".mlir") and "stage1" in got.suggested_filename
        assert Path(got.path()).read_text(encoding="utf-8") == text

        # XLA's HLO: the source tables folded, a click opens them; download as .hlo.
        explorer.locator(".rl-tab-xla").click()
        hlo = decode_text(real_payload["texts"], real_payload["xla"]["hlo"])
        assert "FileNames" in hlo
        fold = explorer.locator(".rl-text-hlo .fold.rl-hlo-tables")
        expect(fold).to_contain_text("lines of source tables (FileNames")
        assert explorer.locator(".rl-text-hlo .cd", has_text=re.compile("^FileNames$")).count() == 0
        first = explorer.locator(".rl-text-hlo .rl-vrows > *").nth(2)
        _shoot(explorer, "hlo-folded-light")
        fold.click()
        expect(explorer.locator(".rl-text-hlo .cd", has_text=re.compile("^FileNames$"))) \
            .to_have_count(1)
        assert first.count() == 1
        with page.expect_download() as info:
            explorer.locator(".rl-text-hlo .rl-download").click()
        assert info.value.suggested_filename.endswith(".hlo")
        assert Path(info.value.path()).read_text(encoding="utf-8") == hlo

        # The diff: find, copy as unified text.
        explorer.locator(".rl-tab-diff").click()
        explorer.locator(".rl-diff .rl-find-input").fill("sine")
        expect(explorer.locator(".rl-diff .rl-find-count")).to_have_text(re.compile(r"^1 of \d+$"))
        expect(explorer.locator(".rl-diff mark.rl-hit-current")).to_have_count(1)
        explorer.locator(".rl-diff .rl-copy").click()
        expect(explorer.locator(".rl-diff .rl-copy-note")).to_contain_text("Copied the diff")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied.startswith("--- stage 0: ") and "\n+" in copied

        # The payload, as JSON.
        with page.expect_download() as info:
            explorer.locator(".rl-title .rl-download").click()
        assert info.value.suggested_filename.endswith("-payload.json")
        assert json.loads(Path(info.value.path()).read_text(encoding="utf-8")) == real_payload

        # Timing: ratios in words, the roofline explained, the caveat and the skipped reason whole.
        explorer.locator(".rl-tab-timing").click()
        timing = explorer.locator(".rl-timing")
        expect(timing.locator("table.rl-bench")).to_contain_text("1.78× faster than numpy")
        expect(timing.locator("table.rl-bench th", has_text="vs numpy")).to_have_count(1)
        expect(timing).to_contain_text("roofline: the least time this work can take")
        expect(timing).to_contain_text("over 100%")
        expect(timing.locator(".rl-caveat")).to_contain_text(
            "set OPENBLAS_THREAD_TIMEOUT=4 in the environment before Python starts")
        expect(timing.locator(".rl-skipped")).to_contain_text(
            "Pass it as an argument instead, and the baseline is timed.")
        _shoot(explorer, "timing-bench-light")
        _theme(page, dark=True)
        _shoot(explorer, "timing-bench-dark")
        explorer.locator(".rl-tab-xla").click()
        _shoot(explorer, "hlo-folded-dark")
        explorer.locator(".rl-tab-ir").click()
        _shoot(explorer, "ir-find-dark")
        _theme(page, dark=False)
    finally:
        context.close()
        jupyterlab_server.shutdown_kernels()


def test_copy_without_clipboard_permission_says_so_and_selects_the_text(
        jupyterlab_server, browser, real_payload):
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    # As a browser that refuses: writeText rejects with the error it gives then.
    context.add_init_script("""navigator.clipboard.writeText = () => Promise.reject(
        new DOMException('Write permission denied.', 'NotAllowedError'));""")
    page = context.new_page()
    try:
        explorer = _saved(jupyterlab_server, page, "denied.ipynb", real_payload)
        explorer.locator(".rl-tab-ir").click()
        explorer.locator(".rl-text-mlir .rl-copy").click()
        note = explorer.locator(".rl-text-mlir .rl-copy-note")
        expect(note).to_contain_text("did not allow copying to the clipboard (permission denied)")
        box = note.locator("textarea.rl-copy-box")
        text = decode_text(real_payload["texts"], real_payload["stages"][1]["text"])
        assert box.input_value() == text
        assert box.evaluate("b => b.selectionEnd - b.selectionStart") == len(text)
    finally:
        context.close()
        jupyterlab_server.shutdown_kernels()


def test_downloads_work_in_the_report_under_its_csp(browser, real_payload, tmp_path):
    html = report_html(real_payload)
    assert "default-src 'none'" in html
    report = tmp_path / "report.html"
    report.write_text(html, encoding="utf-8")
    context = browser.new_context(viewport={"width": 1500, "height": 1100})  # downloads accepted
    page = context.new_page()
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text)
            if "Content Security Policy" in m.text else None)
    try:
        page.goto(report.as_uri())
        explorer = page.locator(".rl-explorer.rl-saved")
        explorer.locator(".rl-tab-ir").click()
        explorer.locator(".rl-text-mlir .rl-vrows .r").first.wait_for()
        for tab, button, ext in (("ir", ".rl-text-mlir .rl-download", ".mlir"),
                                 ("xla", ".rl-text-hlo .rl-download", ".hlo"),
                                 ("diff", ".rl-diff .rl-download", ".diff"),
                                 ("diff", ".rl-title .rl-download", ".json")):
            explorer.locator(f".rl-tab-{tab}").click()
            with page.expect_download() as info:
                explorer.locator(button).click()
            assert info.value.suggested_filename.endswith(ext)
            assert info.value.failure() is None
            assert Path(info.value.path()).stat().st_size > 100
        assert not violations, violations
    finally:
        context.close()


LIVE_CELL = """\
import numpy as np
import reactant_lab as rl
from reactant_lab.notebook.widget import ExplorerWidget

def g(x):
    return np.sin(x) * 2 + 1

ExplorerWidget(rl.explore(g, np.ones(8, np.float32)))"""


def test_enter_in_the_pipeline_field_reruns_and_no_kernel_is_said(jupyterlab_server, lab_page):
    page = lab_page
    write_notebook(jupyterlab_server.root / "enter.ipynb", [nbformat.v4.new_code_cell(LIVE_CELL)])
    open_in_lab(page, jupyterlab_server, "enter.ipynb")
    wait_for_kernel_idle(page)
    run_all_cells(page)
    explorer = live_explorer(page, jupyterlab_server)
    status = explorer.locator(".rl-status")
    explorer.locator(".rl-pipeline").fill("canonicalize")
    explorer.locator(".rl-pipeline").press("Enter")
    expect(status).to_contain_text("re-ran with pipeline canonicalize", timeout=60_000)

    jupyterlab_server.shutdown_kernels()
    explorer.locator(".rl-pipeline").fill("cse")
    explorer.locator(".rl-pipeline").press("Enter")
    expect(explorer.locator('.rl-status[data-state="error"]')).to_contain_text(
        "kernel", timeout=30_000)
    expect(status).to_contain_text("Run the cell that made it again")
    assert not page.errors
