"""Order statistics without XLA:CPU's comparator sort where the data allow, which sorts each
slice several times slower than NumPy's partition (the integer keys below only where the trace
is lowered for the CPU: ``_on_cpu``):

- np.median along a short axis through a selection network of min / max (compare-exchange)
  steps: a few dozen elementwise ops that fuse into one pass (a 3x3 median filter's median of 9
  stacked windows: Paeth's 19 exchanges);
- np.argsort of an unchanged np.argsort result along the same axis (ranks: ``argsort(argsort(x))``)
  is the inverse permutation, one scatter instead of a second sort;
- np.sort, np.percentile, np.quantile and np.median of real floats along a long axis through a
  sort of integer keys: XLA:CPU sorts one integer operand with its plain comparison, several times
  faster than with the total-order float comparator jax.numpy's sort builds (1M float64 values in
  2000-row slices: 35 ms against 175 ms; NumPy's sort 31 ms). A float's bits, with the negative
  ones' magnitude bits flipped, order as integers the way the floats do; every NaN is given the
  positive quiet NaN's key, so NaN sorts last as in NumPy;
- np.argsort of real numbers through sorts of single int64 operands, each key shifted above its
  index (a sort carrying the indices as a second operand takes the comparator path too); a
  float64 key in one sort, less the low bits the index needs, checked, with the exact two-pass
  sort where the check fails (``_truncated_argsort``).

The network is Batcher's odd-even merge sort for the next power of two, cut to the axis length
(the missing values would be +inf at the end: their exchanges change nothing) and pruned to the
exchanges the middle outputs depend on; for 9 values, Paeth's smaller selection network. min /
max propagate NaN to both outputs, and every input reaches the middle outputs, so a slice
holding NaN gives NaN, as np.median does.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab.trace.numpy_mode import context

NETWORK_MAX = 32
"""Axes up to this long take the network; longer ones (and complex values) the sort."""


def median(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """np.median of a traced array (cast to NumPy's result dtype already): the network along
    one axis of at most NETWORK_MAX values, the key sort for a longer one of real floats, else
    jax.numpy's sort-based median."""
    a = jnp.asarray(a)
    n = _axis_length(a, axis)
    if out is None and _keyed(a) and (int(a.size) if axis is None else n or 0) > NETWORK_MAX:
        last, ax = _sorted_last(a, axis)
        # NumPy: the mean of the middle one or two of the partitioned slice, NaN if it holds one
        count = last.shape[-1]
        mid = _nan_if_any(last, (last[..., (count - 1) // 2] + last[..., count // 2]) / 2)
        return _keep(mid, a.ndim, ax, keepdims, axis is None)
    if out is not None or n is None or not 0 < n <= NETWORK_MAX or a.dtype.kind not in "fiub":
        return jnp.median(a, axis=axis, out=out, overwrite_input=overwrite_input,
                          keepdims=keepdims)
    ax = 0 if axis is None else operator.index(axis) % a.ndim  # None: a is 1-D here
    wires = list(jnp.moveaxis(a, ax, 0))
    lo, hi = (n - 1) // 2, n // 2
    for i, j in _median_network(n):
        wires[i], wires[j] = jnp.minimum(wires[i], wires[j]), jnp.maximum(wires[i], wires[j])
    mid = wires[lo] if lo == hi else (wires[lo] + wires[hi]) / 2
    return jnp.expand_dims(mid, ax) if keepdims else mid


def sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
         stable: Any = None) -> Any:
    """np.sort of a traced array: real floats by the key sort (any kind: equal floats are
    indistinguishable, but for -0.0 and 0.0, which it orders -0.0 first), else jax.numpy's."""
    a = jnp.asarray(a)
    if order is None and _keyed(a) and (axis is None or a.ndim):
        if axis is None:
            return _key_sort(a.ravel(), 0, move=False)
        return _key_sort(a, operator.index(axis) % a.ndim, move=False)
    return jnp.sort(a, axis=axis, kind=kind, order=order, stable=True if stable is None
                    else stable)


def quantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None,
             interpolation: Any = None) -> Any:
    """np.quantile of a traced array (cast to NumPy's result dtype already): for real floats, a
    concrete ``q`` and the linear method along one axis or all, a sort (``_sorted_last``) and
    NumPy's own interpolation (its indices and its two-sided lerp, which gives NaN between -inf
    and a finite value where jax.numpy's gives -inf); else jax.numpy's quantile."""
    return _quantile(a, q, 1.0, axis, out, overwrite_input, method, keepdims, weights,
                     interpolation)


def percentile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights: Any = None,
               interpolation: Any = None) -> Any:
    """np.percentile: ``quantile`` of ``q / 100``."""
    return _quantile(a, q, 100.0, axis, out, overwrite_input, method, keepdims, weights,
                     interpolation)


def _quantile(a: Any, q: Any, scale: float, axis: Any, out: Any, overwrite_input: bool,
              method: str, keepdims: bool, weights: Any, interpolation: Any) -> Any:
    a = jnp.asarray(a)
    try:
        qs: np.ndarray[Any, Any] | None = np.asarray(q)
    except jax.errors.TracerArrayConversionError:  # a traced q: jax.numpy's quantile
        qs = None
    n = _axis_length(a, axis) if axis is not None else int(a.size)
    if qs is not None and qs.dtype.kind in "fiu":
        # NumPy's error on every platform (jax.numpy's quantile gives NaN instead)
        qf = qs.astype(np.float64) / scale
        if np.any((qf < 0) | (qf > 1)) or np.any(np.isnan(qf)):
            raise ValueError("Percentiles must be in the range [0, 100]" if scale == 100.0
                             else "Quantiles must be in the range [0, 1]")
    if (out is not None or weights is not None or interpolation is not None
            or method != "linear" or qs is None or qs.dtype.kind not in "fiu" or n is None
            or n == 0 or not _real_float(a)):
        fallback = jnp.percentile if scale == 100.0 else jnp.quantile
        given = {k: v for k, v in (("weights", weights), ("interpolation", interpolation))
                 if v is not None}  # keywords jax.numpy has in some versions only
        # jax.numpy takes no list for q (NumPy does): the concrete values, or traced ones stacked
        return fallback(a, qs if qs is not None else jnp.asarray(q), axis=axis, out=out,
                        overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                        **given)
    last, ax = _sorted_last(a, axis)
    # NumPy's linear method: virtual index (n - 1) q, its floor and the next one, clamped;
    # above the last index both are the last and gamma is taken from index -1, as NumPy does.
    virtual = (n - 1) * qf
    above = virtual >= n - 1
    prev = np.where(above, -1.0, np.floor(virtual))
    nxt = np.where(above, -1.0, prev + 1)
    gamma = virtual - prev  # float64, and so is 1 - gamma before either meets the values
    lo = jnp.moveaxis(jnp.take(last, prev.astype(np.int64).ravel() % n, axis=-1), -1, 0)
    hi = jnp.moveaxis(jnp.take(last, nxt.astype(np.int64).ravel() % n, axis=-1), -1, 0)
    col = (-1,) + (1,) * (lo.ndim - 1)
    t = jnp.asarray(gamma.ravel().astype(a.dtype)).reshape(col)
    rest = jnp.asarray((1 - gamma).ravel().astype(a.dtype)).reshape(col)
    diff = hi - lo
    res = jnp.where(jnp.asarray(gamma.ravel() >= 0.5).reshape(col), hi - diff * rest,
                    lo + diff * t)
    res = _nan_if_any(last, res)
    res = res.reshape(qs.shape + res.shape[1:])
    if keepdims:
        kept = (1,) * a.ndim if axis is None else (*a.shape[:ax], 1, *a.shape[ax + 1:])
        res = res.reshape(qs.shape + kept)
    return res


def _on_cpu() -> bool:
    """Whether the trace is lowered for XLA:CPU, whose sorts the integer keys speed up. Other
    platforms get jax.numpy's sorts, as jax.jit would: XLA's TPU compiler rejected the keys'
    64-bit integer arithmetic ("Binary op subtract with different element types: u32[4] and
    s32[4]", measured on a TPU v5e with jax 0.10.2, after the same for an xor)."""
    return context.platform() == "cpu"


def _real_float(a: Any) -> bool:
    """Whether ``a`` holds real floats of 16, 32 or 64 bits."""
    return a.dtype.kind == "f" and a.dtype.itemsize in (2, 4, 8)


def _keyed(a: Any) -> bool:
    """Whether ``a`` sorts by integer keys: real floats of 16, 32 or 64 bits, on the CPU."""
    return _real_float(a) and _on_cpu()


def _float_key(a: Any, zeros_equal: bool = False) -> Any:
    """Integer keys of real floats, of their width, that order as the floats do: a float's bits
    with the negative ones' magnitude bits flipped (``_flip`` undoes it); every NaN the largest
    key, the positive quiet NaN's; with ``zeros_equal`` -0.0 and 0.0 one key."""
    bits = jnp.dtype(f"int{a.dtype.itemsize * 8}")
    b = jax.lax.bitcast_convert_type(a, bits)
    key = _flip(b)
    if zeros_equal:
        key = jnp.where(a == 0, np.array(0, bits), key)
    return jnp.where(jnp.isnan(a), np.array(np.array(np.nan, a.dtype).view(bits)), key)


def _flip(b: Any) -> Any:
    """Signed integers with the negative ones' magnitude bits flipped (its own inverse): for a
    negative b, ``b ^ MAX`` computed as ``(MIN - b) - 1`` (neither step overflows). Not by an
    xor: XLA's TPU compiler rejected the int64 xor ("Binary op xor with different element
    types: s32[4] and u32[4]", measured on a TPU v5e with jax 0.10.2)."""
    least = np.array(np.iinfo(b.dtype).min, b.dtype)
    return jnp.where(b < 0, (least - b) - np.array(1, b.dtype), b)


def _key_sort(a: Any, axis: int, move: bool = True) -> Any:
    """``a`` sorted along ``axis`` (NaN last), by a sort of integer keys; with ``move`` that axis
    comes last in the result (XLA:CPU sorts the minor axis faster), else it stays in place."""
    key = jnp.moveaxis(_float_key(a), axis, -1)
    key = jax.lax.sort(key, dimension=key.ndim - 1)
    out = jax.lax.bitcast_convert_type(_flip(key), a.dtype)
    return out if move else jnp.moveaxis(out, -1, axis)


def _sorted_last(a: Any, axis: Any) -> tuple[Any, int]:
    """``a`` sorted along ``axis`` (all of it, flattened, when None) with that axis last, and the
    axis's index: by ``_key_sort`` on the CPU, by jax.numpy's sort elsewhere (NaN last in both)."""
    ax = 0 if axis is None else operator.index(axis) % a.ndim
    x = a.ravel() if axis is None else a
    if _on_cpu():
        return _key_sort(x, ax), ax
    return jnp.sort(jnp.moveaxis(x, ax, -1), axis=-1), ax


def _nan_if_any(last: Any, value: Any) -> Any:
    """``value`` per slice of ``last`` (sorted, NaN last), NaN where the slice holds one, as
    NumPy's median and quantiles give."""
    return jnp.where(jnp.isnan(last[..., -1]), last[..., -1], value)


def _argkeyed(a: Any) -> bool:
    """Whether np.argsort of ``a`` packs its keys with indices into 64-bit integers: real numbers
    of up to 64 bits under 64-bit types, fewer than 2**31 of them (indices fit 32 bits), on the
    CPU."""
    return (_on_cpu() and bool(jax.config.jax_enable_x64) and a.dtype.kind in "fiub"  # type: ignore[attr-defined]  # JAX adds each flag to Config at run time
            and a.dtype.itemsize <= 8 and a.size < 2**31)


def _order_key(a: Any) -> Any:
    """int64 keys that order as ``a`` does with equal values equal: -0.0 and 0.0 one key, every
    NaN the largest; those of values up to 32 bits within the signed 32-bit range."""
    if a.dtype.kind == "u" and a.dtype.itemsize == 4:  # into the signed 32-bit range
        return a.astype(jnp.int64) - np.int64(1 << 31)
    if a.dtype.kind == "b" or (a.dtype.kind in "iu" and a.dtype.itemsize < 8):
        return a.astype(jnp.int64)
    if a.dtype.kind == "u":  # uint64: shift the range down by 2**63 (its top bit flipped,
        # by an addition that wraps: no xor, see _flip), keeping the order
        return jax.lax.bitcast_convert_type(a + np.uint64(1 << 63), jnp.int64)
    if a.dtype.kind == "i":
        return a
    return _float_key(a, zeros_equal=True).astype(jnp.int64)


def _key_argsort(a: Any, axis: int) -> Any:
    """Stable np.argsort along ``axis`` by sorts of single int64 operands (XLA:CPU's plain
    integer comparison; a sort carrying the indices as a second operand takes the slow
    comparator path): a key of up to 32 bits shifted above the index, one sort; a 64-bit key in
    two passes, least significant 32 bits first (an LSD radix sort of two digits, each pass
    stable because its index breaks ties)."""
    key = jnp.moveaxis(_order_key(a), axis, -1)
    index = jax.lax.broadcasted_iota(jnp.int64, key.shape, key.ndim - 1)
    low = np.int64(0xFFFFFFFF)

    def by(digit: Any) -> Any:  # the stable order of a signed 32-bit digit (held in int64)
        return jax.lax.sort((digit << 32) | index, dimension=key.ndim - 1) & low

    def two_passes() -> Any:
        first = by((key & low) - np.int64(1 << 31))  # low digit, unsigned, moved to signed
        high = jnp.take_along_axis(key >> 32, first, axis=-1)
        return jnp.take_along_axis(first, by(high), axis=-1)

    if a.dtype.itemsize < 8 or a.dtype.kind == "b":
        perm = by(key)
    elif a.dtype.kind == "f" and key.shape[-1] > 1:
        perm = _truncated_argsort(key, index, two_passes)
    else:
        perm = two_passes()
    return jnp.moveaxis(perm, -1, axis)


def _truncated_argsort(key: Any, index: Any, exact: Any) -> Any:
    """The stable order of the int64 ``key`` along its last axis in one sort, checked, else
    ``exact()``'s: each key less the low bits the index needs (11 for 2,000 values), shifted
    above the index, sorted once; right unless two distinct keys of a slice differ only in those
    bits (floats within about 2**-42 of each other, relative), which shows as a key out of order
    in the result, and then the exact sort runs instead (a conditional: one branch runs). For
    float64 (2000x100 along the first axis) about twice as fast as the two passes."""
    bits = (key.shape[-1] - 1).bit_length()
    mask = np.int64((1 << bits) - 1)
    fast = jax.lax.sort(((key >> bits) << bits) | index, dimension=key.ndim - 1) & mask
    seen = jnp.take_along_axis(key, fast, axis=-1)
    in_order = jnp.all(seen[..., 1:] >= seen[..., :-1])
    return jax.lax.cond(in_order, lambda: fast, exact)


def _keep(value: Any, ndim: int, axis: int, keepdims: bool, flat: bool) -> Any:
    """A reduction's result with the reduced axis (every axis when ``flat``) kept as length 1."""
    if not keepdims:
        return value
    return value.reshape((1,) * ndim) if flat else jnp.expand_dims(value, axis)


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
    if order is None and a.ndim and _argkeyed(a):
        out = (_key_argsort(a.ravel(), 0) if axis is None
               else _key_argsort(a, operator.index(axis) % a.ndim))
    else:
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


MEDIAN_OF_9 = ((1, 2), (4, 5), (7, 8), (0, 1), (3, 4), (6, 7), (1, 2), (4, 5), (7, 8), (0, 3),
               (5, 8), (4, 7), (3, 6), (1, 4), (2, 5), (4, 7), (2, 4), (4, 6), (2, 4))
"""The median of 9 (a 3x3 window's) in 19 exchanges, Paeth's selection network: 30 min / max
operations once XLA drops the outputs nothing reads, where the pruned Batcher network below
needs 40 (a 512x512 median filter, alternating in one process: 3.1-4.0 -> 2.8-3.5 ms)."""


@functools.cache
def _median_network(n: int) -> tuple[tuple[int, int], ...]:
    """The exchanges of a sorting network for ``n`` wires that the middle one or two outputs
    depend on, in order (for 9 wires, ``MEDIAN_OF_9``)."""
    if n == 9:
        return MEDIAN_OF_9
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
