"""``batch``: a vmap emitted as one ``enzyme.batch`` op, which the ``batch`` stage expands."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab import backend
from reactant_lab.enzyme.common import eager, fallback, in_mode, is_array, traced
from reactant_lab.trace.jax_mode import fn_name


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
            if not is_array(x) or np.ndim(x) == 0:
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

    def in_trace(*args: Any) -> Any:
        return in_mode(lambda fn, a: _batched(fn, a, in_axes, out_axes), f, args)

    compiled = eager(f"batch_of_{fn_name(f)}", in_trace)

    @functools.wraps(f)
    def wrapped(*args: Any) -> Any:
        fallback("batch")
        if traced(args):
            return in_trace(*args)
        return compiled(*args)

    return wrapped
