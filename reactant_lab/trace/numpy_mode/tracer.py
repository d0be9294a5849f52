"""NumPy mode's trace: wrap each linear argument in a proxy, run the kernel, return its results
and the final values of the arguments it updated in place (``resargs`` results)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab.errors import UnsupportedArgumentError
from reactant_lab.trace import captures
from reactant_lab.trace.jax_mode import fn_name
from reactant_lab.trace.lowering import CallOutput, Lowered, lower_call
from reactant_lab.trace.numpy_mode import context, errors, fused_reads, one_hot, product_sums
from reactant_lab.trace.numpy_mode.creation import overlays
from reactant_lab.trace.numpy_mode.overlap import check_independent
from reactant_lab.trace.numpy_mode.proxy import ProxyArray
from reactant_lab.trace.numpy_mode.storage import IMMUTABLE, Root
from reactant_lab.trace.paths import FlatCall, is_none, memory_layout, result_path
from reactant_lab.trace.specs import (
    CONSTANT_RESULT_BYTES,
    ArgView,
    Constant,
    Preserved,
    UpdatedArg,
)
from reactant_lab.trace.user_errors import called_jax, describe, user_frame

_RANDOM_STATE = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)
# Tracing's own calls into JAX (NumPy mode's, converted loops' and branches') are not the
# kernel's: an error raised under them is not a sign of JAX code.
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def resargs_path(arg_path: str) -> str:
    """The module result of a mutated argument: ``args[1]`` -> ``resargs[1]``,
    ``kwargs['x']`` -> ``reskwargs['x']`` (Reactant's ``resargs``)."""
    return "res" + arg_path


def trace_numpy(fn: Callable[..., Any], flat: FlatCall, jax_fallback: bool = False) -> Lowered:
    """Trace the NumPy kernel ``fn`` on proxy arrays; Python runs it exactly once.

    A JAX function the kernel calls gets its arrays' traced values (``jax_value``), so a NumPy
    kernel may use JAX functions and still update its arguments in place. Raises JaxCodeError
    when JAX fails on an array it was handed (the kernel is JAX code), and, with
    ``jax_fallback`` (mode='auto'), when the kernel handed arrays to JAX and updated none in
    place: it is JAX code, traced in JAX mode, whose rules (dtypes, indexing) it was written for.
    """
    name = fn_name(fn)
    _check_static_args(fn, flat)

    def call(*linear: Any) -> CallOutput:
        roots = [_argument_root(flat, i, value) for i, value in enumerate(linear)]
        proxies = [ProxyArray(root) for root in roots]
        args, kwargs, *captured = flat.rebuild(proxies)
        run = captures.rebind(fn, captured[0]) if captured else fn
        with context.tracing(name, flat.platform), overlays():
            try:
                out = run(*args, **kwargs)
            except Exception as exc:
                if isinstance(exc, errors.JaxCodeError) or called_jax(exc.__traceback__,
                                                                      _OWN_DIR):
                    raise _jax_code(name, exc, [r for r in roots if r.version]) from exc
                raise
            handed, where = context.handoff()
        if jax_fallback and handed and not any(r.version for r in roots):
            error = errors.JaxCodeError(f"{name} hands its arrays to JAX at {describe(where)} "
                                        "and updates none in place: it is JAX code")
            error.finished = True
            raise error
        return _output(out, proxies, flat)

    return lower_call(name, flat, call, x64=True, mode="numpy", rewrite=_rewrite)


def _rewrite(closed: Any) -> Any:
    """NumPy mode's changes of the traced jaxpr: writes XLA:CPU would fuse wrongly made
    scatters (``fused_reads``), products by a one-hot matrix made sums per class (``one_hot``;
    before the joins, which would otherwise join them), sums of agreeing products made one
    product (``product_sums``)."""
    return product_sums.join(one_hot.summed(fused_reads.guard(closed)))


def _argument_root(flat: FlatCall, i: int, traced: Any) -> Root:
    original, spec = flat.linear_values[i], flat.linear[i]
    if isinstance(original, np.ndarray):
        frozen = None if original.flags.writeable else "a read-only NumPy array"
        return Root(traced, frozen=frozen, arg=spec.path, memory=original)
    kind = (IMMUTABLE[0] if isinstance(original, np.generic) else
            IMMUTABLE[1] if isinstance(original, jax.Array) else IMMUTABLE[2])
    return Root(traced, frozen=kind, arg=spec.path, weak=spec.weak_type)


def _output(out: Any, proxies: list[ProxyArray], flat: FlatCall) -> CallOutput:
    mutated = [i for i, p in enumerate(proxies) if p.root.version > 0]
    with_path, treedef = jax.tree_util.tree_flatten_with_path(out, is_leaf=is_none)
    leaves, scalars = [], set()
    for keypath, leaf in with_path:
        path = result_path(keypath)
        leaves.append(_result_leaf(path, leaf, proxies, mutated, flat))
        if isinstance(leaf, np.generic) or (isinstance(leaf, ProxyArray) and leaf.is_scalar):
            scalars.add(path)
    _check_overlap(flat, mutated)
    extras = [(resargs_path(flat.linear[i].path), proxies[i].value, i) for i in mutated]
    deps = tuple((i, memory_layout(flat.linear_values[i])) for i, p in enumerate(proxies)
                 if p.root.layout_read)
    return CallOutput(treedef, leaves, extras, deps, frozenset(scalars),
                      preserved_by_value=False)


def _result_leaf(path: str, leaf: Any, proxies: list[ProxyArray], mutated: list[int],
                 flat: FlatCall
                 ) -> tuple[str, Any, UpdatedArg | Preserved | ArgView | Constant | None]:
    """(path, value, what argument it is) of one result leaf: an argument itself (updated in
    place or not), a view of one, a large array computed while tracing (``Constant``), or a new
    value (a copy of an argument is one)."""
    if not isinstance(leaf, ProxyArray):
        return path, jnp.asarray(leaf) if isinstance(leaf, np.ndarray | np.generic) else leaf, None
    if leaf.mask is not None:
        raise errors.dynamic_shape(f"{path} is a[mask]")
    arg = next((i for i, p in enumerate(proxies) if leaf.root is p.root and not leaf._ops), None)
    if arg is not None:
        return path, None, UpdatedArg(arg) if arg in mutated else Preserved(arg)
    view = _argument_view(leaf, flat)
    if view is not None:
        return path, leaf, view
    constant = _constant(leaf)
    return (path, None, constant) if constant is not None else (path, leaf.value, None)


def _constant(leaf: ProxyArray) -> Constant | None:
    """The ``Constant`` of a result computed while tracing from constants alone (an array the
    kernel made and wrote only static values into, or a static view of one), when it is large."""
    value = leaf.concrete
    if (leaf.root.arg is not None or not isinstance(value, np.ndarray)
            or value.nbytes < CONSTANT_RESULT_BYTES):
        return None
    return Constant(np.array(value, order="K"))  # its own copy, laid out as NumPy's


def _argument_view(leaf: ProxyArray, flat: FlatCall) -> ArgView | None:
    """The ArgView when ``leaf`` is a view (static view ops) of a NumPy argument: NumPy hands
    back a view of the caller's array there, not a new array."""
    root = leaf.root
    if root.arg is None or not leaf._ops or not all(op.static for op in leaf._ops):
        return None
    arg = next(i for i, spec in enumerate(flat.linear) if spec.path == root.arg)
    if not isinstance(flat.linear_values[arg], np.ndarray):
        return None
    return ArgView(arg, leaf._ops)


def _check_overlap(flat: FlatCall, mutated: list[int]) -> None:
    """Arguments are traced as independent arrays: refuse when an updated one shares an element
    with another, since NumPy would see the update through both (disjoint views are fine)."""
    check_independent(flat.linear_values, [a.path for a in flat.linear], mutated)


def _check_static_args(fn: Callable[..., Any], flat: FlatCall) -> None:
    for s, slot in zip(flat.skipped, (x for x in flat.slots if not isinstance(x, int)),
                       strict=True):
        if isinstance(slot.value, _RANDOM_STATE):
            raise UnsupportedArgumentError(
                f"{s.path} is a {type(slot.value).__name__}: random draws made from it inside "
                f"{fn_name(fn)} would be baked into the compiled code as constants, the same on "
                "every call. Draw the random values outside the kernel and pass them in.",
                s.path, type(slot.value))


def _jax_code(name: str, exc: BaseException, updated: list[Root]) -> errors.JaxCodeError:
    """JAX failed on an array the kernel handed it (its first line says why)."""
    frame = user_frame(exc.__traceback__)
    lines = str(exc).strip().splitlines()
    why = lines[0][:200] if lines else type(exc).__name__
    error = errors.JaxCodeError(
        f"{name} hands a NumPy-mode array to JAX, which fails on it ({why}), at "
        f"{describe(frame)}\nIt is JAX code: trace it with mode='jax' (mode='auto', the "
        "default, does so), or use NumPy functions only.")
    error.updated = tuple((r.arg, describe(r.first_write)) for r in updated if r.arg is not None)
    return error
