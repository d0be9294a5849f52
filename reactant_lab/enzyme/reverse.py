"""Reverse mode: ``gradient``, ``value_and_gradient`` and ``vjp``, each one ``enzyme.autodiff``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab import backend
from reactant_lab.enzyme import checks
from reactant_lab.enzyme.common import (
    ACTIVE,
    ACTIVITY_NAMES,
    CONST,
    dynamic,
    eager,
    fallback,
    from_numpy,
    in_mode,
    leaf_activities,
    plan,
    rebuild,
    traced,
)
from reactant_lab.errors import EnzymeArgumentError
from reactant_lab.trace.jax_mode import fn_name


@dataclass(frozen=True)
class _Grad:
    """What a ``gradient`` / ``value_and_gradient`` was asked for."""

    what: str
    """'gradient' or 'value_and_gradient', for messages."""
    argnums: int | tuple[int, ...]
    has_aux: bool
    holomorphic: bool
    allow_int: bool
    activity: tuple[Any, ...] | None
    value: bool
    """Keep the primal (value_and_gradient)."""


def to_jax_convention(x: Any) -> Any:
    """A complex cotangent or gradient between Enzyme's convention and JAX's. Enzyme's reverse
    mode takes a complex number as the pair (re, im) and returns the transposed Jacobian of
    those pairs (for a real f of z, df/dre + i df/dim); JAX's cotangents are the conjugates
    of those (jax.grad of |z|**2 is 2 conj(z)). The map is its own inverse: a cotangent goes
    in conjugated and a gradient comes out conjugated."""
    return jnp.conj(x) if jnp.iscomplexobj(x) else x


def _checked(g: _Grad, f: Callable[..., Any]) -> Callable[..., Any]:
    """``f``, whose result is checked as jax.grad checks it (a real scalar, or a pair with
    has_aux) before anything differentiates it."""

    @functools.wraps(f)
    def checked(*args: Any, **kwargs: Any) -> Any:
        result = f(*args, **kwargs)
        out = checks.aux_pair(g.what, f, result)[0] if g.has_aux else result
        checks.scalar_output(g.what, f, out, g.has_aux, g.holomorphic)
        return result

    return checked


def _reverse(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
             g: _Grad) -> Any:
    """Trace-time reverse mode: emit one enzyme.autodiff; return (value?, gradient, aux?)."""
    nums = _call_nums(g, f, len(args))
    leaves, treedefs, acts = plan(args, leaf_activities(args, nums, g.activity))
    dyn, dyn_acts = dynamic(leaves, acts)
    aux_tree: list[Any] = []

    def flat(*values: Any) -> list[Any]:
        out = f(*rebuild(leaves, acts, treedefs, values), **kwargs)
        if not g.has_aux:
            return [jnp.asarray(out)]
        aux_leaves, tree = jax.tree_util.tree_flatten(out[1])
        aux_tree.append(tree)
        return [jnp.asarray(out[0]), *(jnp.asarray(a) for a in aux_leaves)]

    fn = backend.FlatFunction(flat, dyn, fn_name(f))
    n_aux = len(fn.out_avals) - 1
    seed = jnp.ones((), fn.out_avals[0][1])  # 1, its own conjugate
    results = backend.autodiff(
        fn, dyn, dyn_acts, [ACTIVE if g.value else "enzyme_activenoneed",
                            *[CONST] * n_aux], [seed])
    primal = results[0] if g.value else None
    aux_values = results[int(g.value):int(g.value) + n_aux]
    grads = iter(results[int(g.value) + n_aux:])
    per_arg = []
    for ls, as_, td in zip(leaves, acts, treedefs, strict=True):
        gs = [to_jax_convention(next(grads)) if a == ACTIVE else jnp.zeros_like(x)
              if a == CONST else None for x, a in zip(ls, as_, strict=True)]
        per_arg.append(jax.tree_util.tree_unflatten(td, gs) if g.activity is None or any(
            a == ACTIVE for a in as_) else None)
    if g.activity is not None:
        grad: Any = tuple(per_arg)
    elif isinstance(g.argnums, int):
        grad = per_arg[nums[0]]
    else:
        grad = tuple(per_arg[k] for k in nums)
    aux = jax.tree_util.tree_unflatten(aux_tree[0], aux_values) if g.has_aux else None
    return primal, grad, aux


def _call_nums(g: _Grad, f: Callable[..., Any], n: int) -> tuple[int, ...]:
    """The positions ``argnums`` names in a call of ``n`` positional arguments (none when
    ``activity`` decides)."""
    return () if g.activity is not None else checks.call_argnums(g.what, f, g.argnums, n)


def _reverse_fn(f: Callable[..., Any], g: _Grad) -> Callable[..., Any]:
    checks.argnums(g.what, g.argnums)

    def body(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        fn = _checked(g, fn)
        if not backend.enzyme_available():
            return _jax_reverse(fn, args, kwargs, g)
        primal, grad, aux = _reverse(fn, args, kwargs, g)
        out = (primal, grad) if g.value else grad
        return (out, aux) if g.has_aux else out

    def in_trace(*args: Any, **kwargs: Any) -> Any:
        return in_mode(body, f, args, kwargs)

    compiled = eager(f"{g.what}_of_{fn_name(f)}", in_trace)

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        fallback(g.what)
        values = from_numpy(args)
        acts = leaf_activities(values, _call_nums(g, f, len(args)), g.activity)
        checks.grad_inputs(g.what, f, values, acts, g.holomorphic, g.allow_int)
        if traced((args, kwargs)):
            return in_trace(*args, **kwargs)
        return compiled(*args, **kwargs)

    return wrapped


def _jax_reverse(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 g: _Grad) -> Any:
    """JAX's reverse mode in the shape ``gradient`` / ``value_and_gradient`` return (integer
    leaves' zeros in their own dtype, as with Enzyme, rather than float0)."""
    nums = _call_nums(g, f, len(args)) if g.activity is None else tuple(
        i for i, spec in enumerate(g.activity) if _has_active(spec))
    jax_fn = jax.value_and_grad if g.value else jax.grad
    res = jax_fn(f, argnums=nums, has_aux=g.has_aux, holomorphic=g.holomorphic,
                 allow_int=g.allow_int)(*args, **kwargs)
    out, aux = res if g.has_aux else (res, None)
    primal, grads = out if g.value else (None, out)
    by_arg = {i: jax.tree_util.tree_map(
        lambda d, x: jnp.zeros_like(x) if d.dtype == checks.FLOAT0 else d, grad, args[i])
        for i, grad in zip(nums, grads, strict=True)}
    if g.activity is not None:
        grad: Any = tuple(by_arg.get(i) for i in range(len(args)))
    elif isinstance(g.argnums, int):
        grad = by_arg[nums[0]]
    else:
        grad = tuple(by_arg[k] for k in nums)
    out = (primal, grad) if g.value else grad
    return (out, aux) if g.has_aux else out


def _has_active(spec: Any) -> bool:
    return any(ACTIVITY_NAMES.get(s) == ACTIVE for s in jax.tree_util.tree_leaves(spec))


def gradient(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
             holomorphic: bool = False, allow_int: bool = False, *,
             activity: Sequence[Any] | None = None) -> Callable[..., Any]:
    """The gradient of scalar-valued ``f`` with respect to positional arguments ``argnums``
    (as ``jax.grad``, its conventions and its checks included), computed by Enzyme
    (``enzyme.autodiff``, reverse mode). ``has_aux``: ``f`` returns (value, aux) and the
    result is (gradient, aux). ``holomorphic``: complex inputs and output, the gradient
    f'(z). ``allow_int``: integer inputs get a zero gradient of their own dtype (JAX gives
    float0). ``activity``: see the package docstring (overrides ``argnums``)."""
    return _reverse_fn(f, _Grad("gradient", _nums(argnums), has_aux, holomorphic, allow_int,
                                _activity(activity), value=False))


def value_and_gradient(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
                       has_aux: bool = False, holomorphic: bool = False,
                       allow_int: bool = False, *,
                       activity: Sequence[Any] | None = None) -> Callable[..., Any]:
    """(value, gradient) of scalar-valued ``f`` (as ``jax.value_and_grad``) from one
    ``enzyme.autodiff`` whose result activity keeps the primal (``enzyme_active``)."""
    return _reverse_fn(f, _Grad("value_and_gradient", _nums(argnums), has_aux, holomorphic,
                                allow_int, _activity(activity), value=True))


def _nums(argnums: Any) -> Any:
    return tuple(argnums) if isinstance(argnums, Sequence) and not isinstance(argnums, str) \
        else argnums


def _activity(activity: Sequence[Any] | None) -> tuple[Any, ...] | None:
    return None if activity is None else tuple(activity)


def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``(f(*primals), vjp_fn)`` (and aux with ``has_aux``) as ``jax.vjp``, its conventions and
    its checks included; ``vjp_fn(ct)`` emits an ``enzyme.autodiff`` seeded with ``ct`` and
    returns one cotangent per primal."""
    fallback("vjp")
    checks.primals("vjp", f, from_numpy(primals), "primals")
    if traced(primals):
        out = in_mode(lambda fn, ps: fn(*ps), f, primals)
    else:  # on copies: a NumPy kernel may update its arguments in place
        out = f(*jax.tree_util.tree_map(
            lambda x: x.copy() if isinstance(x, np.ndarray) else x, primals))
    out, aux = checks.aux_pair("vjp", f, out) if has_aux else (out, None)
    out_values = from_numpy(out)

    def pullback(primals: tuple[Any, ...], ct: Any) -> tuple[Any, ...]:
        result: tuple[Any, ...] = in_mode(lambda fn, ps, c: _pullback(fn, ps, c, has_aux), f,
                                          primals, ct)
        return result

    compiled = eager(f"vjp_of_{fn_name(f)}", pullback)

    def vjp_fn(ct: Any, *more: Any) -> tuple[Any, ...]:
        if more:
            raise EnzymeArgumentError(
                f"the vjp function of {fn_name(f)} takes one cotangent, shaped as the output "
                f"of {fn_name(f)} (a tuple for a tuple output); it got {1 + len(more)} "
                "arguments", "ct")
        checks.cotangent(f, from_numpy(ct), out_values)
        if traced((primals, ct)):
            return pullback(primals, ct)
        result: tuple[Any, ...] = compiled(primals, checks.no_float0(ct))
        return result

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _pullback(f: Callable[..., Any], primals: tuple[Any, ...], ct: Any,
              has_aux: bool) -> tuple[Any, ...]:
    """Trace-time reverse mode seeded with the cotangent ``ct`` (checked): one
    enzyme.autodiff."""
    if not backend.enzyme_available():
        pull = jax.vjp(f, *primals, has_aux=has_aux)[1]  # type: ignore[call-overload]
        return tuple(pull(ct))
    leaves, treedefs, acts = plan(primals, leaf_activities(
        primals, tuple(range(len(primals))), None))
    dyn, dyn_acts = dynamic(leaves, acts)

    def flat(*values: Any) -> list[Any]:
        res = f(*rebuild(leaves, acts, treedefs, values))
        res = res[0] if has_aux else res
        return [jnp.asarray(r) for r in jax.tree_util.tree_leaves(res)]

    fn = backend.FlatFunction(flat, dyn, fn_name(f))
    ret_acts, seeds = [], []
    for c, (_shape, dtype) in zip(jax.tree_util.tree_leaves(ct), fn.out_avals, strict=True):
        if jnp.issubdtype(dtype, jnp.inexact):
            ret_acts.append("enzyme_activenoneed")
            seeds.append(to_jax_convention(jnp.asarray(c, dtype)))
        else:
            ret_acts.append("enzyme_constnoneed")
    grads = iter(backend.autodiff(fn, dyn, dyn_acts, ret_acts, seeds))
    return tuple(jax.tree_util.tree_unflatten(td, [
        to_jax_convention(next(grads)) if a == ACTIVE else jnp.zeros_like(x) if a == CONST
        else x for x, a in zip(ls, as_, strict=True)])
        for ls, as_, td in zip(leaves, acts, treedefs, strict=True))
