"""Order statistics without XLA:CPU's comparator sort where the data allow, which sorts each
slice several times slower than NumPy's partition:

- np.median along a short axis through a selection network of min / max (compare-exchange)
  steps: a few dozen elementwise ops that fuse into one pass (a 3x3 median filter's median of 9
  stacked windows: 24 exchanges);
- np.argsort of an unchanged np.argsort result along the same axis (ranks: ``argsort(argsort(x))``)
  is the inverse permutation, one scatter instead of a second sort.

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

from reactant_lab.trace.numpy_mode import context

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


def argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
            stable: Any = None) -> Any:
    """np.argsort of a traced array: of an np.argsort result (a permutation along ``axis``,
    unchanged since), its inverse by one scatter (a permutation's values are distinct, so every
    sort kind gives it); else jax.numpy's sort, remembered as a permutation for the trace."""
    a = jnp.asarray(a)
    known = context.memo().get(("permutation", id(a)))
    if order is None and axis is not None and known is not None and known[0] is a and \
            operator.index(axis) % a.ndim == known[1]:
        ax = known[1]
        ranks = jnp.arange(a.shape[ax], dtype=a.dtype).reshape(
            [-1 if d == ax else 1 for d in range(a.ndim)])
        return jnp.put_along_axis(jnp.zeros_like(a), a, jnp.broadcast_to(ranks, a.shape),
                                  axis=ax, inplace=False)
    out = jnp.argsort(a, axis=axis, kind=kind, order=order, stable=True if stable is None
                      else stable)
    if axis is not None and a.ndim:
        # The result stays referenced, so its id cannot be reused within the trace.
        context.memo()[("permutation", id(out))] = (out, operator.index(axis) % a.ndim)
    return out


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
