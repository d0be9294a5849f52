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
from reactant_lab.trace.jax_mode import fn_name
from reactant_lab.trace.lowering import CallOutput, Lowered, lower_call
from reactant_lab.trace.numpy_mode import context, errors
from reactant_lab.trace.numpy_mode.creation import overlays
from reactant_lab.trace.numpy_mode.proxy import IMMUTABLE, ProxyArray
from reactant_lab.trace.numpy_mode.storage import Root
from reactant_lab.trace.paths import FlatCall, is_none, result_path
from reactant_lab.trace.user_errors import called_jax, describe, user_frame

_RANDOM_STATE = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def resargs_path(arg_path: str) -> str:
    """The module result of a mutated argument: ``args[1]`` -> ``resargs[1]``,
    ``kwargs['x']`` -> ``reskwargs['x']`` (Reactant's ``resargs``)."""
    return "res" + arg_path


def trace_numpy(fn: Callable, flat: FlatCall) -> Lowered:
    """Trace the NumPy kernel ``fn`` on proxy arrays; Python runs it exactly once.

    Raises JaxCodeError when the kernel hands a proxy to JAX (it is JAX code).
    """
    name = fn_name(fn)
    _check_static_args(fn, flat)

    def call(*linear):
        roots = [_argument_root(flat, i, value) for i, value in enumerate(linear)]
        proxies = [ProxyArray(root) for root in roots]
        args, kwargs = flat.rebuild(proxies)
        with context.tracing(name), overlays():
            try:
                out = fn(*args, **kwargs)
            except Exception as exc:
                if isinstance(exc, errors.JaxCodeError) or called_jax(exc.__traceback__,
                                                                      _OWN_DIR):
                    raise _jax_code(name, exc) from exc
                raise
        return _output(out, proxies, flat)

    return lower_call(name, flat, call, x64=True, mode="numpy")


def _argument_root(flat: FlatCall, i: int, traced: Any) -> Root:
    original, spec = flat.linear_values[i], flat.linear[i]
    if isinstance(original, np.ndarray):
        frozen = None if original.flags.writeable else "a read-only NumPy array"
        root = Root(traced, frozen=frozen, arg=spec.path)
        if original.flags.f_contiguous and not original.flags.c_contiguous:
            root.order = "F"
        return root
    kind = (IMMUTABLE[0] if isinstance(original, np.generic) else
            IMMUTABLE[1] if isinstance(original, jax.Array) else IMMUTABLE[2])
    return Root(traced, frozen=kind, arg=spec.path, weak=spec.weak_type)


def _output(out: Any, proxies: list[ProxyArray], flat: FlatCall) -> CallOutput:
    mutated = [i for i, p in enumerate(proxies) if p.root.version > 0]
    with_path, treedef = jax.tree_util.tree_flatten_with_path(out, is_leaf=is_none)
    leaves = []
    for keypath, leaf in with_path:
        path = result_path(keypath)
        if isinstance(leaf, ProxyArray):
            if leaf.mask is not None:
                raise errors.dynamic_shape(f"{path} is a[mask]")
            arg = next((i for i in mutated if proxies[i] is leaf), None)
            leaves.append((path, None if arg is not None else leaf.value, arg))
        elif isinstance(leaf, np.ndarray | np.generic):
            leaves.append((path, jnp.asarray(leaf), None))
        else:
            leaves.append((path, leaf, None))
    _check_overlap(flat, mutated)
    extras = [(resargs_path(flat.linear[i].path), proxies[i].value, i) for i in mutated]
    return CallOutput(treedef, leaves, extras)


def _check_overlap(flat: FlatCall, mutated: list[int]) -> None:
    """Arguments are traced as independent arrays: refuse when an updated one shares memory
    with another, since NumPy would see the update through both."""
    values = flat.linear_values
    for i in mutated:
        for j, other in enumerate(values):
            if j != i and isinstance(other, np.ndarray) and np.may_share_memory(values[i], other):
                a, b = flat.linear[i].path, flat.linear[j].path
                raise UnsupportedArgumentError(
                    f"{a} is updated in place and shares memory with {b}; reactant_lab traces "
                    "arguments as independent arrays, so NumPy's view of the update through "
                    f"{b} would be lost. Pass separate arrays (e.g. {b}.copy()).", a, type(other))


def _check_static_args(fn: Callable, flat: FlatCall) -> None:
    for s, slot in zip(flat.skipped, (x for x in flat.slots if not isinstance(x, int)),
                       strict=True):
        if isinstance(slot.value, _RANDOM_STATE):
            raise UnsupportedArgumentError(
                f"{s.path} is a {type(slot.value).__name__}: random draws made from it inside "
                f"{fn_name(fn)} would be baked into the compiled code as constants, the same on "
                "every call. Draw the random values outside the kernel and pass them in.",
                s.path, type(slot.value))


def _jax_code(name: str, exc: BaseException) -> errors.JaxCodeError:
    frame = user_frame(exc.__traceback__)
    return errors.JaxCodeError(
        f"{name} hands a NumPy-mode array to JAX at {describe(frame)}\nIt is JAX code: trace it "
        "with mode='jax' (mode='auto', the default, does so), or use NumPy functions only.")
