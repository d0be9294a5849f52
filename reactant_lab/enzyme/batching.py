"""``batch``: a vmap emitted as one ``enzyme.batch`` op, which the ``batch`` stage expands."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab import backend
from reactant_lab.enzyme import checks
from reactant_lab.enzyme.common import eager, fallback, from_numpy, in_mode, is_array, traced
from reactant_lab.errors import EnzymeArgumentError
from reactant_lab.trace.jax_mode import fn_name


def _axes_per_leaf(f: Callable[..., Any], in_axes: Any,
                   args: tuple[Any, ...]) -> list[list[int | None]]:
    """Per positional argument, the batch axis of each leaf (None: not batched)."""
    if in_axes is None or isinstance(in_axes, int):
        return [checks.per_leaf("in_axes", in_axes, a) for a in args]
    if not isinstance(in_axes, tuple | list) or len(in_axes) != len(args):
        raise EnzymeArgumentError(
            f"batch({fn_name(f)}): in_axes must be an int, None, or a tuple with one entry per "
            f"positional argument ({len(args)} in this call), not {in_axes!r}")
    return [checks.per_leaf(f"in_axes[{i}]", spec, arg)
            for i, (spec, arg) in enumerate(zip(in_axes, args, strict=True))]


def _batch_size(f: Callable[..., Any], args: tuple[Any, ...],
                axes: list[list[int | None]]) -> int:
    """The size of the batch axes ``axes`` gives ``args``, once each is checked."""
    sizes = {}
    for i, (arg, axs) in enumerate(zip(args, axes, strict=True)):
        for (path, x), ax in zip(checks.with_paths(arg, f"args[{i}]"), axs, strict=True):
            if ax is None:
                continue
            rank = np.ndim(x) if is_array(x) else 0
            if not -rank <= ax < rank:
                raise EnzymeArgumentError(
                    f"batch({fn_name(f)}): in_axes gives {path} ({checks.describe(x)}) the batch "
                    f"axis {ax}, which it does not have: give "
                    + (f"an axis in [{-rank}, {rank - 1}], " if rank else "")
                    + "or None to broadcast it to the batch", path)
            sizes[path] = np.shape(x)[ax]
    if not sizes:
        raise EnzymeArgumentError(f"batch({fn_name(f)}): no argument has a batch axis (in_axes "
                                  "is None everywhere); give at least one an int")
    if len(set(sizes.values())) != 1:
        listed = ", ".join(f"{p}: {n}" for p, n in sizes.items())
        raise EnzymeArgumentError(f"batch({fn_name(f)}): the batch axes have different sizes "
                                  f"({listed}); they must all be the batch size")
    return int(next(iter(sizes.values())))


def _out_axes(f: Callable[..., Any], fn: Any, tree: Any, out_axes: Any,
              moved: list[Any]) -> list[int | None]:
    """One out axis per result, checked against its rank and against the batch."""
    shapes = [jax.ShapeDtypeStruct(s, d) for s, d in fn.out_avals]
    placed = jax.tree_util.tree_unflatten(tree, shapes)
    axes = checks.per_leaf("out_axes", out_axes, placed)
    paths = [path for path, _ in checks.with_paths(placed, "result")]
    for path, ax, s in zip(paths, axes, shapes, strict=True):
        if ax is not None:
            checks.out_axis(f, path, ax, s.shape)
    if any(ax is None for ax in axes):
        for path, ax, varies in zip(paths, axes, backend.batched_results(fn, moved),
                                    strict=True):
            if ax is None and varies:
                raise checks.unbatched(f, path)
    return axes


def _batched(f: Callable[..., Any], args: tuple[Any, ...], in_axes: Any,
             out_axes: Any) -> Any:
    """Trace-time batch: emit one enzyme.batch over the batched leaves of ``args``; leaves with
    axis None (and anything ``f`` closes over) are broadcast to the batch. Without enzyme-ad,
    JAX's vmap of the same traced function."""
    axes = _axes_per_leaf(f, in_axes, args)
    size = _batch_size(f, args, axes)
    leaves, treedefs = zip(*(jax.tree_util.tree_flatten(a) for a in args), strict=True)
    moved = [jnp.moveaxis(jnp.asarray(x), ax, 0) for ls, axs in zip(leaves, axes, strict=True)
             for x, ax in zip(ls, axs, strict=True) if ax is not None]
    out_tree: list[Any] = []

    def flat(*values: Any) -> list[Any]:
        it = iter(values)
        rebuilt = tuple(jax.tree_util.tree_unflatten(td, [
            next(it) if ax is not None else x for x, ax in zip(ls, axs, strict=True)])
            for ls, axs, td in zip(leaves, axes, treedefs, strict=True))
        out_leaves, tree = jax.tree_util.tree_flatten(f(*rebuilt))
        out_tree.append(tree)
        return [jnp.asarray(r) for r in out_leaves]

    example = [jax.ShapeDtypeStruct(m.shape[1:], m.dtype) for m in moved]
    fn = backend.FlatFunction(flat, example, fn_name(f))
    outs = _out_axes(f, fn, out_tree[0], out_axes, moved)
    results = backend.batch(fn, moved, (size,)) if backend.enzyme_available() else \
        backend.vmap(fn, moved)
    return jax.tree_util.tree_unflatten(out_tree[0], [
        r[0] if ax is None else jnp.moveaxis(r, 0, ax) for r, ax in zip(results, outs,
                                                                        strict=True)])


def batch(f: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Callable[..., Any]:
    """``f`` mapped over a batch axis, as ``jax.vmap(f, in_axes, out_axes)``, but emitted as one
    ``enzyme.batch`` op calling ``f``'s own private ``func.func`` (Reactant's ``batch``): the
    ``batch`` stage (Enzyme-JAX's ``enzyme-batch`` pass) turns it into batched StableHLO.
    ``in_axes``: an int or None for every argument, or one entry per positional argument (an
    int, None, or a pytree prefix of the argument holding these); ``out_axes`` likewise for the
    result (None: a result that does not vary along the batch, as jax.vmap)."""
    checks.axes_spec("in_axes", in_axes)
    checks.axes_spec("out_axes", out_axes)

    def in_trace(*args: Any) -> Any:
        return in_mode(lambda fn, a: _batched(fn, a, in_axes, out_axes), f, args)

    compiled = eager(f"batch_of_{fn_name(f)}", in_trace)

    @functools.wraps(f)
    def wrapped(*args: Any) -> Any:
        fallback("batch")
        values = from_numpy(args)
        _batch_size(f, values, _axes_per_leaf(f, in_axes, values))
        if traced(args):
            return in_trace(*args)
        return compiled(*args)

    return wrapped
