"""Converted ``if`` statements. A static condition runs one branch as Python; a traced one runs
both, traced, as one ``lax.cond`` (a ``stablehlo.case``); inside a loop (its first iteration
run apart included), when both branches are a few operations on small values
(``SELECT_WORK``), as both branches' operations and one ``lax.select`` per result (the
branch-free form a JAX user writes with ``jnp.where``: no conditional for XLA to dispatch in
every iteration of the loop). The variables either branch assigns
are merged: a Python number against a traced value becomes a traced value of its dtype, two
different Python numbers a traced number; arrays must agree in shape and dtype. A variable
that only one branch assigns and that had no value before stays unassigned after the ``if``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from reactant_lab.errors import ControlFlowError
from reactant_lab.trace.control_flow import hoisted
from reactant_lab.trace.control_flow import names as labels
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
    unwrap,
)
from reactant_lab.trace.numpy_mode import carry, context
from reactant_lab.trace.user_errors import calling_user_frame, control_flow_error

_SIDES = ("if", "else")

SELECT_WORK = 256
"""A traced ``if`` inside a converted loop runs as selects when each branch's work
(``hoisted.straight_work``: about the elements its operations read or write) is at most this,
with no loop, conditional, call back into Python or other effect inside, and its results hold
at most this many elements (a select copies them): the branch not taken then costs a few
hundred element operations at most, and cannot fail (XLA's operations do not trap). crc32's
bit step (`if crc & 1: crc = (crc >> 1) ^ POLY else: crc >>= 1`, 8 steps for each of 16,384
bytes), in plain JAX: 0.74 ms as a lax.cond, 0.31 ms as a select; with the 8 steps unrolled
(``batched.UNROLL_TRIPS``) 0.45 and 0.18 ms. A larger result stays a conditional: a select
would copy it in every iteration. The first iteration of a loop, run apart before the rest rolls,
is the loop's body too: its `if`s follow the same rule. pair_matches' two were conditionals
there, 10 thunks in all, past the 8 up to which XLA:CPU runs a program's thunks one after the
other on the calling thread (more are handed among its threads): 0.145-0.167 ms as a bare
executable; as selects, 6 thunks and 0.125-0.134 ms (the jax.jit port's 0.113)."""


def if_stmt(test: Any, then: Callable[..., Any], other: Callable[..., Any],
            state: tuple[Any, ...], names: tuple[str, ...], site: Site, *,
            what: str | None = None) -> tuple[Any, ...]:
    """A converted ``if`` (``what``: how an error names it, when it is not an ``if``
    statement)."""
    session = current()
    if session is None or session.loops == "unroll" or not is_traced(test):
        out: tuple[Any, ...] = then(state) if test else other(state)
        return out
    numpy = context.current() is not None
    pred = to_pred(test)
    slots, roots, cheap = _outputs(then, other, state, names, site, numpy, what)
    saved = {r: r.save(copy=True) for r in roots}

    def branch(fn: Callable[..., Any], numbers: list[bool] | None = None
               ) -> Callable[[Any], list[Any]]:
        def run(_: Any) -> list[Any]:
            with carry.journal() if numpy else _nothing() as opened:
                try:
                    out = fn(state)
                    values = [carried_value(s, v) for s, v in zip(slots, out, strict=True)
                              if s.carried]
                    if numbers is not None:  # which values are Python / NumPy numbers
                        numbers.extend(isinstance(unwrap(v), NUMBERS) for s, v in zip(
                            slots, out, strict=True) if s.carried)
                        numbers.extend(False for _ in roots)
                    return values + [r.value for r in roots]
                finally:
                    if opened is not None:
                        opened.undo()
                    for r in roots:
                        r.load(saved[r])
        return run

    if cheap and (session.depth > 0 or session.peeling > 0):
        then_numbers: list[bool] = []
        other_numbers: list[bool] = []
        picked = zip(branch(then, then_numbers)(None), branch(other, other_numbers)(None),
                     then_numbers, other_numbers, strict=True)
        final = [_pick(pred, jnp.asarray(a), jnp.asarray(b), constant=na or nb)
                 for a, b, na, nb in picked]
    else:
        with labels.region(site, labels.branch, slots, roots):
            final = list(lax.cond(pred, branch(then), branch(other), None))
    n = sum(s.carried for s in slots)
    for root, value in zip(roots, final[n:], strict=True):
        root.set_traced(value)
    flat = iter(final[:n])
    return tuple(stand_in(s, next(flat) if s.carried else None, numpy) for s in slots)


def _pick(pred: Any, a: Any, b: Any, constant: bool = False) -> Any:
    """``a`` where ``pred`` holds, else ``b``: a select, or for an integer number (not a bool)
    ``b ^ ((a ^ b) & -pred)``, which is the same bits. XLA:CPU's compiler folds the mask form
    where one value is the other combined with a constant: crc32's bit step (`crc >> 1` against
    `(crc >> 1) ^ POLY`) becomes `(crc >> 1) ^ (POLY & -bit)`, the form a JAX user writes by
    hand, where the select was kept (8 steps for each of 16,384 bytes, in plain JAX: 0.176 ms
    as selects, 0.111 ms masked, 0.125 ms hand-written); integer steps with no such
    relation (a Collatz step, a running max, a hash) measured level either way. A constant
    side (``constant``: a number in its branch, `1 if b1 + b2 == 3 else 0`) keeps the select:
    there is nothing to fold (and its mask form is four operations per element where the
    select, batched, is one: pair_matches)."""
    if (not constant and isinstance(a, jax.core.Tracer) and isinstance(b, jax.core.Tracer)
            and a.ndim == 0
            and jnp.issubdtype(a.dtype, jnp.integer) and a.dtype == b.dtype
            and not a.weak_type and not b.weak_type):
        return b ^ ((a ^ b) & -pred.astype(a.dtype))
    return lax.select(pred, a, b)


def _outputs(then: Callable[..., Any], other: Callable[..., Any], state: tuple[Any, ...],
             names: tuple[str, ...], site: Site, numpy: bool, what: str | None = None
             ) -> tuple[list[Slot], list[carry.Root], bool]:
    """Both branches traced abstractly: the merged slot of each variable, the arrays that
    existed before the ``if`` and that either branch writes, and whether both branches are
    cheap enough to run as selects (``SELECT_WORK``)."""
    mark = carry.stamp() if numpy else 0
    probes = [_probe(fn, state, names, numpy, mark) for fn in (then, other)]
    try:
        slots = [_merge(n, probes[0][0][k], probes[1][0][k], numpy, site)
                 for k, n in enumerate(names)]
    except CannotRoll as exc:
        if what is not None:
            raise ControlFlowError(f"{what}: {exc}", site[0], site[1]) from None
        raise ControlFlowError(
            f"The branches of `{site[2]}` at {where(site)} (a traced condition: both branches "
            f"run) disagree: {exc}. Give the variable the same shape and dtype in both "
            "branches (np.where(cond, a, b) picks between two arrays).", site[0], site[1]
        ) from None
    roots = sorted({r: None for _, written, _ in probes for r in written}, key=lambda r: r.serial)
    cheap = all(work is not None and work <= SELECT_WORK for _, _, work in probes)
    return slots, roots, cheap and _small(slots, roots)


def _small(slots: list[Slot], roots: list[carry.Root]) -> bool:
    """Whether the results of an ``if`` hold at most SELECT_WORK elements in all (a select
    copies each of them)."""
    sizes = [math.prod(s.shape) for s in slots if s.carried]
    sizes += [math.prod(r.shape) for r in roots]
    return sum(sizes) <= SELECT_WORK


class _nothing:  # a null context manager that yields None
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _probe(fn: Callable[..., Any], state: tuple[Any, ...], names: tuple[str, ...],
           numpy: bool, mark: int) -> tuple[list[tuple[Slot | None, Any]], list[Any], int | None]:
    """Trace one branch abstractly: per variable (its slot, or None for a Python value, and
    the value), the arrays that existed before and that it writes, and its work
    (``hoisted.straight_work``)."""
    found: list[tuple[Slot | None, Any]] = []

    def run() -> list[Any]:
        out = fn(state)
        for name, value in zip(names, out, strict=True):
            slot = None if isinstance(value, NUMBERS) else describe(name, value, numpy, mark)
            found.append((slot if slot is not None and slot.kind != "static" else None, value))
        return []

    with carry.journal() if numpy else _nothing() as opened:
        try:
            traced = jax.make_jaxpr(run)()
        finally:
            if opened is not None:
                opened.undo()
    roots = [] if opened is None else [r for r in opened.written if r.serial < mark]
    return found, roots, hoisted.straight_work(traced.jaxpr)


def _wider(a: Any, b: Any) -> Any:
    """Of two numbers, one whose type holds both (its value does not matter)."""
    if isinstance(a, np.generic) or isinstance(b, np.generic):
        return np.result_type(a, b).type(0)
    order = (bool, int, float, complex)
    return max((a, b), key=lambda v: order.index(type(v)) if type(v) in order else 3)


def _merge(name: str, a: tuple[Slot | None, Any], b: tuple[Slot | None, Any],
           numpy: bool, site: Site) -> Slot:
    """One variable's slot after the ``if`` from what each branch left in it."""
    (sa, va), (sb, vb) = a, b
    if isinstance(va, Undefined) and isinstance(vb, Undefined):
        return Slot(name, "static", ("static",), va if va.why is not None else vb)
    if isinstance(va, Undefined) or isinstance(vb, Undefined):
        return Slot(name, "static", ("static",), Undefined(name, _one_sided(
            "if" if isinstance(vb, Undefined) else "else", site)))
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


def _one_sided(side: str, site: Site) -> str:
    """Why a variable that one branch of a traced ``if`` assigns may have no value after it."""
    if site[2].startswith(("if ", "if(", "elif")):
        part = f"the {side} branch of `{site[2]}` at {where(site)}, whose condition is traced"
    else:  # a statement the rewrite made: the rest of a loop body after a break / continue
        part = f"{site[2]} (at {where(site)}), which runs only when a traced condition holds"
    return (f"is assigned only in {part}: when it does not run, Python leaves the variable "
            "unassigned (UnboundLocalError), which compiled code cannot do. Give it a value "
            "before that statement, or in both branches.")


def _static(session: Any) -> bool:
    return session is None or session.loops == "unroll"


def _truth(value: Any, op: str) -> Any:
    """``value`` as an operand of a logical op on traced values: a traced value of one element,
    or a Python bool."""
    if not is_traced(value):
        return bool(value)
    if int(np.prod(np.shape(unwrap(value)))) != 1:
        frame = calling_user_frame()
        name = context.current() or (frame.name if frame is not None else "the function")
        raise control_flow_error(
            name, frame,
            f"`{op}` on a traced array of shape {tuple(np.shape(unwrap(value)))}: its truth value "
            "is ambiguous (NumPy raises here too). Use a.any() / a.all() for one truth value, "
            "or `&` / `|` / `~` (np.logical_and, np.logical_or, np.logical_not) element by "
            "element.", "numpy" if context.current() else "jax")
    pred = to_pred(value)  # a bool scalar (a traced Python bool is no ufunc operand)
    return carry.to_numpy_scalar(pred) if context.current() is not None else pred


def _logical(op: str, values: list[Any]) -> Any:
    """The logical ``op`` ('and', 'or') of values of which the first is traced."""
    numpy = context.current() is not None
    fns: dict[tuple[str, bool], Callable[[Any, Any], Any]] = {
        ("and", True): np.logical_and, ("or", True): np.logical_or,
        ("and", False): jnp.logical_and, ("or", False): jnp.logical_or}
    fn = fns[(op, numpy)]
    result = _truth(values[0], op)
    for value in values[1:]:
        result = fn(result, _truth(value, op))
    return result


def _boolop(op: str, thunks: tuple[Callable[[], Any], ...]) -> Any:
    session = current()
    value = thunks[0]()
    for k, thunk in enumerate(thunks[1:], 1):
        if not _static(session) and is_traced(value):
            return _logical(op, [value, *(t() for t in thunks[k:])])
        if bool(value) != (op == "and"):
            return value  # short-circuit, as Python
        value = thunk()
    return value


def and_(*thunks: Callable[[], Any]) -> Any:
    """``a and b and ...`` (each operand a thunk): Python's result while the operands are
    static; from the first traced operand on, the logical and of it and the rest (all
    evaluated)."""
    return _boolop("and", thunks)


def or_(*thunks: Callable[[], Any]) -> Any:
    """``a or b or ...``, as ``and_``."""
    return _boolop("or", thunks)


def not_(value: Any) -> Any:
    """``not value``: a traced boolean for a traced value."""
    if _static(current()) or not is_traced(value):
        return not value
    truth = _truth(value, "not")
    return np.logical_not(truth) if context.current() is not None else jnp.logical_not(truth)


def ifexp(test: Any, then: Callable[[], Any], other: Callable[[], Any], site: Site,
          fn: str) -> Any:
    """``a if test else b``: one of them for a static ``test``; for a traced one both, picked
    when the code runs (one lax.cond, merged as the branches of an ``if``)."""
    if _static(current()) or not is_traced(test):
        return then() if test else other()
    what = (f"The conditional expression `{site[2]}` at {where(site)} in {fn}() tests a traced "
            "value, so both values are computed and one is picked when the code runs; they "
            "must have the same shape and dtype (np.where(cond, a, b) picks element by element "
            "between arrays that broadcast)")
    (value,) = if_stmt(test, lambda _: (then(),), lambda _: (other(),), (Undefined("value"),),
                       (f"{site[2][:40]}",), site, what=what)
    return value
