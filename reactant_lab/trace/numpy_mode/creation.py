"""Overlays while a kernel is traced: NumPy's array-creating functions called from the kernel's
code return proxy arrays (so traced values can be written into them later), and ``np.random``
raises. Like Reactant's overlays of ``zeros`` / ``similar``, they apply only to calls made by the
traced code on the tracing thread; NumPy, JAX and installed libraries keep the real functions.

A traced value may be a fill value, a start or stop, a diagonal offset: the result is then traced,
with NumPy's values and dtype. A traced value that would decide the result's shape (a size, a
count, ``np.arange``'s bounds) raises DynamicShapeError naming the function and the user's line.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import operator
import sys
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, TypeGuard

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab.errors import DynamicShapeError
from reactant_lab.trace.numpy_mode import context, errors
from reactant_lab.trace.numpy_mode.proxy import (
    ProxyArray,
    concrete_array,
    concrete_of,
    new_array,
    unwrap,
)
from reactant_lab.trace.numpy_mode.storage import IMMUTABLE, Order, OrderKACF
from reactant_lab.trace.user_errors import calling_user_frame, describe, is_user_file

# Made from static values: the result becomes a concrete proxy the kernel may write into.
_STATIC_MAKERS = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                  "full_like", "arange", "linspace", "logspace", "geomspace", "eye", "identity",
                  "tri", "indices", "diag", "meshgrid", "copy", "tile", "repeat", "concatenate",
                  "stack", "vstack", "hstack")
_CONVERTERS = ("array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray")
# The converters that lay out in one memory order (and give at least one dimension).
_ORDERED: dict[str, Order] = {"ascontiguousarray": "C", "asfortranarray": "F"}
# Parameters that decide the shape of the result: they must be static (NumPy functions on
# proxies are checked too, see functions.apply).
_SHAPE_PARAMS = {
    "zeros": ("shape",), "ones": ("shape",), "empty": ("shape",), "full": ("shape",),
    "zeros_like": ("shape",), "ones_like": ("shape",), "empty_like": ("shape",),
    "full_like": ("shape",), "arange": ("start_or_stop", "start", "stop", "step"),
    "linspace": ("num", "axis"), "logspace": ("num", "axis"), "geomspace": ("num", "axis"),
    "eye": ("N", "M"), "identity": ("n",), "tri": ("N", "M"), "indices": ("dimensions",),
    "diag": ("k",), "diagflat": ("k",), "diagonal": ("offset", "axis1", "axis2"),
    "tile": ("reps",), "repeat": ("repeats", "axis"), "resize": ("new_shape",),
    "pad": ("pad_width",), "broadcast_to": ("shape",), "concatenate": ("axis",),
    "stack": ("axis",), "fromfunction": ("shape",), "array": ("ndmin",)}
SHAPE_PARAMS: dict[Callable[..., Any], tuple[str, ...]] = {
    getattr(np, name): params for name, params in _SHAPE_PARAMS.items()}
"""NumPy function -> its parameters that decide the result's shape."""
_LOCK = threading.Lock()
_INSTALLED: list[int] = [0]


def _owned(result: Any) -> Any:
    if isinstance(result, np.ndarray):
        return concrete_array(result)
    if isinstance(result, list | tuple) and result and all(isinstance(r, np.ndarray)
                                                           for r in result):
        return type(result)(concrete_array(r) for r in result)
    return result


def _is_proxy(x: Any) -> TypeGuard[ProxyArray]:
    return isinstance(x, ProxyArray)


def _holds_proxy(obj: Any) -> bool:
    return any(_is_proxy(x) for x in jax.tree_util.tree_leaves(obj, is_leaf=_is_proxy))


def _holds_traced(obj: Any) -> bool:
    """Whether ``obj`` is, or holds, a proxy whose value is only known when the code runs."""
    return any(_is_proxy(x) and concrete_of(x) is None
               for x in jax.tree_util.tree_leaves(obj, is_leaf=_is_proxy))


def _concrete(tree: Any) -> Any:
    """``tree`` with each concrete proxy replaced by its NumPy data (none of them is traced)."""
    return jax.tree_util.tree_map(lambda x: concrete_of(x) if _is_proxy(x) else x, tree,
                                  is_leaf=_is_proxy)


@functools.cache
def _signature(original: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(original)
    except (TypeError, ValueError):  # no signature to read (a NumPy built before 2.x)
        return None


def bind(original: Callable[..., Any], args: tuple[Any, ...],
         kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The call's arguments by parameter name (None when NumPy gives no signature, or the call
    does not fit it: NumPy then raises its own error)."""
    signature = _signature(original)
    try:
        return None if signature is None else dict(signature.bind(*args, **kwargs).arguments)
    except TypeError:
        return None


def check_static_shape(func: Callable[..., Any], args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> None:
    """Raise DynamicShapeError when an argument of ``func(*args, **kwargs)`` that decides the
    result's shape (see SHAPE_PARAMS) is traced."""
    params = SHAPE_PARAMS.get(func, ())
    bound = bind(func, args, kwargs) if params else None
    for param in params:
        if bound is not None and _holds_traced(bound.get(param)):
            raise _traced_shape(func.__name__, param, bound[param])


def _traced_shape(name: str, param: str, value: Any) -> DynamicShapeError:
    what = "bounds" if name == "arange" else f"`{param}` argument"
    scalars = [leaf._root.arg for leaf in jax.tree_util.tree_leaves(value, is_leaf=_is_proxy)
               if _is_proxy(leaf) and leaf._root.weak and leaf._root.arg]
    subject = " and ".join(scalars) + (" is a Python number" if len(scalars) == 1 else
                                       " are Python numbers")
    fix = (
        f"{subject} the call traces because of trace_scalars=True. Keep it static: call with "
        "trace_scalars='floats' (Python floats traced, ints and bools static), or without "
        "trace_scalars (every Python number static, a new compile for each new value); or "
        "take the size from an array's shape (a.shape[0], len(a)).") if scalars else (
        "Pass a Python int (a static argument) or take it from an array's shape (a.shape[0], "
        "len(a)); or make the array outside the kernel and pass it in.")
    return DynamicShapeError(
        f"np.{name} was given a traced value as its {what} ({value!r}) at "
        f"{describe(calling_user_frame())}\nIt decides the shape of the result, which must be "
        f"known while tracing, but a traced value is only known when the compiled code runs. {fix}")


def from_nested(obj: Any, dtype: Any, fortran: bool = False) -> ProxyArray:
    """``np.array([[a, b], [c, d]])`` holding traced values, with NumPy's dtype."""
    leaves = jax.tree_util.tree_leaves(obj, is_leaf=_is_proxy)
    if dtype is None:
        dtype = np.result_type(*[x.dtype if _is_proxy(x) else np.asarray(x).dtype
                                 for x in leaves])
    values = jax.tree_util.tree_map(lambda x: jnp.asarray(unwrap(x)).astype(dtype), obj,
                                    is_leaf=_is_proxy)
    return _new(jnp.asarray(values), fortran)


def _shape(shape: Any) -> tuple[int, ...]:
    """A static shape (an int or a sequence of ints, concrete proxies included) as a tuple."""
    dims = shape if isinstance(shape, list | tuple) else (shape,)
    return tuple(operator.index(d) for d in dims)


def _fortran(order: str | None) -> bool:
    """Whether a new array is laid out in Fortran order (it matters for later reshapes)."""
    return order == "F"


def _like_layout(proto: Any, order: OrderKACF, shape: tuple[int, ...]) -> np.ndarray:
    """Bytes laid out as NumPy lays out ``np.empty_like(proto, order=order, shape=shape)``
    (order 'K': like ``proto``, a transposed view or a Fortran-order array included)."""
    model: np.ndarray = proto.shadow() if _is_proxy(proto) else proto if isinstance(
        proto, np.ndarray) else np.empty(np.shape(proto), np.uint8)
    return np.empty_like(model, dtype=np.uint8, order=order, shape=shape)


def _new(value: Any, fortran: bool) -> ProxyArray:
    """A new traced array, laid out in Fortran order when ``fortran`` (it matters for which
    later reshapes are views)."""
    made = new_array(value)
    if fortran and made.ndim > 1:
        made.root.order = "F"
    return made


def _convert(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """np.array / np.asarray / ...: proxies stay proxies (copied when NumPy would copy), nested
    sequences of traced values are stacked, static data becomes a concrete proxy."""
    bound = bind(original, args, kwargs)
    obj = bound.get("object", bound.get("a")) if bound else None
    if bound is None or not _holds_proxy(obj):
        return _owned(original(*args, **kwargs))
    name, dtype = original.__name__, bound.get("dtype")
    order = _ORDERED.get(name, bound.get("order"))
    if _is_proxy(obj):
        copy = bound.get("copy", True if name == "array" else None)
        made = _convert_proxy(obj, dtype, copy, order)
    else:
        made = from_nested(obj, dtype, _fortran(order))
    ndmin = 1 if name in _ORDERED else bound.get("ndmin", 0)
    if made.ndim < ndmin:
        made = made[(None,) * (ndmin - made.ndim)]
    return made


def _convert_proxy(a: ProxyArray, dtype: Any, copy: bool | None,
                   order: OrderKACF | None) -> Any:
    """``a`` itself when NumPy would hand it back, else a copy of the dtype and order asked."""
    cast = dtype is not None and np.dtype(dtype) != a.dtype
    # A NumPy (or Python) scalar is not an array: converting it always makes a new one.
    relaid = a.root.frozen in IMMUTABLE or (order in ("C", "F") and not _laid_out(a, order))
    if copy is False and (cast or relaid):
        raise ValueError("Unable to avoid copy while creating an array as requested.")
    if cast:
        return np.copy(a.astype(dtype), order=order or "K")
    return np.copy(a, order=order or "K") if copy or relaid else a


def _laid_out(a: ProxyArray, order: str) -> bool:
    """Whether ``a`` is contiguous in ``order`` (what decides view-or-copy of np.asarray)."""
    flags = a.shadow().flags
    return bool(flags.c_contiguous if order == "C" else flags.f_contiguous)


def _full(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """np.full with a traced fill value: NumPy's dtype is the fill value's (np.array(fill))."""
    bound = bind(original, args, kwargs)
    fill = bound.get("fill_value") if bound else None
    if bound is None or not _holds_traced(fill):
        return _owned(original(*_concrete(args), **_concrete(kwargs)))
    fill = fill if _is_proxy(fill) else from_nested(fill, None)
    dtype = bound.get("dtype")
    dtype = fill.dtype if dtype is None else np.dtype(dtype)
    value = jnp.full(_shape(bound["shape"]), unwrap(fill), dtype)
    return _new(value, _fortran(bound.get("order", "C")))


def _like_maker(kind: str) -> Callable[..., Any]:
    """np.zeros_like / ones_like / empty_like / full_like on a proxy prototype or with a traced
    fill value (empty_like is zeros_like: no uninitialized memory is baked into the module)."""
    original = getattr(np, f"{kind}_like")

    def like(*args: Any, **kwargs: Any) -> ProxyArray:
        bound = bind(original, args, kwargs)
        if bound is None:
            raise TypeError(f"np.{kind}_like{_signature(original)} cannot take these "
                            f"arguments: {args!r}, {kwargs!r}")
        proto = bound["a"] if "a" in bound else bound["prototype"]  # required: bound has it
        fill = {"zeros": 0, "empty": 0, "ones": 1}.get(kind, bound.get("fill_value"))
        shape = _shape(np.shape(proto) if bound.get("shape") is None else bound["shape"])
        dtype = bound.get("dtype")
        dtype = np.dtype(proto.dtype if _is_proxy(proto) else np.asarray(proto).dtype
                         ) if dtype is None else np.dtype(dtype)
        order = bound.get("order", "K")
        if _holds_traced(fill):
            fill = fill if _is_proxy(fill) else from_nested(fill, None)
            made = new_array(jnp.full(shape, unwrap(fill), dtype))
            made.root.follow(lambda: _like_layout(proto, order, shape))
            return made
        data = np.empty_like(_like_layout(proto, order, shape), dtype=dtype)
        data[...] = concrete_of(fill) if _is_proxy(fill) else fill
        return concrete_array(data)

    like.__name__ = like.__qualname__ = f"{kind}_like"
    return like


LIKE: dict[Callable[..., Any], Callable[..., Any]] = {
    getattr(np, f"{kind}_like"): _like_maker(kind) for kind in ("zeros", "ones", "empty", "full")}
"""The ``*_like`` functions on proxies (dispatched through ``__array_function__``)."""


def _like(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    bound = bind(original, args, kwargs) or {}
    if _holds_proxy(bound.get("a", bound.get("prototype"))) or _holds_traced(
            bound.get("fill_value")):
        return LIKE[original](*args, **kwargs)
    maker = np.zeros_like if original.__name__ == "empty_like" else original
    return _owned(maker(*_concrete(args), **_concrete(kwargs)))


def _eye_tri(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """np.eye / np.tri with a traced diagonal offset ``k``: ones where ``j - i == k`` (eye) or
    ``j - i <= k`` (tri)."""
    bound = bind(original, args, kwargs)
    k = bound.get("k", 0) if bound else 0
    if bound is None or not _holds_traced(k):
        return _owned(original(*args, **kwargs))
    if not _is_proxy(k) or k.ndim != 0 or k.dtype.kind not in "biu":
        raise errors.unsupported(f"np.{original.__name__}", f" with a traced k that is not an "
                                 f"integer scalar ({k!r})")
    n = operator.index(bound["N"])
    m = n if bound.get("M") is None else operator.index(bound["M"])
    offset = jnp.arange(m)[None, :] - jnp.arange(n)[:, None]
    hit = offset == unwrap(k) if original.__name__ == "eye" else offset <= unwrap(k)
    dtype = np.dtype(bound.get("dtype", float))
    return _new(hit.astype(dtype), _fortran(bound.get("order", "C")))


def _fromfunction(original: Callable[..., Any], function: Callable[..., Any], shape: Any, *,
                  dtype: Any = float, like: Any = None, **kwargs: Any) -> Any:
    """np.fromfunction: the index arrays are concrete, so a static function stays static."""
    index = [concrete_array(i) for i in np.indices(shape, dtype=dtype)]
    return function(*index, **kwargs)


def _empty(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """np.empty: zeros, so no uninitialized memory is baked into the module."""
    return _owned(np.zeros(*args, **kwargs))


def ndarray(shape: Any, dtype: Any = float, buffer: Any = None, offset: int = 0,
            strides: Any = None, order: Any = None) -> Any:
    """``np.ndarray(shape, dtype, order=...)`` called by a kernel (converted code routes the
    call here, see ``control_flow.runtime.callee``): NumPy's uninitialized array, so np.empty
    (zeros) that later writes may fill with traced values. Over a ``buffer`` or with ``strides``
    it stays NumPy's own (a view of that buffer)."""
    if buffer is not None or strides is not None:
        if _holds_traced(buffer) or _holds_traced(shape):
            raise errors.unsupported("np.ndarray", " over a traced buffer or of a traced shape")
        return np.ndarray(shape, dtype, buffer, offset, strides, order)
    if _holds_traced(shape):
        raise _traced_shape("ndarray", "shape", shape)
    return _owned(np.zeros(shape, dtype, order="C" if order is None else order))


def _random(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    raise errors.random_in_kernel(f"np.random.{original.__name__}")


def _overlay(original: Callable[..., Any],
             special: Callable[..., Any] | None) -> Callable[..., Any]:
    @functools.wraps(original)
    def overlay(*args: Any, **kwargs: Any) -> Any:
        if context.current() is None or not is_user_file(sys._getframe(1).f_code.co_filename):
            return original(*args, **kwargs)
        if _is_proxy(kwargs.get("like")):  # like=: a proxy result is what is asked for
            kwargs.pop("like")
        check_static_shape(original, args, kwargs)
        if special is not None:
            return special(original, *args, **kwargs)
        return _owned(original(*args, **kwargs))

    overlay.__wrapped_original__ = original  # type: ignore[attr-defined]  # a function attribute of ours
    return overlay


def _random_names() -> list[str]:
    return [n for n in dir(np.random) if not n.startswith("_") and n[0].islower()
            and callable(getattr(np.random, n))]


_SPECIAL: dict[str, Callable[..., Any]] = {"full": _full, "fromfunction": _fromfunction, "empty": _empty,
                                 "eye": _eye_tri, "tri": _eye_tri,
                                 **dict.fromkeys(("zeros_like", "ones_like", "empty_like",
                                                  "full_like"), _like),
                                 **dict.fromkeys(_CONVERTERS, _convert)}
_OVERLAYS: list[tuple[ModuleType, str, Callable[..., Any], Callable[..., Any]]] = [
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
