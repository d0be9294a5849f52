"""One front end: a standalone report file and a saved notebook (opened with no kernel) that carry
the same payload show the same explorer: the same tabs, stage list and title, and in every tab the
same element classes and the same text where the text does not depend on the page's width."""

from __future__ import annotations

import json
from typing import Any

import nbformat
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.examples import EXAMPLES
from reactant_lab.notebook.display import explorer_bundle, explorer_payload
from reactant_lab.render.report import report_html
from tests.browser.conftest import choose_no_kernel, open_in_lab, write_notebook

CLASSES = """root => Array.from(new Set([root, ...root.querySelectorAll('*')]
  .flatMap(e => Array.from(e.classList)))).sort()"""
WIDTH_CLASSES = {"rl-wrapped", "rl-wrap", "el"}
"""How a diff's long lines fit depends on the column's width (wrapped rows, elided runs)."""
# What each tab must have drawn before it is compared (texts are decoded asynchronously).
READY = {"diff": ".rl-diff .r", "ir": ".rl-text .r", "graph": ".rl-gsvg .rl-gn",
         "metrics": ".rl-ops td", "xla": ".rl-text-hlo .r", "code": ".rl-text-llvm .r",
         "timing": ".rl-bar", "signature": ".rl-signature td"}
SAME_TEXT = (".rl-diff-summary", ".rl-text-head", ".rl-metrics", ".rl-xla-facts", ".rl-timing",
             ".rl-signature", ".rl-graph > .rl-note", ".rl-kernel-table", ".rl-code-note")


@pytest.fixture(scope="module")
def exploration() -> tuple[rl.Exploration, dict]:
    example = next(e for e in EXAMPLES if e.name == "mlp")
    ex = rl.explore(example.fn, *example.make_args(np.random.default_rng(0)))
    # As a notebook saves it (nbformat sorts keys), so that both pages list maps in one order.
    return ex, json.loads(json.dumps(explorer_payload(ex), sort_keys=True))


def snapshot(explorer: Any) -> dict[str, Any]:
    """What an explorer shows, tab by tab."""
    from playwright.sync_api import expect

    out: dict[str, Any] = {
        "title": explorer.locator(".rl-title").inner_text(),
        "tabs": explorer.locator(".rl-tab").all_inner_texts(),
        "stages": explorer.locator(".rl-stage-table tbody tr").all_inner_texts(),
        "selected": explorer.locator(".rl-stage-table tr.selected").get_attribute("data-stage"),
    }
    for tab, ready in READY.items():
        explorer.locator(f".rl-tab-{tab}").click()
        expect(explorer.locator(f'.rl-panel[data-tab="{tab}"]')).to_have_count(1)
        explorer.locator(ready).first.wait_for()
        texts = {sel: explorer.locator(sel).all_inner_texts() for sel in SAME_TEXT}
        out[tab] = {"classes": [c for c in explorer.evaluate(CLASSES) if c not in WIDTH_CLASSES],
                    "texts": {k: v for k, v in texts.items() if v}}
    return out


def test_the_report_and_a_saved_notebook_show_the_same_explorer(
        browser, jupyterlab_server, lab_page, artifacts_dir, tmp_path, exploration):
    ex, payload = exploration
    report = tmp_path / "report.html"
    report.write_text(report_html(payload), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(report.as_uri())
        in_report = snapshot(page.locator(".rl-explorer.rl-saved"))
        page.screenshot(path=str(artifacts_dir / "report-explorer.png"))
        assert not errors
    finally:
        context.close()

    write_notebook(jupyterlab_server.root / "same.ipynb", [
        nbformat.v4.new_code_cell("explore(mlp)", outputs=[
            nbformat.v4.new_output("display_data", data=explorer_bundle(ex, payload=payload))])],
        kernel=False)
    open_in_lab(lab_page, jupyterlab_server, "same.ipynb")
    choose_no_kernel(lab_page)
    explorer = lab_page.locator(".rl-explorer.rl-saved").first
    explorer.wait_for()
    in_lab = snapshot(explorer)
    assert not lab_page.errors

    assert in_report["tabs"] == ["diff", "IR", "graph", "op metrics", "XLA HLO", "LLVM IR / asm",
                                 "timing", "signature"]
    # the kernels' code, saved in the payload, shows in the report as in the notebook
    assert "LLVM IR of kernel" in in_report["code"]["texts"][".rl-text-head"][0]
    assert len(in_report["stages"]) == len(payload["stages"])
    assert in_report["diff"]["texts"][".rl-diff-summary"][0].startswith("stage 0 → stage 1")
    assert {"rl-explorer", "rl-saved", "rl-stages", "rl-vlist", "ln", "cd", "add", "del"} <= set(
        in_report["diff"]["classes"])
    assert {"rl-gsvg", "rl-gn", "k-arg", "k-result", "rl-ge"} <= set(in_report["graph"]["classes"])
    assert "XLA compile" in in_report["timing"]["texts"][".rl-timing"][0]
    for key in in_report:
        assert in_report[key] == in_lab[key], key
