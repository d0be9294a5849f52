"""Reactant's Enzyme vocabulary in Python: automatic differentiation and batching done by
Enzyme-JAX's ``enzyme`` and ``enzyme-batch`` passes rather than by JAX.

``gradient``, ``value_and_gradient`` and ``vjp`` (reverse mode) emit ``enzyme.autodiff``, ``jvp``
(forward mode) emits ``enzyme.fwddiff``, ``batch`` (a vmap) emits ``enzyme.batch``: the function
being differentiated or batched becomes its own private ``func.func`` of the traced module,
called by the Enzyme op in ``@main``, as Reactant.jl's ``Enzyme.autodiff`` / ``batch`` trace it
(``Traced.enzyme_ops`` lists them). The ``batch`` and ``enzyme (AD)`` stages then do the
transformation; presets that lack them (``no_enzyme`` and ``just_batch`` for AD; ``none``,
``canonicalize``, ``noopt`` for both) leave the op in, and XLA cannot compile the module (a
CompileError says so).

Activities (Enzyme's annotations, per flattened argument leaf) follow from ``argnums``: reverse
mode marks floating-point leaves of the differentiated arguments ``enzyme_active`` and every
other array ``enzyme_const``; forward mode marks leaves with a tangent ``enzyme_dup``. Integer
leaves are always const (their derivative is zero: returned as zeros of their own dtype, where
JAX gives float0). Non-array leaves (strings, callables, ...) are static: baked into the
function. Experts pass ``activity=``: one entry per positional argument, ``'active'`` or
``'const'`` (or Enzyme's names), or a pytree of these matching the argument; the gradient is then
a tuple with one entry per positional argument, None for an all-const one (Enzyme.jl's
``gradient`` returns ``nothing`` for a Const argument). ``batch`` broadcasts arguments whose axis
is None, and the values the function closes over, to the batch.

Each function works inside functions reactant_lab traces (``rl.trace``, ``rl.jit``,
``rl.explore``, ``%%reactant_jit``), in JAX mode and in NumPy mode: a NumPy kernel, in-place
updates included, is differentiated or batched with respect to its inputs (it runs on proxy
arrays of its own, so its updates stay inside the function, as Enzyme differentiates mutating
code) and the results come back to the calling kernel as its arrays. Called outside any trace
each compiles and runs through the pipeline like ``rl.jit`` (preset ``all``; NumPy mode for NumPy
arrays). Without enzyme-ad they fall back to ``jax.grad`` / ``jax.value_and_grad`` /
``jax.vjp`` / ``jax.jvp`` / ``jax.vmap``, traced the same way, with an EnzymeUnavailableWarning
saying why. Not supported yet: JAX transformations of the result (``jax.grad`` / ``jax.vmap`` of
a function that calls these), keyword-argument differentiation, complex numbers.
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
from reactant_lab.trace.numpy_mode import ProxyArray, new_array, new_scalar

__all__ = ["batch", "gradient", "jvp", "value_and_gradient", "vjp"]

_ACTIVITY_NAMES = {"active": "enzyme_active", "enzyme_active": "enzyme_active",
                   "const": "enzyme_const", "enzyme_const": "enzyme_const"}

_ACTIVE, _CONST, _STATIC = "enzyme_active", "enzyme_const", "static"


# ---------------------------------------------------------------- helpers


def _is_array(x: Any) -> bool:
    return isinstance(x, jax.Array | np.ndarray | np.generic) or backend.is_tracer(x)


def _inexact(x: Any) -> bool:
    return bool(jnp.issubdtype(jnp.result_type(x), jnp.inexact))


def _traced(tree: Any) -> bool:
    """Whether ``tree`` holds values of a trace: JAX tracers, or NumPy mode's proxy arrays."""
    return any(backend.is_tracer(x) or isinstance(x, ProxyArray)
               for x in jax.tree_util.tree_leaves(tree))


def _proxied(tree: Any) -> bool:
    return any(isinstance(x, ProxyArray) for x in jax.tree_util.tree_leaves(tree))


def _from_numpy(tree: Any) -> Any:
    """NumPy mode's proxy arrays in ``tree`` replaced by their traced values."""
    return jax.tree_util.tree_map(lambda x: x.value if isinstance(x, ProxyArray) else x, tree)


def _to_numpy(tree: Any) -> Any:
    """Traced values in ``tree`` as NumPy mode's arrays (0-d ones as NumPy scalars)."""
    return jax.tree_util.tree_map(
        lambda x: (new_scalar(x) if jnp.ndim(x) == 0 else new_array(x))
        if backend.is_tracer(x) else x, tree)


def _numpy_kernel(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` (a NumPy kernel) as a function of traced values: it gets fresh NumPy-mode arrays
    of its own, so its in-place updates stay inside the differentiated (or batched) function,
    as Enzyme differentiates mutating code; its results cross back as traced values."""

    @functools.wraps(f)
    def on_values(*args: Any, **kwargs: Any) -> Any:
        return _from_numpy(f(*_to_numpy(args), **_to_numpy(kwargs)))

    return on_values


def _in_mode(body: Callable[..., Any], f: Callable[..., Any], *trees: Any) -> Any:
    """``body(f, *trees)`` on traced values. In NumPy mode the proxies in ``trees`` cross as
    their traced values, ``f`` runs on proxies of its own, and the results come back as
    proxies; in JAX mode everything passes as it is."""
    if not _proxied(trees):
        return body(f, *trees)
    return _to_numpy(body(_numpy_kernel(f), *_from_numpy(trees)))


def _fallback(what: str) -> bool:
    """True (after warning once per call site) when enzyme-ad is unavailable: the call then
    runs JAX's own transformation, traced like the Enzyme op would be."""
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
    """``call`` compiled through the pipeline (preset 'all') for calls outside any trace: in
    NumPy mode for NumPy arrays (a NumPy kernel then runs as it does inside ``rl.jit``), in JAX
    mode for JAX code."""
    call.__name__ = name
    call.__qualname__ = name
    return JitFunction(call, mode="auto")


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
    def body(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not backend.enzyme_available():
            return _jax_reverse(fn, args, kwargs, argnums, has_aux, activity, value)
        primal, grad, aux = _reverse(fn, args, kwargs, _argnums(argnums, len(args)),
                                     isinstance(argnums, int), has_aux, activity, value)
        out = (primal, grad) if value else grad
        return (out, aux) if has_aux else out

    def traced(*args: Any, **kwargs: Any) -> Any:
        return _in_mode(body, f, args, kwargs)

    eager = _eager(f"{what}_of_{fn_name(f)}", traced)

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        _fallback(what)
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
    _fallback("vjp")
    if _traced(primals):
        out = _in_mode(lambda fn, ps: fn(*ps), f, primals)
    else:  # on copies: a NumPy kernel may update its arguments in place
        out = f(*jax.tree_util.tree_map(
            lambda x: x.copy() if isinstance(x, np.ndarray) else x, primals))
    aux = None
    if has_aux:
        out, aux = out

    def pullback(primals: tuple[Any, ...], ct: Any) -> tuple[Any, ...]:
        result: tuple[Any, ...] = _in_mode(lambda fn, ps, c: _pullback(fn, ps, c, has_aux), f,
                                           primals, ct)
        return result

    eager = _eager(f"vjp_of_{fn_name(f)}", pullback)

    def vjp_fn(ct: Any) -> tuple[Any, ...]:
        if _traced((primals, ct)):
            return pullback(primals, ct)
        result: tuple[Any, ...] = eager(primals, ct)
        return result

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _pullback(f: Callable[..., Any], primals: tuple[Any, ...], ct: Any,
              has_aux: bool) -> tuple[Any, ...]:
    """Trace-time reverse mode seeded with the cotangent ``ct``: one enzyme.autodiff."""
    if not backend.enzyme_available():
        pull = jax.vjp(f, *primals, has_aux=has_aux)[1]  # type: ignore[call-overload]
        return tuple(pull(ct))
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


# ---------------------------------------------------------------- forward mode


def _forward(f: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...],
             has_aux: bool) -> Any:
    if not backend.enzyme_available():
        return jax.jvp(f, primals, tangents, has_aux=has_aux)
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
    n_aux = out_tree[0].children()[1].num_leaves if has_aux else 0
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
    _fallback("jvp")
    def call(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> Any:
        return _in_mode(lambda fn, ps, ts: _forward(fn, ps, ts, has_aux), f, primals, tangents)

    if _traced((primals, tangents)):
        return call(primals, tangents)

    return _eager(f"jvp_of_{fn_name(f)}", call)(primals, tangents)


# ---------------------------------------------------------------- batch


def _axes_per_leaf(axes: Any, args: tuple[Any, ...], what: str) -> list[list[int | None]]:
    """Per positional argument, the batch axis of each leaf (None: not batched)."""
    if axes is None or isinstance(axes, int):
        return [[axes] * len(jax.tree_util.tree_leaves(a)) for a in args]
    if not isinstance(axes, tuple | list) or len(axes) != len(args):
        raise ValueError(f"{what} must be an int, None, or a tuple with one entry per "
                         f"positional argument ({len(args)}), not {axes!r}")
    out = []
    for i, (spec, arg) in enumerate(zip(axes, args, strict=True)):
        n = len(jax.tree_util.tree_leaves(arg))
        specs = [spec] * n if spec is None or isinstance(spec, int) else \
            jax.tree_util.tree_leaves(spec, is_leaf=lambda x: x is None)
        if len(specs) != n or not all(s is None or isinstance(s, int) for s in specs):
            raise ValueError(f"{what}[{i}] must be an int, None, or a pytree of these matching "
                             f"argument {i} ({n} leaves), not {spec!r}")
        out.append(list(specs))
    return out


def _batched(f: Callable[..., Any], args: tuple[Any, ...], in_axes: Any,
             out_axes: Any) -> Any:
    """Trace-time batch: emit one enzyme.batch over the batched leaves of ``args``; leaves with
    axis None (and anything ``f`` closes over) are broadcast to the batch."""
    if not backend.enzyme_available():
        return jax.vmap(f, in_axes=in_axes, out_axes=out_axes)(*args)
    axes = _axes_per_leaf(in_axes, args, "in_axes")
    leaves, treedefs = zip(*(jax.tree_util.tree_flatten(a) for a in args), strict=True) \
        if args else ((), ())
    sizes = set()
    moved: list[Any] = []
    for i, (ls, axs) in enumerate(zip(leaves, axes, strict=True)):
        for x, ax in zip(ls, axs, strict=True):
            if ax is None:
                continue
            if not _is_array(x) or np.ndim(x) == 0:
                raise ValueError(f"in_axes gives argument {i} a batch axis, but its leaf "
                                 f"{x!r} is not an array with dimensions; give it None")
            if not -np.ndim(x) <= ax < np.ndim(x):
                raise ValueError(f"in_axes {ax} is out of range for a leaf of argument {i} "
                                 f"of shape {tuple(np.shape(x))}")
            sizes.add(np.shape(x)[ax])
            moved.append(jnp.moveaxis(jnp.asarray(x), ax, 0))
    if not moved:
        raise ValueError("batch needs at least one argument with a batch axis (in_axes is "
                         "None everywhere)")
    if len(sizes) != 1:
        raise ValueError(f"the batched axes have different sizes {sorted(sizes)}; they must "
                         "all be the batch size")
    size = sizes.pop()
    out_tree: list[Any] = []

    def flat(*values: Any) -> list[Any]:
        it = iter(values)
        rebuilt = tuple(jax.tree_util.tree_unflatten(td, [
            next(it) if ax is not None else x for x, ax in zip(ls, axs, strict=True)])
            for ls, axs, td in zip(leaves, axes, treedefs, strict=True))
        res = f(*rebuilt)
        out_leaves, tree = jax.tree_util.tree_flatten(res)
        out_tree.append(tree)
        return [jnp.asarray(r) for r in out_leaves]

    example = [jax.ShapeDtypeStruct(m.shape[1:], m.dtype) for m in moved]
    fn = backend.FlatFunction(flat, example, fn_name(f))
    results = backend.batch(fn, moved, (size,))
    tree = out_tree[0]
    if out_axes is None or isinstance(out_axes, int):
        outs = [out_axes] * tree.num_leaves
    else:
        outs = jax.tree_util.tree_leaves(out_axes, is_leaf=lambda x: x is None)
        if len(outs) != tree.num_leaves:
            raise ValueError(f"out_axes {out_axes!r} does not match the {tree.num_leaves} "
                             "results of the function")
    return jax.tree_util.tree_unflatten(tree, [
        r[0] if ax is None else jnp.moveaxis(r, 0, ax) for r, ax in zip(results, outs,
                                                                        strict=True)])


def batch(f: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Callable[..., Any]:
    """``f`` mapped over a batch axis, as ``jax.vmap(f, in_axes, out_axes)``, but emitted as one
    ``enzyme.batch`` op calling ``f``'s own private ``func.func`` (Reactant's ``batch``): the
    ``batch`` stage (Enzyme-JAX's ``enzyme-batch`` pass) turns it into batched StableHLO.
    ``in_axes``: an int or None for every argument, or one entry per positional argument (an
    int, None, or a pytree of these); ``out_axes`` likewise for the results (None: the result
    does not depend on the batch; the first element is returned)."""

    def traced(*args: Any) -> Any:
        return _in_mode(lambda fn, a: _batched(fn, a, in_axes, out_axes), f, args)

    eager = _eager(f"batch_of_{fn_name(f)}", traced)

    @functools.wraps(f)
    def wrapped(*args: Any) -> Any:
        _fallback("batch")
        if _traced(args):
            return traced(*args)
        return eager(*args)

    return wrapped
