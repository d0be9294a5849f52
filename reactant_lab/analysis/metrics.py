"""Op metrics across stages: counts by op name per stage and the change from the stage before."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from reactant_lab.analysis.ops import op_delta, total_ops

SHELLS = ("builtin.module", "func.func", "func.return")
"""Ops every module has; left out of the table unless their count changes."""


@dataclass(frozen=True)
class OpTable:
    """Op counts across stages: one row per op name, one column per stage."""

    stages: tuple[str, ...]
    """Column labels: stage names in order."""
    ops: tuple[str, ...]
    """Row labels: op names, sorted."""
    counts: tuple[tuple[int, ...], ...]
    """``counts[row][column]``: number of that op after that stage."""
    totals: tuple[int, ...]
    """Per stage, all ops but the module and function shells."""

    def delta(self, row: int, column: int) -> int:
        """Change of one op's count from the previous stage (0 for the first stage)."""
        return 0 if column == 0 else self.counts[row][column] - self.counts[row][column - 1]

    def stage_delta(self, column: int) -> dict[str, int]:
        """Per op name, the change at one stage; only names whose count changed."""
        if column == 0:
            return {}
        before = {op: c[column - 1] for op, c in zip(self.ops, self.counts, strict=True)}
        after = {op: c[column] for op, c in zip(self.ops, self.counts, strict=True)}
        return op_delta(before, after)

    def changing(self) -> tuple[str, ...]:
        """Op names whose count changes at some stage."""
        return tuple(op for op, c in zip(self.ops, self.counts, strict=True) if len(set(c)) > 1)

    def table(self) -> str:
        """Plain text: op, then per stage the count with its change in parentheses."""
        head = ["op", *(f"{i}:{s}" for i, s in enumerate(self.stages))]
        rows = [head]
        for r, op in enumerate(self.ops):
            cells = [op]
            for col, n in enumerate(self.counts[r]):
                d = self.delta(r, col)
                cells.append(f"{n} ({d:+d})" if d else str(n))
            rows.append(cells)
        rows.append(["total", *(str(t) for t in self.totals)])
        widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
        return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(row, widths, strict=True)))
                         for row in rows)


def op_table(stages: Iterable[Any]) -> OpTable:
    """The table of a StageTrace (or of any stages with ``name`` and ``op_counts``)."""
    stages = list(getattr(stages, "stages", stages))
    counts = [dict(s.op_counts) for s in stages]
    names = sorted({n for c in counts for n in c})
    rows = tuple(tuple(c.get(n, 0) for c in counts) for n in names)
    keep = [i for i, n in enumerate(names) if n not in SHELLS or len(set(rows[i])) > 1]
    return OpTable(tuple(s.name for s in stages), tuple(names[i] for i in keep),
                   tuple(rows[i] for i in keep), tuple(total_ops(c) for c in counts))
