"""Reverse mode: ``gradient``, ``value_and_gradient`` and ``vjp``, each one ``enzyme.autodiff``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab import backend
from reactant_lab.enzyme.common import (
    ACTIVE,
    ACTIVITY_NAMES,
    CONST,
    dynamic,
    eager,
    fallback,
    in_mode,
    leaf_activities,
    plan,
    rebuild,
    traced,
)
from reactant_lab.trace.jax_mode import fn_name


def _argnums(argnums: int | Sequence[int], n: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for k in nums:
        if not isinstance(k, int) or not -n <= k < n:
            raise ValueError(f"argnums {argnums!r} does not fit a call with {n} positional "
                             "arguments")
    return tuple(k % n for k in nums)


def _reverse(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
             argnums: tuple[int, ...], single: bool, has_aux: bool,
             activity: Sequence[Any] | None, value: bool) -> Any:
    """Trace-time reverse mode: emit one enzyme.autodiff; return (value?, gradient, aux?)."""
    leaves, treedefs, acts = plan(args, leaf_activities(args, argnums, activity))
    dyn, dyn_acts = dynamic(leaves, acts)
    aux_tree: list[Any] = []

    def flat(*values: Any) -> list[Any]:
        out = f(*rebuild(leaves, acts, treedefs, values), **kwargs)
        aux_leaves: list[Any] = []
        if has_aux:
            if not (isinstance(out, tuple | list) and len(out) == 2):
                raise TypeError("with has_aux=True the function must return a pair "
                                "(output, auxiliary data)")
            out, aux = out
            aux_leaves, tree = jax.tree_util.tree_flatten(aux)
            aux_tree.append(tree)
            aux_leaves = [jnp.asarray(a) for a in aux_leaves]
        out = jnp.asarray(out)
        if out.shape != () or not jnp.issubdtype(out.dtype, jnp.floating):
            raise TypeError("gradient needs a function returning a real scalar, got "
                            f"{out.dtype}{list(out.shape)}; use vjp for other outputs")
        return [out, *aux_leaves]

    fn = backend.FlatFunction(flat, dyn, fn_name(f))
    n_aux = len(fn.out_avals) - 1
    seed = jnp.ones((), fn.out_avals[0][1])
    results = backend.autodiff(
        fn, dyn, dyn_acts, [ACTIVE if value else "enzyme_activenoneed",
                            *[CONST] * n_aux], [seed])
    primal = results[0] if value else None
    aux_values = results[int(value):int(value) + n_aux]
    grads = iter(results[int(value) + n_aux:])
    per_arg = []
    for ls, as_, td in zip(leaves, acts, treedefs, strict=True):
        gs = [next(grads) if a == ACTIVE else jnp.zeros_like(x) if a == CONST else None
              for x, a in zip(ls, as_, strict=True)]
        per_arg.append(jax.tree_util.tree_unflatten(td, gs) if activity is None or any(
            a == ACTIVE for a in as_) else None)
    if activity is not None:
        grad: Any = tuple(per_arg)
    elif single:
        grad = per_arg[argnums[0]]
    else:
        grad = tuple(per_arg[k] for k in argnums)
    aux = jax.tree_util.tree_unflatten(aux_tree[0], aux_values) if has_aux else None
    return primal, grad, aux


def _reverse_fn(what: str, f: Callable[..., Any], argnums: int | Sequence[int], has_aux: bool,
                activity: Sequence[Any] | None, value: bool) -> Callable[..., Any]:
    def body(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not backend.enzyme_available():
            return _jax_reverse(fn, args, kwargs, argnums, has_aux, activity, value)
        primal, grad, aux = _reverse(fn, args, kwargs, _argnums(argnums, len(args)),
                                     isinstance(argnums, int), has_aux, activity, value)
        out = (primal, grad) if value else grad
        return (out, aux) if has_aux else out

    def in_trace(*args: Any, **kwargs: Any) -> Any:
        return in_mode(body, f, args, kwargs)

    compiled = eager(f"{what}_of_{fn_name(f)}", in_trace)

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        fallback(what)
        if traced((args, kwargs)):
            return in_trace(*args, **kwargs)
        return compiled(*args, **kwargs)

    return wrapped


def _jax_reverse(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 argnums: int | Sequence[int], has_aux: bool, activity: Sequence[Any] | None,
                 value: bool) -> Any:
    """JAX's reverse mode in the shape ``gradient`` / ``value_and_gradient`` return."""
    jax_fn = jax.value_and_grad if value else jax.grad
    if activity is None:
        return jax_fn(f, argnums=argnums, has_aux=has_aux)(*args, **kwargs)
    leaf_activities(args, (), activity)  # the same checks as with Enzyme
    nums = tuple(i for i, spec in enumerate(activity) if _has_active(spec))
    res = jax_fn(f, argnums=nums, has_aux=has_aux)(*args, **kwargs)
    out, aux = res if has_aux else (res, None)
    primal, grads = out if value else (None, out)
    by_arg = dict(zip(nums, grads, strict=True))
    grad = tuple(by_arg.get(i) for i in range(len(args)))
    out = (primal, grad) if value else grad
    return (out, aux) if has_aux else out


def _has_active(spec: Any) -> bool:
    return any(ACTIVITY_NAMES.get(s) == ACTIVE for s in jax.tree_util.tree_leaves(spec))


def gradient(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
             *, activity: Sequence[Any] | None = None) -> Callable[..., Any]:
    """The gradient of scalar-valued ``f`` with respect to positional arguments ``argnums``
    (as ``jax.grad``), computed by Enzyme (``enzyme.autodiff``, reverse mode). ``has_aux``:
    ``f`` returns (value, aux) and the result is (gradient, aux). ``activity``: see the module
    docstring (overrides ``argnums``)."""
    return _reverse_fn("gradient", f, argnums, has_aux, activity, value=False)


def value_and_gradient(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
                       has_aux: bool = False, *,
                       activity: Sequence[Any] | None = None) -> Callable[..., Any]:
    """(value, gradient) of scalar-valued ``f`` (as ``jax.value_and_grad``) from one
    ``enzyme.autodiff`` whose result activity keeps the primal (``enzyme_active``)."""
    return _reverse_fn("value_and_gradient", f, argnums, has_aux, activity, value=True)


def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``(f(*primals), vjp_fn)`` (and aux with ``has_aux``) as ``jax.vjp``; ``vjp_fn(ct)``
    emits an ``enzyme.autodiff`` seeded with ``ct`` and returns one cotangent per primal."""
    fallback("vjp")
    if traced(primals):
        out = in_mode(lambda fn, ps: fn(*ps), f, primals)
    else:  # on copies: a NumPy kernel may update its arguments in place
        out = f(*jax.tree_util.tree_map(
            lambda x: x.copy() if isinstance(x, np.ndarray) else x, primals))
    aux = None
    if has_aux:
        out, aux = out

    def pullback(primals: tuple[Any, ...], ct: Any) -> tuple[Any, ...]:
        result: tuple[Any, ...] = in_mode(lambda fn, ps, c: _pullback(fn, ps, c, has_aux), f,
                                          primals, ct)
        return result

    compiled = eager(f"vjp_of_{fn_name(f)}", pullback)

    def vjp_fn(ct: Any) -> tuple[Any, ...]:
        if traced((primals, ct)):
            return pullback(primals, ct)
        result: tuple[Any, ...] = compiled(primals, ct)
        return result

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _pullback(f: Callable[..., Any], primals: tuple[Any, ...], ct: Any,
              has_aux: bool) -> tuple[Any, ...]:
    """Trace-time reverse mode seeded with the cotangent ``ct``: one enzyme.autodiff."""
    if not backend.enzyme_available():
        pull = jax.vjp(f, *primals, has_aux=has_aux)[1]  # type: ignore[call-overload]
        return tuple(pull(ct))
    leaves, treedefs, acts = plan(primals, leaf_activities(
        primals, tuple(range(len(primals))), None))
    dyn, dyn_acts = dynamic(leaves, acts)
    ct_leaves = jax.tree_util.tree_leaves(ct)

    def flat(*values: Any) -> list[Any]:
        res = f(*rebuild(leaves, acts, treedefs, values))
        res = res[0] if has_aux else res
        return [jnp.asarray(r) for r in jax.tree_util.tree_leaves(res)]

    fn = backend.FlatFunction(flat, dyn, fn_name(f))
    if len(ct_leaves) != len(fn.out_avals):
        raise TypeError(f"the cotangent has {len(ct_leaves)} leaves; the output of "
                        f"{fn_name(f)} has {len(fn.out_avals)}")
    ret_acts, seeds = [], []
    for c, (shape, dtype) in zip(ct_leaves, fn.out_avals, strict=True):
        if jnp.issubdtype(dtype, jnp.inexact):
            ret_acts.append("enzyme_activenoneed")
            seeds.append(jnp.broadcast_to(jnp.asarray(c, dtype), shape))
        else:
            ret_acts.append("enzyme_constnoneed")
    grads = iter(backend.autodiff(fn, dyn, dyn_acts, ret_acts, seeds))
    return tuple(jax.tree_util.tree_unflatten(td, [
        next(grads) if a == ACTIVE else jnp.zeros_like(x) if a == CONST else x
        for x, a in zip(ls, as_, strict=True)])
        for ls, as_, td in zip(leaves, acts, treedefs, strict=True))
