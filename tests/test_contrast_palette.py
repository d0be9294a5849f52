"""The explorer's and the error panel's colours, without a browser: every text colour of the
explorer's stylesheet (labextension/src/explorer/style.ts) against every background it can sit on,
and the error panel's colour pairs, reach WCAG AA (4.5:1) in JupyterLab's light and dark themes
and in the report (no JupyterLab variables). The browser test
(tests/browser/test_accessibility_browser.py) measures what a real JupyterLab draws."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reactant_lab.errors import PassFailedError
from reactant_lab.notebook.display import error_bundle
from tests.browser.contrast import AA_NORMAL, contrast, over, parse_color

REPO = Path(__file__).resolve().parents[1]
STYLE = REPO / "labextension" / "src" / "explorer" / "style.ts"

# JupyterLab 4's theme values of the variables the explorer and the error panel read.
JUPYTERLAB = {
    "light": {"--jp-ui-font-color1": "rgba(0,0,0,.87)", "--jp-layout-color0": "#ffffff",
              "--jp-layout-color1": "#ffffff", "--jp-layout-color2": "#eeeeee",
              "--jp-content-font-color1": "rgba(0,0,0,.87)",
              "--jp-rendermime-error-background": "#ffdddd"},
    "dark": {"--jp-ui-font-color1": "rgba(255,255,255,.87)", "--jp-layout-color0": "#111111",
             "--jp-layout-color1": "#212121", "--jp-layout-color2": "#424242",
             "--jp-content-font-color1": "#ffffff",
             "--jp-rendermime-error-background": "rgba(244,67,54,.28)"},
    "report": {},
}
TEXTS = ["--rl-fg", "--rl-mute", "--rl-red", "--rl-amber", "--rl-orange", "--rl-green",
         *(f"--rl-tk-{k}" for k in "odvbstakwqnc")]
TINTS = ["--rl-sel", "--rl-add", "--rl-del", "--rl-addx", "--rl-delx", "--rl-hit"]


def _declarations(block: str) -> dict[str, str]:
    return dict(re.findall(r"(--rl-[\w-]+):([^;}]+)", block))


def palette(theme: str) -> dict[str, str]:
    """The explorer's --rl-* variables in ``theme``, JupyterLab's variables resolved."""
    css = STYLE.read_text()
    base = re.search(r"\n\.rl-explorer\{(.*?)\}", css, re.S)
    dark = re.search(r"\[data-jp-theme-light=false\] \.rl-explorer\{(.*?)\}", css, re.S)
    assert base and dark
    values = _declarations(base.group(1))
    if theme == "dark":
        values.update(_declarations(dark.group(1)))
    jp = JUPYTERLAB[theme]

    def resolve(v: str) -> str:
        m = re.fullmatch(r"var\((--[\w-]+),(.+)\)", v.strip())
        return (jp.get(m.group(1)) or m.group(2)).strip() if m else v.strip()

    return {k: resolve(v) for k, v in values.items()}


@pytest.mark.parametrize("theme", ["light", "dark", "report"])
def test_every_explorer_text_colour_reads_on_every_background(theme: str) -> None:
    p = palette(theme)
    page = parse_color(p["--rl-bg"])
    backgrounds = {"bg": page, "bg2": over(parse_color(p["--rl-bg2"]), page),
                   **{t: over(parse_color(p[t]), page) for t in TINTS}}
    low = [f"{t} on {b}: {contrast(p[t], bg):.2f}" for t in TEXTS
           for b, bg in backgrounds.items() if contrast(p[t], bg) < AA_NORMAL]
    assert not low, low


def _styles(html: str, tag: str) -> list[str]:
    return re.findall(rf'<{tag}\b[^>]*style="([^"]*)"', html)


@pytest.mark.parametrize("theme", ["light", "dark", "report"])
def test_the_error_panel_reads_in_light_and_dark_themes(theme: str) -> None:
    exc = PassFailedError("transform-interpreter failed", stage="custom",
                          pass_name="transform-interpreter", diagnostics="error: no entry point",
                          last_good_ir="module {\n}\n", reproducer="/tmp/repro")
    html = error_bundle(exc)["text/html"]
    jp = JUPYTERLAB[theme]

    def value(style: str, prop: str) -> str | None:
        m = re.search(rf"(?:^|;){prop}:([^;]+)", style)
        if not m:
            return None
        v = m.group(1).strip()
        var = re.fullmatch(r"var\((--[\w-]+),(.+)\)", v)
        return (jp.get(var.group(1)) or var.group(2)).strip() if var else v

    [panel] = _styles(html, "div")[:1]
    panel_bg = over(parse_color(value(panel, "background-color") or "#fff"), (255, 255, 255, 1)
                    if theme != "dark" else parse_color(jp["--jp-layout-color0"]))
    checked = 0
    for tag in ("div", "pre", "th", "td", "code", "summary", "p"):
        for style in _styles(html, tag):
            fg = value(style, "color")
            assert fg, f"<{tag}> without a colour of its own: {style}"
            bg = value(style, "background-color")
            under = panel_bg if bg in (None, "transparent") else over(parse_color(bg), panel_bg)
            assert contrast(fg, under) >= AA_NORMAL, (tag, style, contrast(fg, under))
            checked += 1
    assert checked >= 6
    # Every colour is a JupyterLab variable (a sanitized output drops them all together) but
    # the accent border, which is no text.
    colours = re.findall(r"(?:color|background-color):([^;\"]+)", html)
    assert all(c.startswith("var(--jp-") or c == "transparent" for c in colours), colours
