"""Op metrics on module text (MLIR, or XLA's HLO): counts by op name and their differences
between stages."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from reactant_lab.analysis.hlo import hlo_op_counts, is_hlo

_OP = re.compile(
    r"^\s*(?:%[\w$.:#-]+(?:\s*,\s*%[\w$.:#-]+)*\s*=\s*)?"  # results
    r"(\"?)([A-Za-z_][\w$]*\.[\w$.]+|return|module)\1[\s(<{:@]")
_BARE = {"return": "func.return", "module": "builtin.module"}


def op_counts(text: str) -> dict[str, int]:
    """Number of each op (``stablehlo.add`` -> 3) in module text, sorted by name; of each
    opcode (``fusion`` -> 2) in XLA's HLO text."""
    if is_hlo(text):
        return hlo_op_counts(text)
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        m = _OP.match(line)
        if m:
            name = m.group(2)
            counts[_BARE.get(name, name)] += 1
    return dict(sorted(counts.items()))


def total_ops(counts: dict[str, int]) -> int:
    """All ops except the module and function shells (and HLO's parameters, which MLIR has as
    block arguments)."""
    return sum(n for name, n in counts.items() if name not in _SHELLS)


_SHELLS = ("builtin.module", "func.func", "parameter")


def op_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Per op name, ``after - before``; only the names whose count changed."""
    names = sorted(set(before) | set(after))
    return {n: after.get(n, 0) - before.get(n, 0) for n in names
            if after.get(n, 0) != before.get(n, 0)}


_ENZYME_OP = re.compile(r'^\s*(?:%[\w$.:#-]+(?:\s*,\s*%[\w$.:#-]+)*\s*=\s*)?'
                        r'"?(enzyme\.(?:autodiff|fwddiff|batch))"?[\s(]')
_ACTIVITY_LIST = r"\b{}\s*=\s*\[([^\]]*)\]"
_ONE_ACTIVITY = re.compile(r"#enzyme\.activity<(\w+)>")


@dataclass(frozen=True)
class EnzymeCall:
    """One Enzyme op of a module: what it does to which function."""

    op: str
    """'enzyme.autodiff' (reverse mode), 'enzyme.fwddiff' (forward mode) or 'enzyme.batch'."""
    fn: str
    """The function it differentiates or batches (its symbol, without '@')."""
    activity: tuple[str, ...] = ()
    """Per operand of ``fn``: its activity (``enzyme_active``, ``enzyme_const``, ...)."""
    ret_activity: tuple[str, ...] = ()
    """Per result of ``fn``: its activity."""
    batch_shape: tuple[int, ...] = ()
    """For enzyme.batch: the leading batch dimensions."""

    def __str__(self) -> str:
        if self.op == "enzyme.batch":
            return f"{self.op} @{self.fn} batch_shape={list(self.batch_shape)}"
        acts = ", ".join(a.removeprefix("enzyme_") for a in self.activity)
        rets = ", ".join(a.removeprefix("enzyme_") for a in self.ret_activity)
        return f"{self.op} @{self.fn} ({acts}) -> ({rets})"


def enzyme_calls(text: str) -> tuple[EnzymeCall, ...]:
    """The Enzyme ops (``enzyme.autodiff`` / ``fwddiff`` / ``batch``) in module text, in order."""
    found = []
    for line in text.splitlines():
        m = _ENZYME_OP.match(line)
        if not m:
            continue
        fn = re.search(r"\bfn = @([\w$.-]+)", line) or re.search(r"\s@([\w$.-]+)\(", line)

        def acts(name: str, line: str = line) -> tuple[str, ...]:
            listed = re.search(_ACTIVITY_LIST.format(name), line)
            return tuple(_ONE_ACTIVITY.findall(listed.group(1))) if listed else ()

        shape = re.search(r"\bbatch_shape\s*=\s*array<i64(?::\s*([\d,\s]*))?>", line)
        found.append(EnzymeCall(
            op=m.group(1), fn=fn.group(1) if fn else "", activity=acts("activity"),
            ret_activity=acts("ret_activity"),
            batch_shape=tuple(int(d) for d in (shape.group(1) or "").replace(",", " ").split())
            if shape else ()))
    return tuple(found)
