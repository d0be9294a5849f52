"""Verification in a real JupyterLab: a ``%%reactant_jit --verify --exact`` cell whose result the
enzyme-hlo pattern slice_of_dynamic_update<1> gets wrong shows the XLA / run / error columns with
the first wrong stage marked; "find culprit" names the pattern; the notebook saved and reopened
without a kernel shows the same columns and mark; and so does the HTML report."""

from __future__ import annotations

import re

import nbformat
import numpy as np
import pytest
from playwright.sync_api import expect

import reactant_lab as rl
from reactant_lab.render.report import report_html
from tests.browser.conftest import (
    live_explorer,
    open_in_lab,
    run_all_cells,
    wait_for_kernel_idle,
    write_notebook,
)

pytestmark = pytest.mark.skipif(not rl.enzyme_available(), reason="needs enzyme-ad")

CELLS = [
    "%load_ext reactant_lab\nimport numpy as np, jax, jax.numpy as jnp\n"
    "z = np.arange(4, dtype=np.float32) + 1",
    "%%reactant_jit --verify --exact\n"
    "def clamped(z):\n"
    "    return jax.lax.dynamic_update_slice(z, jnp.full((1,), 1.5, z.dtype), (9,))[3:4]\n\n"
    "clamped(z)",
]


def clamped(z):
    import jax
    import jax.numpy as jnp

    return jax.lax.dynamic_update_slice(z, jnp.full((1,), 1.5, z.dtype), (9,))[3:4]


def check_columns(explorer) -> None:
    """The verification columns, the first wrong stage marked with its reason, the note."""
    heads = explorer.locator(".rl-stage-table thead th").all_inner_texts()
    assert heads[-3:] == ["XLA", "run", "error"], heads
    wrong = explorer.locator(".rl-stage-table tr.rl-first-wrong")
    expect(wrong).to_have_count(1)
    assert wrong.get_attribute("data-stage") == "1"
    expect(wrong.locator(".rl-verify-mark")).to_contain_text("first wrong")
    assert "1.5" in wrong.locator(".rl-verdict").get_attribute("title")
    assert explorer.locator('.rl-stage-table tr[data-stage="0"] .rl-verdict').inner_text() == "ok"
    expect(explorer.locator(".rl-verify-wrong")).to_contain_text(
        re.compile(r"First stage that went wrong: 1 \S+"))
    expect(explorer.locator(".rl-verify-note")).to_contain_text("Verified against jax.jit")


def test_verify_columns_find_culprit_and_the_saved_explorer(jupyterlab_server, lab_page,
                                                            artifacts_dir):
    page = lab_page
    write_notebook(jupyterlab_server.root / "verify.ipynb",
                   [nbformat.v4.new_code_cell(c) for c in CELLS])
    open_in_lab(page, jupyterlab_server, "verify.ipynb")
    wait_for_kernel_idle(page)
    run_all_cells(page)
    explorer = live_explorer(page, jupyterlab_server)
    check_columns(explorer)

    explorer.locator(".rl-metric").select_option("result")
    explorer.locator(".rl-bisect-btn").click()
    panel = explorer.locator(".rl-bisect")
    expect(panel).to_contain_text("Culprit for the result", timeout=120_000)
    expect(panel.locator(".rl-culprit")).to_contain_text("slice_of_dynamic_update<1>")
    expect(panel.locator(".rl-bisect-figures")).to_contain_text("without it")
    assert panel.locator(".rl-diff-text .del").count() > 0
    expect(explorer.locator(".rl-status")).to_contain_text("find culprit (result)")
    explorer.screenshot(path=str(artifacts_dir / "verify-live.png"))
    assert not page.errors, page.errors

    page.keyboard.press("Control+s")
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)
    jupyterlab_server.shutdown_kernels()
    page.reload()
    saved = page.locator(".rl-explorer.rl-saved").first
    saved.wait_for(timeout=60_000)
    check_columns(saved)
    assert not page.errors, page.errors


def test_the_report_shows_the_columns(browser, tmp_path, artifacts_dir):
    ex = rl.explore(clamped, np.arange(4, dtype=np.float32) + 1, verify=True, exact=True)
    report = tmp_path / "verified.html"
    report.write_text(report_html(rl.exploration_payload(ex)), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(report.as_uri())
        check_columns(page.locator(".rl-explorer.rl-saved"))
        page.screenshot(path=str(artifacts_dir / "verify-report.png"))
        assert not errors
    finally:
        context.close()
