"""``a[i:j]`` where a bound is traced (``A[k, :k]``, ``cov[k:M, k]``, ``x[lo:hi]`` in a rolled
loop): a slice whose length is only known when the compiled code runs.

It is kept over the whole axis (its static length), in place: element ``m`` of the slice at
position ``start + m``, with the traced start and the count of valid elements. Elementwise
arithmetic, reductions, ``@`` / ``np.dot`` / ``np.outer`` contracting or keeping such an axis,
``np.flip``, copies and writes back through the slice (``a[k, :k] = v``, ``a[k:, k] /= p``) are
computed on the full extent with the invalid positions masked, so the result is NumPy's. Anything
else that would need the length raises a clear error (inside a rolled loop: the loop is unrolled
instead, with that reason).

Bounds follow NumPy's slice rules at run time (a negative bound counts from the end, bounds are
clipped to the axis); the step must be a static 1. Two such slices combined elementwise meet
element by element from their starts, as in NumPy; their lengths are assumed equal where NumPy
would raise for unequal ones. Slices with the same start (the same traced value) meet without
moving data; others are shifted into the first one's frame.
"""

from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from reactant_lab.errors import DynamicShapeError
from reactant_lab.trace.numpy_mode import affine, context
from reactant_lab.trace.numpy_mode.operators import install_operators
from reactant_lab.trace.numpy_mode.proxy import ProxyArray, new_array, new_result
from reactant_lab.trace.numpy_mode.storage import DynamicSlice, is_traced, write_where

Axes = dict[int, Any]
"""Axis of the (compact) data -> the traced count of valid elements along it."""


class RangedError(DynamicShapeError):
    """An operation on a slice with a traced bound that would need its length."""


def _error(what: str) -> RangedError:
    return RangedError(
        f"{what}: a slice with a traced bound (such as A[i, :i] in a loop over i) has a length "
        "only known when the compiled code runs. Supported on such slices: elementwise "
        "arithmetic, reductions (sum, max, mean, ...), @ / np.dot / np.inner / np.outer, "
        "np.flip, copies, and assigning to them. Otherwise compute over the whole axis with "
        "np.where(np.arange(n) < i, ..., ...).")


class RangedArray:
    """A slice with a traced bound: data over the whole axis, and per ranged axis the traced
    start and count of the valid elements (the "frame").

    ``base`` is the view of the whole extent it was sliced from (None for a computed value);
    ``source`` the (root, key) it came from, so that ``a[k:] /= p`` (read, update in place,
    assign back) writes once."""

    __slots__ = ("_data", "base", "counts", "dtype", "source", "starts")
    __array_priority__ = 2000.0
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, data: Any, starts: Axes, counts: Axes, base: ProxyArray | None = None,
                 source: Any = None, dtype: Any = None):
        self._data, self.base, self.source = data, base, source
        self.starts, self.counts = dict(starts), dict(counts)
        self.dtype = np.dtype(dtype if dtype is not None else data.dtype)

    # ------------------------------------------------------------------ values
    @property
    def value(self) -> Any:
        """The data over the whole extent (traced; garbage outside the frame)."""
        return self.base.value if self.base is not None else self._data

    @property
    def ndim(self) -> int:
        return len(self.envelope)

    @property
    def envelope(self) -> tuple[int, ...]:
        """The static shape of the data."""
        return tuple(self.base._shape) if self.base is not None else tuple(self._data.shape)

    def valid(self) -> Any:
        """Boolean of the data's shape: True where an element of the slice is."""
        shape = self.envelope
        ok: Any = lax.full(shape, True) if not self.counts else None
        for axis, count in self.counts.items():
            along = lax.broadcast_in_dim(frame_mask(shape[axis], self.starts[axis], count),
                                         shape, (axis,))
            ok = along if ok is None else lax.bitwise_and(ok, along)
        return ok

    def filled(self, fill: Any) -> Any:
        """The data with ``fill`` outside the frame."""
        return _select(self.valid(), self.value, fill)

    def write(self, new: Any) -> None:
        """Store ``new`` (data over the whole extent, in this slice's frame) into the slice: a
        row or column by a scatter that reads nothing of the array (``write_where``), else the
        old data kept outside the frame."""
        new = jnp.asarray(new).astype(self.dtype)
        if self.base is None:
            self._data = _select(self.valid(), new, self._data)
            return
        base, valid = self.base, self.valid()
        base.check_writable()
        if not write_where(base.root, base._ops, new, valid):
            base.write(_select(valid, new, base.value))

    def framed(self, starts: Axes, shape: tuple[int, ...]) -> Any:
        """The data moved into the frame ``starts`` (per ranged axis) and cut or zero-padded
        to ``shape``."""
        data = self.value
        for axis, start in self.starts.items():
            target = starts.get(axis, start)
            if not same_start(target, start):
                data = jnp.roll(data, target - start, axis)
        return _resize(data, self.envelope, shape)

    # ------------------------------------------------------------------ what needs the length
    @property
    def shape(self) -> tuple[int, ...]:
        raise _error("The shape of a slice with a traced bound was asked for")

    @property
    def size(self) -> int:
        raise _error("The size of a slice with a traced bound was asked for")

    def __len__(self) -> int:
        raise _error("len() of a slice with a traced bound")

    def __iter__(self) -> Any:
        raise _error("Iterating over a slice with a traced bound")

    def __getitem__(self, key: Any) -> Any:
        raise _error("Indexing a slice with a traced bound")

    def __setitem__(self, key: Any, value: Any) -> None:
        if key is Ellipsis or (isinstance(key, slice) and key == slice(None)):
            assign_into(self, value)
            return
        raise _error("Assigning into part of a slice with a traced bound")

    def __bool__(self) -> bool:
        raise _error("The truth value of a slice with a traced bound")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise _error("Converting a slice with a traced bound to a NumPy array")

    def __jax_array__(self) -> Any:
        raise _error("A slice with a traced bound was handed to JAX")

    def __repr__(self) -> str:
        return f"RangedArray({self.dtype.name}, envelope {list(self.envelope)})"

    def copy(self, order: str = "C") -> RangedArray:
        return RangedArray(self.value, self.starts, self.counts, dtype=self.dtype)

    def astype(self, dtype: Any, **_: Any) -> RangedArray:
        return RangedArray(self.value.astype(dtype), self.starts, self.counts, dtype=dtype)

    # ------------------------------------------------------------------ NumPy protocols
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types_: Any, args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> Any:
        return apply_function(func, args, kwargs)


install_operators(RangedArray)  # type: ignore[arg-type]  # the same operators as ProxyArray


def _in_place(ufunc: np.ufunc) -> Any:
    def iop(self: RangedArray, other: Any) -> Any:
        return ufunc(self, other, out=(self,))
    return iop


for _name, _uf in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("truediv", np.divide), ("floordiv", np.floor_divide), ("mod", np.remainder),
                   ("pow", np.power), ("and", np.bitwise_and), ("or", np.bitwise_or),
                   ("xor", np.bitwise_xor)):
    setattr(RangedArray, f"__i{_name}__", _in_place(_uf))


def involved(*trees: Any) -> bool:
    """Whether a RangedArray is among ``trees`` (arguments, tuples and lists of them)."""
    for x in trees:
        if isinstance(x, RangedArray):
            return True
        if isinstance(x, tuple | list) and involved(*x):
            return True
        if isinstance(x, dict) and involved(*x.values()):
            return True
    return False


# ---------------------------------------------------------------------- making them


def traced_slices(key: tuple[Any, ...]) -> bool:
    """Whether ``key`` (normalized) has a slice with a traced start or stop."""
    return any(isinstance(k, slice) and (is_traced(k.start) or is_traced(k.stop)) for k in key)


def _bound(v: Any, default: int, n: int) -> Any:
    """A slice bound as NumPy reads it for an axis of length ``n`` (step 1). The same traced
    bound gives the same value for the whole trace, so slices starting at it share a frame."""
    if v is None:
        return default
    if not is_traced(v):
        return int(np.clip(v + n if v < 0 else v, 0, n))
    key = ("ranged-bound", id(v), n)
    memo = context.memo()
    if key not in memo:
        w = jnp.asarray(v).astype(jnp.int64)
        if affine.within(v, 0, n):  # a loop index (plus a constant) inside the axis: as it is
            memo[key] = (v, w)
        else:
            memo[key] = (v, jnp.clip(jnp.where(w < 0, w + n, w), 0, n))
    return memo[key][1]


def fixed_view(proxy: ProxyArray, key: tuple[Any, ...]) -> ProxyArray | None:
    """``proxy[key]`` as a view of static shape when each slice with traced bounds is a loop
    index plus constants that stays inside its axis (``x[i:i + 3]``, ``d[:, k:k + 1]``)."""
    items = _expand(key, len(proxy._shape))
    whole: list[Any] = []
    dynamic: list[tuple[int, Any, int]] = []
    axis = dim = 0
    for k in items:
        if k is None:
            whole.append(k)
            axis += 1
            continue
        if isinstance(k, slice) and (is_traced(k.start) or is_traced(k.stop)):
            size = affine.static_length(k.start, k.stop, proxy._shape[dim]) if (
                k.step in (None, 1) and is_traced(k.start) and is_traced(k.stop)) else None
            if size is None:
                return None
            dynamic.append((axis, k.start, size))
            whole.append(slice(None))
        else:
            if not isinstance(k, slice | int | np.integer) and not is_traced(k):
                return None
            whole.append(k)
        axis += 1 if isinstance(k, slice) else 0
        dim += 1
    view = proxy[tuple(whole)]
    if not isinstance(view, ProxyArray):  # pragma: no cover - a slice keeps an axis
        return None
    for at, start, size in dynamic:
        view = view.view_of(DynamicSlice(at, start, size))
    return view


def select(proxy: ProxyArray, key: tuple[Any, ...]) -> Any:
    """``proxy[key]`` for a basic ``key`` with traced slice bounds: a view of static shape
    where the lengths are known (``fixed_view``), else a RangedArray."""
    fixed = fixed_view(proxy, key)
    if fixed is not None:
        return fixed
    items = _expand(key, len(proxy._shape))
    whole: list[Any] = []
    starts: Axes = {}
    counts: Axes = {}
    axis = 0  # axis of the result
    dim = 0  # axis of proxy
    for k in items:
        if k is None:
            whole.append(k)
            axis += 1
            continue
        if isinstance(k, slice) and (is_traced(k.start) or is_traced(k.stop)):
            if k.step not in (None, 1):
                raise _error("A slice with a traced bound and a step other than 1")
            n = proxy._shape[dim]
            start, stop = _bound(k.start, 0, n), _bound(k.stop, n, n)
            count = _count(start, stop)
            if not is_traced(stop) and stop == n:  # start + count >= n: the frame ends the axis
                context.memo()[("ranged-to-end", id(count))] = (count, start, n)
            starts[axis], counts[axis] = start, count
            whole.append(slice(None))
            axis += 1
        else:
            if isinstance(k, slice):
                axis += 1
            elif not isinstance(k, int | np.integer) and not is_traced(k):
                raise _error("Indexing with arrays together with a slice with a traced bound")
            whole.append(k)
        dim += 1
    base = proxy[tuple(whole)]
    if not isinstance(base, ProxyArray):  # pragma: no cover - a slice keeps an axis
        raise _error("A slice with a traced bound")
    return RangedArray(None, starts, counts, base=base, source=(proxy.root, key),
                       dtype=proxy.dtype)


def _select(mask: Any, a: Any, b: Any) -> Any:
    """``np.where(mask, a, b)`` for a traced ``mask`` and ``a``, ``b`` broadcasting to its shape
    (``b`` cast to ``a``'s dtype), in lax's primitives (see storage.wrap_index)."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    shape = np.broadcast_shapes(np.shape(mask), a.shape, b.shape)

    def full(x: Any) -> Any:
        if x.shape == shape:
            return x
        return lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - x.ndim, len(shape))))

    if b.dtype != a.dtype:
        b = lax.convert_element_type(b, a.dtype)
    return lax.select(full(jnp.asarray(mask)), full(a), full(b))


def _count(start: Any, stop: Any) -> Any:
    """``max(stop - start, 0)`` for slice bounds (a traced int64 scalar or a static int each),
    traced, in lax's primitives (see storage.wrap_index)."""
    i64 = np.dtype(np.int64)
    return lax.max(lax.sub(_as_index(stop, i64), _as_index(start, i64)), np.zeros((), i64))


def _as_index(x: Any, dtype: np.dtype) -> Any:
    """A slice bound (traced, or a static int) as an index scalar of ``dtype``."""
    if not is_traced(x):
        return np.asarray(int(x), dtype)
    x = jnp.asarray(x)
    return x if x.dtype == dtype else lax.convert_element_type(x, dtype)


def _expand(key: tuple[Any, ...], ndim: int) -> tuple[Any, ...]:
    """``key`` with its Ellipsis written out and full slices for missing trailing axes."""
    indexed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if any(k is Ellipsis for k in key):
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:at] + (slice(None),) * (ndim - indexed) + key[at + 1:]
    return key + (slice(None),) * (ndim - sum(1 for k in key if k is not None))


def gather(proxy: ProxyArray, key: tuple[Any, ...]) -> RangedArray:
    """``proxy[idx]`` where ``idx`` is a 1-D integer slice with a traced bound (``x[cols[lo:hi]]``):
    the rows it picks, one per valid index (negative ones count from the end)."""
    (idx,) = key
    if idx.ndim != 1 or idx.dtype.kind not in "iu" or not proxy._shape:
        raise _error("Indexing with a slice with a traced bound other than x[idx[lo:hi]] for "
                     "a 1-D integer idx")
    n = proxy._shape[0]
    at = jnp.asarray(idx.filled(0)).astype(jnp.int64)
    at = jnp.clip(jnp.where(at < 0, at + n, at), 0, max(n - 1, 0))
    return RangedArray(jnp.take(proxy.value, at, axis=0), {0: idx.starts[0]},
                       {0: idx.counts[0]}, dtype=proxy.dtype)


def _same_key(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    def same(x: Any, y: Any) -> bool:
        if isinstance(x, slice) and isinstance(y, slice):
            return all(same(p, q) for p, q in ((x.start, y.start), (x.stop, y.stop),
                                                (x.step, y.step)))
        if is_traced(x) or is_traced(y):
            return x is y
        return type(x) is type(y) and x == y
    return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))


def assign(proxy: ProxyArray, key: tuple[Any, ...], value: Any) -> None:
    """``proxy[key] = value`` for a basic ``key`` with traced slice bounds."""
    proxy.check_writable()
    if (isinstance(value, RangedArray) and value.base is not None and value.source is not None
            and value.source[0] is proxy.root and _same_key(value.source[1], key)):
        return  # ``a[k:] op= v``: the in-place op has written through already
    fixed = fixed_view(proxy, key)
    if fixed is not None:
        fixed.write(value)
        return
    target = select(proxy, key)
    assert isinstance(target, RangedArray)  # not a fixed view: checked above
    assign_into(target, value)


def assign_into(target: RangedArray, value: Any) -> None:
    """Store ``value`` (a slice with a traced bound, or a value broadcast over it)."""
    shape = target.envelope
    if isinstance(value, RangedArray):
        if set(value.counts) != set(target.counts) or value.ndim != target.ndim:
            raise _error("Assigning a slice with a traced bound along other axes")
        data = value.framed(target.starts, shape)
    else:
        plain = jnp.asarray(_plain(value))
        for axis in target.counts:
            at = axis - len(shape) + plain.ndim
            if 0 <= at < plain.ndim and plain.shape[at] != 1:
                raise _error("Assigning an array of static length to a slice with a traced "
                             "bound")
        data = jnp.broadcast_to(plain, shape)
    target.write(data)


def same_start(a: Any, b: Any) -> bool:
    """Whether two starts are known to be equal: the same traced value, equal ints, or the same
    loop index plus the same constant (``A[i + 1:, i]`` and ``B[i + 1:, j]``, each ``i + 1``
    computed on its own; see affine)."""
    if a is b or (isinstance(a, int) and isinstance(b, int) and a == b):
        return True
    known_a = affine.of(a) if is_traced(a) else None
    known_b = affine.of(b) if is_traced(b) else None
    return (known_a is not None and known_b is not None and known_a[0] is known_b[0]
            and known_a[1] == known_b[1])


def _plain(x: Any) -> Any:
    if isinstance(x, ProxyArray):
        return x.value
    return x


def _resize(data: Any, have: tuple[int, ...], want: tuple[int, ...]) -> Any:
    """``data`` cut or zero-padded at the end from shape ``have`` to ``want`` (ranged axes may
    differ: the valid part fits both)."""
    if have == want:
        return data
    if len(have) != len(want):
        raise _error("Combining slices with a traced bound of different dimensions")
    data = data[tuple(slice(0, min(h, w)) for h, w in zip(have, want, strict=True))]
    pad = [(0, max(0, w - h)) for h, w in zip(have, want, strict=True)]
    return jnp.pad(data, pad)


# ---------------------------------------------------------------------- elementwise


def _aligned(inputs: tuple[Any, ...]) -> tuple[list[Any], Axes, Axes]:
    """Inputs as proxies over common shapes in one frame (the first slice's, per right-aligned
    result axis), and that frame's starts and counts."""
    ranged = [x for x in inputs if isinstance(x, RangedArray)]
    ndim = max(x.ndim if isinstance(x, RangedArray) else int(np.ndim(_plain(x)))
               for x in inputs)
    starts: Axes = {}
    counts: Axes = {}
    lengths: dict[int, int] = {}
    for r in ranged:
        shift = ndim - r.ndim
        for axis, count in r.counts.items():
            at = axis + shift
            starts.setdefault(at, r.starts[axis])
            counts[at] = count if at not in counts else (
                counts[at] if counts[at] is count else jnp.minimum(counts[at], count))
            lengths[at] = min(lengths.get(at, r.envelope[axis]), r.envelope[axis])
    out: list[Any] = []
    for x in inputs:
        if isinstance(x, RangedArray):
            shift = ndim - x.ndim
            for a in range(x.ndim):
                if a + shift in lengths and a not in x.counts and x.envelope[a] != 1:
                    raise _error("A slice with a traced bound met one along other axes")
            want = tuple(lengths.get(a + shift, d) for a, d in enumerate(x.envelope))
            frame = {a: starts[a + shift] for a in x.counts}
            out.append(new_array(x.framed(frame, want)))
            continue
        shape = np.shape(_plain(x))
        for at in counts:
            a = at - (ndim - len(shape))
            if 0 <= a < len(shape) and shape[a] != 1:
                raise _error("A slice with a traced bound was combined with an array of static "
                             "length along the same axis")
        out.append(x)
    return out, starts, counts


def apply_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    """A ufunc with a slice with a traced bound among its inputs or outputs."""
    if method == "reduce" and ufunc in _UFUNC_REDUCE and len(inputs) == 1:
        return _reduce(_UFUNC_REDUCE[ufunc], inputs[0], dict(kwargs))
    if method != "__call__":
        raise _error(f"np.{ufunc.__name__}.{method} of a slice with a traced bound")
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    if kwargs.get("where", True) is not True:
        raise _error(f"np.{ufunc.__name__}(..., where=) on a slice with a traced bound")
    if ufunc is np.matmul:
        if out is not None:
            raise _error("np.matmul(..., out=) on a slice with a traced bound")
        return contract("matmul", inputs[0], inputs[1])
    proxies, starts, counts = _aligned(inputs)
    result = ufunc(*proxies, **kwargs)
    results = result if isinstance(result, tuple) else (result,)
    made = [RangedArray(jnp.asarray(_plain(r)), starts, counts) if jnp.ndim(_plain(r)) else r
            for r in results]
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        for target, value in zip(outs, made, strict=True):
            if target is None:
                continue
            if not isinstance(target, RangedArray):
                raise _error(f"np.{ufunc.__name__}(..., out=) of an array of static length "
                             "computed from a slice with a traced bound")
            assign_into(target, value)
        return outs[0] if len(outs) == 1 else outs
    return made[0] if len(made) == 1 else tuple(made)


# ---------------------------------------------------------------------- reductions

_FILLS = {"sum": "zero", "mean": "zero", "any": "zero", "count_nonzero": "zero",
          "nansum": "zero", "prod": "one", "all": "one", "nanprod": "one",
          "max": "low", "amax": "low", "nanmax": "low", "min": "high", "amin": "high",
          "nanmin": "high"}
_UFUNC_REDUCE = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min",
                 np.logical_and: "all", np.logical_or: "any"}


def _fill(kind: str, dtype: np.dtype) -> Any:
    if kind == "zero":
        return 0
    if kind == "one":
        return 1
    if dtype.kind == "b":
        return kind == "high"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if kind == "low" else info.max
    return -np.inf if kind == "low" else np.inf


def _reduce(name: str, a: RangedArray, kwargs: dict[str, Any]) -> Any:
    if kwargs.pop("out", None) is not None or kwargs.get("where", True) is not True:
        raise _error(f"np.{name}(..., out= / where=) of a slice with a traced bound")
    kwargs.pop("where", None)
    axis = kwargs.pop("axis", None)
    keepdims = bool(kwargs.pop("keepdims", False))
    ndim = a.ndim
    axes = tuple(range(ndim)) if axis is None else tuple(
        int(x) % ndim for x in (axis if isinstance(axis, tuple | list) else (axis,)))
    fill = _fill(_FILLS[name], a.dtype)
    base_name = "sum" if name == "mean" else name
    data = new_array(a.filled(fill))
    result = getattr(np, base_name)(data, axis=axis, keepdims=keepdims, **kwargs)
    if name == "mean":
        count: Any = 1
        for x in axes:
            count = count * (a.counts[x] if x in a.counts else a.envelope[x])
        result = np.true_divide(result, new_result(jnp.asarray(count, jnp.float64))) if (
            np.dtype(result.dtype).kind in "iub") else np.true_divide(result, new_result(
                jnp.asarray(count).astype(result.dtype)))
    left = [x for x in a.counts if x not in axes]
    if not left:
        return result
    renumber = {x: x if keepdims else x - sum(1 for r in axes if r < x) for x in left}
    return RangedArray(jnp.asarray(_plain(result)), {renumber[x]: a.starts[x] for x in left},
                       {renumber[x]: a.counts[x] for x in left})


# ---------------------------------------------------------------------- products


def _operand(x: Any, contracted: int | None) -> tuple[Any, Axes, Axes, tuple[int, ...]]:
    """(a proxy of the data, zero outside the frame when axis ``contracted`` is ranged; its
    starts and counts; its shape). A ranged axis that is kept needs no zeros: what lies outside
    the frame only reaches the result outside its frame."""
    if isinstance(x, RangedArray):
        data = x.filled(0) if contracted in x.counts else x.value
        return new_array(data), dict(x.starts), dict(x.counts), x.envelope
    return x, {}, {}, tuple(np.shape(_plain(x)))


def _contracted(kind: str, x: Any, first: bool) -> int | None:
    """The axis ``np.<kind>`` contracts of operand ``x`` (the first or the second)."""
    ndim = x.ndim if isinstance(x, RangedArray) else int(np.ndim(_plain(x)))
    if kind == "outer":
        return None
    if first or kind in ("inner", "vdot") or ndim == 1:
        return ndim - 1 if first or kind in ("inner", "vdot") else 0
    return ndim - 2


def contract(kind: str, a: Any, b: Any) -> Any:
    """``a @ b`` / ``np.dot`` / ``np.inner`` / ``np.vdot`` / ``np.outer`` with a slice with a
    traced bound: elements outside the frame are zeros, a contracted ranged axis disappears, a
    kept one stays ranged in the result (in its frame: no data moves)."""
    pa, fa, ca, sa = _operand(a, _contracted(kind, a, True))
    pb, fb, cb, sb = _operand(b, _contracted(kind, b, False))
    if kind == "outer":
        if len(sa) != 1 or len(sb) != 1:
            raise _error("np.outer of a slice with a traced bound that is not 1-D")
        frame = {**({0: fa[0]} if 0 in ca else {}), **({1: fb[0]} if 0 in cb else {})}
        both = {**({0: ca[0]} if 0 in ca else {}), **({1: cb[0]} if 0 in cb else {})}
        return _wrap(np.outer(pa, pb), frame, both)
    if kind == "vdot":
        kind = "dot"
        if len(sa) != 1 or len(sb) != 1:
            raise _error("np.vdot of a slice with a traced bound that is not 1-D")
        pa = np.conj(pa) if np.dtype(a.dtype).kind == "c" else pa
    if len(sa) not in (1, 2) or len(sb) not in (1, 2):
        raise _error(f"np.{kind} of a slice with a traced bound with more than 2 dimensions")
    ka = len(sa) - 1
    kb = len(sb) - 1 if kind == "inner" else (0 if len(sb) == 1 else len(sb) - 2)
    if (ka in ca) != (kb in cb):
        raise _error(f"np.{kind} contracting a slice with a traced bound with an array of "
                     "static length")
    if ka in ca:
        n = min(sa[ka], sb[kb])
        moved = b.framed({kb: fa[ka]}, tuple(n if d == kb else w for d, w in enumerate(sb)))
        moved = jnp.asarray(moved)
        pb = new_array(_select(
            lax.broadcast_in_dim(frame_mask(n, fa[ka], ca[ka]), moved.shape, (kb,)), moved, 0))
        if sa[ka] != n:
            pa = new_array(_plain(pa)[(slice(None),) * ka + (slice(0, n),)])
    fn: Any = {"matmul": np.matmul, "dot": np.dot, "inner": np.inner}[kind]
    result = fn(pa, pb)
    starts: Axes = {}
    counts: Axes = {}
    if len(sa) == 2 and 0 in ca:
        starts[0], counts[0] = fa[0], ca[0]
    if len(sb) == 2:
        kept = 0 if kind == "inner" else 1
        if kept in cb:
            at = 1 if len(sa) == 2 else 0
            starts[at], counts[at] = fb[kept], cb[kept]
    return _wrap(result, starts, counts)


def frame_mask(n: int, start: Any, count: Any) -> Any:
    """Boolean (n,): True at positions start .. start + count - 1 of an axis of ``n``, in lax's
    primitives (see storage.wrap_index), made once per trace for a frame. A static start of 0
    needs no lower comparison, and a frame that runs to the end of its axis (``a[i:]``: its
    count ``max(n - i, 0)``, recorded by ``select``) no upper one: trmm's ``A[i + 1:, i]`` is
    one comparison with an iota."""
    memo = context.memo()
    key = ("ranged-frame", n, id(start), id(count))
    if key in memo:
        return memo[key][2]
    traced = [x for x in (start, count) if is_traced(x)]
    dtype = np.dtype(jnp.asarray(traced[0]).dtype) if traced else np.dtype(np.int64)

    j = lax.iota(dtype, n)
    checks = []
    if is_traced(start) or int(start) > 0:
        checks.append(lax.ge(j, lax.broadcast(_as_index(start, dtype), (n,))))
    end = memo.get(("ranged-to-end", id(count)))
    if end is None or end[1] is not start or end[2] < n:
        stop = (lax.add(_as_index(start, dtype), _as_index(count, dtype)) if traced
                else np.asarray(int(start) + int(count), dtype))
        checks.append(lax.lt(j, lax.broadcast(stop, (n,))))
    mask = (functools.reduce(lax.bitwise_and, checks) if checks
            else lax.full((n,), True))
    memo[key] = (start, count, mask)
    return mask


def _wrap(result: Any, starts: Axes, counts: Axes) -> Any:
    if not counts:
        return result
    return RangedArray(jnp.asarray(_plain(result)), starts, counts)


# ---------------------------------------------------------------------- functions


def _flip(m: Any, axis: Any = None) -> RangedArray:
    if not isinstance(m, RangedArray):
        raise _error("np.flip with a slice with a traced bound")
    axes = tuple(range(m.ndim)) if axis is None else tuple(
        int(x) % m.ndim for x in (axis if isinstance(axis, tuple | list) else (axis,)))
    starts = dict(m.starts)
    for x in axes:  # [start, start + count) lands on [n - start - count, n - start)
        if x in m.counts:
            starts[x] = m.envelope[x] - m.starts[x] - m.counts[x]
    return RangedArray(jnp.flip(m.value, axes), starts, m.counts, dtype=m.dtype)


def _copy(a: Any, order: str = "K", subok: bool = False) -> RangedArray:
    if not isinstance(a, RangedArray):
        raise _error("np.copy with a slice with a traced bound")
    return a.copy()


def apply_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A NumPy function with a slice with a traced bound among its arguments."""
    name = getattr(func, "__name__", str(func))
    if name in _FILLS and args and isinstance(args[0], RangedArray) and len(args) == 1:
        return _reduce(name, args[0], dict(kwargs))
    if name in ("dot", "inner", "vdot", "outer", "matmul") and len(args) == 2 and not kwargs:
        return contract(name, args[0], args[1])
    if func is np.flip:
        return _flip(*args, **kwargs)
    if func is np.copy:
        return _copy(*args, **kwargs)
    if func is np.ndim:
        return args[0].ndim
    raise _error(f"np.{name} of a slice with a traced bound")


__all__ = ["RangedArray", "RangedError", "apply_function", "apply_ufunc", "assign", "gather",
           "involved", "select", "traced_slices"]
