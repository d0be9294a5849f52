"""MLIR syntax highlighting to HTML: lexer tokens -> escaped ``<span>``s (CSS classes below)."""

from __future__ import annotations

import html

from reactant_lab.analysis.lexer import tokenize

CLASSES = {"op": "o", "dialect": "d", "ssa": "v", "block": "b", "symbol": "s", "type": "t",
           "attr": "a", "key": "k", "kw": "w", "str": "q", "num": "n", "comment": "c", "loc": "l"}
"""Token kind -> CSS class (short: a large module is mostly markup)."""


def esc(text: str) -> str:
    """Escape text for HTML content and attribute values (quotes included)."""
    return html.escape(text, quote=True)


LONG_LINE = 2_000
"""Lines longer than this are shown elided in diffs: around the changes, or just their start."""
_AROUND = 120


def _windows(n: int, spans: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    """Character ranges of a long line worth showing: around each changed span, else its start."""
    if not spans:
        return [(0, _AROUND * 2)]
    out: list[tuple[int, int]] = []
    shown = 0
    for start, end in spans:
        if shown > LONG_LINE:  # the first changes are enough to see what a pass did here
            break
        lo, hi = max(0, start - _AROUND), min(n, end + _AROUND, start + LONG_LINE)
        if out and lo <= out[-1][1]:
            shown += max(0, hi - out[-1][1])
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            shown += hi - lo
            out.append((lo, hi))
    return out


def highlight_line(line: str, spans: tuple[tuple[int, int], ...] = (),
                   elide: bool = False) -> str:
    """One line as HTML; tokens inside ``spans`` (character ranges) also get class ``x``. With
    ``elide``, a line over ``LONG_LINE`` characters keeps only the text around its spans."""
    windows = _windows(len(line), spans) if elide and len(line) > LONG_LINE else [(0, len(line))]
    out: list[str] = []
    pos = 0
    k = 0
    w = 0
    for kind, text in tokenize(line):
        end = pos + len(text)
        while k < len(spans) and spans[k][1] <= pos:
            k += 1
        marked = k < len(spans) and spans[k][0] < end and spans[k][1] > pos
        cls = CLASSES.get(kind)
        if marked:
            cls = f"{cls} x" if cls else "x"
        while w < len(windows) and windows[w][1] <= pos:
            w += 1
            out.append(_elided(windows[w - 1][1], windows[w][0] if w < len(windows) else
                               len(line)))
        if w < len(windows) and windows[w][0] < end:
            part = text[max(0, windows[w][0] - pos):windows[w][1] - pos]
            out.append(f'<span class="{cls}">{esc(part)}</span>' if cls else esc(part))
        pos = end
    if windows[-1][1] < len(line) and w == len(windows) - 1:
        out.append(_elided(windows[-1][1], len(line)))
    if windows[0][0] > 0:
        out.insert(0, _elided(0, windows[0][0]))
    return "".join(out)


def _elided(start: int, end: int) -> str:
    return f'<span class="el">[{end - start:,} characters]</span>' if end > start else ""


def highlight(text: str) -> str:
    """A whole module as ``<pre class="mlir">`` with highlighted lines."""
    body = "\n".join(highlight_line(line) for line in text.splitlines())
    return f'<pre class="mlir"><code>{body}</code></pre>'


def plain(text: str) -> str:
    """A whole module as escaped ``<pre class="mlir">`` without highlighting (for huge texts)."""
    return f'<pre class="mlir"><code>{esc(text)}</code></pre>'
