"""NumPy functions that return views (reshape, transpose, squeeze, ...) or only look at shapes
and dtypes: they work on the proxies themselves, so writes through a view reach its parent."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from reactant_lab.trace.numpy_mode.proxy import ProxyArray, concrete_array, new_array, unwrap
from reactant_lab.trace.numpy_mode.storage import (
    Index,
    Order,
    OrderACF,
    OrderKACF,
    Reshape,
    Transpose,
)
from reactant_lab.trace.numpy_mode.ufuncs import dtype_key


def _target_shape(shape: Any, size: int) -> tuple[int, ...]:
    target = list(shape) if isinstance(shape, Sequence) else [shape]
    target = [int(d) for d in target]
    if target.count(-1) == 1:
        known = math.prod(d for d in target if d != -1)
        if known and size % known == 0:
            target[target.index(-1)] = size // known
    if math.prod(target) != size or any(d < 0 for d in target):
        asked = tuple(shape) if isinstance(shape, Sequence) else (shape,)
        raise ValueError(f"cannot reshape array of size {size} into shape {asked}")
    return tuple(target)


def reshape(a: ProxyArray, shape: Any = None, order: OrderACF = "C", *, newshape: Any = None,
            copy: bool | None = None) -> ProxyArray:
    """``np.reshape``: a view when NumPy would make one, else a copy."""
    target = _target_shape(newshape if shape is None else shape, a.size)
    read = a.root.order if order == "A" else order
    view = copy is not True and _makes_view(
        a, read, lambda s: np.reshape(s, target, order=read))
    return _reshaped(a, target, read, view, copy)


def ravel(a: ProxyArray, order: OrderKACF = "C") -> ProxyArray:
    """``np.ravel``: a 1-D view when the array is contiguous in that order, else a copy."""
    match order:
        case "A" | "K":
            read = a.root.order
        case _:
            read = order
    return _reshaped(a, (a.size,), read,
                     _makes_view(a, read, lambda s: np.ravel(s, order=read)), None)


def _reshaped(a: ProxyArray, target: tuple[int, ...], order: Order, view: bool,
              copy: bool | None) -> ProxyArray:
    if view:
        return a.view_of(Reshape(a.shape, target, order))
    if copy is False:
        raise ValueError("Unable to avoid creating a copy while reshaping.")
    data = a.concrete
    if data is not None:
        return concrete_array(np.array(data.reshape(target, order=order)))
    made = new_array(a.value.reshape(target, order=order))
    if order == "F":  # NumPy copies in the order it reads, then reshapes that copy
        made.root.order = "F"
    return made


def _makes_view(a: ProxyArray, order: Order,
                numpy_op: Callable[[np.ndarray], np.ndarray]) -> bool:
    """Whether NumPy's own ``numpy_op`` returns a view for an array laid out like ``a``."""
    if not a._ops and a.root.strides is None and a.root.order == order:
        return True  # a whole contiguous array, read in its own order
    s = a.shadow()
    return s.size == 0 or bool(np.may_share_memory(numpy_op(s), s))


def _axis(axis: int, ndim: int, what: str | None = None) -> int:
    """``axis`` in ``range(ndim)``; NumPy's AxisError (its message names ``what``) if out of it."""
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim, what)
    return axis % ndim


def transpose(a: ProxyArray, axes: Any = None) -> ProxyArray:
    """``np.transpose`` / ``a.T``: always a view."""
    ndim = a.ndim
    perm = tuple(reversed(range(ndim))) if axes is None else tuple(_axis(x, ndim) for x in axes)
    if sorted(perm) != list(range(ndim)):
        raise ValueError("axes don't match array")
    return a.view_of(Transpose(perm))


def swapaxes(a: ProxyArray, axis1: int, axis2: int) -> ProxyArray:
    perm = list(range(a.ndim))
    i, j = _axis(axis1, a.ndim, "axis1"), _axis(axis2, a.ndim, "axis2")
    perm[i], perm[j] = perm[j], perm[i]
    return a.view_of(Transpose(tuple(perm)))


def matrix_transpose(x: ProxyArray) -> ProxyArray:
    return swapaxes(x, -1, -2)


def moveaxis(a: ProxyArray, source: Any, destination: Any) -> ProxyArray:
    src = [_axis(s, a.ndim, "source") for s in np.atleast_1d(source)]
    dst = [_axis(d, a.ndim, "destination") for d in np.atleast_1d(destination)]
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return a.view_of(Transpose(tuple(order)))


def squeeze(a: ProxyArray, axis: Any = None) -> ProxyArray:
    axes = ([i for i, d in enumerate(a.shape) if d == 1] if axis is None else
            [_axis(x, a.ndim) for x in np.atleast_1d(axis)])
    if any(a.shape[i] != 1 for i in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return a.view_of(Index(tuple(0 if i in axes else slice(None) for i in range(a.ndim))))


def expand_dims(a: ProxyArray, axis: Any) -> ProxyArray:
    ndim = a.ndim + len(np.atleast_1d(axis))
    new = {_axis(x, ndim) for x in np.atleast_1d(axis)}
    return a.view_of(Index(tuple(None if i in new else slice(None) for i in range(ndim))))


def copy(a: ProxyArray, order: OrderKACF = "K", subok: bool = False) -> ProxyArray:
    """``np.copy`` / ``a.copy()``: a new array with the same value (memory order as asked)."""
    data = a.concrete
    if data is not None:
        return concrete_array(np.array(data, order=order))
    made = new_array(unwrap(a))
    made.root.follow(lambda: np.empty_like(a.shadow(), order=order))
    return made


def real(val: ProxyArray) -> ProxyArray:
    return val.real


def imag(val: ProxyArray) -> ProxyArray | np.generic:
    return val.imag


def shape(a: ProxyArray) -> tuple[int, ...]:
    return a.shape


def ndim(a: ProxyArray) -> int:
    return a.ndim


def size(a: ProxyArray, axis: int | None = None) -> int:
    return a.size if axis is None else a.shape[axis]


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    return np.result_type(*[dtype_key(x) if isinstance(x, ProxyArray) else x
                            for x in arrays_and_dtypes])


def iscomplexobj(x: ProxyArray) -> bool:
    return x.dtype.kind == "c"


def isrealobj(x: ProxyArray) -> bool:
    return x.dtype.kind != "c"


VIEWS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.reshape: reshape, np.ravel: ravel, np.transpose: transpose, np.swapaxes: swapaxes,
    np.matrix_transpose: matrix_transpose, np.permute_dims: transpose, np.moveaxis: moveaxis,
    np.squeeze: squeeze, np.expand_dims: expand_dims, np.copy: copy, np.real: real,
    np.imag: imag, np.shape: shape, np.ndim: ndim, np.size: size, np.result_type: result_type,
    np.iscomplexobj: iscomplexobj, np.isrealobj: isrealobj}
