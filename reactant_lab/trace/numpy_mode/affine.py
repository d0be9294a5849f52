"""Traced integers known to be a loop index plus a constant (``i``, ``i + 1``, ``k - 2``), with
the range the index takes: ``x[i:i + 3]`` then has a static length, and is a view of static
shape (``storage.DynamicSlice``) rather than a slice with a traced bound (see ranged)."""

from __future__ import annotations

from typing import Any

from reactant_lab.trace.numpy_mode import context

Affine = tuple[Any, int, int, int]
"""(the index's traced value, the constant added, the index's lowest and highest value)."""


def note_index(value: Any, lo: int, hi: int) -> None:
    """``value`` (traced) takes the values ``lo`` .. ``hi`` (a rolled loop's index)."""
    context.memo()[("affine", id(value))] = (value, (value, 0, lo, hi))


def of(value: Any) -> Affine | None:
    """What is known of the traced integer ``value``: an index plus a constant, or None."""
    entry = context.memo().get(("affine", id(value)))
    return None if entry is None else entry[1]


def within(value: Any, low: int, high: int) -> bool:
    """Whether the traced integer ``value`` is known to lie in ``low .. high`` whatever its
    value: a loop index plus a constant over the loop's range."""
    known = of(value)
    return known is not None and known[2] + known[1] >= low and known[3] + known[1] <= high


def derived(result: Any, operand: Any, delta: int) -> None:
    """``result`` is ``operand + delta`` (both traced)."""
    known = of(operand)
    if known is not None:
        base, offset, lo, hi = known
        context.memo()[("affine", id(result))] = (result, (base, offset + delta, lo, hi))


def static_length(start: Any, stop: Any, n: int) -> int | None:
    """The length of ``a[start:stop]`` (an axis of ``n``) when both are the same index plus
    constants and the slice stays inside the axis for every value of the index; else None."""
    a, b = of(start), of(stop)
    if a is None or b is None or a[0] is not b[0]:
        return None
    size = b[1] - a[1]
    lo, hi = a[2], a[3]
    if size < 0 or lo + a[1] < 0 or hi + b[1] > n:
        return None
    return size
