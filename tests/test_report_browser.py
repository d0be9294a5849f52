"""The report's script in a real (headless) Chromium: compressed texts and long diffs unpack, the
stage picker navigates, and the page makes no request beyond its own file."""

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


def test_script_unpacks_texts_and_diffs(tmp_path, monkeypatch):
    monkeypatch.setattr(report_mod, "STATIC_BUDGET", 10_000)
    monkeypatch.setattr(payload_mod, "DIFF_ROWS", 1)
    stages = big_stage_trace(4, 2_000)
    payload = build_payload(stages, options=PayloadOptions(svg=False, compress_over=1_000))
    assert {t["encoding"] for t in payload["texts"]} >= {"gzip", "delta"}
    path = tmp_path / "report.html"
    path.write_text(report_html(payload))
    requests: list[str] = []
    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        for button in reversed(page.get_by_role("button", name="show this text").all()):
            button.click()
        # The page's CSP forbids eval, so wait with locators rather than wait_for_function.
        lazy = page.locator("[data-lazy-text]")
        sync_api.expect(page.locator("[data-lazy-text] pre")).to_have_count(lazy.count())
        for el in page.locator("[data-lazy-text]").all():
            tid = int(el.get_attribute("data-lazy-text"))
            assert el.locator("pre").text_content() == decode_text(payload["texts"], tid)
        page.get_by_role("button", name="show the whole diff").first.click()
        page.wait_for_selector("[data-lazy-diff] .diff .r")
        full = page.locator("[data-lazy-diff]").first
        removed, added = full.locator(".cd.del"), full.locator(".cd.add")
        assert removed.count() == added.count() == 1  # the add that became a multiply
        assert "stablehlo.add" in removed.text_content()
        assert "stablehlo.multiply" in added.text_content()
        assert full.locator(".fold").count() >= 1 and full.locator(".r").count() >= 4
        page.keyboard.press("j")
        page.keyboard.press("j")
        sync_api.expect(page).to_have_url(path.as_uri() + "#stage-2")
        browser.close()
    assert not errors
    assert all(url.startswith(("file:", "data:")) for url in requests), requests
