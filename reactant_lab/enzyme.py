"""Reactant's Enzyme vocabulary in Python: automatic differentiation done by Enzyme-JAX's
``enzyme`` pass rather than by JAX.

``gradient``, ``value_and_gradient`` and ``vjp`` (reverse mode) emit ``enzyme.autodiff``, ``jvp``
(forward mode) emits ``enzyme.fwddiff``: the function being differentiated becomes its own
private ``func.func`` of the traced module, called by the Enzyme op in ``@main``, as Reactant.jl's
``Enzyme.autodiff`` traces it. The ``enzyme (AD)`` stage then differentiates it; presets that
have no such stage (``no_enzyme``, ``none``, ``canonicalize``, ``just_batch``, ``noopt``) leave
the op in, and XLA cannot compile the module (a CompileError says so).

Activities (Enzyme's annotations, per flattened argument leaf) follow from ``argnums``: reverse
mode marks floating-point leaves of the differentiated arguments ``enzyme_active`` and every
other array ``enzyme_const``; forward mode marks leaves with a tangent ``enzyme_dup``. Integer
leaves are always const (their derivative is zero: returned as zeros of their own dtype, where
JAX gives float0). Non-array leaves (strings, callables, ...) are static: baked into the
function. Experts pass ``activity=``: one entry per positional argument, ``'active'`` or
``'const'`` (or Enzyme's names), or a pytree of these matching the argument; the gradient is then
a tuple with one entry per positional argument, None for an all-const one (Enzyme.jl's
``gradient`` returns ``nothing`` for a Const argument).

Each function works inside functions reactant_lab traces in JAX mode (``rl.trace``, ``rl.jit``,
``rl.explore``, ``%%reactant_jit``); called outside any trace it compiles and runs through the
pipeline like ``rl.jit`` (preset ``all``). Without enzyme-ad it falls back to ``jax.grad`` /
``jax.value_and_grad`` / ``jax.vjp`` / ``jax.jvp`` with an EnzymeUnavailableWarning saying why.
Not supported yet: JAX transformations of the result (``jax.grad`` / ``jax.vmap`` of a function
that calls these), keyword-argument differentiation, complex numbers.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab import backend
from reactant_lab.errors import EnzymeUnavailableWarning
from reactant_lab.explore import JitFunction
from reactant_lab.trace.jax_mode import fn_name

__all__ = ["gradient", "jvp", "value_and_gradient", "vjp"]

_ACTIVITY_NAMES = {"active": "enzyme_active", "enzyme_active": "enzyme_active",
                   "const": "enzyme_const", "enzyme_const": "enzyme_const"}

_ACTIVE, _CONST, _STATIC = "enzyme_active", "enzyme_const", "static"


# ---------------------------------------------------------------- helpers


def _is_array(x: Any) -> bool:
    return isinstance(x, jax.Array | np.ndarray | np.generic) or backend.is_tracer(x)


def _inexact(x: Any) -> bool:
    return bool(jnp.issubdtype(jnp.result_type(x), jnp.inexact))


def _traced(tree: Any) -> bool:
    return any(backend.is_tracer(x) for x in jax.tree_util.tree_leaves(tree))


def _fallback(what: str) -> bool:
    """True (after warning once per call site) when enzyme-ad is unavailable."""
    if backend.enzyme_available():
        return False
    warnings.warn(
        f"reactant_lab.enzyme.{what} runs JAX's own transformation: the Enzyme stages are "
        f"unavailable here ({backend.enzyme_unavailable_reason()}), so the module has no Enzyme "
        "op and the 'enzyme (AD)' and 'batch' stages have nothing to transform.",
        EnzymeUnavailableWarning, stacklevel=3)
    return True


def _argnums(argnums: int | Sequence[int], n: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for k in nums:
        if not isinstance(k, int) or not -n <= k < n:
            raise ValueError(f"argnums {argnums!r} does not fit a call with {n} positional "
                             "arguments")
    return tuple(k % n for k in nums)


def _leaf_activities(args: tuple[Any, ...], argnums: tuple[int, ...],
                     activity: Sequence[Any] | None) -> list[list[str]]:
    """Per positional argument, the activity of each of its leaves (before the dtype check)."""
    if activity is None:
        return [[_ACTIVE if i in argnums else _CONST] * len(jax.tree_util.tree_leaves(a))
                for i, a in enumerate(args)]
    if len(activity) != len(args):
        raise ValueError(f"activity has {len(activity)} entries for {len(args)} positional "
                         "arguments: give one per argument ('active' or 'const', or a pytree "
                         "of these matching the argument)")
    out = []
    for i, (spec, arg) in enumerate(zip(activity, args, strict=True)):
        n = len(jax.tree_util.tree_leaves(arg))
        specs = [spec] * n if isinstance(spec, str) else jax.tree_util.tree_leaves(spec)
        if len(specs) != n:
            raise ValueError(f"activity[{i}] has {len(specs)} leaves; argument {i} has {n}")
        bad = [s for s in specs if s not in _ACTIVITY_NAMES]
        if bad:
            raise ValueError(f"activity {bad[0]!r} of argument {i}: reverse mode takes "
                             "'active' or 'const' (Duplicated shadows are for mutable "
                             "buffers, which JAX arrays are not)")
        out.append([_ACTIVITY_NAMES[s] for s in specs])
    return out


def _plan(args: tuple[Any, ...], acts: list[list[str]]) -> tuple[
        list[list[Any]], list[Any], list[list[str]]]:
    """Leaves per argument (Python numbers of active arguments made arrays), the tree
    definitions, and per leaf its final activity: active only for floating-point arrays,
    static for non-arrays."""
    leaves, treedefs, final = [], [], []
    for arg, arg_acts in zip(args, acts, strict=True):
        ls, td = jax.tree_util.tree_flatten(arg)
        new_ls, new_acts = [], []
        for given, act in zip(ls, arg_acts, strict=True):
            number = isinstance(given, int | float) and not isinstance(given, bool)
            leaf = jnp.asarray(given) if act == _ACTIVE and number else given
            if not _is_array(leaf):
                if act == _ACTIVE:
                    raise TypeError(f"cannot differentiate with respect to {leaf!r} "
                                    f"({type(leaf).__name__}): not an array")
                new_acts.append(_STATIC)
            else:
                new_acts.append(_ACTIVE if act == _ACTIVE and _inexact(leaf) else _CONST)
            new_ls.append(leaf)
        leaves.append(new_ls)
        treedefs.append(td)
        final.append(new_acts)
    return leaves, treedefs, final


def _dynamic(leaves: list[list[Any]], acts: list[list[str]]) -> tuple[list[Any], list[str]]:
    flat = [(x, a) for ls, as_ in zip(leaves, acts, strict=True)
            for x, a in zip(ls, as_, strict=True) if a != _STATIC]
    return [x for x, _ in flat], [a for _, a in flat]


def _rebuild(leaves: list[list[Any]], acts: list[list[str]], treedefs: list[Any],
             dyn: Sequence[Any]) -> tuple[Any, ...]:
    it = iter(dyn)
    return tuple(jax.tree_util.tree_unflatten(
        td, [next(it) if a != _STATIC else x for x, a in zip(ls, as_, strict=True)])
        for ls, as_, td in zip(leaves, acts, treedefs, strict=True))


def _eager(name: str, call: Callable[..., Any]) -> JitFunction:
    """``call`` compiled through the pipeline (preset 'all') for calls outside any trace."""
    call.__name__ = name
    call.__qualname__ = name
    return JitFunction(call, mode="jax")


# ---------------------------------------------------------------- reverse mode


def _reverse(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
             argnums: tuple[int, ...], single: bool, has_aux: bool,
             activity: Sequence[Any] | None, value: bool) -> Any:
    """Trace-time reverse mode: emit one enzyme.autodiff; return (value?, gradient, aux?)."""
    leaves, treedefs, acts = _plan(args, _leaf_activities(args, argnums, activity))
    dyn, dyn_acts = _dynamic(leaves, acts)
    aux_tree: list[Any] = []

    def flat(*values: Any) -> list[Any]:
        out = f(*_rebuild(leaves, acts, treedefs, values), **kwargs)
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
        fn, dyn, dyn_acts, [_ACTIVE if value else "enzyme_activenoneed",
                            *[_CONST] * n_aux], [seed])
    primal = results[0] if value else None
    aux_values = results[int(value):int(value) + n_aux]
    grads = iter(results[int(value) + n_aux:])
    per_arg = []
    for ls, as_, td in zip(leaves, acts, treedefs, strict=True):
        gs = [next(grads) if a == _ACTIVE else jnp.zeros_like(x) if a == _CONST else None
              for x, a in zip(ls, as_, strict=True)]
        per_arg.append(jax.tree_util.tree_unflatten(td, gs) if activity is None or any(
            a == _ACTIVE for a in as_) else None)
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
    def traced(*args: Any, **kwargs: Any) -> Any:
        primal, grad, aux = _reverse(f, args, kwargs, _argnums(argnums, len(args)),
                                     isinstance(argnums, int), has_aux, activity, value)
        out = (primal, grad) if value else grad
        return (out, aux) if has_aux else out

    eager = _eager(f"{what}_of_{fn_name(f)}", traced)

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if _fallback(what):
            return _jax_reverse(f, args, kwargs, argnums, has_aux, activity, value)
        if _traced((args, kwargs)):
            return traced(*args, **kwargs)
        return eager(*args, **kwargs)

    return wrapped


def _jax_reverse(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 argnums: int | Sequence[int], has_aux: bool, activity: Sequence[Any] | None,
                 value: bool) -> Any:
    """JAX's reverse mode in the shape ``gradient`` / ``value_and_gradient`` return."""
    jax_fn = jax.value_and_grad if value else jax.grad
    if activity is None:
        return jax_fn(f, argnums=argnums, has_aux=has_aux)(*args, **kwargs)
    _leaf_activities(args, (), activity)  # the same checks as with Enzyme
    nums = tuple(i for i, spec in enumerate(activity) if _has_active(spec))
    res = jax_fn(f, argnums=nums, has_aux=has_aux)(*args, **kwargs)
    out, aux = res if has_aux else (res, None)
    primal, grads = out if value else (None, out)
    by_arg = dict(zip(nums, grads, strict=True))
    grad = tuple(by_arg.get(i) for i in range(len(args)))
    out = (primal, grad) if value else grad
    return (out, aux) if has_aux else out


def _has_active(spec: Any) -> bool:
    return any(_ACTIVITY_NAMES.get(s) == _ACTIVE for s in jax.tree_util.tree_leaves(spec))


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
    if _fallback("vjp"):
        return jax.vjp(f, *primals, has_aux=has_aux)  # type: ignore[call-overload]
    out = f(*primals)
    aux = None
    if has_aux:
        out, aux = out

    def pullback(primals: tuple[Any, ...], ct: Any) -> tuple[Any, ...]:
        leaves, treedefs, acts = _plan(primals, _leaf_activities(
            primals, tuple(range(len(primals))), None))
        dyn, dyn_acts = _dynamic(leaves, acts)
        ct_leaves = jax.tree_util.tree_leaves(ct)

        def flat(*values: Any) -> list[Any]:
            res = f(*_rebuild(leaves, acts, treedefs, values))
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
            next(grads) if a == _ACTIVE else jnp.zeros_like(x) if a == _CONST else x
            for x, a in zip(ls, as_, strict=True)])
            for ls, as_, td in zip(leaves, acts, treedefs, strict=True))

    eager = _eager(f"vjp_of_{fn_name(f)}", pullback)

    def vjp_fn(ct: Any) -> tuple[Any, ...]:
        if _traced((primals, ct)):
            return pullback(primals, ct)
        result: tuple[Any, ...] = eager(primals, ct)
        return result

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


# ---------------------------------------------------------------- forward mode


def _forward(f: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...],
             has_aux: bool) -> Any:
    leaves, treedefs, acts = _plan(primals, _leaf_activities(
        primals, tuple(range(len(primals))), None))
    tangent_leaves = [jax.tree_util.tree_leaves(t) for t in tangents]
    args, arg_tangents, arg_acts = [], [], []
    for ls, ts, as_ in zip(leaves, tangent_leaves, acts, strict=True):
        if len(ts) != len(ls):
            raise TypeError("primals and tangents must have the same tree structure")
        for x, t, a in zip(ls, ts, as_, strict=True):
            if a == _STATIC:
                continue
            args.append(x)
            dup = a == _ACTIVE
            arg_tangents.append(jnp.asarray(t, jnp.result_type(x)) if dup else None)
            arg_acts.append("enzyme_dup" if dup else _CONST)
    out_tree: list[Any] = []

    def flat(*values: Any) -> list[Any]:
        it = iter(values)
        rebuilt = tuple(jax.tree_util.tree_unflatten(
            td, [next(it) if a != _STATIC else x for x, a in zip(ls, as_, strict=True)])
            for ls, as_, td in zip(leaves, acts, treedefs, strict=True))
        res = f(*rebuilt)
        out_leaves, tree = jax.tree_util.tree_flatten(res)
        out_tree.append(tree)
        return [jnp.asarray(r) for r in out_leaves]

    fn = backend.FlatFunction(flat, args, fn_name(f))
    n_aux = len(jax.tree_util.tree_leaves(out_tree[0].children()[1])) if has_aux else 0
    n_out = len(fn.out_avals) - n_aux
    ret_acts = ["enzyme_dup" if jnp.issubdtype(d, jnp.inexact) and i < n_out else _CONST
                for i, (_s, d) in enumerate(fn.out_avals)]
    results = iter(backend.fwddiff(fn, args, arg_tangents, arg_acts, ret_acts))
    outs, touts = [], []
    for (shape, dtype), act in zip(fn.out_avals, ret_acts, strict=True):
        outs.append(next(results))
        touts.append(next(results) if act == "enzyme_dup" else jnp.zeros(shape, dtype))
    tree = out_tree[0]
    if not has_aux:
        return (jax.tree_util.tree_unflatten(tree, outs),
                jax.tree_util.tree_unflatten(tree, touts))
    out_def, aux_def = tree.children()
    return (jax.tree_util.tree_unflatten(out_def, outs[:n_out]),
            jax.tree_util.tree_unflatten(out_def, touts[:n_out]),
            jax.tree_util.tree_unflatten(aux_def, outs[n_out:]))


def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> Any:
    """``(f(*primals), tangent of the output)`` (and aux with ``has_aux``) as ``jax.jvp``,
    computed by Enzyme's forward mode (``enzyme.fwddiff``; floating-point leaves are
    ``enzyme_dup`` with their tangent, integer leaves ``enzyme_const``)."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise TypeError(f"jvp got {len(primals)} primals and {len(tangents)} tangents")
    if _fallback("jvp"):
        return jax.jvp(f, primals, tangents, has_aux=has_aux)
    if _traced((primals, tangents)):
        return _forward(f, primals, tangents, has_aux)

    def call(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> Any:
        return _forward(f, primals, tangents, has_aux)

    return _eager(f"jvp_of_{fn_name(f)}", call)(primals, tangents)
