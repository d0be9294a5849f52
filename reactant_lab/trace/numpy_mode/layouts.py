"""How NumPy lays out the arrays it computes: like their operands (order='K'), so a result
computed from Fortran-order arrays is Fortran-order, and its ``ravel()`` is a copy, not a view.

Each rule hands ``Root.follow`` a model: NumPy allocates bytes the way it would allocate the
result, from shadows laid out like the operands. The model runs only when the result's layout is
read, so an argument's layout becomes part of a trace's signature only when it matters.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from reactant_lab.trace.numpy_mode.proxy import ProxyArray


def shadows(operands: Iterable[Any]) -> list[np.ndarray]:
    """Bytes laid out like each array operand (proxies and NumPy arrays; scalars have no
    layout to follow, nor has a traced selection ``a[mask]``)."""
    out = []
    for x in operands:
        if isinstance(x, ProxyArray) and x.mask is None:
            out.append(x.shadow())
        elif isinstance(x, np.ndarray):
            out.append(x)
    return out


def k_layout(operands: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray | None:
    """Bytes laid out as NumPy lays out a new array of ``shape`` computed elementwise from
    operands laid out like ``operands`` (the axis order their strides agree on); None (C order)
    when there is none of that shape to follow."""
    if len(shape) < 2 or not operands:
        return None
    ops: list[Any] = [*operands, None]  # None: the result, allocated by NumPy
    flags: list[Any] = [["readonly"]] * len(operands) + [["writeonly", "allocate"]]
    try:
        it = np.nditer(ops, flags=["zerosize_ok", "refs_ok"], order="K", op_flags=flags)
    except ValueError:  # operands that do not broadcast together: NumPy raised already
        return None
    out: np.ndarray = it.operands[-1]
    return out if out.shape == tuple(shape) else None


def reduced_layout(source: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray | None:
    """Bytes laid out as NumPy lays out a reduction over ``axes`` of an array laid out like
    ``source``: the remaining axes in the order of their strides."""
    if source.size == 0:
        return None
    kept = np.empty_like(source[tuple(0 if i in axes else slice(None)
                                      for i in range(source.ndim))])
    return np.expand_dims(kept, axes) if keepdims else kept


def like_operands(made: Any, operands: Iterable[Any]) -> Any:
    """``made`` (a new proxy, or anything else) laid out like an elementwise result of
    ``operands``."""
    if isinstance(made, ProxyArray) and len(made.shape) >= 2:
        shape, operands = made.shape, tuple(operands)
        made.root.follow(lambda: k_layout(shadows(operands), shape))
    return made


def like_reduction(made: Any, source: Any, axis: Any, keepdims: bool) -> Any:
    """``made`` (a new proxy, or anything else) laid out like NumPy's reduction of ``source``
    over ``axis`` (an int, a tuple, or None for every axis)."""
    if not (isinstance(made, ProxyArray) and len(made.shape) >= 2 and isinstance(
            source, ProxyArray | np.ndarray) and getattr(source, "mask", None) is None):
        return made
    ndim = np.ndim(source) if isinstance(source, np.ndarray) else len(source.shape)
    axes = tuple(range(ndim)) if axis is None else tuple(
        int(a) % ndim for a in np.atleast_1d(axis))
    made.root.follow(lambda: reduced_layout(shadows([source])[0], axes, keepdims))
    return made


def indexed_layout(source: np.ndarray, key: tuple[Any, ...]) -> np.ndarray | None:
    """Bytes laid out as NumPy lays out ``source[key]`` for an advanced (gather) key: NumPy
    allocates it in an order of its own (``a[:, [1, 2]]`` is Fortran-order). Traced index
    arrays stand in as zeros of their shape: their values do not move the layout."""
    def stand_in(k: Any) -> Any:
        if isinstance(k, np.ndarray | int | slice | type(None)) or k is Ellipsis:
            return k
        return np.zeros(np.shape(k), np.intp)
    try:
        out: np.ndarray = source[tuple(stand_in(k) for k in key)]
    except (IndexError, ValueError, TypeError):  # NumPy raised on the real key already
        return None
    return out


def like_indexed(made: Any, source: Any, key: tuple[Any, ...]) -> Any:
    """``made`` (a new proxy, or anything else) laid out like NumPy's ``source[key]``."""
    if isinstance(made, ProxyArray) and len(made.shape) >= 2 and isinstance(source, ProxyArray):
        shape = made.shape

        def model() -> np.ndarray | None:
            out = indexed_layout(shadows([source])[0], key)
            return out if out is not None and out.shape == tuple(shape) else None
        made.root.follow(model)
    return made
