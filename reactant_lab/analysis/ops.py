"""Op metrics on MLIR text: counts by op name and their differences between stages."""

from __future__ import annotations

import re
from collections import Counter

_OP = re.compile(
    r"^\s*(?:%[\w$.:#-]+(?:\s*,\s*%[\w$.:#-]+)*\s*=\s*)?"  # results
    r"(\"?)([A-Za-z_][\w$]*\.[\w$.]+|return|module)\1[\s(<{:@]")
_BARE = {"return": "func.return", "module": "builtin.module"}


def op_counts(text: str) -> dict[str, int]:
    """Number of each op (``stablehlo.add`` -> 3) in module text, sorted by name."""
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        m = _OP.match(line)
        if m:
            name = m.group(2)
            counts[_BARE.get(name, name)] += 1
    return dict(sorted(counts.items()))


def total_ops(counts: dict[str, int]) -> int:
    """All ops except the module and function shells."""
    return sum(n for name, n in counts.items() if name not in ("builtin.module", "func.func"))


def op_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Per op name, ``after - before``; only the names whose count changed."""
    names = sorted(set(before) | set(after))
    return {n: after.get(n, 0) - before.get(n, 0) for n in names
            if after.get(n, 0) != before.get(n, 0)}
