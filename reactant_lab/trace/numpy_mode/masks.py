"""``a[mask]`` with a traced boolean mask: a selection whose length is only known when the
compiled code runs, kept as the full-shape data plus the mask.

``a[m] = v``, ``a[m] op= v``, ``a[m] = b[m2]``, elementwise arithmetic on selections and
reductions of a selection have static shapes this way; selections with different masks are lined
up by rank (the k-th selected element of one meets the k-th of the other, as in NumPy).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from reactant_lab.trace.numpy_mode import errors
from reactant_lab.trace.numpy_mode.proxy import ProxyArray, unwrap
from reactant_lab.trace.numpy_mode.storage import Root, fit, is_traced

# Reductions of a selection: NumPy function name -> the fill that leaves the result unchanged.
REDUCTIONS: dict[str, str | None] = {
    "sum": None, "prod": None, "mean": None, "std": None, "var": None, "any": None, "all": None,
    "count_nonzero": None, "max": "min", "amax": "min", "min": "max", "amin": "max"}


class Selection:
    """The mask of ``a[mask]``: a traced bool over the leading ``lead`` axes of the data."""

    __slots__ = ("lead", "value")

    def __init__(self, value: Any):
        self.value = value
        self.lead: int = value.ndim

    def full(self, ndim: int) -> Any:
        """The mask broadcastable against data of ``ndim`` dimensions."""
        return self.value.reshape(self.value.shape + (1,) * (ndim - self.lead))


def find(key: tuple[Any, ...], proxy: ProxyArray) -> Any:
    """The traced boolean mask of ``key`` (``a[m]``, ``a[m, :]``, ``a[m, ...]``), or None."""
    flags = [is_traced(k) and np.dtype(k.dtype) == np.bool_ for k in key]
    if not any(flags):
        return None
    rest_full = all((isinstance(k, slice) and k == slice(None)) or k is Ellipsis for k in key[1:])
    if not flags[0] or not rest_full or key[0].ndim == 0:
        raise errors.dynamic_shape("Indexing with a traced boolean array other than a[mask] or "
                                   "a[mask, ...]")
    mask = key[0]
    if tuple(mask.shape) != tuple(proxy._shape[:mask.ndim]):
        raise IndexError(f"boolean index of shape {tuple(mask.shape)} does not match the "
                         f"indexed array of shape {proxy._shape}")
    return mask


def select(proxy: ProxyArray, mask: Any) -> ProxyArray:
    """``proxy[mask]``: a copy of the data carrying the selection."""
    return ProxyArray(Root(proxy.value), mask=Selection(mask))


def assign(proxy: ProxyArray, mask: Any, value: Any, whole: bool) -> None:
    """``proxy[mask] = value`` (``whole``: the key is the mask alone, no ``...`` or ``:``)."""
    proxy.check_writable()
    sel = Selection(mask)
    shape = proxy._shape
    if whole and sel.lead == len(shape):
        check_whole_mask_value(value, None)
    if isinstance(value, ProxyArray) and value.mask is not None:
        data = realign(value, sel, shape)
    else:
        data = _rows_or_trail(jnp.asarray(unwrap(value)), sel, shape)
    new = jnp.where(sel.full(len(shape)), data.astype(proxy.dtype), proxy.value)
    proxy.write(new)


def _rows_or_trail(data: Any, sel: Selection, shape: tuple[int, ...]) -> Any:
    """A plain value for ``a[mask] = value``, broadcast as NumPy does (leading length-1 axes
    dropped): one row per selected element, placed in order, or one row for all of them."""
    trail = shape[sel.lead:]
    while data.ndim > len(trail) + 1 and data.shape[0] == 1:
        data = data[0]
    if data.ndim <= len(trail):
        return fit(data, trail)
    return place_rows(fit(data, (data.shape[0], *trail)), sel, shape)


def value_ndim(value: Any) -> int:
    """The number of dimensions NumPy sees in an assigned value (a selection ``b[m]`` has one
    for its selected elements, then ``b``'s axes after the mask's)."""
    if isinstance(value, ProxyArray):
        if value.mask is not None:
            return 1 + len(value._shape) - value.mask.lead
        return len(value._shape)
    return int(np.ndim(unwrap(value)))


def check_whole_mask_value(value: Any, count: int | None) -> None:
    """NumPy's rule for ``a[mask] = value`` with one mask over every axis of ``a``: the value is
    0-d or 1-D with one element, or one per True (``count``, when the mask is static)."""
    ndim = value_ndim(value)
    if ndim > 1:
        raise TypeError(
            "NumPy boolean array indexing assignment requires a 0 or 1-dimensional input, input "
            f"has {ndim} dimensions. Pass one value per selected element (value.ravel()), or "
            "index a[mask, ...] to broadcast a value over the selection.")
    size = np.size(unwrap(value)) if ndim and not (
        isinstance(value, ProxyArray) and value.mask is not None) else 1
    if count is not None and size not in (1, count):
        raise ValueError(
            f"NumPy boolean array indexing assignment cannot assign {size} input values to the "
            f"{count} output values where the mask is true. Pass one value, or one per True.")


def place_rows(rows: Any, sel: Selection, shape: tuple[int, ...]) -> Any:
    """Full-shape data whose k-th selected position holds ``rows[k]``."""
    rank = jnp.cumsum(sel.value.reshape(-1)) - 1
    return jnp.take(rows, rank, axis=0, mode="clip").reshape(shape)


def realign(value: ProxyArray, sel: Selection, shape: tuple[int, ...]) -> Any:
    """The data of selection ``value`` placed at the positions ``sel`` selects."""
    src = value.mask
    assert src is not None  # a selection
    data = value.value
    if src.value is sel.value and tuple(data.shape) == tuple(shape):
        return data
    rows = data.reshape((-1, *data.shape[src.lead:]))
    picked = jnp.nonzero(src.value.reshape(-1), size=rows.shape[0], fill_value=0)[0]
    return place_rows(rows[picked], sel, shape)


def align(inputs: tuple[Any, ...], outs: tuple[ProxyArray | None, ...]
          ) -> tuple[Selection | None, tuple[Any, ...]]:
    """For an elementwise call: the selection its result carries, and the inputs with every
    selection lined up with it; (None, inputs) when no input is a selection."""
    selected = [(x, x.mask) for x in inputs if isinstance(x, ProxyArray) and x.mask is not None]
    if not selected:
        if any(isinstance(o, ProxyArray) and o.mask is not None for o in outs):
            raise errors.dynamic_shape("An array was written into a[mask] through out=")
        return None, inputs
    ref, sel = selected[0]
    shape = ref._shape
    trail = len(shape) - sel.lead
    aligned = []
    for x in inputs:
        if isinstance(x, ProxyArray) and x.mask is not None:
            aligned.append(x.value if x is ref else realign(x, sel, shape))
        elif np.ndim(x) > trail:
            raise errors.dynamic_shape("a[mask] was combined with an array of more than its "
                                       "trailing dimensions")
        else:
            aligned.append(x)
    return sel, tuple(aligned)


def reduce(name: str, fn: Any, value: ProxyArray, kwargs: dict[str, Any]) -> Any:
    """A reduction of a selection over all its elements: the full data with ``where=mask``."""
    if kwargs.get("axis") is not None or name not in REDUCTIONS:
        raise errors.dynamic_shape(f"np.{name} of a[mask]" + (
            " along an axis" if name in REDUCTIONS else ""))
    sel = value.mask
    assert sel is not None  # a selection
    data = value.value
    where = jnp.broadcast_to(sel.full(data.ndim), data.shape)
    fill = REDUCTIONS[name]
    if fill is not None:
        info = jnp.finfo if jnp.issubdtype(data.dtype, jnp.inexact) else jnp.iinfo
        kwargs = {**kwargs, "initial": getattr(info(data.dtype), fill)}
    if name == "count_nonzero":
        return jnp.sum((data != 0) & where)
    return fn(data, where=where, **kwargs)
