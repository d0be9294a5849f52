"""Keyboard and accessibility of the explorer in a real JupyterLab, light and dark: the tabs are a
tablist (arrow keys, Home / End, one tab stop), the stage list a listbox (Up / Down, j / k,
Home / End), keyboard focus shows, the stage the diff compares with is marked, the op-metrics
columns are named, and every visible text of the explorer (each tab) and of a failing cell's
error panel reads at WCAG AA contrast in both themes. Screenshots with keyboard focus, light and
dark, go to test-artifacts/ (to docs/screenshots/ with REACTANT_LAB_SCREENSHOTS=1)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import open_in_lab, run_all_cells, wait_for_kernel_idle, write_notebook
from tests.browser.contrast import AA_LARGE, assert_contrast, contrast, parse_color
from tests.browser.test_explorer_ux_browser import _shoot, _theme

CELLS = [
    # Reproducers under the notebook's directory: the panel (and its screenshot) names no
    # directory of the machine.
    "%load_ext reactant_lab\nimport os\nimport numpy as np\nos.environ['REACTANT_LAB_REPRO_DIR'] = 'repro'\n"
    "x = np.linspace(0, 1, 64, dtype=np.float32)\na = np.linspace(0, 1, 5)",
    "%%reactant_jit\ndef f(v):\n    return np.sin(v) * 2 + np.cos(v) * v + 1\n\nf(x)",
    # A pass that fails: the error panel (stage, pass, MLIR's diagnostics, the module before it).
    "%%reactant_jit --pipeline canonicalize,transform-interpreter\ndef k(v):\n    v *= 3\n\nk(a)",
]
EXPLORER_CELL, ERROR_CELL = 1, 2
TABS = ["diff", "ir", "graph", "metrics", "xla", "code", "timing", "signature"]
"""The tabs of a CPU explorer (the code tab shows where XLA:CPU emitted kernels)."""
NAME = "accessibility.ipynb"


def _delete(url: str) -> None:
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=30).close()
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise


@pytest.fixture
def notebook(jupyterlab_server: Any, lab_page: Any) -> Iterator[str]:
    """The notebook in the server's root; afterwards its kernel is shut down and the theme light
    again (a server-wide setting later tests would inherit)."""
    write_notebook(Path(jupyterlab_server.root) / NAME,
                   [nbformat.v4.new_code_cell(source) for source in CELLS])
    try:
        yield NAME
    finally:
        try:
            if lab_page.locator('body[data-jp-theme-light="false"]').count():
                _theme(lab_page, dark=False)
        finally:
            for session in jupyterlab_server.api("api/sessions"):
                if session.get("path", "").endswith(NAME):
                    _delete(f"{jupyterlab_server.url}/api/sessions/{session['id']}")


def _output(page: Any, cell: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-OutputArea")


def _active(page: Any) -> dict:
    """What has the keyboard focus: its id, role, class, and whether it shows focus."""
    return page.evaluate("""() => {
      const e = document.activeElement;
      const s = getComputedStyle(e);
      return {id: e.id, role: e.getAttribute('role'), cls: String(e.className),
              tab: e.dataset.tab || null, focusVisible: e.matches(':focus-visible'),
              outline: s.outlineStyle, width: parseFloat(s.outlineWidth), color: s.outlineColor};
    }""")


def _background_of(locator: Any) -> str:
    """The first opaque background at or above the element."""
    return locator.evaluate("""e => {
      for (let n = e; n; n = n.parentElement) {
        const c = getComputedStyle(n).backgroundColor;
        const m = c.match(/rgba?\\(([^)]*)\\)/);
        if (m && (m[1].split(',').length < 4 || parseFloat(m[1].split(',')[3]) === 1)) return c;
      }
      return 'rgb(255, 255, 255)';
    }""")


def _assert_focus_shows(page: Any, locator: Any) -> None:
    """The focused element shows a focus outline (WCAG 2.4.7) of at least 3:1 against its
    background (WCAG 1.4.11)."""
    state = _active(page)
    assert state["focusVisible"], state
    assert state["outline"] != "none" and state["width"] >= 2, state
    ring = parse_color(state["color"])
    assert contrast(ring, _background_of(locator)) >= AA_LARGE, state


def _selected_stage(explorer: Any) -> int:
    return int(explorer.locator('.rl-stage-table tr[aria-selected="true"]').get_attribute(
        "data-stage"))


def _check_roles(explorer: Any) -> None:
    tablist = explorer.locator('[role="tablist"]')
    expect(tablist).to_have_count(1)
    tabs = tablist.locator('[role="tab"]')
    expect(tabs).to_have_count(len(TABS))
    expect(tablist.locator('[role="tab"][aria-selected="true"]')).to_have_count(1)
    expect(tablist.locator('[role="tab"][tabindex="0"]')).to_have_count(1)
    expect(tablist.locator('[role="tab"][tabindex="-1"]')).to_have_count(len(TABS) - 1)
    selected = tablist.locator('[role="tab"][aria-selected="true"]')
    panel_id = selected.get_attribute("aria-controls")
    panel = explorer.locator(f"#{panel_id}")
    expect(panel).to_have_attribute("role", "tabpanel")
    expect(panel).to_have_attribute("aria-labelledby", selected.get_attribute("id"))
    listbox = explorer.locator('.rl-stage-table[role="listbox"]')
    expect(listbox).to_have_count(1)
    assert listbox.get_attribute("aria-label")
    options = listbox.locator('tr[role="option"]')
    assert options.count() >= 2
    expect(listbox.locator('tr[role="option"][aria-selected="true"]')).to_have_count(1)
    expect(listbox.locator('tr[role="option"][aria-selected="false"]')).to_have_count(
        options.count() - 1)
    current = listbox.locator('tr[aria-selected="true"]')
    assert listbox.get_attribute("aria-activedescendant") == current.get_attribute("id")
    assert "stage" in (current.get_attribute("aria-label") or "")


def _drive_tabs(page: Any, explorer: Any) -> None:
    """Left / Right / Home / End move the selection and the focus along the tabs."""
    tab = explorer.locator('[role="tab"][aria-selected="true"]')
    tab.focus()
    start = TABS.index(tab.get_attribute("data-tab"))
    expected = start
    for key, to in (("ArrowRight", (start + 1) % len(TABS)), ("End", len(TABS) - 1),
                    ("ArrowRight", 0), ("ArrowLeft", len(TABS) - 1), ("Home", 0),
                    ("ArrowRight", 1)):
        page.keyboard.press(key)
        expected = to
        name = TABS[expected]
        expect(explorer.locator(f'.rl-tab-{name}')).to_have_attribute("aria-selected", "true")
        expect(explorer.locator('[role="tabpanel"]')).to_have_attribute("data-tab", name)
        assert _active(page)["tab"] == name, (key, _active(page))
    _assert_focus_shows(page, explorer.locator(f".rl-tab-{TABS[expected]}"))
    # Tab leaves the tablist (one tab stop), Shift+Tab comes back to the selected tab.
    page.keyboard.press("Tab")
    assert _active(page)["role"] != "tab"
    page.keyboard.press("Shift+Tab")
    assert _active(page)["tab"] == TABS[expected]
    page.keyboard.press("Home")
    expect(explorer.locator(".rl-tab-diff")).to_have_attribute("aria-selected", "true")


def _drive_stages(page: Any, explorer: Any) -> None:
    """Home / End / Up / Down / j / k move the selected stage; the focus stays on the list, the
    notebook's own shortcuts do not take the keys, and the compared-with stage is marked."""
    listbox = explorer.locator('.rl-stage-table[role="listbox"]')
    rows = listbox.locator('tr[role="option"]')
    stages = [int(rows.nth(i).get_attribute("data-stage")) for i in range(rows.count())]
    active_cell = page.locator(".jp-Notebook .jp-Cell.jp-mod-active")
    cell_before = active_cell.evaluate("e => [...e.parentElement.children].indexOf(e)")
    listbox.focus()
    for key, expected in (("End", stages[-1]), ("Home", stages[0]), ("ArrowDown", stages[1]),
                          ("j", stages[2] if len(stages) > 2 else stages[1]),
                          ("k", stages[1]), ("ArrowUp", stages[0]), ("End", stages[-1]),
                          ("ArrowUp", stages[-2])):
        page.keyboard.press(key)
        expect(listbox.locator(f'tr[data-stage="{expected}"]')).to_have_attribute(
            "aria-selected", "true")
        current = listbox.locator(f'tr[data-stage="{expected}"]')
        assert listbox.get_attribute("aria-activedescendant") == current.get_attribute("id")
        assert _active(page)["role"] == "listbox", (key, _active(page))
    assert active_cell.evaluate("e => [...e.parentElement.children].indexOf(e)") == cell_before
    _assert_focus_shows(page, listbox)
    # The stage the diff compares with (the one before, by default) is marked, in words too.
    selected = _selected_stage(explorer)
    base = listbox.locator("tr.rl-compared")
    expect(base).to_have_count(1)
    assert int(base.get_attribute("data-stage")) == selected - 1
    expect(base.locator(".rl-compared-mark")).to_have_text("base")
    assert "compared with" in base.get_attribute("aria-label")


def _check_hide_unchanged(explorer: Any) -> None:
    """Hiding the unchanged stages while one is selected selects a listed stage instead."""
    unchanged = explorer.locator('.rl-stage-table tr.unchanged[role="option"]')
    if not unchanged.count():
        return
    unchanged.first.click()
    toggle = explorer.locator(".rl-hide-unchanged input")
    toggle.check()
    expect(explorer.locator(".rl-stage-table tr.unchanged")).to_have_count(0)
    expect(explorer.locator('.rl-stage-table tr[aria-selected="true"]')).to_have_count(1)
    toggle.uncheck()


def _check_contrast(page: Any, explorer: Any, panel: Any, theme: str) -> list[str]:
    """Every visible text of each tab of the explorer, and of the error panel (the module
    before the failing pass opened), at WCAG AA. Returns a line per place measured."""
    seen = []
    for name in TABS:
        explorer.locator(f".rl-tab-{name}").click()
        expect(explorer.locator('[role="tabpanel"]')).to_have_attribute("data-tab", name)
        ready = {"diff": ".rl-diff-summary, .rl-note", "ir": ".rl-text .r",
                 "metrics": ".rl-ops td", "xla": ".rl-xla-facts", "timing": ".rl-bar",
                 "code": ".rl-text-llvm .r",
                 "signature": ".rl-signature td", "graph": ".rl-graph, .rl-note"}[name]
        explorer.locator(f'[role="tabpanel"] :is({ready})').first.wait_for()
        found = assert_contrast(page, ".jp-Notebook .rl-explorer", at_least=20)
        seen.append(f"{theme} {name}: {len(found)} texts, lowest "
                    f"{min(t.ratio for t in found):.2f}:1")
    explorer.locator(".rl-tab-diff").click()
    found = assert_contrast(page, ".jp-Notebook .reactant-lab-error", at_least=5)
    seen.append(f"{theme} error panel: {len(found)} texts, lowest "
                f"{min(t.ratio for t in found):.2f}:1")
    assert panel.locator("pre").count() >= 2
    return seen


def test_explorer_keyboard_aria_and_contrast_light_and_dark(
        jupyterlab_server: Any, lab_page: Any, notebook: str, artifacts_dir: Path) -> None:
    page = lab_page
    open_in_lab(page, jupyterlab_server, notebook)
    wait_for_kernel_idle(page)
    _theme(page, dark=False)
    run_all_cells(page, timeout=240_000)
    explorer = _output(page, EXPLORER_CELL).locator(".rl-explorer.rl-live")
    explorer.wait_for(timeout=120_000)
    explorer.locator('.rl-stage-table tr[role="option"]').nth(1).wait_for()
    panel = _output(page, ERROR_CELL).locator(".reactant-lab-error")
    panel.wait_for(timeout=120_000)
    assert "PassFailedError" in panel.inner_text()
    panel.locator("summary").click()  # the module before the failing pass, shown
    expect(panel.locator("details pre")).to_be_visible()

    _check_roles(explorer)
    heads = explorer.locator(".rl-tab-metrics")
    heads.click()
    names = explorer.locator(".rl-ops thead .rl-col-name").all_inner_texts()
    assert len(names) >= 2 and all(n.strip() for n in names), names  # not bare numbers
    explorer.locator(".rl-tab-diff").click()

    measured = []
    for theme in ("light", "dark"):
        _theme(page, dark=theme == "dark")
        _check_roles(explorer)
        _drive_tabs(page, explorer)
        _drive_stages(page, explorer)
        _shoot(explorer, f"explorer-keyboard-focus-{theme}")
        measured += _check_contrast(page, explorer, panel, theme)
        _shoot(panel, f"error-panel-{theme}")
    _check_hide_unchanged(explorer)
    (artifacts_dir / "contrast.txt").write_text("\n".join(measured) + "\n")
    assert not page.errors, page.errors
