"""A guard against an XLA:CPU miscompile of a write through a reshaped view.

``a.ravel()[-4:-2] = np.max(a[[1, 4]], axis=-1)`` traces to a ``dynamic_update_slice`` of
``reshape(a)`` whose update is a reduction reading ``a`` itself. XLA turns the reshape into a
bitcast, and its fusion check (does the producer read the operand the consumer updates in place?)
compares the reduction's operand ``a`` with the in-place operand ``bitcast(a)``: different
instructions, so it fuses the reduction into the in-place update. The fused loop then writes the
first updated element before the reduction of the second one reads it. Seen with XLA of jaxlib
0.10.2, with ``jax.jit`` alike, when a later op makes the update in place (another write of the
result). The same update is right when the reduction reads the reshaped value, or when the write
is a scatter.

The same miscompile reads through slices and gathers: after ``a.ravel()[3:4] = 2``, the array
is ``reshape(dus(reshape(a)))`` and ``np.multiply(a[0:1].max(0), a[0:1].T[2:1:-1].reshape(-1)
[np.array([-1])], out=a[0:1])`` writes row 0 times its element 2. The update reads the operand
itself, but XLA moves the reshape (a bitcast) below the slices, so the reads become reads of the
pre-reshape buffer, and the fused in-place loop writes element 2 before element 3 reads it
(2*f*f for 2*f). ``jax.jit`` of the same program (``.at[0:1].set`` too) gets the same wrong answer.

So, in NumPy mode's jaxpr (whose values are the kernel's arrays), a ``dynamic_update_slice``
whose operand is a view (reshape-like, a transpose, a broadcast) of a value ``x`` is written as
the scatter of the same window (same result, clamped like the slice, never fused as an in-place
update) when its update reads the operand, ``x`` or another value of the view chain at another
position than the element it gives: through a reduction, gather, broadcast, transpose, reverse,
a slice at another offset, or any op not known to be elementwise. A read stays harmless, and the
write a ``dynamic_update_slice``, when it goes only through elementwise ops and reshapes that keep
the element count from a slice that is exactly the window of the operand, or from a static slice
whose elements all lie before or after the window's (in the operand's row-major order). Writes
to arrays that are not views (the stencils' ``B[1:-1] = A[:-2] + ...``) never change.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend import core as jcore

from reactant_lab.trace.numpy_mode.subjaxprs import closed_rewritten, inlined, inner_rewritten

# Ops XLA can turn into a bitcast of their operand (no data moved): the view chain of a write.
_VIEWS = frozenset({"reshape", "squeeze", "expand_dims", "broadcast_in_dim", "transpose", "copy",
                    "copy_p"})
# Ops that keep the row-major order of their operand's elements (when they keep their count).
_RESHAPES = frozenset({"reshape", "squeeze", "expand_dims", "broadcast_in_dim"})
# Reductions, which keep each element's position when every reduced axis has length 1.
_REDUCTIONS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and",
                         "reduce_or", "reduce_xor"})
# Ops whose result element reads, of each argument of the result's shape, the element at its own
# position.
_ELEMENTWISE = frozenset({
    "abs", "acos", "acosh", "add", "and", "asin", "asinh", "atan", "atan2", "atanh",
    "bessel_i0e", "bessel_i1e", "cbrt", "ceil", "clamp", "clz", "complex", "conj",
    "convert_element_type", "copy", "copy_p", "cos", "cosh", "digamma", "div", "eq", "erf",
    "erf_inv", "erfc", "exp", "exp2", "expm1", "floor", "ge", "gt", "igamma", "igammac", "imag",
    "integer_pow", "is_finite", "le", "lgamma", "log", "log1p", "logistic", "lt", "max", "min",
    "mul", "mulhi", "ne", "neg", "nextafter", "not", "or", "polygamma", "population_count", "pow",
    "real", "reduce_precision", "rem", "round", "rsqrt", "select_n", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "sign", "sin", "sinh", "sqrt", "square",
    "sub", "tan", "tanh", "xor", "zeta"})
# Calls whose body's arguments are the call's arguments (a jnp function traced as a jit).
_CALLS = frozenset({"jit", "pjit", "closed_call", "core_call", "custom_jvp_call",
                    "custom_vjp_call", "custom_vjp_call_jaxpr"})


def guard(closed: Any) -> Any:
    """``closed`` with each write that XLA:CPU would fuse wrongly made a scatter (inside loops,
    branches and calls too); ``closed`` itself when it has none."""
    return closed_rewritten(closed, _guard_jaxpr)


def _guard_jaxpr(jaxpr: Any) -> Any:
    producer: dict[Any, Any] = {}
    eqns = []
    changed = False
    for eqn in jaxpr.eqns:
        new = inner_rewritten(eqn, _guard_jaxpr)
        if eqn.primitive.name == "dynamic_update_slice" and _fusable_read(new, producer):
            eqns.extend(_as_scatter(new))
            changed = True
        else:
            changed |= new is not eqn
            eqns.append(new)
        for v in eqn.outvars:
            producer[v] = eqn
    return jaxpr.replace(eqns=eqns) if changed else jaxpr


def _fusable_read(eqn: Any, producer: dict[Any, Any]) -> bool:
    """Whether the update of the ``dynamic_update_slice`` ``eqn``, whose operand is a view, reads
    the updated array at another position than the element it gives (see the module's doc)."""
    operand, update, starts = eqn.invars[0], eqn.invars[1], eqn.invars[2:]
    # The values the operand is a view of, each with whether the view keeps its elements'
    # row-major order (reading one of them in order reads the operand element at that position).
    aliased = {operand: True}
    v, in_order = operand, True
    while isinstance(v, jcore.Var) and v in producer and producer[v].primitive.name in _VIEWS:
        view = producer[v]
        in_order = in_order and _keeps_position(view, view.invars[0])
        v = view.invars[0]
        if not isinstance(v, jcore.Var):  # a view of a literal
            break
        aliased[v] = in_order
    if len(aliased) == 1:
        return False
    window = _static_window(starts, update.aval.shape, operand.aval.shape)
    seen: set[tuple[Any, bool]] = set()
    stack = [(update, False)]
    while stack:
        v, moved = stack.pop()
        if not isinstance(v, jcore.Var) or (v, moved) in seen:
            continue
        seen.add((v, moved))
        if _same_view(v, operand, producer):
            v = operand
        if v in aliased:
            if moved or not aliased[v]:
                return True
            continue
        made_by = producer.get(v)
        if made_by is None:
            continue
        read = _window_read(made_by, operand, aliased, window, producer)
        if read == "outside":  # reads no element of the window: never an already written one
            continue
        if read == "same":  # element j of the window, for element j of its result
            if moved:
                return True
            continue
        stack.extend((u, moved or not _keeps_position(made_by, u)) for u in made_by.invars)
    return False


def _static_window(starts: Any, shape: tuple[int, ...],
                   within: tuple[int, ...]) -> list[tuple[int, int]] | None:
    """The window of ``shape`` written in an array of shape ``within``, ``[(start, stop)]`` per
    axis (moved inside as dynamic_update_slice moves it), where every start is a literal."""
    if not all(isinstance(s, jcore.Literal) for s in starts):
        return None
    at = [min(max(int(s.val), 0), d - n) for s, n, d in zip(starts, shape, within, strict=True)]
    return [(a, a + n) for a, n in zip(at, shape, strict=True)]


def _window_read(eqn: Any, operand: Any, aliased: dict[Any, bool],
                 window: list[tuple[int, int]] | None, producer: dict[Any, Any]) -> str:
    """``"same"`` when ``eqn`` is a slice of the written operand that is exactly the window,
    ``"outside"`` when it is a slice of the operand, or of a view of it in the same element
    order, whose elements all lie before or after the window's (row-major), else ``""``."""
    if window is None or eqn.primitive.name != "slice":
        return ""
    of = operand if _same_view(eqn.invars[0], operand, producer) else eqn.invars[0]
    if not aliased.get(of):
        return ""
    starts, stops = eqn.params["start_indices"], eqn.params["limit_indices"]
    strides = eqn.params["strides"] or (1,) * len(starts)
    box = list(zip(starts, stops, strict=True))
    if of is operand and all(k == 1 for k in strides) and box == window:
        return "same"
    if any(hi <= lo for lo, hi in (*window, *box)):  # nothing written, or nothing read
        return "outside"
    lasts = [start + (stop - start - 1) // k * k
             for start, stop, k in zip(starts, stops, strides, strict=True)]
    read = _flat(starts, of.aval.shape), _flat(lasts, of.aval.shape)
    shape = operand.aval.shape
    written = _flat([lo for lo, _ in window], shape), _flat([hi - 1 for _, hi in window], shape)
    return "outside" if read[1] < written[0] or read[0] > written[1] else ""


def _same_view(v: Any, operand: Any, producer: dict[Any, Any]) -> bool:
    """Whether ``v`` is ``operand`` or the same views of the same value (traced twice)."""
    if v is operand:
        return True
    a, b = producer.get(v), producer.get(operand)
    if a is None or b is None or a.primitive.name not in _VIEWS or a.primitive is not b.primitive:
        return False
    return (a.params == b.params and a.outvars[0].aval.shape == b.outvars[0].aval.shape
            and isinstance(a.invars[0], jcore.Var)
            and _same_view(a.invars[0], b.invars[0], producer))


def _flat(index: Any, shape: tuple[int, ...]) -> int:
    return int(np.ravel_multi_index(tuple(int(i) for i in index), shape)) if shape else 0


def _keeps_position(eqn: Any, arg: Any) -> bool:
    """Whether each element of ``eqn``'s result reads only the element of ``arg`` at its own
    (row-major) position: an elementwise op on an argument of the result's shape, or a reshape
    that keeps every element (broadcasting, transposing, slicing, gathering and reducing move)."""
    out = eqn.outvars[0].aval
    shape: tuple[int, ...] | None = getattr(arg.aval, "shape", None)
    if shape is None:  # a token
        return False
    name = eqn.primitive.name
    if name in _RESHAPES or name in ("copy", "copy_p"):
        return len(eqn.outvars) == 1 and arg is eqn.invars[0] and math.prod(shape) == out.size
    if name in _REDUCTIONS:
        return all(shape[axis] == 1 for axis in eqn.params["axes"])
    if name == "transpose":  # moves no element when it only moves axes of length 1
        long_axes = [axis for axis in eqn.params["permutation"] if shape[axis] != 1]
        return long_axes == sorted(long_axes)
    if len(eqn.outvars) != 1 or shape != out.shape:
        return False
    if name in _ELEMENTWISE:
        return True
    if name in ("dynamic_update_slice", "scatter"):  # each element is the operand's or written
        return arg is eqn.invars[0]
    # a call of elementwise ops alone (a jnp function traced as a jit)
    inner = list(jcore.jaxprs_in_params(eqn.params))
    return (bool(inner) and name in _CALLS
            and all(_all_elementwise(j.jaxpr if isinstance(j, jcore.ClosedJaxpr) else j)
                    for j in inner))


def _all_elementwise(jaxpr: Any) -> bool:
    return all(e.primitive.name in _ELEMENTWISE
               or (e.primitive.name in _CALLS
                   and all(_all_elementwise(j.jaxpr if isinstance(j, jcore.ClosedJaxpr) else j)
                           for j in jcore.jaxprs_in_params(e.params)))
               for e in jaxpr.eqns)


def _as_scatter(eqn: Any) -> list[Any]:
    """The equations of a scatter of the ``dynamic_update_slice`` ``eqn``'s window, element by
    element, in its place (same inputs, same result variable)."""
    avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in eqn.invars]
    spliced = inlined(_scatter, eqn.invars, avals, eqn.outvars[0], eqn.source_info)
    # None is not expected (every constant of the scatter is a scalar literal): then unchanged
    return [eqn] if spliced is None else spliced


def _scatter(x: Any, new: Any, *at: Any) -> Any:
    """``lax.dynamic_update_slice(x, new, at)`` as a scatter of each element of ``new``."""
    if not new.ndim:
        return new
    # dynamic_update_slice's clamping: the window is moved to lie inside the operand.
    at = tuple(lax.clamp(np.zeros((), s.dtype), s, np.asarray(d - n, s.dtype))
               for s, d, n in zip(at, x.shape, new.shape, strict=True))
    index = jnp.stack([lax.broadcasted_iota(s.dtype, new.shape, k) + s
                       for k, s in enumerate(at)], axis=-1)
    axes = tuple(range(new.ndim))
    dims = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=axes,
                                       scatter_dims_to_operand_dims=axes)
    return lax.scatter(x, index, new.astype(x.dtype), dims, indices_are_sorted=True,
                       unique_indices=True, mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)
