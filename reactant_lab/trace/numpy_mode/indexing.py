"""``a[key]`` and ``a[key] = v`` on proxy arrays: basic keys make views that write through, other
keys gather and scatter, a traced boolean mask makes a selection (see masks). Static indices are
checked as NumPy checks them; traced ones are clamped into range when the code runs, as in JAX."""

from __future__ import annotations

import types
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab.trace.numpy_mode import masks, ranged
from reactant_lab.trace.numpy_mode.layouts import like_indexed
from reactant_lab.trace.numpy_mode.proxy import (
    ProxyArray,
    concrete_array,
    concrete_of,
    new_array,
    new_scalar,
    unwrap,
)
from reactant_lab.trace.numpy_mode.storage import (
    Index,
    fit,
    indexed_shape,
    is_traced,
    read_element,
    same_key,
    to_jax,
    write_concrete,
)

_BASIC = (int, slice, type(None), types.EllipsisType)


def getitem(proxy: ProxyArray, key: Any) -> Any:
    """``proxy[key]``: a view for a basic key, a new array otherwise, a NumPy scalar for an
    index per axis; a static index out of range raises NumPy's IndexError."""
    key = normalize_key(key)
    mask = masks.find(key, proxy)
    if mask is not None:
        return masks.select(proxy, mask)
    if proxy.is_scalar:  # s[()] is s; any other key makes a new array, as NumPy's does
        indexed_shape(proxy._shape, key)
        return proxy if not key else new_array(proxy.value[key])
    if ranged.traced_slices(key):
        return ranged.select(proxy, key)
    if ranged.involved(key):
        return ranged.gather(proxy, key)
    if is_basic(key) and not is_element(key, proxy._shape):
        return proxy.view_of(Index(key))  # its shape, found by NumPy, checks the indices
    indexed_shape(proxy._shape, key)
    data = proxy.concrete
    if data is not None and not any(is_traced(k) for k in key):
        return data[key] if is_basic(key) else concrete_array(data[key])
    if is_basic(key):
        return new_scalar(read_element(proxy.root, key) if not proxy._ops else proxy.value[key])
    return like_indexed(new_array(proxy.value[key]), proxy, key)


def is_element(key: tuple[Any, ...], shape: tuple[int, ...]) -> bool:
    """``a[i, j]`` with an integer per axis: a NumPy scalar (a copy), not a view."""
    return len(key) == len(shape) and not any(
        k is None or k is Ellipsis or isinstance(k, slice) for k in key)


def setitem(proxy: ProxyArray, key: Any, value: Any) -> None:
    """``proxy[key] = value``: rebinds the traced value of ``proxy``'s root."""
    key = normalize_key(key)
    if _itself(proxy, key, value):
        return
    mask = masks.find(key, proxy)
    if mask is not None:
        masks.assign(proxy, mask, value, whole=len(key) == 1)
        return
    proxy.check_writable()
    if ranged.traced_slices(key):
        ranged.assign(proxy, key, value)
        return
    if ranged.involved(key):
        raise ranged.RangedError("Assigning through indices taken from a slice with a traced "
                                 "bound (x[idx[lo:hi]] = v) is not supported; loop over the "
                                 "indices instead")
    if is_basic(key):
        if is_element(key, proxy._shape) and masks.value_ndim(value):
            raise ValueError(f"setting an array element with a sequence: a[{_text(key)}] is one "
                             f"element, the value has shape {np.shape(unwrap(value))}. Assign a "
                             "scalar, or index a slice (a[i:i+1]) to assign an array.")
        proxy.write(value, key)
        return
    shape = indexed_shape(proxy._shape, key)
    if len(key) == 1 and _static_mask(key[0]) and key[0].ndim == len(proxy._shape):
        masks.check_whole_mask_value(value, int(key[0].sum()))
    data = concrete_of(value)
    if (data is not None and not any(is_traced(k) for k in key)
            and write_concrete(proxy.root, proxy._ops, data, key)):
        return
    known = concrete_of(key[0]) if len(key) == 1 else None
    if (isinstance(known, np.ndarray) and _static_mask(known) and known.shape == proxy._shape
            and jnp.ndim(unwrap(value)) == 0):
        # a[mask] = scalar with a mask known at trace time: a select, not a scatter of every
        # selected element's (constant) coordinates
        fill = jnp.asarray(unwrap(value)).astype(proxy.dtype)
        proxy.write(jnp.where(to_jax(known), fill, proxy.value))
        return
    new = fit(jnp.asarray(unwrap(value)).astype(proxy.dtype), shape)
    proxy.write(proxy.value.at[key].set(new))


def _itself(proxy: ProxyArray, key: tuple[Any, ...], value: Any) -> bool:
    """Whether ``value`` is the very view ``proxy[key]`` (the same index objects on the same
    storage): what ``a[i] /= x`` assigns back after updating the view in place. Writing it
    again would change nothing, but a second update of the same window (at a traced index)
    keeps XLA from updating the array in place in a loop."""
    if not isinstance(value, ProxyArray) or value.root is not proxy.root or value.mask is not None:
        return False
    ops, mine = value._ops, proxy._ops
    if len(ops) != len(mine) + 1 or any(a is not b for a, b in zip(ops, mine, strict=False)):
        return False
    last = ops[-1]
    return isinstance(last, Index) and same_key(last.idx, key)


def _static_mask(k: Any) -> bool:
    return isinstance(k, np.ndarray) and k.dtype == np.bool_


def _text(key: tuple[Any, ...]) -> str:
    return ", ".join("<traced>" if is_traced(k) else repr(k) for k in key)


def normalize_key(key: Any) -> tuple[Any, ...]:
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


def is_basic(key: tuple[Any, ...]) -> bool:
    """True when ``key`` is basic indexing (a view in NumPy)."""
    return all((isinstance(k, _BASIC) and type(k) is not bool) or _traced_int(k) for k in key)


def _traced_int(k: Any) -> bool:
    return is_traced(k) and k.ndim == 0 and np.dtype(k.dtype).kind in "iu"
