"""A cell function called from inside another traced cell function becomes its own ``func.func``.

The callee is traced as a ``jax.jit`` function: JAX lowers it to a private ``func.func`` and a
``func.call`` at each call site, as Reactant's call cache does, so the ``inline`` stage has
something to inline. Calls with the same static values and argument types share one function.

NumPy mode: proxy arguments cross the boundary as their traced values. The callee gets fresh
proxies (so it can update them in place and use NumPy's API on them); the arguments it updated
are written back into the caller's proxies (through views too), and an argument it returns comes
back as the caller's own proxy (a view of one comes back as a new array). Arguments that share
storage (a view and its parent, the same array twice) would be independent inside the callee, so
such a call is inlined instead, as is a call with a masked selection (``a[mask]``), a slice with a
traced bound (``a[:i]``) or with no traced argument at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax

from reactant_lab.trace.control_flow import converted_callee
from reactant_lab.trace.numpy_mode import (
    ProxyArray,
    RangedArray,
    is_traced,
    new_array,
    new_scalar,
    proxy_for,
    stand_in,
)


def _leaf(x: Any) -> bool:
    return x is None or isinstance(x, ProxyArray)


def _dynamic(x: Any) -> bool:
    return isinstance(x, ProxyArray | jax.Array)


def has_traced(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """True when an argument holds a JAX tracer or a NumPy-mode proxy (a call made while some
    function is being traced)."""
    leaves = jax.tree_util.tree_leaves((args, kwargs), is_leaf=_leaf)
    return any(isinstance(x, ProxyArray) or is_traced(x) for x in leaves)


class _Abort(Exception):
    """Carries the callee's own exception out of JAX's tracing machinery."""


@dataclass
class _Callee:
    """One jitted callee for one (function, structure, static values, argument types)."""

    jitted: Callable[..., Any] | None = None
    """``jax.jit`` of the callee's body."""
    out: tuple[Any, list[tuple[str, Any]], list[int]] | None = None
    """(result treedef, per-leaf plan, indices of arguments updated in place), set by tracing."""
    error: BaseException | None = None


def call_nested(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                cache: dict[Any, _Callee]) -> Any:
    """``fn(*args, **kwargs)`` made while a traced cell function runs: traced as its own function
    when it has traced arguments (``cache`` lives as long as the outer trace)."""
    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs), is_leaf=_leaf)
    dyn = [i for i, x in enumerate(leaves) if _dynamic(x)]
    proxies = [leaves[i] for i in dyn if isinstance(leaves[i], ProxyArray)]
    roots = {id(p.root) for p in proxies}
    if (not dyn or len(roots) < len(proxies) or any(p.mask is not None for p in proxies)
            or any(isinstance(x, RangedArray) for x in leaves)):
        return converted_callee(fn)(*args, **kwargs)
    values = [leaves[i].value if isinstance(leaves[i], ProxyArray) else leaves[i] for i in dyn]
    dynamic = set(dyn)
    statics = {i: x for i, x in enumerate(leaves) if i not in dynamic}
    meta = {i: stand_in(leaves[i]) for i in dyn if isinstance(leaves[i], ProxyArray)}
    # the argument's path only names it in error messages: calls on other arguments share one
    key = (fn, treedef, tuple(dyn), tuple((i, m[0], m[2], m[3]) for i, m in sorted(meta.items())),
           tuple((i, _static_key(x)) for i, x in statics.items()),
           tuple((tuple(v.shape), str(v.dtype), bool(getattr(jax.typeof(v), "weak_type", False)))
                 for v in values))
    callee = cache.get(key)
    if callee is None:
        callee = cache[key] = _make_callee(fn, treedef, dyn, statics, meta)
    assert callee.jitted is not None  # set by _make_callee
    try:
        flat_out = callee.jitted(*values)
        failed = None
    except _Abort:
        failed, callee.error = callee.error, None
    if failed is not None:
        raise failed  # outside the except block: the callee's exception as it was raised
    return _results(callee, flat_out, leaves)


def _static_key(x: Any) -> Any:
    try:
        hash(x)
    except TypeError:
        return ("id", id(x))
    return (type(x), x)


def _make_callee(fn: Callable[..., Any], treedef: Any, dyn: list[int], statics: dict[int, Any],
                 meta: dict[int, tuple[Any, ...]]) -> _Callee:
    callee = _Callee()

    def body(*values: Any) -> list[Any]:
        leaves = [statics.get(i) for i in range(len(statics) + len(dyn))]
        mine: dict[int, ProxyArray] = {}
        for i, v in zip(dyn, values, strict=True):
            if i in meta:
                leaves[i] = mine[i] = proxy_for(v, meta[i])
            else:
                leaves[i] = v
        a, k = jax.tree_util.tree_unflatten(treedef, leaves)
        try:
            out = converted_callee(fn)(*a, **k)
        except Exception as exc:
            callee.error = exc
            raise _Abort from None
        return _plan(callee, out, mine)

    body.__name__ = getattr(fn, "__name__", "callee")
    body.__qualname__ = getattr(fn, "__qualname__", body.__name__)
    callee.jitted = jax.jit(body)
    return callee


def _plan(callee: _Callee, out: Any, mine: dict[int, ProxyArray]) -> list[Any]:
    """The callee's traced outputs; records how to rebuild its result around them."""
    out_leaves, out_tree = jax.tree_util.tree_flatten(out, is_leaf=_leaf)
    plan: list[tuple[str, Any]] = []
    traced: list[Any] = []
    for x in out_leaves:
        arg = next((i for i, p in mine.items() if p is x), None)
        if arg is not None:
            plan.append(("arg", arg))
        elif isinstance(x, ProxyArray) and x.mask is None:
            plan.append(("scalar" if x.is_scalar else "proxy", len(traced)))
            traced.append(x.value)
        elif isinstance(x, jax.Array):
            plan.append(("value", len(traced)))
            traced.append(x)
        else:
            plan.append(("static", x))
    updated = [i for i, p in mine.items() if p.root.version > 0]
    callee.out = (out_tree, plan, updated)
    return traced + [mine[i].value for i in updated]


def _results(callee: _Callee, flat_out: list[Any], leaves: list[Any]) -> Any:
    assert callee.out is not None  # set when the callee was traced
    out_tree, plan, updated = callee.out
    n = len(flat_out) - len(updated)
    for i, new in zip(updated, flat_out[n:], strict=True):
        leaves[i].write(new)  # the caller's proxy (or view) takes the callee's update
    rebuilt = []
    for kind, x in plan:
        if kind == "arg":
            rebuilt.append(leaves[x])
        elif kind == "proxy":
            rebuilt.append(new_array(flat_out[x]))
        elif kind == "scalar":  # a NumPy scalar in the callee stays one
            rebuilt.append(new_scalar(flat_out[x]))
        elif kind == "value":
            rebuilt.append(flat_out[x])
        else:
            rebuilt.append(x)
    return jax.tree_util.tree_unflatten(out_tree, rebuilt)
