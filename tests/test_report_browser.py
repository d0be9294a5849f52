"""The report in a real (headless) Chromium: the explorer draws itself from the inline payload
(compressed texts and long diffs included) under the page's strict CSP, hiding the script-free
rendering, which shows when JavaScript is off; the page makes no request beyond its own file."""

from __future__ import annotations

import shutil

import pytest

from reactant_lab.render import payload as payload_mod
from reactant_lab.render import report as report_mod
from reactant_lab.render.payload import PayloadOptions, build_payload
from reactant_lab.render.report import report_html
from reactant_lab.render.texts import decode_text
from tests.test_report import big_stage_trace

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium")


@pytest.fixture(scope="module")
def large_report(tmp_path_factory) -> tuple[dict, str]:
    """A report of large, compressed stage texts, too long for its script-free rendering, whose
    diffs that rendering cuts after one changed line."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report_mod, "STATIC_BUDGET", 10_000)
        mp.setattr(payload_mod, "DIFF_ROWS", 1)
        payload = build_payload(big_stage_trace(4, 2_000),
                                options=PayloadOptions(svg=False, compress_over=1_000))
        assert {t["encoding"] for t in payload["texts"]} >= {"gzip", "delta"}
        path = tmp_path_factory.mktemp("report") / "report.html"
        path.write_text(report_html(payload))
    return payload, path.as_uri()


def test_the_explorer_draws_the_inline_payload_under_the_csp(large_report):
    payload, uri = large_report
    requests: list[str] = []
    errors: list[str] = []
    console: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        page.goto(uri)
        explorer = page.locator(".rl-report-explorer .rl-explorer.rl-saved")
        explorer.wait_for()
        sync_api.expect(page.locator("#rl-static")).to_be_hidden()
        rows = explorer.locator(".rl-stage-table tbody tr")
        sync_api.expect(rows).to_have_count(len(payload["stages"]))
        # Stage 1's diff, all of it (the script-free rendering shows its first row only): the
        # line where an add became a multiply, drawn from the payload's rows.
        first = next(d for d in payload["diffs"] if d["after"] == 1)
        assert first["truncated"] and (first["added"], first["removed"]) == (1, 1)
        summary = explorer.locator(".rl-diff-summary")
        sync_api.expect(summary).to_contain_text("stage 0 → stage 1: +1 added, −1 removed")
        sync_api.expect(explorer.locator(".rl-diff .cd.del")).to_contain_text("stablehlo.add")
        sync_api.expect(explorer.locator(".rl-diff .cd.add")).to_contain_text("stablehlo.multiply")
        # A delta-encoded text, decoded in the page: its first and last lines as stored.
        delta = next(s for s in payload["stages"]
                     if payload["texts"][s["text"]]["encoding"] == "delta")
        lines = decode_text(payload["texts"], delta["text"]).split("\n")
        explorer.locator(f'.rl-stage-table tr[data-stage="{delta["index"]}"]').click()
        explorer.locator(".rl-tab-ir").click()
        head = explorer.locator(".rl-text-head")
        sync_api.expect(head).to_contain_text(f"{len(lines):,} lines")
        sync_api.expect(explorer.locator(".rl-text .r").nth(1)).to_contain_text(lines[1].strip())
        explorer.locator(".rl-stage-table").press("j")  # keys move between stages
        sync_api.expect(explorer.locator(".rl-stage-table tr.selected")).to_have_attribute(
            "data-stage", str(delta["index"] + 1))
        browser.close()
    assert not errors
    assert not [m for m in console if "Content Security Policy" in m or m.startswith("error")]
    assert requests == [uri]


def test_without_javascript_the_static_rendering_shows(large_report):
    payload, uri = large_report
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_context(java_script_enabled=False).new_page()
        page.goto(uri)
        assert page.locator(".rl-explorer").count() == 0
        static = page.locator("#rl-static")
        sync_api.expect(static).to_be_visible()
        sync_api.expect(static.locator("section.stage")).to_have_count(len(payload["stages"]))
        sync_api.expect(static.locator("#stage-1 .diff .cd.del")).to_contain_text("stablehlo.add")
        sync_api.expect(static.locator("#stage-1")).to_contain_text(
            "changed lines of 2 (the explorer shows it when JavaScript runs)")
        sync_api.expect(static.locator("#stage-0")).to_contain_text(
            "too long for this static view (the explorer shows it when JavaScript runs)")
        # The CSS-only toggles still work: unchanged stages hidden.
        sync_api.expect(static.locator("#stage-2.unchanged")).to_be_visible()
        static.locator('label[for="hide-same"]').click()
        sync_api.expect(static.locator("#stage-2")).to_be_hidden()
        browser.close()
