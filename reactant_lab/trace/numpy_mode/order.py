"""np.median along a short axis through a selection network of min / max (compare-exchange)
steps instead of a sort: XLA:CPU sorts each slice with a comparator loop several times slower
than NumPy's partition, while the network is a few dozen elementwise ops that fuse into one
pass (a 3x3 median filter's median of 9 stacked windows: 19 exchanges).

The network is Batcher's odd-even merge sort for the next power of two, cut to the axis length
(the missing values would be +inf at the end: their exchanges change nothing) and pruned to the
exchanges the middle outputs depend on. min / max propagate NaN to both outputs, and every input
reaches the middle outputs, so a slice holding NaN gives NaN, as np.median does.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import jax.numpy as jnp
import numpy as np

NETWORK_MAX = 32
"""Axes up to this long take the network; longer ones (and complex values) the sort."""


def median(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """np.median of a traced array (cast to NumPy's result dtype already): the network along
    one axis of at most NETWORK_MAX values, else jax.numpy's sort-based median."""
    a = jnp.asarray(a)
    n = _axis_length(a, axis)
    if out is not None or n is None or not 0 < n <= NETWORK_MAX or a.dtype.kind not in "fiub":
        return jnp.median(a, axis=axis, out=out, overwrite_input=overwrite_input,
                          keepdims=keepdims)
    ax = operator.index(axis) % a.ndim
    wires = list(jnp.moveaxis(a, ax, 0))
    lo, hi = (n - 1) // 2, n // 2
    for i, j in _median_network(n):
        wires[i], wires[j] = jnp.minimum(wires[i], wires[j]), jnp.maximum(wires[i], wires[j])
    mid = wires[lo] if lo == hi else (wires[lo] + wires[hi]) / 2
    return jnp.expand_dims(mid, ax) if keepdims else mid


def _axis_length(a: Any, axis: Any) -> int | None:
    """The length of the one axis ``axis`` names, else None (several axes, or all)."""
    if axis is None and a.ndim == 1:
        return int(a.shape[0])
    if isinstance(axis, int | np.integer) and -a.ndim <= axis < a.ndim:
        return int(a.shape[axis])
    return None


@functools.cache
def _median_network(n: int) -> tuple[tuple[int, int], ...]:
    """The exchanges of a sorting network for ``n`` wires that the middle one or two outputs
    depend on, in order."""
    needed = {(n - 1) // 2, n // 2}
    kept: list[tuple[int, int]] = []
    for i, j in reversed(_sorting_network(n)):
        if i in needed or j in needed:
            kept.append((i, j))
            needed |= {i, j}
    return tuple(reversed(kept))


def _sorting_network(n: int) -> list[tuple[int, int]]:
    """Batcher's odd-even merge sort for the next power of two above ``n``, without the
    exchanges that touch a wire past ``n`` (those wires would hold +inf: nothing moves)."""
    size = 1 << max(n - 1, 0).bit_length()
    out: list[tuple[int, int]] = []
    p = 1
    while p < size:
        k = p
        while k >= 1:
            for j in range(k % p, size - k, 2 * k):
                for i in range(min(k, size - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p) and i + j + k < n:
                        out.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return out
