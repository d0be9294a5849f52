"""``a[key]`` and ``a[key] = v`` on proxy arrays: basic keys make views that write through, other
keys gather and scatter, a traced boolean mask makes a selection (see masks)."""

from __future__ import annotations

import types
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab.trace.numpy_mode import masks
from reactant_lab.trace.numpy_mode.proxy import (
    IMMUTABLE,
    ProxyArray,
    concrete_array,
    concrete_of,
    new_array,
    unwrap,
)
from reactant_lab.trace.numpy_mode.storage import Index, Root, is_traced, write_concrete

_BASIC = (int, slice, type(None), types.EllipsisType)


def getitem(proxy: ProxyArray, key: Any) -> Any:
    """``proxy[key]``: a view for a basic key, a new array otherwise."""
    key = normalize_key(key)
    mask = masks.find(key, proxy)
    if mask is not None:
        return masks.select(proxy, mask)
    if is_basic(key):
        if len(key) == len(proxy._shape) and not any(k is None or k is Ellipsis or
                                                      isinstance(k, slice) for k in key):
            return _element(proxy, key)
        return proxy.view_of(Index(key))
    data = proxy.concrete
    if data is not None and not any(is_traced(k) for k in key):
        return concrete_array(data[key])
    return new_array(proxy.value[key])


def _element(proxy: ProxyArray, key: tuple) -> Any:
    """``a[i, j]`` with an index per axis: a scalar copy in NumPy, not a view."""
    data = proxy.concrete
    if data is not None and not any(is_traced(k) for k in key):
        return data[key]
    return ProxyArray(Root(proxy.value[key], frozen=IMMUTABLE[0]))


def setitem(proxy: ProxyArray, key: Any, value: Any) -> None:
    """``proxy[key] = value``: rebinds the traced value of ``proxy``'s root."""
    key = normalize_key(key)
    mask = masks.find(key, proxy)
    if mask is not None:
        masks.assign(proxy, mask, value)
        return
    if is_basic(key):
        proxy.write(value, key)
        return
    proxy.check_writable()
    data = concrete_of(value)
    if (data is not None and not any(is_traced(k) for k in key)
            and write_concrete(proxy.root, proxy._ops, data, key)):
        return
    new = jnp.asarray(unwrap(value)).astype(proxy.dtype)
    proxy.write(proxy.value.at[key].set(new))


def normalize_key(key: Any) -> tuple:
    """The key as a tuple of ints, slices, None, Ellipsis and (NumPy or traced) index arrays."""
    items = key if isinstance(key, tuple) else (key,)
    return tuple(_item(k) for k in items)


def _item(k: Any) -> Any:
    if isinstance(k, ProxyArray):
        data = k.concrete
        if data is None:
            return unwrap(k)
        k = data
    if isinstance(k, slice):
        return slice(*(_item(p) if p is not None else None for p in (k.start, k.stop, k.step)))
    if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu":
        return int(k)
    if isinstance(k, np.integer):
        return int(k)
    if isinstance(k, list):
        try:
            return np.asarray(k)
        except Exception:  # a list holding traced values
            return jnp.asarray(jax.tree_util.tree_map(
                unwrap, k, is_leaf=lambda x: isinstance(x, ProxyArray)))
    return k


def is_basic(key: tuple) -> bool:
    """True when ``key`` is basic indexing (a view in NumPy)."""
    return all((isinstance(k, _BASIC) and type(k) is not bool) or _traced_int(k) for k in key)


def _traced_int(k: Any) -> bool:
    return is_traced(k) and k.ndim == 0 and np.dtype(k.dtype).kind in "iu"
