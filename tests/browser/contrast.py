"""WCAG 2 contrast checks for the browser tests: the relative luminance contrast of an element's
text colour against its effective background (the backgrounds of it and its ancestors composited,
down to the first opaque one; the page is white when none is).

``contrast(fg, bg)`` and ``parse_color`` work on colour strings (``#rgb``, ``#rrggbb``,
``rgb()``/``rgba()``) for anything measured outside the DOM (an SVG's fills, say);
``text_contrasts(page, selector)`` measures every visible text of the elements ``selector``
matches in a Playwright page, and ``low_contrast`` keeps those under the WCAG AA minimum (4.5:1
for normal text, 3:1 for large text: 24px, or 18.66px bold)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

AA_NORMAL = 4.5
AA_LARGE = 3.0

RGBA = tuple[float, float, float, float]


def parse_color(text: str) -> RGBA:
    """``#rgb``, ``#rrggbb``, ``#rrggbbaa``, ``rgb(r, g, b)`` or ``rgba(r, g, b, a)`` (also the
    space-separated ``rgb(r g b / a)``) or ``color(srgb r g b [/ a])`` (channels 0-1) as
    (r, g, b, a), channels 0-255 and alpha 0-1."""
    s = text.strip().lower()
    if s == "transparent":
        return (0.0, 0.0, 0.0, 0.0)
    if s.startswith("#"):
        h = s[1:]
        if len(h) in (3, 4):
            h = "".join(c * 2 for c in h)
        if len(h) not in (6, 8):
            raise ValueError(f"not a colour: {text!r}")
        r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
        return (float(r), float(g), float(b), int(h[6:8], 16) / 255 if len(h) == 8 else 1.0)
    srgb = re.fullmatch(r"color\(srgb\s+([^)]*)\)", s)  # what color-mix() computes to
    if srgb:
        parts = [p for p in re.split(r"[\s/]+", srgb.group(1)) if p]
        if len(parts) not in (3, 4):
            raise ValueError(f"not a colour: {text!r}")
        r, g, b = (float(p) * 255 for p in parts[:3])
        return (r, g, b, float(parts[3]) if len(parts) == 4 else 1.0)
    m = re.fullmatch(r"rgba?\(([^)]*)\)", s)
    if not m:
        raise ValueError(f"not a colour: {text!r}")
    parts = [p for p in re.split(r"[\s,/]+", m.group(1)) if p]
    if len(parts) not in (3, 4):
        raise ValueError(f"not a colour: {text!r}")

    def channel(p: str) -> float:
        return float(p[:-1]) * 2.55 if p.endswith("%") else float(p)

    alpha = 1.0
    if len(parts) == 4:
        alpha = float(parts[3][:-1]) / 100 if parts[3].endswith("%") else float(parts[3])
    return (channel(parts[0]), channel(parts[1]), channel(parts[2]), alpha)


def over(top: RGBA, bottom: RGBA) -> RGBA:
    """``top`` composited over an opaque ``bottom``."""
    a = top[3]
    return (top[0] * a + bottom[0] * (1 - a), top[1] * a + bottom[1] * (1 - a),
            top[2] * a + bottom[2] * (1 - a), 1.0)


def luminance(color: RGBA) -> float:
    """WCAG 2 relative luminance of an opaque colour."""
    def lin(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * lin(color[0]) + 0.7152 * lin(color[1]) + 0.0722 * lin(color[2])


def contrast(fg: str | RGBA, bg: str | RGBA) -> float:
    """WCAG contrast ratio (1-21) of text colour ``fg`` (composited over ``bg`` when it is
    translucent) on background ``bg`` (composited over white when translucent)."""
    f = parse_color(fg) if isinstance(fg, str) else fg
    b = parse_color(bg) if isinstance(bg, str) else bg
    if b[3] < 1:
        b = over(b, (255.0, 255.0, 255.0, 1.0))
    if f[3] < 1:
        f = over(f, b)
    hi, lo = sorted((luminance(f), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@dataclass(frozen=True)
class TextContrast:
    """One visible text element as measured in the page."""

    where: str
    """A short description of the element: tag, classes, and the start of its text."""
    text: str
    color: str
    background: str
    ratio: float
    large: bool

    @property
    def minimum(self) -> float:
        return AA_LARGE if self.large else AA_NORMAL

    def __str__(self) -> str:
        return (f"{self.ratio:.2f}:1 (< {self.minimum}) {self.where}: {self.color} on "
                f"{self.background}")


# Runs in the page: for each element under the roots with a visible text node of its own, its
# colour and the background layers from it up to the first opaque one (all normalised by a
# canvas, so any CSS colour syntax comes back as #rrggbb or rgba()).
_MEASURE = r"""([selector, limit]) => {
  const ctx = document.createElement('canvas').getContext('2d');
  const norm = c => { ctx.fillStyle = '#000'; ctx.fillStyle = c; return String(ctx.fillStyle); };
  const hidden = e => {
    for (let n = e; n; n = n.parentElement) {
      const s = getComputedStyle(n);
      if (s.display === 'none' || s.visibility === 'hidden' || Number(s.opacity) === 0) return true;
      if (n.matches(':disabled') || n.getAttribute('aria-disabled') === 'true') return true;
    }
    return false;
  };
  const layers = e => {
    const out = [];
    for (let n = e; n; n = n.parentElement) {
      const bg = norm(getComputedStyle(n).backgroundColor);
      out.push(bg);
      if (bg.startsWith('#')) break;
    }
    return out;
  };
  const seen = new Set();
  const found = [];
  for (const root of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t && found.length < limit; t = walker.nextNode()) {
      const e = t.parentElement;
      if (!e || seen.has(e) || !t.data.trim() || ['SCRIPT', 'STYLE', 'OPTION'].includes(e.tagName)) continue;
      seen.add(e);
      const r = e.getBoundingClientRect();
      if (r.width < 1 || r.height < 1 || hidden(e)) continue;
      const s = getComputedStyle(e);
      const size = parseFloat(s.fontSize);
      const bold = Number(s.fontWeight) >= 700 || s.fontWeight === 'bold';
      const cls = typeof e.className === 'string' && e.className.trim()
        ? '.' + e.className.trim().split(/\s+/).join('.') : '';
      found.push({
        where: `${e.tagName.toLowerCase()}${cls} "${t.data.trim().slice(0, 30)}"`,
        text: t.data.trim().slice(0, 200),
        color: norm(s.color),
        layers: layers(e),
        large: size >= 24 || (bold && size >= 18.66)
      });
    }
  }
  return found;
}"""


def _background(layers: list[str]) -> RGBA:
    """The layers (innermost first, the last opaque or the page's) composited."""
    color: RGBA = (255.0, 255.0, 255.0, 1.0)
    for layer in reversed(layers):
        c = parse_color(layer)
        color = c if c[3] >= 1 else over(c, color)
    return color


def _css(c: RGBA) -> str:
    return "#" + "".join(f"{round(v):02x}" for v in c[:3])


def text_contrasts(page: Any, selector: str, limit: int = 5000) -> list[TextContrast]:
    """Every visible text element under the elements matching ``selector`` (disabled controls
    left out: WCAG exempts them), with its contrast ratio."""
    out = []
    for item in page.evaluate(_MEASURE, [selector, limit]):
        bg = _background(item["layers"])
        fg = parse_color(item["color"])
        out.append(TextContrast(item["where"], item["text"], item["color"], _css(bg),
                                contrast(fg, bg), item["large"]))
    return out


def low_contrast(page: Any, selector: str) -> list[TextContrast]:
    """The texts under ``selector`` whose contrast is under WCAG AA's minimum."""
    return [t for t in text_contrasts(page, selector) if t.ratio < t.minimum]


def assert_contrast(page: Any, selector: str, at_least: int = 1) -> list[TextContrast]:
    """Fail, listing each offender, when a text under ``selector`` is under WCAG AA's minimum;
    also when fewer than ``at_least`` texts were measured (nothing visible was checked).
    Returns the measurements."""
    found = text_contrasts(page, selector)
    assert len(found) >= at_least, f"only {len(found)} visible texts under {selector}"
    bad = [t for t in found if t.ratio < t.minimum]
    assert not bad, f"{len(bad)} texts under {selector} below WCAG AA:\n" + "\n".join(
        str(t) for t in bad[:40])
    return found
