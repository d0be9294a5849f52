"""Flatten a call's arguments into linear (traced) and skipped (static) leaves, each with its path."""

from __future__ import annotations

import dataclasses
import enum
import math
import types
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from reactant_lab.errors import DonatedArgumentError, UnsupportedArgumentError
from reactant_lab.trace import sharding as sharding_mod
from reactant_lab.trace.captures import capture_path
from reactant_lab.trace.specs import ArgSpec, SkippedArg, Static

_MAX_REPR = 80
_PLAIN_STATIC = (type(None), str, bytes, bool, int, float, complex, np.dtype, type, enum.Enum,
                 types.FunctionType, types.BuiltinFunctionType, types.MethodType, type(Ellipsis))
_ARRAY_PROTOCOLS = ("__array__", "__array_interface__", "__dlpack__", "__cuda_array_interface__")
_BAD_DTYPE_KINDS = "OSUMmV"


@dataclass(frozen=True)
class FlatCall:
    """A call's ``(args, kwargs)`` split into leaves."""

    treedef: Any
    """Tree structure of ``(args, kwargs)``; None is a leaf."""
    slots: tuple[int | Static, ...]
    """Per leaf: linear index or Static(value)."""
    linear_values: tuple[Any, ...]
    """The array leaves, in linear order."""
    linear: tuple[ArgSpec, ...]
    """Specs of the array leaves, in linear order."""
    skipped: tuple[SkippedArg, ...]
    """The static leaves."""
    captures: tuple[str, ...] = ()
    """Keys of the captured arrays (closure cells, globals) that join the call, if any."""
    shardings: tuple[Any, ...] = ()
    """Per linear argument, its NamedSharding over the call's mesh; empty: not sharded."""
    in_shardings: tuple[tuple[str, Any], ...] = ()
    """(path, NamedSharding) per argument ``in_shardings=`` gave a sharding."""
    out_shardings: tuple[tuple[str, Any], ...] = ()
    """(result path, PartitionSpec or NamedSharding) per result ``out_shardings=`` gives a
    sharding (checked against the results once they are traced)."""
    platform: str | None = None
    """The platform the call is lowered for ('tpu', 'cpu', ...); None: the default device's."""

    @property
    def needs_x64(self) -> bool:
        """True when any traced leaf is 64-bit."""
        return any(_is_64bit(a.dtype) for a in self.linear)

    @property
    def all_numpy(self) -> bool:
        """True when there are array leaves and none of them is a JAX array."""
        return bool(self.linear_values) and not any(
            isinstance(v, jax.Array) for v in self.linear_values)

    def signature(self) -> tuple[Hashable, ...]:
        """Hashable key: structure, shapes, dtypes and static values (a compiled cache key)."""
        statics = tuple(static_key(s.value) for s in self.slots if isinstance(s, Static))
        avals = tuple((a.shape, a.dtype.str, a.weak_type, a.sharding) if a.sharding else
                      (a.shape, a.dtype.str, a.weak_type) for a in self.linear)
        return (self.treedef, avals, statics)

    def rebuild(self, linear_values: Sequence[Any]) -> tuple[Any, ...]:
        """``(args, kwargs)`` (and ``captured``, when the call has captured arrays) with the
        linear leaves replaced by ``linear_values``."""
        leaves = [s.value if isinstance(s, Static) else linear_values[s] for s in self.slots]
        rebuilt: tuple[Any, ...] = jax.tree_util.tree_unflatten(self.treedef, leaves)
        return rebuilt


def is_none(x: Any) -> bool:
    """``is_leaf`` predicate that keeps None as a (static) leaf instead of an empty subtree."""
    return x is None


def call_path(keypath: tuple[Any, ...]) -> str:
    """``args[0]['w']`` / ``kwargs['bias']`` / ``fn.G`` from a key path into
    ``(args, kwargs[, captured])``."""
    if keypath[0].idx == 2:
        return capture_path(keypath[1].key) + jax.tree_util.keystr(tuple(keypath[2:]))
    root = "args" if keypath[0].idx == 0 else "kwargs"
    return root + jax.tree_util.keystr(tuple(keypath[1:]))


def result_path(keypath: tuple[Any, ...]) -> str:
    """``result[1]['loss']`` from a key path into the result."""
    return "result" + jax.tree_util.keystr(tuple(keypath))


def flatten_call(args: tuple[Any, ...], kwargs: dict[str, Any], *, trace_scalars: bool | str = False,
                 captured: dict[str, Any] | None = None,
                 in_shardings: Mapping[str, Any] | None = None,
                 mesh: Any = None, out_shardings: Mapping[str, Any] | None = None) -> FlatCall:
    """Split ``(args, kwargs)`` into linear and skipped leaves, checking every leaf's type.

    ``captured`` (arrays the function reads from closures and globals, see ``captures``) joins
    the call as a third part, ``(args, kwargs, captured)``, its leaves at paths ``fn.NAME``.
    ``in_shardings`` (argument path -> PartitionSpec over ``mesh``, or NamedSharding) shards
    arguments; JAX arrays placed over a mesh of several devices are sharded as they are
    (``reactant_lab.trace.sharding``); ``out_shardings`` (result path -> PartitionSpec over the
    arguments' mesh, or NamedSharding) shards results.
    """
    tree = (args, kwargs, captured) if captured else (args, kwargs)
    with_path, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_none)
    slots: list[int | Static] = []
    values: list[Any] = []
    linear: list[ArgSpec] = []
    skipped: list[SkippedArg] = []
    for keypath, leaf in with_path:
        path = call_path(keypath)
        aval = _traced_aval(leaf, path, trace_scalars)
        if aval is None:
            _check_static(leaf, path)
            slots.append(Static(leaf))
            skipped.append(SkippedArg(path, short_repr(leaf)))
            continue
        shape, dtype, weak = aval
        slots.append(len(values))
        linear.append(ArgSpec(path, shape, dtype, len(values), weak))
        values.append(leaf)
    shardings: tuple[Any, ...] = ()
    if in_shardings or mesh is not None or any(
            sharding_mod.of_value(v) is not None for v in values):
        shardings = sharding_mod.resolve([a.path for a in linear], [a.shape for a in linear],
                                         values, in_shardings, mesh)
        if shardings:
            linear = [dataclasses.replace(a, sharding=sharding_mod.describe(s))
                      for a, s in zip(linear, shardings, strict=True)]
    given = tuple((a.path, s) for a, s in zip(linear, shardings, strict=False)
                  if in_shardings and a.path in in_shardings)
    return FlatCall(treedef, tuple(slots), tuple(values), tuple(linear), tuple(skipped),
                    tuple(captured or ()), shardings, given,
                    sharding_mod.check_out(out_shardings, shardings))


def memory_layout(value: Any) -> Any:
    """What decides NumPy's view-or-copy rule for an argument: 'C', 'F', or the element strides
    of a NumPy array that is neither (a strided or reversed view); None for other values."""
    if not isinstance(value, np.ndarray):
        return None
    if value.flags.c_contiguous:
        return "C"
    if value.flags.f_contiguous:
        return "F"
    return element_strides(value)


def element_strides(a: np.ndarray) -> tuple[int, ...]:
    """Strides of ``a`` in elements (in bytes when not a whole number of elements); axes of
    length 1 count as 0, since no element is ever stepped over along them."""
    size = a.itemsize
    exact = all(s % size == 0 for s in a.strides)
    return tuple(0 if n == 1 else (s // size if exact else s)
                 for s, n in zip(a.strides, a.shape, strict=True))


def layouts_hold(deps: tuple[tuple[int, Any], ...], linear_values: Sequence[Any]) -> bool:
    """Whether every argument a trace's view semantics depend on is laid out as it was traced."""
    return all(memory_layout(linear_values[i]) == layout for i, layout in deps)


def _traced_aval(leaf: Any, path: str,
                 trace_scalars: bool | str) -> tuple[tuple[int, ...], np.dtype, bool] | None:
    """(shape, dtype, weak_type) if ``leaf`` is traced, None if it is static."""
    if isinstance(leaf, jax.core.Tracer):
        raise UnsupportedArgumentError(
            f"{path} is a JAX tracer: reactant_lab was called inside a JAX transformation "
            "(jit, grad, vmap). Call it on concrete arrays, outside the transformation.",
            path, type(leaf))
    if isinstance(leaf, jax.Array):
        if leaf.is_deleted():
            raise DonatedArgumentError(
                f"{path} is a JAX array whose buffer was donated to an earlier call "
                "(donate=True) and deleted. Pass a fresh array, or compile without donate=True.")
        return tuple(leaf.shape), np.dtype(leaf.dtype), bool(getattr(leaf, "weak_type", False))
    if isinstance(leaf, np.ndarray | np.generic):
        _check_plain_numpy(leaf, path)
        dtype = np.dtype(leaf.dtype)
        if dtype.kind in _BAD_DTYPE_KINDS and not _is_ml_dtype(dtype):
            raise UnsupportedArgumentError(
                f"{path} is a NumPy array of dtype {dtype}, which cannot be traced. "
                "Convert it to a numeric dtype, or pass it inside a Python object to bake it in.",
                path, type(leaf))
        return tuple(np.shape(leaf)), dtype, False
    kinds = (float, complex) if trace_scalars == "floats" else (bool, int, float, complex)
    if trace_scalars and isinstance(leaf, kinds):
        return (), np.dtype(jax.dtypes.canonicalize_dtype(type(leaf))), True
    return None


def _check_plain_numpy(leaf: np.ndarray | np.generic, path: str) -> None:
    """Refuse NumPy arrays that a traced value cannot stand for faithfully: subclasses with
    their own semantics (np.matrix's ``*``, a masked array's mask), dtypes with no XLA
    equivalent (long double) and non-native byte order."""
    kind = type(leaf)
    if isinstance(leaf, np.ndarray) and kind is not np.ndarray:
        raise UnsupportedArgumentError(
            f"{path} is a {kind.__module__}.{kind.__qualname__}, a NumPy array subclass whose "
            "operations mean something else than a plain array's (np.matrix's * is a matrix "
            "product, a masked array has a mask); reactant_lab would compute them as plain "
            f"arrays. Pass np.asarray({path}) (and handle the mask yourself) instead.",
            path, kind)
    dtype = np.dtype(leaf.dtype)
    if dtype.kind in "fc" and dtype.itemsize > 8 * (2 if dtype.kind == "c" else 1):
        raise UnsupportedArgumentError(
            f"{path} has dtype {dtype} (extended precision), which XLA cannot compute in. "
            f"Pass {path}.astype(np.float64) (or complex128) if that precision is enough.",
            path, kind)
    if not dtype.isnative and dtype.itemsize > 1:
        raise UnsupportedArgumentError(
            f"{path} has non-native byte order ({dtype.str}); XLA computes in native order. "
            f"Pass {path}.astype({path}.dtype.newbyteorder('=')).", path, kind)


def _check_static(leaf: Any, path: str) -> None:
    """Reject leaves that are array-like but not NumPy/JAX arrays, or that cannot be cache keys."""
    if isinstance(leaf, _PLAIN_STATIC):
        return
    if any(hasattr(leaf, attr) for attr in _ARRAY_PROTOCOLS):
        raise UnsupportedArgumentError(
            f"{path} is a {type(leaf).__module__}.{type(leaf).__qualname__}, an array-like "
            "object that is neither a NumPy nor a JAX array. Convert it with np.asarray(...) "
            "or jax.numpy.asarray(...) before the call.", path, type(leaf))
    try:
        hash(leaf)
    except TypeError:
        raise UnsupportedArgumentError(
            f"{path} is a {type(leaf).__qualname__}, which is neither an array nor a hashable "
            "static value. Register its type as a pytree (jax.tree_util.register_dataclass) so "
            "its arrays are traced, or pass an immutable value.", path, type(leaf)) from None


def static_key(value: Any) -> Any:
    """Cache-key form of a static value."""
    # 1 == 1.0 == True in Python, but they trace differently: key on the type as well.
    if isinstance(value, float) and math.isnan(value):
        return (float, "nan")
    return (type(value), value)


def _is_64bit(dtype: np.dtype) -> bool:
    return (dtype.kind in "iuf" and dtype.itemsize == 8) or (dtype.kind == "c" and dtype.itemsize == 16)


def _is_ml_dtype(dtype: np.dtype) -> bool:
    return type(dtype).__module__.startswith("ml_dtypes") or dtype.type.__module__.startswith(
        "ml_dtypes")


def short_repr(value: Any) -> str:
    """``repr`` cut to a readable length."""
    text = repr(value)
    return text if len(text) <= _MAX_REPR else text[: _MAX_REPR - 3] + "..."

