"""Stage-to-stage diffs: structural (modulo SSA renaming, locations, aliases) or textual."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from reactant_lab import checks
from reactant_lab.analysis.align import align
from reactant_lab.analysis.hlo import hlo_opcode
from reactant_lab.analysis.lexer import tokenize
from reactant_lab.analysis.normalize import ssa_template, strip_locations, structural_lines
from reactant_lab.errors import AnalysisError

_DEFS = re.compile(r"^\s*((?:%[A-Za-z0-9$._-]+(?::\d+)?\s*,\s*)*%[A-Za-z0-9$._-]+(?::\d+)?)\s*=")
_DEF_NAME = re.compile(r"%[A-Za-z0-9$._-]+")
_DECL = re.compile(r"(?:^|[(,]\s*)(%[A-Za-z0-9$._-]+)(?:: | = %)")
_OP_NAME = re.compile(r'^\s*(?:%[^=]*=\s*)?"?([A-Za-z_^][\w$.^]*|\S)')
_FUNC = re.compile(r"^\s*func\.func\b")

_Spans = tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]
"""Changed character ranges of a before line and of an after line."""


@dataclass(frozen=True)
class Row:
    """One line of a change: removed, added, or changed (a before line against an after line)."""

    kind: str
    """'removed', 'added' or 'changed'."""
    a: int | None
    """Index into ``Diff.before`` (None for an added line)."""
    b: int | None
    """Index into ``Diff.after`` (None for a removed line)."""
    scope: int = 0
    """Which function's renaming applies to it (an index into ``Diff.renamings``)."""


@dataclass(frozen=True)
class Block:
    """A run of a diff: lines equal on both sides, or a change."""

    equal: bool
    """True for a run of unchanged lines."""
    a0: int
    """First before line of the run (index into ``Diff.before``)."""
    a1: int
    """One past its last before line."""
    b0: int
    """First after line of the run."""
    b1: int
    """One past its last after line."""
    rows: tuple[Row, ...] = ()
    """The changed lines, in reading order (empty for an equal run)."""


@dataclass(frozen=True)
class Diff:
    """What changed between two modules, line by line."""

    before: tuple[str, ...] = field(repr=False)
    """The before lines that were compared, as shown (locations stripped, argument names kept)."""
    after: tuple[str, ...] = field(repr=False)
    """The after lines that were compared."""
    before_lines: tuple[int, ...] = field(repr=False)
    """1-based line number of each before line in the module's ``as_text()``."""
    after_lines: tuple[int, ...] = field(repr=False)
    """1-based line number of each after line."""
    blocks: tuple[Block, ...] = field(repr=False)
    """Equal runs and changes covering both sides in order."""
    structural: bool
    """Whether SSA renaming, locations and alias order were ignored."""
    before_name: str = "before"
    """Label of the before side (a stage name)."""
    after_name: str = "after"
    """Label of the after side."""
    renamings: tuple[dict[str, str], ...] = field(default=({},), repr=False, compare=False)
    """Per function, the before -> after SSA renaming the comparison found."""
    _spans: dict[tuple[int, int], _Spans] = field(default_factory=dict, repr=False, compare=False)

    def spans(self, row: Row) -> _Spans:
        """Character ranges that differ inside a changed row's before and after lines (computed
        on demand: a view shows a few rows of a large diff)."""
        checks.instance("row", row, Row, "a Row of one of this Diff's blocks")
        if row.kind != "changed" or row.a is None or row.b is None:
            return (), ()
        key = (row.a, row.b)
        if key not in self._spans:
            renaming = self.renamings[row.scope] if self.structural else None
            self._spans[key] = _intra_line(self.before[row.a], self.after[row.b], renaming)
        return self._spans[key]

    def _count(self, kind: str) -> int:
        return sum(1 for b in self.blocks for r in b.rows if r.kind == kind)

    @property
    def added(self) -> int:
        """Lines only in after."""
        return self._count("added")

    @property
    def removed(self) -> int:
        """Lines only in before."""
        return self._count("removed")

    @property
    def changed(self) -> int:
        """Lines present on both sides with a different content."""
        return self._count("changed")

    def __bool__(self) -> bool:
        return any(not b.equal for b in self.blocks)

    def summary(self) -> str:
        """One line: '+added -removed ~changed', or 'no change'."""
        if not self:
            return "no structural change" if self.structural else "no change"
        return f"+{self.added} -{self.removed} ~{self.changed}"

    def text(self, context: int = 3) -> str:
        """Plain-text unified view: '-' removed, '+' added, a changed line as '-' then '+', and
        '~ N unchanged lines' for the runs beyond ``context`` lines of a change."""
        checks.count("context", context)
        out = [f"--- {self.before_name}", f"+++ {self.after_name}"]
        last = len(self.blocks) - 1
        for n, b in enumerate(self.blocks):
            if not b.equal:
                for r in b.rows:
                    if r.a is not None:
                        out.append(f"-{self.before_lines[r.a]:>5} {self.before[r.a]}")
                    if r.b is not None:
                        out.append(f"+{self.after_lines[r.b]:>5} {self.after[r.b]}")
                continue
            size = b.a1 - b.a0
            head = 0 if n == 0 else min(context, size)
            tail = 0 if n == last else min(context, size - head)
            if size - head - tail == 1:
                head += 1
            shown = [*range(b.a0, b.a0 + head), *range(b.a1 - tail, b.a1)]
            out += [f" {self.before_lines[i]:>5} {self.before[i]}" for i in shown[:head]]
            if size - head - tail:
                out.append(f"~ {size - head - tail:,} unchanged lines")
            out += [f" {self.before_lines[i]:>5} {self.before[i]}" for i in shown[head:]]
        return "\n".join(out) + "\n"

    def __repr__(self) -> str:
        return f"<Diff {self.before_name} -> {self.after_name}: {self.summary()}>"


@runtime_checkable
class _HasText(Protocol):
    def as_text(self) -> str: ...


def module_text(value: Any) -> str:
    """Module text of a Stage, a Traced, anything with ``as_text``, or a string."""
    if isinstance(value, str):
        return value
    for attr in ("ir", "text"):
        text = getattr(value, attr, None)
        if isinstance(text, str):
            return text
    if isinstance(value, _HasText):
        return value.as_text()
    raise AnalysisError(f"cannot diff a {type(value).__name__}: pass module text (str), a Stage "
                        "or a Traced")


def diff(before: Any, after: Any, structural: bool = True) -> Diff:
    """Compare two modules (Stage, Traced or text). ``structural=True`` ignores SSA renaming,
    locations and attribute alias order; a change there is not a change."""
    checks.flag("structural", structural)
    names = [getattr(v, "name", None) or default for v, default in
             ((before, "before"), (after, "after"))]
    a_text, b_text = module_text(before), module_text(after)
    if structural:
        a_lines, a_no, a_tpl = _structural_side(a_text)
        b_lines, b_no, b_tpl = _structural_side(b_text)
    else:
        a_lines = tuple(strip_locations(a_text).splitlines()) if not isinstance(before, str) \
            else tuple(a_text.splitlines())
        b_lines = tuple(strip_locations(b_text).splitlines()) if not isinstance(after, str) \
            else tuple(b_text.splitlines())
        a_no, b_no = tuple(range(1, len(a_lines) + 1)), tuple(range(1, len(b_lines) + 1))
        a_tpl = tuple((line, ()) for line in a_lines)
        b_tpl = tuple((line, ()) for line in b_lines)
    builder = _Builder(a_lines, b_lines, a_tpl, b_tpl, structural)
    for tag, a0, a1, b0, b1 in align([t for t, _ in a_tpl], [t for t, _ in b_tpl]):
        if tag == "equal":
            builder.equal(a0, a1, b0, b1)
        else:
            builder.change(a0, a1, b0, b1)
    return Diff(a_lines, b_lines, a_no, b_no, tuple(builder.blocks), structural,
                names[0], names[1], tuple(builder.maps))


_Templates = tuple[tuple[str, tuple[str, ...]], ...]


@lru_cache(maxsize=3)
def _structural_side(text: str) -> tuple[tuple[str, ...], tuple[int, ...], _Templates]:
    """One side of a structural diff: the lines compared (as shown), their 1-based numbers in
    the shown text, and each one's SSA template. Kept for the last few texts: consecutive
    stages' diffs share a side (a 20,000-line module takes some 0.1 s to prepare)."""
    st = structural_lines(text)
    return (tuple(st.shown[i] for i in st.lines), tuple(i + 1 for i in st.lines),
            tuple(ssa_template(k) for k in st.keys))


class _Builder:
    """Walks aligned opcodes, keeping the before -> after renaming seen so far (per function)."""

    def __init__(self, a_lines: tuple[str, ...], b_lines: tuple[str, ...],
                 a_tpl: _Templates, b_tpl: _Templates,
                 structural: bool) -> None:
        self.structural = structural
        self.a_lines, self.b_lines = a_lines, b_lines
        self.a_tpl, self.b_tpl = a_tpl, b_tpl
        self.fwd: dict[str, str] = {}
        self.back: dict[str, str] = {}
        self.maps: list[dict[str, str]] = [self.fwd]
        self.blocks: list[Block] = []

    def _scope(self, i: int | None, j: int | None) -> None:
        """SSA names are scoped per function: start a fresh renaming at each func.func."""
        if (i is not None and _FUNC.match(self.a_tpl[i][0])) or (
                j is not None and _FUNC.match(self.b_tpl[j][0])):
            self.fwd, self.back = {}, {}
            self.maps.append(self.fwd)

    def _bind(self, x: str, y: str) -> bool:
        fx = self.fwd.get(x)
        if fx is None and y not in self.back:
            self.fwd[x], self.back[y] = y, x
            return True
        return fx == y

    def equal(self, a0: int, a1: int, b0: int, b1: int) -> None:
        start = (a0, b0)
        for i, j in zip(range(a0, a1), range(b0, b1), strict=True):
            self._scope(i, j)
            names_a, names_b = self.a_tpl[i][1], self.b_tpl[j][1]
            ok = all([self._bind(x, y) for x, y in zip(names_a, names_b, strict=True)])  # noqa: C419 - bind every pair, not just up to the first mismatch
            if not ok:
                self._add_equal(start[0], i, start[1], j)
                row = Row("changed", i, j, len(self.maps) - 1)
                self.blocks.append(Block(False, i, i + 1, j, j + 1, (row,)))
                start = (i + 1, j + 1)
        self._add_equal(start[0], a1, start[1], b1)

    def _add_equal(self, a0: int, a1: int, b0: int, b1: int) -> None:
        if a1 > a0:
            self.blocks.append(Block(True, a0, a1, b0, b1))

    def change(self, a0: int, a1: int, b0: int, b1: int) -> None:
        """Pair lines of the same op inside a change; the rest are removed or added."""
        a_ops = [_op_name(self.a_tpl[i][0]) for i in range(a0, a1)]
        b_ops = [_op_name(self.b_tpl[j][0]) for j in range(b0, b1)]
        rows: list[Row] = []
        for tag, i0, i1, j0, j1 in align(a_ops, b_ops):
            if tag == "equal":
                for i, j in zip(range(a0 + i0, a0 + i1), range(b0 + j0, b0 + j1), strict=True):
                    self._scope(i, j)
                    self._bind_defs(i, j)
                    rows.append(Row("changed", i, j, len(self.maps) - 1))
                continue
            for i in range(a0 + i0, a0 + i1):
                self._scope(i, None)
                rows.append(Row("removed", i, None))
            for j in range(b0 + j0, b0 + j1):
                self._scope(None, j)
                rows.append(Row("added", None, j))
        self.blocks.append(Block(False, a0, a1, b0, b1, tuple(rows)))

    def _bind_defs(self, i: int, j: int) -> None:
        da, db = _defs(self.a_lines[i]), _defs(self.b_lines[j])
        if len(da) == len(db):
            for x, y in zip(da, db, strict=True):
                self._bind(x, y)



def _intra_line(a_line: str, b_line: str, renaming: dict[str, str] | None) -> _Spans:
    """Changed character ranges of two lines, token by token; with a ``renaming``, SSA names
    compare through it (a renamed value is not a change)."""
    a_toks, b_toks = tokenize(a_line), tokenize(b_line)
    ka = [("%", renaming.get(t, "?" + t)) if renaming is not None and k in ("ssa", "block")
          else (k, t) for k, t in a_toks]
    kb = [("%", t) if renaming is not None and k in ("ssa", "block") else (k, t)
          for k, t in b_toks]
    a_spans: list[tuple[int, int]] = []
    b_spans: list[tuple[int, int]] = []
    a_off, b_off = _offsets(a_toks), _offsets(b_toks)
    for tag, i0, i1, j0, j1 in align(ka, kb):
        if tag == "equal":
            continue
        if i1 > i0:
            a_spans.append((a_off[i0], a_off[i1]))
        if j1 > j0:
            b_spans.append((b_off[j0], b_off[j1]))
    return tuple(a_spans), tuple(b_spans)


def _offsets(tokens: tuple[tuple[str, str], ...]) -> list[int]:
    """Start offset of each token, plus the line length at the end."""
    out, pos = [0], 0
    for _, text in tokens:
        pos += len(text)
        out.append(pos)
    return out


def _op_name(template: str) -> str:
    """The op a line holds (its first word after any results; an HLO instruction's opcode):
    lines of one op pair up."""
    opcode = hlo_opcode(template) if "%" in template else None
    if opcode is not None:
        return opcode
    m = _OP_NAME.match(template)
    return m.group(1) if m else template.strip()


def _defs(line: str) -> list[str]:
    """Names a line defines, in order: its results, then declared block arguments
    (``%arg0: tensor<...>``, ``%iterArg = %init``)."""
    m = _DEFS.match(line)
    results = _DEF_NAME.findall(m.group(1)) if m else []
    return results + _DECL.findall(line, m.end() if m else 0)
