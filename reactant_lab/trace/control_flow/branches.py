"""Converted ``if`` statements. A static condition runs one branch as Python; a traced one runs
both, traced, as one ``lax.cond`` (a ``stablehlo.case``). The variables either branch assigns
are merged: a Python number against a traced value becomes a traced value of its dtype, two
different Python numbers a traced number; arrays must agree in shape and dtype. A variable
that only one branch assigns and that had no value before stays unassigned after the ``if``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax import lax

from reactant_lab.errors import ControlFlowError
from reactant_lab.trace.control_flow.loops import Site, to_pred, where
from reactant_lab.trace.control_flow.session import current
from reactant_lab.trace.control_flow.slots import (
    NUMBERS,
    CannotRoll,
    Slot,
    Undefined,
    carried_value,
    describe,
    is_traced,
    number_slot,
    same_static,
    stand_in,
)
from reactant_lab.trace.numpy_mode import carry, context

_SIDES = ("if", "else")


def if_stmt(test: Any, then: Callable[..., Any], other: Callable[..., Any],
            state: tuple[Any, ...], names: tuple[str, ...], site: Site) -> tuple[Any, ...]:
    """A converted ``if``."""
    session = current()
    if session is None or session.loops == "unroll" or not is_traced(test):
        out: tuple[Any, ...] = then(state) if test else other(state)
        return out
    numpy = context.current() is not None
    pred = to_pred(test)
    slots, roots = _outputs(then, other, state, names, site, numpy)
    saved = {r: r.save(copy=True) for r in roots}

    def branch(fn: Callable[..., Any]) -> Callable[[Any], list[Any]]:
        def run(_: Any) -> list[Any]:
            with carry.journal() if numpy else _nothing() as opened:
                try:
                    out = fn(state)
                    values = [carried_value(s, v) for s, v in zip(slots, out, strict=True)
                              if s.carried]
                    return values + [r.value for r in roots]
                finally:
                    if opened is not None:
                        opened.undo()
                    for r in roots:
                        r.load(saved[r])
        return run

    final = list(lax.cond(pred, branch(then), branch(other), None))
    n = sum(s.carried for s in slots)
    for root, value in zip(roots, final[n:], strict=True):
        root.set_traced(value)
    flat = iter(final[:n])
    return tuple(stand_in(s, next(flat) if s.carried else None, numpy) for s in slots)


def _outputs(then: Callable[..., Any], other: Callable[..., Any], state: tuple[Any, ...],
             names: tuple[str, ...], site: Site, numpy: bool
             ) -> tuple[list[Slot], list[carry.Root]]:
    """Both branches traced abstractly: the merged slot of each variable, and the arrays that
    existed before the ``if`` and that either branch writes."""
    mark = carry.stamp() if numpy else 0
    probes = [_probe(fn, state, names, numpy, mark) for fn in (then, other)]
    try:
        slots = [_merge(n, probes[0][0][k], probes[1][0][k], numpy)
                 for k, n in enumerate(names)]
    except CannotRoll as exc:
        raise ControlFlowError(
            f"The branches of `{site[2]}` at {where(site)} (a traced condition: both branches "
            f"run) disagree: {exc}. Give the variable the same shape and dtype in both "
            "branches (np.where(cond, a, b) picks between two arrays).", site[0], site[1]
        ) from None
    written = {r: None for _, roots in probes for r in roots}
    return slots, sorted(written, key=lambda r: r.serial)


class _nothing:  # a null context manager that yields None
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _probe(fn: Callable[..., Any], state: tuple[Any, ...], names: tuple[str, ...],
           numpy: bool, mark: int) -> tuple[list[tuple[Slot | None, Any]], list[Any]]:
    """Trace one branch abstractly: per variable (its slot, or None for a Python value, and
    the value), and the arrays that existed before and that it writes."""
    found: list[tuple[Slot | None, Any]] = []

    def run() -> list[Any]:
        out = fn(state)
        for name, value in zip(names, out, strict=True):
            slot = None if isinstance(value, NUMBERS) else describe(name, value, numpy, mark)
            found.append((slot if slot is not None and slot.kind != "static" else None, value))
        return []

    with carry.journal() if numpy else _nothing() as opened:
        try:
            jax.eval_shape(run)
        finally:
            if opened is not None:
                opened.undo()
    roots = [] if opened is None else [r for r in opened.written if r.serial < mark]
    return found, roots


def _wider(a: Any, b: Any) -> Any:
    """Of two numbers, one whose type holds both (its value does not matter)."""
    if isinstance(a, np.generic) or isinstance(b, np.generic):
        return np.result_type(a, b).type(0)
    order = (bool, int, float, complex)
    return max((a, b), key=lambda v: order.index(type(v)) if type(v) in order else 3)


def _merge(name: str, a: tuple[Slot | None, Any], b: tuple[Slot | None, Any],
           numpy: bool) -> Slot:
    """One variable's slot after the ``if`` from what each branch left in it."""
    (sa, va), (sb, vb) = a, b
    if isinstance(va, Undefined) or isinstance(vb, Undefined):
        return Slot(name, "static", ("static",), Undefined(name))
    if sa is None and sb is None:
        if same_static(va, vb):
            return Slot(name, "static", ("static",), va)
        if isinstance(va, NUMBERS) and isinstance(vb, NUMBERS):
            return number_slot(name, _wider(va, vb), numpy)
        raise CannotRoll(f"`{name}` is {va!r} in one branch and {vb!r} in the other", name)
    if sa is None or sb is None:
        slot, value = (sb, va) if sa is None else (sa, vb)
        assert slot is not None
        if isinstance(value, NUMBERS) and slot.kind != "ref":
            return slot
        raise CannotRoll(f"`{name}` is {value!r} in one branch and an array in the other", name)
    if sa.key == sb.key:
        return sa
    if sa.shape != sb.shape or np.dtype(sa.dtype) != np.dtype(sb.dtype):
        raise CannotRoll(f"`{name}` is {np.dtype(sa.dtype).name}{list(sa.shape)} in the if "
                         f"branch and {np.dtype(sb.dtype).name}{list(sb.shape)} in the else "
                         "branch", name)
    if sa.kind != sb.kind:  # an existing array in one branch: the value is carried
        return sa if sa.kind == "new" else sb
    if sa.kind == "ref" or sb.kind == "ref":
        raise CannotRoll(f"`{name}` is a different existing array in each branch (rebinding a "
                         "name to an existing array); copy it (x = a.copy())", name)
    return sa
