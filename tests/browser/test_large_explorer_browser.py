"""A 50-stage exploration of 20,000-line modules opens and switches stages in JupyterLab: texts
are decoded on first use (gzip and line deltas) and drawn virtualized, so the page keeps a few
hundred rows however long the module. The stage-switch times the explorer records
(``performance.measure``) go to test-artifacts/large-explorer.json; nothing here asserts on them."""

from __future__ import annotations

import json

import nbformat
import pytest
from playwright.sync_api import expect

from reactant_lab.render.payload import MIME_TYPE, PayloadOptions, build_payload
from reactant_lab.render.texts import decode_text
from tests.browser.conftest import choose_no_kernel, open_in_lab, write_notebook
from tests.test_report import big_stage_trace

STAGES, LINES = 50, 20_000
LONG_TASKS = """window.__longTasks = [];
new PerformanceObserver(list => window.__longTasks.push(
  ...list.getEntries().map(e => [e.startTime, e.duration])
)).observe({type: 'longtask', buffered: true});"""


@pytest.fixture(scope="module")
def big_payload() -> dict:
    payload = build_payload(big_stage_trace(STAGES, LINES), options=PayloadOptions(svg=False))
    assert {t["encoding"] for t in payload["texts"]} == {"gzip", "delta"}
    return payload


def _switch(explorer, stage: int, expected: str) -> None:
    explorer.locator(f'.rl-stage-table tr[data-stage="{stage}"]').click()
    expect(explorer.locator(".rl-diff-summary, .rl-text-head").first).to_contain_text(expected)


def test_large_exploration_opens_and_switches_stages(jupyterlab_server, lab_page, big_payload,
                                                     artifacts_dir):
    page = lab_page
    page.add_init_script(LONG_TASKS)
    write_notebook(jupyterlab_server.root / "large.ipynb", [nbformat.v4.new_code_cell(
        "explore(big)", outputs=[nbformat.v4.new_output(
            "display_data", data={MIME_TYPE: big_payload, "text/plain": "50 stages"})])],
        kernel=False)
    open_in_lab(page, jupyterlab_server, "large.ipynb")
    choose_no_kernel(page)
    explorer = page.locator(".rl-explorer").first
    expect(explorer.locator(".rl-stage-table tbody tr")).to_have_count(STAGES, timeout=60_000)
    rows = explorer.locator(".rl-vrows > *")
    opened = page.evaluate("performance.now()")

    previous = {d["after"]: d for d in big_payload["diffs"] if d["kind"] == "previous"}
    order = [1, 2, 25, 49, 48, 3, 47]
    for k in order:
        d = previous[k]
        expected = (f"stage {k - 1} → stage {k}: " + ("no structural change" if d["empty"] else
                    f"+{d['added']} added, −{d['removed']} removed"))
        _switch(explorer, k, expected)
        assert rows.count() < 300, "the diff draws only rows in view"

    explorer.locator(".rl-tab-ir").click()
    for k in (49, 20):
        lines = big_payload["texts"][big_payload["stages"][k]["text"]]["lines"]
        assert lines > LINES
        _switch(explorer, k, f"stage {k}: s{k} · {lines:,} lines")
        assert 0 < rows.count() < 300, "the IR view draws only rows in view"
    # Scrolled to the middle, the rows shown are the decoded text's lines there.
    code = explorer.locator(".rl-text .rl-vlist")
    code.evaluate("e => { e.scrollTop = 18 * 10000; e.dispatchEvent(new Event('scroll')); }")
    line = explorer.locator(".rl-text .rl-vrows .r", has=page.locator(".ln", has_text="10010"))
    want = decode_text(big_payload["texts"], big_payload["stages"][20]["text"]).split("\n")[10009]
    expect(line.locator(".cd")).to_have_text(want)

    times = page.evaluate("performance.getEntriesByName('reactant-lab: stage switch')"
                          ".map(e => e.duration)")
    tasks = page.evaluate("window.__longTasks")
    while_open = [round(d, 1) for t, d in tasks if t < opened]
    while_switching = [round(d, 1) for t, d in tasks if t >= opened]
    assert len(times) == len(order) + 2
    (artifacts_dir / "large-explorer.json").write_text(json.dumps({
        "stages": STAGES, "lines": LINES, "switch_order": [*order, 49, 20],
        "stage_switch_ms": [round(t, 1) for t in times], "page_opened_ms": round(opened, 1),
        "long_tasks_while_opening_ms": while_open,
        "long_tasks_while_switching_ms": while_switching}, indent=1))
    page.screenshot(path=str(artifacts_dir / "large-explorer.png"))
    assert not page.errors
