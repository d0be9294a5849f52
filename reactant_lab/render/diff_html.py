"""A Diff as an HTML fragment: side by side or unified, intra-line changes marked, unchanged
runs folded (with ``<details>``, so folding works without JavaScript)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reactant_lab import checks
from reactant_lab.analysis.diff import Diff
from reactant_lab.errors import RenderError
from reactant_lab.render.highlight import esc, highlight_line

if TYPE_CHECKING:
    from reactant_lab.analysis.diff import Block, Row

LAYOUTS = ("side-by-side", "unified")
FOLD_INLINE_MAX = 200
"""Folded runs up to this many lines keep their text (behind a click); longer ones only say
how many lines they hide, so a small change in a huge module stays a small fragment."""


def diff_html(d: Diff, layout: str = "side-by-side", context: int = 3,
              max_rows: int | None = 1_000) -> str:
    """HTML fragment of ``d``: side by side or unified, unchanged runs folded beyond ``context``
    lines. Past ``max_rows`` changed lines (None: all) it stops with a note saying how many were
    left out: a pass rewriting a huge module changes more lines than anyone reads, and each
    costs markup."""
    checks.instance("d", d, Diff, "a Diff from rl.diff(before, after)")
    checks.count("context", context)
    checks.count("max_rows", max_rows, minimum=1, none=True)
    if layout not in LAYOUTS:
        raise RenderError(f"unknown diff layout {layout!r}; use one of {', '.join(LAYOUTS)}")
    sbs = layout == "side-by-side"
    cls = "sbs" if sbs else "uni"
    head = (f'<div class="dh">{esc(d.before_name)} &rarr; {esc(d.after_name)}: '
            f'<b>{esc(d.summary())}</b></div>')
    if not d:
        note = ("locations, SSA numbering and attribute alias order are ignored" if d.structural
                else "the texts are identical")
        return f'<div class="diff {cls}">{head}<div class="empty">{note}</div></div>'
    parts = [f'<div class="diff {cls}">', head]
    last = len(d.blocks) - 1
    budget = max_rows if max_rows is not None else -1
    for n, block in enumerate(d.blocks):
        if block.equal:
            parts.append(_equal_run(d, block, sbs, context, first=n == 0, final=n == last))
            continue
        for row in block.rows:
            if budget == 0:
                assert max_rows is not None  # without a limit the budget never runs out
                left = d.added + d.removed + d.changed - max_rows
                parts.append(f'<div class="fold more">{left:,} more changed lines are not '
                             "shown here</div></div>")
                return "".join(parts)
            parts.append(_change_row(d, row, sbs))
            budget -= 1
    parts.append("</div>")
    return "".join(parts)


def _cell(d: Diff, side: str, index: int | None, kind: str,
          spans: tuple[tuple[int, int], ...] = ()) -> str:
    """Line number and code cells of one side of a row."""
    if index is None:
        return '<span class="ln"></span><span class="cd"></span>'
    lines, numbers = (d.before, d.before_lines) if side == "a" else (d.after, d.after_lines)
    return (f'<span class="ln">{numbers[index]}</span>'
            f'<span class="cd {kind}">{highlight_line(lines[index], spans, elide=True)}</span>')


def _equal_line(d: Diff, i: int, j: int, sbs: bool) -> str:
    if sbs:
        return f'<div class="r">{_cell(d, "a", i, "")}{_cell(d, "b", j, "")}</div>'
    return (f'<div class="r"><span class="ln">{d.before_lines[i]}</span>'
            f'<span class="ln">{d.after_lines[j]}</span><span class="mk"> </span>'
            f'<span class="cd">{highlight_line(d.after[j], elide=True)}</span></div>')


def _change_row(d: Diff, row: Row, sbs: bool) -> str:
    a_spans, b_spans = d.spans(row)
    if sbs:
        return (f'<div class="r">{_cell(d, "a", row.a, "del", a_spans)}'
                f'{_cell(d, "b", row.b, "add", b_spans)}</div>')
    out = []
    if row.a is not None:
        out.append(f'<div class="r"><span class="ln">{d.before_lines[row.a]}</span>'
                   f'<span class="ln"></span><span class="mk">-</span><span class="cd del">'
                   f'{highlight_line(d.before[row.a], a_spans, elide=True)}</span></div>')
    if row.b is not None:
        out.append(f'<div class="r"><span class="ln"></span><span class="ln">'
                   f'{d.after_lines[row.b]}</span><span class="mk">+</span><span class="cd add">'
                   f'{highlight_line(d.after[row.b], b_spans, elide=True)}</span></div>')
    return "".join(out)


def _equal_run(d: Diff, block: Block, sbs: bool, context: int, first: bool,
               final: bool) -> str:
    """Context lines next to changes, the rest of the run folded."""
    n = block.a1 - block.a0
    head = 0 if first else min(context, n)
    tail = 0 if final else min(context, n - head)
    if n - head - tail == 1:  # folding one line saves nothing
        head += 1
    pairs = list(zip(range(block.a0, block.a1), range(block.b0, block.b1), strict=True))
    out = [_equal_line(d, i, j, sbs) for i, j in pairs[:head]]
    hidden = pairs[head:n - tail]
    if hidden:
        where = (f"lines {d.before_lines[hidden[0][0]]}-{d.before_lines[hidden[-1][0]]} before, "
                 f"{d.after_lines[hidden[0][1]]}-{d.after_lines[hidden[-1][1]]} after")
        label = f"{len(hidden):,} unchanged line{'s' if len(hidden) != 1 else ''} ({where})"
        if len(hidden) <= FOLD_INLINE_MAX:
            rows = "".join(_equal_line(d, i, j, sbs) for i, j in hidden)
            out.append(f'<details class="fold"><summary>{label}</summary>{rows}</details>')
        else:
            out.append(f'<div class="fold">{label}: see the stage&#39;s IR</div>')
    out.extend(_equal_line(d, i, j, sbs) for i, j in pairs[n - tail:])
    return "".join(out)


def diff_rows(d: Diff, context: int = 3, span_rows: int | None = None) -> list[list[Any]]:
    """A compact, JSON-able form of the diff for a front end (docs/explorer-schema.md): line
    numbers into the two modules' ``as_text()`` lines, character spans flattened (for the first
    ``span_rows`` changed rows only, when given: past them computing spans costs more than a
    reader gains)."""
    out: list[list[Any]] = []
    budget = span_rows if span_rows is not None else -1
    last = len(d.blocks) - 1
    for n, block in enumerate(d.blocks):
        if not block.equal:
            for r in block.rows:
                a = d.before_lines[r.a] if r.a is not None else None
                b = d.after_lines[r.b] if r.b is not None else None
                a_spans, b_spans = d.spans(r) if budget != 0 else ((), ())
                budget -= 1
                a_sp = [x for span in a_spans for x in span]
                b_sp = [x for span in b_spans for x in span]
                out.append({"removed": ["-", a, a_sp], "added": ["+", b, b_sp]}.get(
                    r.kind, ["~", a, b, a_sp, b_sp]))
            continue
        size = block.a1 - block.a0
        head = 0 if n == 0 else min(context, size)
        tail = 0 if n == last else min(context, size - head)
        pairs = [[d.before_lines[i], d.after_lines[j]] for i, j in
                 zip(range(block.a0, block.a1), range(block.b0, block.b1), strict=True)]
        out.append(["=", size - head - tail, pairs[:head], pairs[size - tail:]])
    return out
