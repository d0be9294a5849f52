"""NumPy's binning functions on proxy arrays: np.histogram, np.histogram_bin_edges, np.bincount,
np.digitize and np.searchsorted, whose results have static shapes while their values are traced.

Dtypes, NumPy scalars and NumPy's errors for static arguments are NumPy's own: each call first
runs NumPy on small stand-ins of the traced arrays. Where the result's shape, or one of NumPy's
errors, depends on traced values, these rules hold:

- histogram / histogram_bin_edges: ``bins`` is an int or a 1-D array of edges (static or
  traced), ``range`` is static. Without ``range``, the edges come from the data's min and max as
  NumPy computes them (np.linspace; a zero-width range widened by 0.5 each side). Where NumPy
  raises because that range is not finite (NaN or inf in the data), the edges are NaN and the
  counts zero. Traced edges must not decrease: NumPy checks, the compiled code cannot. String
  ``bins`` ('auto', 'fd', ...) choose the number of bins from the values: DynamicShapeError.
- bincount: the length, max(x.max() + 1, minlength), is static when ``x`` is concrete, or when
  ``minlength`` is at least the number of values ``x``'s dtype holds (bool, unsigned integers)
  or, for np.digitize's result not written since, its len(bins) + 1 bin numbers.
  A traced signed ``x`` may hold values >= minlength, or negative ones that NumPy refuses: the
  compiled code could only drop them, so it is refused with a DynamicShapeError naming the ways
  to count into a fixed number of bins.
- digitize / searchsorted: ``bins`` / ``a`` must be monotonic / sorted, as NumPy assumes;
  digitize tells increasing from decreasing traced bins by their two ends.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab.errors import DynamicShapeError
from reactant_lab.trace.numpy_mode import errors
from reactant_lab.trace.numpy_mode.creation import bind, from_nested
from reactant_lab.trace.numpy_mode.masks import realign
from reactant_lab.trace.numpy_mode.proxy import (
    ProxyArray,
    concrete_array,
    concrete_of,
    new_array,
    new_scalar,
    unwrap,
)
from reactant_lab.trace.user_errors import calling_user_frame, describe


def histogram(*args: Any, **kwargs: Any) -> tuple[ProxyArray, Any]:
    """np.histogram: (counts or weighted sums per bin, bin edges)."""
    p = _bound(np.histogram, args, kwargs)
    a, weights = _array(p["a"]), _optional(p.get("weights"))
    ref_hist, ref_edges = _reference(np.histogram, a, p, weights, density=p.get("density"))
    edges, given = _edges(np.histogram, a, p.get("bins", 10), p.get("range"), ref_edges)
    x, valid = _data(a)
    w = None if weights is None else _weights(a, weights)
    ntype = np.dtype(np.intp) if weights is None else np.dtype(weights.dtype)
    bins = p.get("bins", 10)
    uniform = not (_holds_proxy(bins) or np.ndim(bins) == 1)  # a number of equal bins
    hist = _counts(x, valid, w, jnp.asarray(unwrap(edges)), ntype, uniform,
                   uniform and _binary_grid(unwrap(edges)))
    if p.get("density"):
        widths = jnp.diff(jnp.asarray(unwrap(edges))).astype(np.float64)
        hist = hist / widths / hist.sum()
    return new_array(hist.astype(ref_hist.dtype)), given


def histogram_bin_edges(*args: Any, **kwargs: Any) -> Any:
    """np.histogram_bin_edges: the edges np.histogram would use."""
    p = _bound(np.histogram_bin_edges, args, kwargs)
    a, weights = _array(p["a"]), _optional(p.get("weights"))
    ref_edges = _reference(np.histogram_bin_edges, a, p, weights)
    return _edges(np.histogram_bin_edges, a, p.get("bins", 10), p.get("range"), ref_edges)[1]


def bincount(*args: Any, **kwargs: Any) -> ProxyArray:
    """np.bincount where its length is known while tracing (see the module's rules)."""
    p = _bound(np.bincount, args, kwargs)
    x, weights, minlength = _array(p["x"]), _optional(p.get("weights")), p.get("minlength", 0)
    if any(isinstance(t, ProxyArray) and t.mask is not None for t in (x, weights)):
        raise _bincount_refused(x, "of a[mask]")
    if _traced(minlength):
        raise _bincount_refused(x, f"with a traced minlength ({minlength!r})")
    minlength, static = _static(minlength), _static(x)
    ref = _bincount_reference(x, static, weights, minlength)
    held = _values_held(x.dtype) or _digitized_bound(x)
    if static is not None:
        length, index = len(ref), jnp.asarray(static)
    elif held is not None and operator.index(minlength) >= held:
        length, index = operator.index(minlength), _value(x)
    else:
        raise _bincount_refused(x, "of a traced array")
    add = jnp.ones(index.shape, ref.dtype) if weights is None else _value(weights).astype(
        ref.dtype)
    return new_array(jnp.zeros(length, ref.dtype).at[index.astype(np.intp)].add(add))


def _bincount_reference(x: Any, static: Any, weights: Any, minlength: Any) -> np.ndarray:
    """NumPy's bincount on ``x``'s data when static (its errors for negative values included),
    else on stand-ins: its errors for dims, dtypes and minlength, and its result dtype."""
    if weights is not None and x.ndim == weights.ndim == 1 and x.shape != weights.shape:
        raise ValueError("The weights and list don't have the same length.")
    stand = static if static is not None else _small(x)
    stand_w = None if weights is None else np.zeros(
        weights.shape if static is not None else _small_shape(weights), weights.dtype)
    return np.bincount(stand, stand_w, minlength)


def digitize(*args: Any, **kwargs: Any) -> ProxyArray:
    """np.digitize: the index of the bin each value falls in, for increasing or decreasing bins."""
    p = _bound(np.digitize, args, kwargs)
    x, bins, right = _array(p["x"]), _array(p["bins"]), p.get("right", False)
    ref = np.digitize(_stand_in(x), _stand_in(bins), right)
    cmp = np.result_type(x.dtype, bins.dtype)
    xv, bv = _value(x).astype(cmp), _value(bins).astype(cmp)
    side = "left" if right else "right"
    up = jnp.searchsorted(bv, xv, side=side)
    if bv.shape[0] == 0:
        return _like(ref, up)
    down = bv.shape[0] - jnp.searchsorted(bv[::-1], xv, side=side)
    static = _static(bins)
    made = _like(ref, (up if static[-1] >= static[0] else down) if static is not None else
                 jnp.where(bv[-1] >= bv[0], up, down))
    if not made.is_scalar:  # its values lie in 0 .. len(bins) until it is written
        _DIGITIZED[made.root] = (bv.shape[0] + 1, made.root.epoch)
    return made


_DIGITIZED: weakref.WeakKeyDictionary[Any, tuple[int, int]] = weakref.WeakKeyDictionary()
"""np.digitize's results: root -> (how many values it can hold, its epoch then)."""


def _digitized_bound(x: Any) -> int | None:
    """How many bin numbers ``x`` can hold when it is np.digitize's unchanged result (or a
    static view of it): ``np.bincount(np.digitize(v, edges), minlength=len(edges) + 1)``."""
    if not isinstance(x, ProxyArray):
        return None
    entry = _DIGITIZED.get(x.root)
    if entry is None or entry[1] != x.root.epoch or not all(op.static for op in x._ops):
        return None
    return entry[0]


def searchsorted(*args: Any, **kwargs: Any) -> ProxyArray:
    """np.searchsorted (with ``side`` and ``sorter``), comparing in NumPy's common dtype."""
    p = _bound(np.searchsorted, args, kwargs)
    a, v, side, sorter = _array(p["a"]), _array(p["v"]), p.get("side", "left"), p.get("sorter")
    sorter = _optional(sorter)
    pair = (a,) if sorter is None else (a, sorter)
    if any(_traced(t) for t in pair):  # NumPy's checks of their dims and dtypes, not of values
        ref = np.searchsorted(_small(a), _stand_in(v), side,
                              None if sorter is None else np.zeros(_small(a).shape, sorter.dtype))
    else:
        ref = np.searchsorted(_static(a), _stand_in(v), side,
                              None if sorter is None else _static(sorter))
    cmp = np.result_type(a.dtype, v.dtype)
    av = _value(a).astype(cmp)
    if sorter is not None:
        av = av[_value(sorter)]
    return _like(ref, jnp.searchsorted(av, _value(v).astype(cmp), side=side))


BINNING: dict[Callable[..., Any], Callable[..., Any]] = {
    np.histogram: histogram, np.histogram_bin_edges: histogram_bin_edges,
    np.bincount: bincount, np.digitize: digitize, np.searchsorted: searchsorted}
"""NumPy function -> its implementation on proxies (NumPy itself runs when nothing is traced)."""


# ------------------------------------------------------------------------------ histograms

def _reference(func: Callable[..., Any], a: Any, p: dict[str, Any], weights: Any,
               **extra: Any) -> Any:
    """NumPy's ``func`` on one-element stand-ins: its errors for static arguments, its dtypes and,
    for a static range, its edges."""
    if weights is not None and _shape_of(weights) != _shape_of(a):
        raise ValueError("weights should have the same shape as a.")
    bins, lim = p.get("bins", 10), p.get("range")
    if isinstance(bins, str):
        raise _dynamic(f"{errors.numpy_name(func)} with bins={bins!r}", "The number of bins it "
                       "picks depends on the values", "Pass the number of bins (an int) or "
                       "the edges (a 1-D array).")
    if _traced(bins) and np.ndim(_stand_in(bins)) == 0:
        raise _dynamic(f"{errors.numpy_name(func)} with a traced number of bins ({bins!r})",
                       "The number of bins decides the result's shape, and it comes from traced "
                       "values", "Pass a Python int, or take it from an array's shape.")
    if lim is not None and any(_traced(t) for t in _leaves(lim)):
        raise errors.unsupported(func, f" with a traced range ({lim!r}): pass a static range, or "
                                 "scale the data, e.g. np.histogram((x - lo) / (hi - lo), "
                                 "bins=n, range=(0, 1))")
    stand_bins = _stand_in(_array(bins)) if _holds_proxy(bins) else bins
    stand_lim = None if lim is None else tuple(_static(t) for t in lim)
    small = np.zeros(_small_shape(a), a.dtype)
    stand_w = None if weights is None else np.zeros(small.shape, weights.dtype)
    with np.errstate(all="ignore"):
        return func(small, stand_bins, stand_lim, weights=stand_w, **extra)


def _edges(func: Callable[..., Any], a: Any, bins: Any, lim: Any,
           ref_edges: np.ndarray) -> tuple[Any, Any]:
    """The bin edges (a NumPy array or a proxy), and the edges ``func`` returns: ``bins`` itself
    when it is an array (NumPy returns it), else a new array."""
    if isinstance(bins, ProxyArray) and bins.ndim == 0:  # a static count (see _reference)
        bins = _static(bins)
    if _holds_proxy(bins) or np.ndim(bins) == 1:
        edges = _array(bins)
        return edges, edges if isinstance(bins, ProxyArray | np.ndarray) else _own(edges)
    if lim is not None or _empty(a):
        static = func(np.zeros(0, a.dtype), bins, None if lim is None else tuple(
            _static(t) for t in lim))
        static = static[1] if isinstance(static, tuple) else static
        return static, concrete_array(static)
    x, valid = _data(a)
    edges = new_array(_data_edges(x, valid, int(bins), np.dtype(ref_edges.dtype)))
    return edges, edges


def _data_edges(x: Any, valid: Any, n: int, dtype: np.dtype) -> Any:
    """NumPy's edges for ``bins=n`` without ``range``: np.linspace(min, max, n + 1) in NumPy's
    arithmetic (a zero-width range widened by 0.5 each side); NaN where NumPy raises (the range
    is not finite); np.linspace(0, 1, n + 1) for an empty selection, as for empty data."""
    outer = np.result_type(x.dtype, 0.5)  # the dtype of x.min() - 0.5
    if valid is None:
        lo, hi = jnp.min(x), jnp.max(x)
    else:
        info = jnp.finfo if jnp.issubdtype(x.dtype, jnp.inexact) else jnp.iinfo
        lo = jnp.min(x, where=valid, initial=info(x.dtype).max)
        hi = jnp.max(x, where=valid, initial=info(x.dtype).min)
    lo, hi = lo.astype(outer), hi.astype(outer)
    same = lo == hi
    lo, hi = jnp.where(same, lo - 0.5, lo), jnp.where(same, hi + 0.5, hi)
    # NumPy divides by n and rounds each product before adding lo. XLA and the enzyme-hlo
    # patterns turn a division by a constant into a product with its rounded reciprocal, and
    # XLA fuses a * b + c into one multiply-add: a divisor the compilers cannot fold (it is n
    # unless lo is NaN, whose edges are NaN anyway) and the select keep NumPy's edges.
    div = jnp.where(jnp.isnan(lo), 1, n).astype(outer)
    delta = hi - lo
    step = delta / div
    steps = jnp.arange(n + 1, dtype=outer)
    spaced = jnp.where(step == 0, steps / div * delta, steps * step)
    edges = (spaced + lo).at[-1].set(hi).astype(dtype)
    edges = jnp.where(jnp.isfinite(lo) & jnp.isfinite(hi), edges, jnp.nan)
    if valid is None:
        return edges
    empty = np.histogram_bin_edges(np.zeros(0, x.dtype), n).astype(dtype)
    return jnp.where(valid.any(), edges, empty)


def _counts(x: Any, valid: Any, w: Any, edges: Any, ntype: np.dtype,
            uniform: bool = False, exact: bool = False) -> Any:
    """Per bin, the count (or the sum of weights) of ``edges[i] <= x < edges[i + 1]``, the last
    bin closed on the right; NaN and values outside the edges count nowhere. ``uniform``: the
    edges are equally spaced (``bins`` a number), so each value's bin is computed, as NumPy
    does, instead of searched; ``exact``: they are a binary grid (``_binary_grid``), where that
    computation needs no correction."""
    n = max(edges.shape[0] - 1, 0)
    cmp = np.result_type(x.dtype, edges.dtype)
    x, edges = x.astype(cmp), edges.astype(cmp)
    if n == 0:
        return jnp.zeros(0, ntype)
    inside = (x >= edges[0]) & (x <= edges[-1])
    if valid is not None:
        inside &= valid
    kind = np.int32 if n < 2**31 - 1 else np.intp  # narrow bin numbers for the scatter
    index = _uniform_bins(x, inside, edges, n, kind, exact) if uniform else jnp.clip(
        jnp.searchsorted(edges, x, side="right") - 1, 0, n - 1)
    # Values outside go to bin n, past the end, where the scatter drops them (no select of what
    # each adds).
    index = jnp.where(inside, index, n).astype(kind)
    # NumPy sums weights in float64 (bincount) or exactly (cumsum of integers), then casts
    total = np.dtype(np.int64) if w is None or ntype.kind in "biu" else np.result_type(
        ntype, np.float64)
    add = jnp.ones((), total) if w is None else w.astype(total)
    return jnp.zeros(n, total).at[index].add(add, mode="drop").astype(ntype)


def _uniform_bins(x: Any, inside: Any, edges: Any, n: int, kind: type,
                  exact: bool = False) -> Any:
    """The bin of each value inside equally spaced ``edges`` as NumPy's histogram finds it:
    ``(x - first) / (last - first) * n`` rounded down (n itself is the last bin), then moved one
    bin down or up where the edges say the rounding went wrong, so that the bin agrees with
    the edges exactly (as a search would find it) with two small gathers instead of a binary
    search of log2(n) gathers; some bin for the values outside (the caller drops them). ``kind``:
    the integer type of the bin numbers. With ``exact`` (a binary grid) the rounding cannot go
    wrong, and the gathers are left out."""
    first, last = edges[0], edges[-1]
    f = jnp.where(inside, (x - first) / (last - first) * n, 0)
    index = jnp.clip(f, 0, n - 1).astype(kind)
    if exact:
        return index
    index = index - (x < edges[index]).astype(kind)
    return index + ((x >= edges[index + 1]) & (index != n - 1)).astype(kind)


def _binary_grid(edges: Any) -> bool:
    """Whether static ``edges`` are ``0, h, 2h, ..., n h`` exactly, with ``n`` and ``n h``
    powers of two (``bins=64, range=(0, 1)``, ``bins=256, range=(0, 256)``): then for every
    ``x`` in range, ``x / (n h) * n`` only scales by powers of two, so it is exact (a value
    so small that the division rounds, below the type's smallest normal number, lies in bin 0
    either way while n times that number is below 1), and rounding it down gives the bin the
    edges give, with no correction."""
    if not isinstance(edges, np.ndarray) or edges.ndim != 1 or edges.dtype.kind != "f":
        return False
    n = edges.shape[0] - 1
    last = float(edges[-1]) if n > 0 else 0.0
    if n < 1 or n & (n - 1) or not np.isfinite(last) or last <= 0 or edges[0] != 0:
        return False
    if np.frexp(last)[0] != 0.5 or n * float(np.finfo(edges.dtype).tiny) >= 1:
        return False
    return bool(np.array_equal(edges, np.arange(n + 1, dtype=np.float64) * (last / n)))


def _data(a: Any) -> tuple[Any, Any]:
    """A histogram's data, flat (bool as uint8, as NumPy converts it), and which elements count:
    for a[mask], the selected ones; else None (all)."""
    if isinstance(a, ProxyArray) and a.mask is not None:
        data = a.value
        valid = jnp.broadcast_to(a.mask.full(data.ndim), data.shape).ravel()
    else:
        data, valid = _value(a), None
    return (data.astype(np.uint8) if data.dtype == np.bool_ else data).ravel(), valid


def _weights(a: Any, weights: Any) -> Any:
    """The weights, flat, lined up with ``a``'s elements (selections with selections)."""
    a_sel = isinstance(a, ProxyArray) and a.mask is not None
    w_sel = isinstance(weights, ProxyArray) and weights.mask is not None
    if a_sel != w_sel:
        raise errors.dynamic_shape("np.histogram of a[mask] with weights not selected the same "
                                   "way (or weights w[mask] with data not selected)")
    if a_sel:
        return realign(weights, a.mask, a._shape).ravel()
    return _value(weights).ravel()


# ------------------------------------------------------------------------------ helpers

def _bound(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
           ) -> dict[str, Any]:
    bound = bind(func, args, kwargs)
    if bound is None:
        raise TypeError(f"{errors.numpy_name(func)}() does not take these arguments: "
                        f"{len(args)} positional, keywords {sorted(kwargs)}")
    return bound


def _is_proxy(x: Any) -> bool:
    return isinstance(x, ProxyArray)


def _leaves(tree: Any) -> list[Any]:
    return jax.tree_util.tree_leaves(tree, is_leaf=_is_proxy)


def _holds_proxy(tree: Any) -> bool:
    return any(_is_proxy(x) for x in _leaves(tree))


def _array(x: Any) -> Any:
    """An array argument as NumPy converts it: a proxy as it is, a sequence holding traced values
    as a new traced array, anything else as a NumPy array."""
    if isinstance(x, ProxyArray | np.ndarray):
        return x
    return from_nested(x, None) if _holds_proxy(x) else np.asarray(x)


def _optional(x: Any) -> Any:
    return None if x is None else _array(x)


def _own(x: Any) -> Any:
    return concrete_array(x) if isinstance(x, np.ndarray) else x


def _static(x: Any) -> Any:
    """Concrete data for ``x``, or None when it is traced."""
    return concrete_of(x) if isinstance(x, ProxyArray) else x


def _traced(x: Any) -> bool:
    return isinstance(x, ProxyArray) and concrete_of(x) is None


def _shape_of(x: Any) -> tuple[int, ...] | None:
    """The shape NumPy would see (None for a[mask], whose length is only known at run time)."""
    if isinstance(x, ProxyArray) and x.mask is not None:
        return None
    return tuple(int(d) for d in (x.shape if isinstance(x, ProxyArray) else np.shape(x)))


def _small_shape(x: Any) -> tuple[int, ...]:
    """``x``'s shape with every length cut to at most 1 (a[mask]: one selected element)."""
    shape = _shape_of(x)
    if shape is None:
        shape = (1,) * (len(x._shape) - int(x.mask.lead) + 1)
    return tuple(min(d, 1) for d in shape)


def _empty(x: Any) -> bool:
    shape = _shape_of(x)
    return shape is not None and 0 in shape


def _small(x: Any) -> np.ndarray:
    """A one-element (or empty) array of ``x``'s dims and dtype, for NumPy's checks."""
    return np.zeros(_small_shape(x), x.dtype)


def _stand_in(x: Any) -> Any:
    """``x``'s data when static, else a small stand-in (a NumPy scalar for a NumPy scalar)."""
    static = _static(x)
    if static is not None:
        return static
    small = _small(x)
    return small[()] if x.is_scalar else small


def _value(x: Any) -> Any:
    return jnp.asarray(unwrap(x))


def _like(ref: Any, value: Any) -> ProxyArray:
    """``value`` as NumPy gives ``ref``: its dtype, a NumPy scalar or an array."""
    value = jnp.asarray(value).astype(np.asarray(ref).dtype)
    return new_scalar(value) if isinstance(ref, np.generic) else new_array(value)


def _values_held(dtype: np.dtype) -> int | None:
    """How many distinct non-negative values ``dtype`` holds (None when it holds negatives)."""
    if dtype.kind == "b":
        return 2
    return 2 ** (8 * dtype.itemsize) if dtype.kind == "u" else None


def _dynamic(what: str, why: str, todo: str) -> DynamicShapeError:
    return DynamicShapeError(f"{what} at {describe(calling_user_frame())}\n{why}, which are only "
                             f"known when the compiled code runs. {todo}")


def _bincount_refused(x: Any, what: str) -> DynamicShapeError:
    return _dynamic(
        f"np.bincount {what} ({x!r})",
        "Its length, max(x.max() + 1, minlength), depends on the values (and NumPy raises for "
        "negative ones)",
        "To count into n bins: np.histogram(x, bins=n, range=(-0.5, n - 0.5))[0] (int64 counts "
        "of 0 .. n-1; other values are ignored, as np.histogram ignores values outside its "
        "range); or counts = np.zeros(n, np.int64); np.add.at(counts, x, 1) when every value "
        "is in range(n) (not counts[x] += 1, which NumPy applies once per repeated index). "
        "np.bincount(x, minlength=n) is supported when x's dtype cannot hold a value >= n "
        "(bool with n >= 2, uint8 with n >= 256, uint16 with n >= 65536), or when x is concrete.")
