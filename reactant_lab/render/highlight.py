"""MLIR syntax highlighting to HTML: lexer tokens -> escaped ``<span>``s (CSS classes below)."""

from __future__ import annotations

import html
import re

from reactant_lab.analysis.lexer import tokenize

CLASSES = {"op": "o", "dialect": "d", "ssa": "v", "block": "b", "symbol": "s", "type": "t",
           "attr": "a", "key": "k", "kw": "w", "str": "q", "num": "n", "comment": "c", "loc": "l"}
"""Token kind -> CSS class (short: a large module is mostly markup)."""


def esc(text: str) -> str:
    """Escape text for HTML content and attribute values (quotes included)."""
    return html.escape(text, quote=True)


LONG_LINE = 2_000
"""Lines longer than this are shown elided in diffs: their head and the text around their
changes (or just their start)."""
_AROUND = 120

_SSA = r"%[A-Za-z0-9$._-]+(?::\d+)?"
_OP = r"[A-Za-z_][\w$]*(?:\.[\w$]+)+"
_MLIR_HEAD = re.compile(rf'\s*({_SSA}(?:\s*,\s*{_SSA})*\s*=\s*)?("{_OP}"|{_OP})(?=[\s(<{{"]|$)(?!\s*=)',
                        re.ASCII)
_HLO_HEAD = re.compile(r"\s*((?:ROOT\s+)?%?[\w.-]+\s*=)\s*(\([^()]*\)|[^\s(]+)\s+([a-z][\w-]*)(?=\()",
                       re.ASCII)


def line_head(line: str) -> tuple[int, ...]:
    """Flat (start, end, ...) character ranges of a line's head, which an elided line always
    shows: its result names with the ``=`` and its op name, in MLIR (``%0:4 = stablehlo.while``)
    or XLA's HLO (``ROOT %add.3 =`` ... ``add``). The explorer's front end has the same rule
    (labextension/src/explorer/linefit.ts, kept in step by a shared fixture)."""
    m = _MLIR_HEAD.match(line)
    if m:
        return (m.end() - len(m.group(2)) - len(m.group(1) or ""), m.end())
    h = _HLO_HEAD.match(line)
    if h:
        start = len(line) - len(line.lstrip())
        return (start, start + len(h.group(1)), h.end() - len(h.group(3)), h.end())
    return ()


def _windows(line: str, spans: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    """Character ranges of a long line worth showing: its head (results and op name), and
    around each changed span, else its start."""
    n = len(line)
    head = line_head(line)
    out: list[tuple[int, int]] = [(0, head[1] if head else 0)]
    if len(head) > 2:
        out.append((head[2], head[3]))
    if not spans:
        out.append((0, _AROUND * 2))
    shown = 0
    for start, end in spans:
        if shown > LONG_LINE:  # the first changes are enough to see what a pass did here
            break
        lo, hi = max(0, start - _AROUND), min(n, end + _AROUND, start + LONG_LINE)
        shown += hi - lo
        out.append((lo, hi))
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(w for w in out if w[1] > w[0]):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def highlight_line(line: str, spans: tuple[tuple[int, int], ...] = (),
                   elide: bool = False) -> str:
    """One line as HTML; tokens inside ``spans`` (character ranges) also get class ``x``. With
    ``elide``, a line over ``LONG_LINE`` characters keeps only its head (``line_head``) and the
    text around its spans."""
    windows = _windows(line, spans) if elide and len(line) > LONG_LINE else [(0, len(line))]
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
