"""Overlays while a kernel is traced: NumPy's array-creating functions called from the kernel's
code return proxy arrays (so traced values can be written into them later), and ``np.random``
raises. Like Reactant's overlays of ``zeros`` / ``similar``, they apply only to calls made by the
traced code on the tracing thread; NumPy, JAX and installed libraries keep the real functions.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab.trace.numpy_mode import context, errors
from reactant_lab.trace.numpy_mode.proxy import (
    ProxyArray,
    concrete_array,
    concrete_of,
    new_array,
    unwrap,
)
from reactant_lab.trace.user_errors import is_user_file

# Made from static values: the result becomes a concrete proxy the kernel may write into.
_STATIC_MAKERS = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                  "full_like", "arange", "linspace", "logspace", "geomspace", "eye", "identity",
                  "tri", "indices", "diag", "meshgrid", "copy", "tile", "repeat", "concatenate",
                  "stack", "vstack", "hstack")
_CONVERTERS = ("array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray")
_LOCK = threading.Lock()
_INSTALLED: list[int] = [0]


def _owned(result: Any) -> Any:
    if isinstance(result, np.ndarray):
        return concrete_array(result)
    if isinstance(result, list | tuple) and result and all(isinstance(r, np.ndarray)
                                                           for r in result):
        return type(result)(concrete_array(r) for r in result)
    return result


def _holds_proxy(obj: Any) -> bool:
    return any(isinstance(x, ProxyArray) for x in jax.tree_util.tree_leaves(
        obj, is_leaf=lambda x: isinstance(x, ProxyArray)))


def _from_nested(obj: Any, dtype: Any) -> ProxyArray:
    """``np.array([[a, b], [c, d]])`` holding traced values."""
    leaves = jax.tree_util.tree_leaves(obj, is_leaf=lambda x: isinstance(x, ProxyArray))
    if dtype is None:
        dtype = np.result_type(*[x.dtype if isinstance(x, ProxyArray) else np.asarray(x).dtype
                                 for x in leaves])
    values = jax.tree_util.tree_map(lambda x: jnp.asarray(unwrap(x)).astype(dtype), obj,
                                    is_leaf=lambda x: isinstance(x, ProxyArray))
    return new_array(jnp.asarray(values))


def _convert(original: Callable, obj: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
    """np.array / np.asarray / ...: proxies stay proxies (np.array copies), nested sequences of
    traced values are stacked, static data becomes a concrete proxy."""
    if isinstance(obj, ProxyArray):
        copy = kwargs.get("copy", original.__name__ == "array")
        if dtype is not None and np.dtype(dtype) != obj.dtype:
            return obj.astype(dtype)
        return np.copy(obj) if copy else obj
    if _holds_proxy(obj):
        return _from_nested(obj, dtype)
    return _owned(original(obj, dtype, *args, **kwargs))


def _full(original: Callable, shape: Any, fill_value: Any, dtype: Any = None,
          *args: Any, **kwargs: Any) -> Any:
    if isinstance(fill_value, ProxyArray) and concrete_of(fill_value) is None:
        return new_array(jnp.full(shape, unwrap(fill_value), dtype or fill_value.dtype))
    return _owned(original(shape, concrete_of(fill_value) if isinstance(
        fill_value, ProxyArray) else fill_value, dtype, *args, **kwargs))


def _fromfunction(original: Callable, function: Callable, shape: Any, *, dtype: Any = float,
                  like: Any = None, **kwargs: Any) -> Any:
    """np.fromfunction: the index arrays are concrete, so a static function stays static."""
    index = [concrete_array(i) for i in np.indices(shape, dtype=dtype)]
    return function(*index, **kwargs)


def _empty(original: Callable, *args: Any, **kwargs: Any) -> Any:
    """np.empty / np.empty_like: zeros, so no uninitialized memory is baked into the module."""
    maker = np.zeros if original.__name__ == "empty" else np.zeros_like
    return _owned(maker(*args, **kwargs))


def _random(original: Callable, *args: Any, **kwargs: Any) -> Any:
    raise errors.random_in_kernel(f"np.random.{original.__name__}")


def _overlay(original: Callable, special: Callable | None) -> Callable:
    @functools.wraps(original)
    def overlay(*args: Any, **kwargs: Any) -> Any:
        if context.current() is None or not is_user_file(sys._getframe(1).f_code.co_filename):
            return original(*args, **kwargs)
        if special is not None:
            return special(original, *args, **kwargs)
        return _owned(original(*args, **kwargs))

    overlay.__wrapped_original__ = original  # type: ignore[attr-defined]
    return overlay


def _random_names() -> list[str]:
    return [n for n in dir(np.random) if not n.startswith("_") and n[0].islower()
            and callable(getattr(np.random, n))]


_SPECIAL: dict[str, Callable] = {"full": _full, "fromfunction": _fromfunction,
                                 "empty": _empty, "empty_like": _empty,
                                 **dict.fromkeys(_CONVERTERS, _convert)}
_OVERLAYS: list[tuple[Any, str, Callable, Callable]] = [
    (np, name, getattr(np, name), _overlay(getattr(np, name), _SPECIAL.get(name)))
    for name in (*_STATIC_MAKERS, *_CONVERTERS, "fromfunction")
] + [(np.random, name, getattr(np.random, name), _overlay(getattr(np.random, name), _random))
     for name in _random_names()]


@contextlib.contextmanager
def overlays() -> Iterator[None]:
    """Install the overlays while the block runs (nested and multi-threaded use is safe: each
    overlay does its work only for a NumPy-mode trace on its own thread)."""
    with _LOCK:
        if _INSTALLED[0] == 0:
            for module, name, _, overlay in _OVERLAYS:
                setattr(module, name, overlay)
        _INSTALLED[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _INSTALLED[0] -= 1
            if _INSTALLED[0] == 0:
                for module, name, original, _ in _OVERLAYS:
                    setattr(module, name, original)
