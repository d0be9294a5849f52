"""XLA's cost-analysis keys in words, in a reading order: the totals first (flops, bytes), then
per operand, then the rest. XLA names per-operand figures by gluing the operand number and its
shape index to the figure (``bytes accessed0{}``, ``utilization1{}``, ``bytes accessedout{}``);
each is summed over every op of the module."""

from __future__ import annotations

import re
from collections.abc import Mapping

_TOTALS = {
    "flops": "floating-point operations",
    "transcendentals": "transcendental operations",
    "bytes accessed": "bytes accessed (read and written)",
    "optimal_seconds": "optimal time (XLA's estimate, s)",
    "utilization": "utilization",
}
_PER_OPERAND = re.compile(r"(bytes accessed|utilization)(\d+|out)(\{[\d,]*\})")


def _operand(which: str, index: str) -> str:
    where = "" if index == "{}" else f" {index}"
    return f"output{where}" if which == "out" else f"operand {which}{where}"


def cost_name(key: str) -> str:
    """``key`` of ``Compiled.cost_analysis()`` in words: ``bytes accessed1{}`` -> ``bytes read
    from operand 1``, ``bytes accessedout{}`` -> ``bytes written to the output``,
    ``utilization0{}`` -> ``utilization of operand 0``; unknown keys as they are."""
    if key in _TOTALS:
        return _TOTALS[key]
    m = _PER_OPERAND.fullmatch(key)
    if m is None:
        return key
    figure, which, index = m.groups()
    part = _operand(which, index)
    if figure == "utilization":
        return f"utilization of {part}"
    return f"bytes written to the {part}" if which == "out" else f"bytes read from {part}"


def _order(key: str) -> tuple[int, int, str]:
    m = _PER_OPERAND.fullmatch(key)
    if key in _TOTALS:
        return (0, list(_TOTALS).index(key), key)
    if m is None:
        return (3, 0, key)
    figure, which, index = m.groups()
    group = 1 if figure == "bytes accessed" else 2
    return (group, -1 if which == "out" else int(which), index)


def ordered_cost(cost: Mapping[str, float]) -> dict[str, float]:
    """``cost`` in reading order: totals (flops, transcendentals, bytes accessed), bytes per
    output and operand, utilization per operand, then any other key by name."""
    return {k: cost[k] for k in sorted(cost, key=_order)}


def cost_names(cost: Mapping[str, float]) -> list[list[str]]:
    """``[key, name in words]`` for each key of ``cost``, in reading order (a list: a notebook
    file sorts the keys of an object)."""
    return [[k, cost_name(k)] for k in ordered_cost(cost)]
