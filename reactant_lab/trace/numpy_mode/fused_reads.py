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

So, in NumPy mode's jaxpr (whose values are the kernel's arrays), a ``dynamic_update_slice``
whose operand is a reshape-like view of a value ``x`` and whose update reads ``x`` (not through
that view) through a reduction or a product is written as the scatter of the same window: same
result, clamped like the slice, and never fused as an in-place update. Nothing else changes.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend import core as jcore

# Ops XLA can turn into a bitcast of their operand (no data moved): the view chain of a write.
_VIEWS = frozenset({"reshape", "squeeze", "expand_dims", "broadcast_in_dim", "transpose", "copy",
                    "copy_p"})
# Ops whose one result element reads many operand elements, once fused (a small dot is
# rewritten by XLA as a multiply and a reduce).
_REDUCING = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and",
                       "reduce_or", "reduce_xor", "argmax", "argmin", "dot_general", "reduce",
                       "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "reduce_window",
                       "reduce_window_sum", "reduce_window_max", "reduce_window_min"})


def guard(closed: Any) -> Any:
    """``closed`` with each write that XLA:CPU would fuse wrongly made a scatter (inside loops,
    branches and calls too); ``closed`` itself when it has none."""
    jaxpr = _guard_jaxpr(closed.jaxpr)
    return closed if jaxpr is closed.jaxpr else jcore.ClosedJaxpr(jaxpr, closed.consts)


def _guard_jaxpr(jaxpr: Any) -> Any:
    producer: dict[Any, Any] = {}
    eqns = []
    changed = False
    for eqn in jaxpr.eqns:
        new = _guard_params(eqn)
        if eqn.primitive.name == "dynamic_update_slice" and _fusable_read(new, producer):
            eqns.extend(_as_scatter(new))
            changed = True
        else:
            changed |= new is not eqn
            eqns.append(new)
        for v in eqn.outvars:
            producer[v] = eqn
    return jaxpr.replace(eqns=eqns) if changed else jaxpr


def _guard_params(eqn: Any) -> Any:
    """``eqn`` with the jaxprs of its parameters (a loop's body, a branch, a call) guarded."""
    params = {}
    for key, value in eqn.params.items():
        new = _guard_param(value)
        if new is not value:
            params[key] = new
    return eqn.replace(params={**eqn.params, **params}) if params else eqn


def _guard_param(value: Any) -> Any:
    if isinstance(value, jcore.ClosedJaxpr):
        return guard(value)
    if isinstance(value, jcore.Jaxpr):
        return _guard_jaxpr(value)
    if isinstance(value, tuple) and any(isinstance(v, jcore.ClosedJaxpr | jcore.Jaxpr)
                                        for v in value):
        new = tuple(_guard_param(v) for v in value)
        return value if all(a is b for a, b in zip(new, value, strict=True)) else new
    return value


def _fusable_read(eqn: Any, producer: dict[Any, Any]) -> bool:
    """Whether the update of the ``dynamic_update_slice`` ``eqn`` reads, through a reducing
    op, a value its operand is a view of (other than through the operand itself)."""
    operand, update = eqn.invars[0], eqn.invars[1]
    viewed = set()
    v = operand
    while isinstance(v, jcore.Var) and v in producer and producer[v].primitive.name in _VIEWS:
        v = producer[v].invars[0]
        if not isinstance(v, jcore.Var):  # a view of a literal
            break
        viewed.add(v)
    if not viewed:
        return False
    seen: set[tuple[Any, bool]] = set()
    stack = [(update, False)]
    while stack:
        v, reduced = stack.pop()
        if not isinstance(v, jcore.Var) or (v, reduced) in seen or v is operand:
            continue
        seen.add((v, reduced))
        if reduced and v in viewed:
            return True
        made_by = producer.get(v)
        if made_by is not None:
            reduced = reduced or _reduces(made_by)
            stack.extend((u, reduced) for u in made_by.invars)
    return False


def _reduces(eqn: Any) -> bool:
    """Whether ``eqn`` is a reducing op, or a call, loop or branch that holds one."""
    if eqn.primitive.name in _REDUCING:
        return True
    return any(_holds_reduction(j.jaxpr if isinstance(j, jcore.ClosedJaxpr) else j)
               for j in jcore.jaxprs_in_params(eqn.params))


def _holds_reduction(jaxpr: Any) -> bool:
    return any(_reduces(e) for e in jaxpr.eqns)


def _as_scatter(eqn: Any) -> list[Any]:
    """The equations of a scatter of the ``dynamic_update_slice`` ``eqn``'s window, element by
    element, in its place (same inputs, same result variable)."""
    avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in eqn.invars]
    inner = jax.make_jaxpr(_scatter)(*avals)
    if inner.consts:  # none expected: every constant is a scalar literal
        return [eqn]
    jaxpr = inner.jaxpr
    names = dict(zip(jaxpr.invars, eqn.invars, strict=True))
    names[jaxpr.outvars[0]] = eqn.outvars[0]
    return [e.replace(invars=[names.get(v, v) if isinstance(v, jcore.Var) else v
                              for v in e.invars],
                      outvars=[names.get(v, v) for v in e.outvars],
                      source_info=eqn.source_info)
            for e in jaxpr.eqns]


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
