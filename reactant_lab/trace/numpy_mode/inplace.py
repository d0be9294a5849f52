"""NumPy functions that update an array in place (copyto, put, place, putmask, fill_diagonal)
or make a new one shaped like another (zeros_like, ...): they work on the proxies themselves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np

from reactant_lab.trace.numpy_mode import errors
from reactant_lab.trace.numpy_mode.layouts import like_operands
from reactant_lab.trace.numpy_mode.proxy import (
    ProxyArray,
    concrete_array,
    concrete_of,
    new_array,
    unwrap,
)
from reactant_lab.trace.numpy_mode.storage import Casting, indexed_shape, is_traced
from reactant_lab.trace.numpy_mode.ufuncs import dtype_key


def _target(a: Any, name: str) -> ProxyArray:
    if not isinstance(a, ProxyArray):
        raise errors.array_conversion(f"a traced value written into a NumPy array with np.{name}")
    a.check_writable()
    return a


def _stand_in(x: Any) -> Any:
    """An empty array (or weak Python scalar) with ``x``'s dtype, for NumPy's dtype rules."""
    if isinstance(x, bool | int | float | complex) and not isinstance(x, np.generic):
        return x
    key = dtype_key(x)
    return key(0) if isinstance(key, type) else np.empty(0, key)


def copyto(dst: Any, src: Any, casting: Casting = "same_kind", where: Any = True) -> None:
    """``np.copyto``: NumPy's casting check, then a write (masked by ``where``)."""
    dst = _target(dst, "copyto")
    np.copyto(np.empty(0, dst.dtype), _stand_in(src), casting=casting)
    if where is True:
        dst.write(src)
        return
    new = jnp.asarray(unwrap(src)).astype(dst.dtype)
    dst.write(jnp.where(unwrap(where), new, dst.value))


def put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    """``np.put``: flat indices, values repeated as needed."""
    a = _target(a, "put")
    static = concrete_of(ind) if isinstance(ind, ProxyArray) else None if is_traced(ind) else ind
    if mode == "raise" and static is not None:  # NumPy's IndexError for one out of range
        indexed_shape((a.size,), (np.asarray(static).reshape(-1),))
    flat = a.value.reshape(-1)
    index = jnp.asarray(unwrap(ind)).reshape(-1)
    if mode == "wrap":
        index = index % flat.size
    values = jnp.resize(jnp.asarray(unwrap(v)).astype(a.dtype), index.shape)
    flat = flat.at[index].set(values, mode="clip" if mode == "clip" else None)
    a.write(flat.reshape(a.shape))


def place(arr: Any, mask: Any, vals: Any) -> None:
    """``np.place``: the k-th True position gets ``vals[k % len(vals)]``."""
    arr = _target(arr, "place")
    m = jnp.asarray(unwrap(mask)).astype(bool).reshape(-1)
    vals = jnp.asarray(unwrap(vals)).astype(arr.dtype).reshape(-1)
    picked = vals[(jnp.cumsum(m) - 1) % vals.size]
    arr.write(jnp.where(m, picked, arr.value.reshape(-1)).reshape(arr.shape))


def putmask(a: Any, mask: Any, values: Any) -> None:
    """``np.putmask``: position n gets ``values[n % len(values)]`` where the mask is True."""
    a = _target(a, "putmask")
    m = jnp.broadcast_to(jnp.asarray(unwrap(mask)).astype(bool), a.shape)
    vals = jnp.asarray(unwrap(values)).astype(a.dtype)
    vals = jnp.resize(vals, a.shape) if vals.shape != a.shape else vals
    a.write(jnp.where(m, vals, a.value))


def fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    """``np.fill_diagonal``."""
    a = _target(a, "fill_diagonal")
    if a.ndim == 2:
        step = a.shape[1] + 1
        end = None if wrap else a.shape[1] * a.shape[1]
    else:
        if len(set(a.shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(a.shape[:-1]).sum())
        end = None
    positions = np.arange(a.size)[:end:step]
    values = jnp.resize(jnp.asarray(unwrap(val)).astype(a.dtype), positions.shape)
    a.write(a.value.reshape(-1).at[positions].set(values).reshape(a.shape))


def where(condition: Any, *xy: Any) -> Any:
    """``np.where(c, x, y)`` with NumPy's result dtype (the one-argument form has no static
    shape)."""
    if not xy:
        raise errors.unsupported("np.where", " with one argument (its result's shape depends on "
                                 "the values); use np.where(cond, x, y)")
    x, y = xy
    if all(concrete_of(v) is not None for v in (condition, x, y) if isinstance(v, ProxyArray)):
        plain = [concrete_of(v) if isinstance(v, ProxyArray) else v for v in (condition, x, y)]
        return concrete_array(np.asarray(np.where(*plain)))
    dtype = np.result_type(*[_stand_in(v) for v in (x, y)])
    cond = jnp.asarray(unwrap(condition)).astype(bool)
    made = new_array(jnp.where(cond, jnp.asarray(unwrap(x)).astype(dtype),
                               jnp.asarray(unwrap(y)).astype(dtype)))
    return like_operands(made, (condition, x, y))


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """``np.select`` with NumPy's result dtype."""
    dtype = np.result_type(*[_stand_in(c) for c in choicelist], _stand_in(default))
    conds = [jnp.asarray(unwrap(c)).astype(bool) for c in condlist]
    choices = [jnp.asarray(unwrap(c)).astype(dtype) for c in choicelist]
    return new_array(jnp.select(conds, choices, jnp.asarray(unwrap(default)).astype(dtype)))


INPLACE: dict[Callable[..., Any], Callable[..., Any]] = {
    np.copyto: copyto, np.put: put, np.place: place, np.putmask: putmask,
    np.fill_diagonal: fill_diagonal, np.where: where, np.select: select}
