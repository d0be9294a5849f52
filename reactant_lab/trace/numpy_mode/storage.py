"""Storage behind proxy arrays: a root holds one array's value; a view re-derives its own from the
root through a chain of view ops and writes back through the same chain.

This is Reactant's ``set_mlir_data!`` (an in-place update rebinds the traced value) and
``get_ancestor_and_indices`` (a view knows its parent and index) for NumPy semantics. A root made
by the kernel from static values (``np.zeros((n, n))``, ``np.arange(n)``) keeps concrete NumPy data
until a traced value is written into it, so Python can still loop over it or index with it.
"""

from __future__ import annotations

import functools
import math
import traceback
from collections.abc import Callable
from typing import Any, Literal, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from reactant_lab.trace.numpy_mode import affine, context, journal
from reactant_lab.trace.paths import element_strides
from reactant_lab.trace.user_errors import calling_user_frame

_ANY = np.empty((), np.uint8)

Order = Literal["C", "F"]
"""A memory order: what NumPy's order='A' and 'K' resolve to for one array."""
OrderACF = Literal["A", "C", "F"]
"""NumPy's ``order=`` of reshapes."""
OrderKACF = Literal["K", "A", "C", "F"]
"""NumPy's ``order=`` of copies, ``ravel`` and ``*_like``."""
Casting = Literal["no", "equiv", "safe", "same_kind", "unsafe"]
"""NumPy's ``casting=`` rules."""

IMMUTABLE = ("a NumPy scalar (immutable)", "a JAX array (immutable)", "a Python scalar")
"""``Root.frozen`` of the arrays that are values, not memory: a write rebinds the name."""
SCALAR = IMMUTABLE[0]
"""``Root.frozen`` of a NumPy scalar (an argument, or a reduction's result)."""


def is_traced(x: Any) -> bool:
    """True for a JAX tracer (a value only known when the compiled code runs)."""
    return isinstance(x, jax.core.Tracer)


def to_jax(concrete: np.ndarray) -> jax.Array:
    """A traced constant for concrete data; a uniform array becomes a broadcast scalar, a
    large boolean mask that is the OR (or the AND) of one vector per axis (``(fy > keep) |
    (fx > keep)``) those vectors broadcast and combined, and a large diagonal matrix its
    diagonal placed by an iota comparison, not a dense constant in the module."""
    flat = concrete.reshape(-1)
    if flat.size > 1 and (flat == flat[0]).all():
        return jnp.full(concrete.shape, flat[0], concrete.dtype)
    if concrete.dtype == np.bool_ and concrete.ndim > 1 and concrete.size >= FACTORED_MIN:
        factored = _factored_mask(concrete)
        if factored is not None:
            return factored
    if concrete.ndim == 2 and concrete.size >= FACTORED_MIN and concrete.dtype.kind in "biufc":
        diagonal = _diagonal(concrete)
        if diagonal is not None:
            return diagonal
    # A copy: JAX keeps a reference to the buffer, which NumPy may update in place later.
    return jnp.asarray(concrete.copy())


FACTORED_MIN = 1 << 16
"""Elements of a boolean mask from which ``to_jax`` looks for one vector per axis: below it
the dense constant is small."""


def _factored_mask(mask: np.ndarray) -> jax.Array | None:
    """``mask`` computed from one vector per axis when it is their OR or their AND (checked
    element for element, so exactly), else None. Each vector is the mask reduced over the
    other axes: ``all`` for the OR (a row set whole is set by its row vector), ``any`` for
    the AND."""
    axes = range(mask.ndim)
    for reduce, combine, traced_combine in ((np.all, np.logical_or, jnp.logical_or),
                                            (np.any, np.logical_and, jnp.logical_and)):
        vectors = [reduce(mask, axis=tuple(a for a in axes if a != k), keepdims=True)
                   for k in axes]
        rebuilt = functools.reduce(combine, vectors)
        if np.array_equal(np.broadcast_to(rebuilt, mask.shape), mask):
            out = functools.reduce(traced_combine, map(jnp.asarray, vectors))
            return jnp.broadcast_to(out, mask.shape)
    return None


def _diagonal(a: np.ndarray) -> jax.Array | None:
    """A large matrix that is zero off its main diagonal (``np.eye(n)``, ``np.diag(v)``, as
    correlation's ``corr = np.eye(M)`` starts) as an iota comparison selecting its diagonal,
    bit for bit (a -0.0 off the diagonal keeps it dense), not a dense constant; else None."""
    if np.count_nonzero(a) > min(a.shape):
        return None
    d = np.diagonal(a).copy()
    rebuilt = np.zeros_like(a)
    np.fill_diagonal(rebuilt, d)
    if np.ascontiguousarray(rebuilt).tobytes() != np.ascontiguousarray(a).tobytes():
        return None
    n, m = a.shape
    rows = jnp.concatenate([to_jax(d), jnp.zeros(n - d.size, a.dtype)]) if d.size < n else (
        to_jax(d))
    return jnp.where(jnp.eye(n, m, dtype=bool), rows[:, None], jnp.zeros((), a.dtype))


class Root:
    """One array's storage: a traced value, or concrete NumPy data, and who may write to it."""

    __slots__ = ("__weakref__", "_model", "_order", "_shadow", "_strides", "_value", "arg",
                 "concrete", "epoch", "first_write", "frozen", "last_write", "layout_read", "serial",
                 "version", "weak")

    def __init__(self, value: Any = None, concrete: np.ndarray | None = None, *,
                 frozen: str | None = None, arg: str | None = None, weak: bool = False,
                 memory: np.ndarray | None = None):
        if concrete is not None and concrete.base is not None and not (
                concrete.flags.c_contiguous or concrete.flags.f_contiguous):
            concrete = np.ascontiguousarray(concrete)  # its own dense memory, not a view's
        self._value = value
        self.concrete = concrete
        """Concrete data while no traced value has been written in (kernel-made arrays only)."""
        self.frozen = frozen
        """Why it cannot be written to (None when it can)."""
        self.arg = arg
        """Path of the argument it stands for, or None for an array the kernel made."""
        self.weak = weak
        """A traced Python scalar: promotes like one."""
        self._model: Callable[[], np.ndarray | None] | None = None
        self._shadow: np.ndarray | None = None
        self._lay_out(memory if memory is not None else concrete)
        self.layout_read = False
        """Whether tracing looked at the memory layout (order, strides): the trace then holds
        only for arguments laid out the same way."""
        self.version = 0
        """Bumped on every write; views compare it to know their cached value is stale."""
        self.first_write: traceback.FrameSummary | None = None
        """Where the user's code first updated this argument in place (arguments only)."""
        self.last_write: tuple[Any, Any, tuple[Any, ...], Any] | None = None
        """(value after, value before, index, value written) of the latest write through a
        traced index (``write_window``)."""
        self.serial = self.epoch = journal.stamp()
        """``serial``: when it was made; ``epoch``: when its value last changed (view caches)."""
        journal.created(self)

    def _lay_out(self, memory: np.ndarray | None) -> None:
        """Take the layout of ``memory`` (C order when None)."""
        self._order: Order = "C"
        self._strides: tuple[int, ...] | None = None
        if memory is not None:
            c, f = memory.flags.c_contiguous, memory.flags.f_contiguous
            self._order = "F" if f and not c else "C"
            self._strides = None if c or f else element_strides(memory)
        self._shadow = None

    def follow(self, model: Callable[[], np.ndarray | None]) -> None:
        """Lay this array out like the NumPy array ``model()`` returns (C order for None), as
        NumPy lays out a result like its operands. ``model`` runs when the layout is first read,
        so an argument's layout counts as read only when a result's layout derived from it is."""
        self._model = model

    def _settle(self) -> None:
        if self._model is not None:
            model, self._model = self._model, None
            self._lay_out(model())

    @property
    def order(self) -> Order:
        """'F' for a Fortran-contiguous array, else 'C' (what order='A' / 'K' resolve to)."""
        self._settle()
        self.layout_read = True
        return self._order

    @order.setter
    def order(self, order: Order) -> None:
        self._model, self._order, self._strides, self._shadow = None, order, None, None

    @property
    def strides(self) -> tuple[int, ...] | None:
        """Element strides of an array that is neither C- nor F-contiguous (a strided or
        reversed argument, a result laid out like one), else None: NumPy's view-or-copy rule
        depends on them."""
        self._settle()
        self.layout_read = True
        return self._strides

    @property
    def value(self) -> Any:
        """The traced value (made from the concrete data on first use)."""
        if self._value is None:
            assert self.concrete is not None  # a root holds a traced value or concrete data
            self._value = to_jax(self.concrete)
        return self._value

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple((self.concrete if self.concrete is not None else self._value).shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype((self.concrete if self.concrete is not None else self._value).dtype)

    def set_traced(self, new: Any) -> None:
        """Rebind to a new traced value (an in-place update)."""
        journal.writing(self)
        self._value, self.concrete = new, None
        self.version += 1
        self.epoch = journal.stamp()
        if self.arg is not None and self.first_write is None:
            self.first_write = calling_user_frame()

    def will_touch(self) -> None:
        """NumPy is about to update the concrete data in place (then ``touched``)."""
        journal.concrete_write(self)

    def touched(self) -> None:
        """The concrete data was updated in place by NumPy."""
        journal.writing(self)
        self._value = None
        self.version += 1
        self.epoch = journal.stamp()

    def forget(self) -> None:
        """Drop the traced constant made from the concrete data (made in a finished trace)."""
        self._value = None

    def hold(self, value: Any) -> None:
        """Stand for ``value`` without a write (a rolled loop's carried value)."""
        self._value, self.concrete, self.epoch = value, None, journal.stamp()

    def save(self, copy: bool) -> tuple[Any, ...]:
        """This root's state (its concrete data copied with ``copy``), for ``load``."""
        data = self.concrete.copy() if copy and self.concrete is not None else self.concrete
        return self._value, data, self.version, self.first_write

    def load(self, saved: tuple[Any, ...]) -> None:
        """Go back to a state ``save`` returned."""
        self._value, data, self.version, self.first_write = saved
        if data is not None and self.concrete is not None and data is not self.concrete:
            self.concrete[...] = data  # views of the concrete data see it again
        else:
            self.concrete = data
        self.epoch = journal.stamp()

    def shadow(self) -> np.ndarray:
        """An uninitialized byte array with this array's shape and memory layout: NumPy itself
        then tells which reshapes of a view are views and which are copies."""
        strides = self.strides
        if self._shadow is None:
            self._shadow = (np.empty(self.shape, np.uint8, order=self._order)
                            if strides is None else strided_shadow(self.shape, strides))
        return self._shadow


def strided_shadow(shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """A byte array of ``shape`` whose strides (in elements, negative allowed) are ``strides``."""
    if 0 in shape:
        return np.empty(shape, np.uint8)
    low = sum(s * (n - 1) for s, n in zip(strides, shape, strict=True) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(strides, shape, strict=True) if s > 0)
    buffer = np.empty(high - low + 1, np.uint8)
    return np.lib.stride_tricks.as_strided(buffer[-low:], shape, strides)


def probe(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """``key`` with each traced index standing in as zeros of its shape and dtype: NumPy can
    index with it, and checks every static index."""
    return tuple(np.zeros(k.shape, k.dtype) if is_traced(k) else k for k in key)


def no_memory(shape: tuple[int, ...]) -> np.ndarray:
    """A read-only byte array of ``shape`` without memory, for NumPy to index: the result's
    shape, and NumPy's own IndexError for a static index out of range."""
    return np.broadcast_to(_ANY, shape)


def indexed_shape(shape: tuple[int, ...], key: tuple[Any, ...]) -> tuple[int, ...]:
    """The shape of ``a[key]`` for an array of ``shape``, found by NumPy (see ``no_memory``); a
    traced index is only known when the compiled code runs, where it is clamped into range as
    in JAX."""
    indexed: np.ndarray = no_memory(shape)[probe(key)]
    return indexed.shape


class ViewOp(Protocol):
    """One step from an array to a view of it, replayed alike on traced values, concrete data,
    the caller's arrays (``ArgView``) and shadows."""

    static: bool
    """Whether the op holds no traced value (a concrete view stays concrete)."""

    def shape(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[tuple[int, ...], np.dtype]:
        """The view's shape and dtype for a parent of ``shape`` and ``dtype``."""

    def get(self, x: Any) -> Any:
        """The view of ``x`` (a traced value or a NumPy array)."""

    def put(self, parent: Any, new: Any) -> Any:
        """The traced ``parent`` with its view replaced by ``new``."""

    def on_shadow(self, s: np.ndarray) -> np.ndarray:
        """The view of the shadow ``s`` (see ``Root.shadow``)."""


class Index:
    """Basic indexing (ints, slices, None, Ellipsis; traced integer scalars allowed)."""

    __slots__ = ("idx", "static")

    def __init__(self, idx: tuple[Any, ...]):
        self.idx = idx
        self.static = not any(is_traced(i) for i in idx)

    def shape(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[tuple[int, ...], np.dtype]:
        return indexed_shape(shape, self.idx), dtype

    def get(self, x: Any) -> Any:
        if not self.static:
            block = get_block(x, self.idx)
            if block is not None:
                return block
        # With ``...`` an integer per axis still makes a view of a NumPy array (a 0-d one), not
        # a scalar: replaying the op on the caller's array gives what NumPy gave.
        return x[self.idx if any(i is Ellipsis for i in self.idx) else (*self.idx, Ellipsis)]

    def put(self, parent: Any, new: Any) -> Any:
        return set_basic(parent, self.idx, new)

    def on_shadow(self, s: np.ndarray) -> np.ndarray:
        view: np.ndarray = s[probe(self.idx)]
        return view


class Reshape:
    """A reshape that NumPy makes a view."""

    __slots__ = ("order", "src", "static", "target")

    def __init__(self, src: tuple[int, ...], target: tuple[int, ...], order: Order):
        self.src, self.target, self.order, self.static = src, target, order, True

    def shape(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[tuple[int, ...], np.dtype]:
        return self.target, dtype

    def get(self, x: Any) -> Any:
        return x.reshape(self.target, order=self.order)

    def put(self, parent: Any, new: Any) -> Any:
        return new.reshape(self.src, order=self.order)

    def on_shadow(self, s: np.ndarray) -> np.ndarray:
        return s.reshape(self.target, order=self.order)


class DynamicSlice:
    """``a[..., i + c0:i + c1, ...]`` along ``axis`` where the start is traced but the length
    ``size`` is known (and the slice stays inside the axis for every value the start takes):
    a view of static shape read with dynamic_slice and written with dynamic_update_slice."""

    __slots__ = ("axis", "size", "start", "static")

    def __init__(self, axis: int, start: Any, size: int):
        self.axis, self.start, self.size, self.static = axis, start, size, False

    def shape(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[tuple[int, ...], np.dtype]:
        return (*shape[:self.axis], self.size, *shape[self.axis + 1:]), dtype

    # The start is inside the axis for every value it takes: no wrapping of negative starts.
    def get(self, x: Any) -> Any:
        return lax.dynamic_slice_in_dim(x, self.start, self.size, self.axis,
                                        allow_negative_indices=False)

    def put(self, parent: Any, new: Any) -> Any:
        return lax.dynamic_update_slice_in_dim(parent, jnp.asarray(new).astype(parent.dtype),
                                               self.start, self.axis,
                                               allow_negative_indices=False)

    def on_shadow(self, s: np.ndarray) -> np.ndarray:
        view: np.ndarray = s[(slice(None),) * self.axis + (slice(0, self.size),)]
        return view


class Transpose:
    """A permutation of the axes."""

    __slots__ = ("axes", "static")

    def __init__(self, axes: tuple[int, ...]):
        self.axes, self.static = axes, True

    def shape(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[tuple[int, ...], np.dtype]:
        return tuple(shape[a] for a in self.axes), dtype

    def get(self, x: Any) -> Any:
        return x.transpose(self.axes)

    def put(self, parent: Any, new: Any) -> Any:
        return new.transpose(tuple(int(i) for i in np.argsort(self.axes)))

    def on_shadow(self, s: np.ndarray) -> np.ndarray:
        return s.transpose(self.axes)


class Part:
    """The real or imaginary part of a complex array (a writable view in NumPy)."""

    __slots__ = ("imag", "static")

    def __init__(self, imag: bool):
        self.imag, self.static = imag, True

    def shape(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[tuple[int, ...], np.dtype]:
        return shape, np.dtype(np.empty(0, dtype).real.dtype)

    def get(self, x: Any) -> Any:
        return x.imag if self.imag else x.real

    def put(self, parent: Any, new: Any) -> Any:
        return lax.complex(parent.real, new) if self.imag else lax.complex(new, parent.imag)

    def on_shadow(self, s: np.ndarray) -> np.ndarray:
        return s


def view_value(root: Root, ops: tuple[ViewOp, ...]) -> Any:
    """The traced value of a view: the chain applied to the root's current value."""
    value = root.value
    for op in ops:
        value = op.get(value)
    return value


def write(root: Root, ops: tuple[ViewOp, ...], new: Any) -> None:
    """Write the traced value ``new`` (already of the view's shape and dtype) through ``ops``."""
    if not ops:
        root.set_traced(new)
        return
    if len(ops) == 1 and isinstance(ops[0], Index) and not ops[0].static:
        write_window(root, ops[0].idx, new)
        return
    chain = [root.value]
    for op in ops[:-1]:
        chain.append(op.get(chain[-1]))
    for op, parent in zip(reversed(ops), reversed(chain), strict=True):
        new = op.put(parent, new)
    root.set_traced(new)


def _last_write(root: Root) -> tuple[Any, Any, tuple[Any, ...], Any] | None:
    """``root.last_write`` while the root still holds the value it made."""
    last = root.last_write
    return last if last is not None and last[0] is root._value else None


def write_window(root: Root, idx: tuple[Any, ...], new: Any) -> None:
    """``root[idx] = new`` at a traced basic index. Writing again the window just written
    replaces that write (one update of the value before it), so the reads between the two,
    which ``read_element`` takes from that value, all come before the single update: XLA then
    updates a loop-carried array in place instead of copying it (``a[i, j] -= x; a[i, j] /= y``
    would otherwise read the array after updating it)."""
    last = _last_write(root)
    parent = last[1] if last is not None and same_key(last[2], idx) else root.value
    result = set_basic(parent, idx, new)
    root.set_traced(result)
    root.last_write = (result, parent, idx, new)


def read_element(root: Root, key: tuple[Any, ...]) -> Any:
    """``root.value[key]`` for an integer per axis, forwarded from the latest write through a
    traced index when that was an element too: the value written when the indices are the same,
    else the element of the value before that write (see ``write_window``)."""
    last = _last_write(root)
    if last is None:
        return _element(root.value, key)
    _, before, idx, new = last
    if same_key(idx, key):
        return new
    if len(idx) != len(key) or not all(is_traced(i) or isinstance(i, int | np.integer) for i in idx):
        return _element(root.value, key)
    hits = [_same_index(a, b, n) for a, b, n in zip(idx, key, root.shape, strict=True)]
    if any(h is False for h in hits):
        return _element(before, key)
    traced = [h for h in hits if h is not True]
    if not traced:  # the same element, counted from the other end
        return new
    hit = functools.reduce(lax.bitwise_and, traced)
    old = _element(before, key)
    return lax.select(hit, lax.convert_element_type(new, old.dtype), old) if (
        jnp.shape(new) == ()) else jnp.where(hit, new, old)


def _element(x: Any, key: tuple[Any, ...]) -> Any:
    """``x[key]`` (an integer per axis), by ``get_block`` where an index is traced."""
    if any(is_traced(i) for i in key):
        block = get_block(x, key)
        if block is not None:
            return block
    return x[key]


def _same_index(a: Any, b: Any, n: int) -> Any:
    """Whether indices ``a`` and ``b`` of an axis of length ``n`` name the same element: a
    bool when both are static, else a traced one."""
    if not is_traced(a) and not is_traced(b):
        return int(a) % n == int(b) % n
    wrapped: list[Any] = [wrap_index(i, n) if is_traced(i) else int(i) % n for i in (a, b)]
    traced, other = wrapped if is_traced(wrapped[0]) else wrapped[::-1]
    return lax.eq(traced, lax.convert_element_type(other, traced.dtype))


def wrap_index(index: Any, dim: int) -> Any:
    """A traced integer index of an axis of length ``dim``, a negative one counted from the end
    (NumPy's rule); a loop index known inside the axis, as it is. In lax's primitives:
    jax.numpy's comparison, addition and ``where`` are each a jitted function, a costly call
    while tracing, and a rolled loop's body makes many."""
    if affine.within(index, 0, dim - 1):  # a loop index inside the axis for all its values
        return index
    zero, size = np.zeros((), index.dtype), np.asarray(dim, index.dtype)
    return lax.select(lax.lt(index, zero), lax.add(index, size), index)


def get_block(x: Any, idx: tuple[Any, ...]) -> Any | None:
    """``x[idx]`` for basic indices with a traced integer among them, as one dynamic_slice of
    the block (an integer index's axis dropped), in lax's primitives (see ``wrap_index``);
    None when ``idx`` is not such an index (a step, ``None``): jax.numpy's indexing then."""
    shape = tuple(jnp.shape(x))
    block = _block(idx, shape)
    if block is None:
        return None
    starts, sizes, dropped = block
    out = lax.dynamic_slice(x, _one_index_type(starts), sizes, allow_negative_indices=False)
    return lax.reshape(out, tuple(n for k, n in enumerate(sizes) if k not in dropped)) if (
        dropped) else out


def _one_index_type(starts: list[Any]) -> list[Any]:
    """The start indices of a dynamic slice in one integer type (XLA's rule): the widest of
    the traced ones."""
    traced = [i for i in starts if is_traced(i)]
    kind = np.dtype(np.int64) if any(i.dtype == np.int64 for i in traced) else (
        np.dtype(traced[0].dtype) if traced else np.dtype(np.int32))
    return [lax.convert_element_type(i, kind) if is_traced(i) else np.asarray(i, kind)
            for i in starts]


def same_key(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """The same basic index: entry by entry ``same_entry``."""
    return len(a) == len(b) and all(same_entry(x, y) for x, y in zip(a, b, strict=True))


def same_entry(a: Any, b: Any) -> bool:
    """The same index entry: the same object, or equal static ones (never comparing traced
    values, which would need their runtime value)."""
    if a is b:
        return True
    if isinstance(a, slice) and isinstance(b, slice):
        return all(same_entry(x, y) for x, y in ((a.start, b.start), (a.stop, b.stop),
                                                 (a.step, b.step)))
    if type(a) is not type(b) or not isinstance(a, int | np.integer):
        return False
    return bool(a == b)


def write_concrete(root: Root, ops: tuple[ViewOp, ...], new: Any, key: Any = Ellipsis) -> bool:
    """``view[key] = new`` with NumPy itself when the view and ``new`` are concrete data; False
    when the write cannot stay concrete."""
    if root.concrete is None or not all(op.static for op in ops):
        return False
    target = root.concrete
    for op in ops:
        target = op.get(target)
    if not isinstance(target, np.ndarray) or not np.may_share_memory(target, root.concrete):
        return False
    root.will_touch()
    target[key] = new
    root.touched()
    return True


def set_basic(parent: Any, idx: tuple[Any, ...], new: Any) -> Any:
    """``parent`` with the basic index ``idx`` set to ``new`` (of the indexed shape): a
    dynamic_update_slice for a block, a scatter otherwise."""
    block = _block(idx, tuple(parent.shape))
    if block is None:
        return parent.at[idx].set(new)
    starts, sizes, _ = block
    new = jnp.reshape(new, sizes)
    if any(is_traced(i) for i in starts):
        # A row at a traced index: written in place; out of range, the write is dropped (as
        # a scatter drops it) by writing back what the clamped window already holds. In lax's
        # primitives (see wrap_index); the starts are wrapped already. A loop index known
        # inside its axis needs no check.
        checks = [
            lax.bitwise_and(lax.ge(i, np.zeros((), i.dtype)), lax.lt(i, np.asarray(n, i.dtype)))
            for i, n in zip(starts, parent.shape, strict=True)
            if is_traced(i) and not affine.within(i, 0, n - 1)]
        starts = _one_index_type(starts)
        if not checks:
            return lax.dynamic_update_slice(parent, lax.convert_element_type(new, parent.dtype),
                                            starts, allow_negative_indices=False)
        inside = functools.reduce(lax.bitwise_and, checks)
        window = lax.dynamic_slice(parent, starts, sizes, allow_negative_indices=False)
        new = lax.select(inside, lax.convert_element_type(new, parent.dtype), window)
        return lax.dynamic_update_slice(parent, new, starts, allow_negative_indices=False)
    return lax.dynamic_update_slice(parent, new, starts)


def _block(idx: tuple[Any, ...],
           shape: tuple[int, ...]) -> tuple[list[Any], list[int], tuple[int, ...]] | None:
    """(starts, sizes, the axes of integer indices) when ``idx`` is ints (static, or traced
    integer scalars: a loop's row ``A[i] = v``) and unit-step slices; else None. A traced index
    wraps as NumPy's negative indices do; one past the bounds (an IndexError in NumPy) is
    clamped, as XLA does."""
    ellipses = [k for k, i in enumerate(idx) if i is Ellipsis]  # `in` would compare tracers
    if len(ellipses) > 1 or len(idx) - len(ellipses) > len(shape) or any(
            i is None or (is_traced(i) and not _traced_int(i)) or (isinstance(i, slice) and any(
                is_traced(b) for b in (i.start, i.stop, i.step))) for i in idx):
        return None  # jax.numpy's indexing: its result, or its error
    if ellipses:
        at = ellipses[0]
        idx = idx[:at] + (slice(None),) * (len(shape) - len(idx) + 1) + idx[at + 1:]
    idx = idx + (slice(None),) * (len(shape) - len(idx))
    starts: list[Any] = []
    sizes: list[int] = []
    for item, dim in zip(idx, shape, strict=True):
        if isinstance(item, slice):
            start, stop, step = item.indices(dim)
            if step != 1:
                return None
            starts.append(start)
            sizes.append(max(0, stop - start))
        elif is_traced(item):
            starts.append(wrap_index(item, dim))
            sizes.append(1)
        else:
            i = int(item)
            if not -dim <= i < dim:
                raise IndexError(f"index {i} is out of bounds for axis {len(starts)} with size {dim}")
            starts.append(i % dim)
            sizes.append(1)
    dropped = tuple(k for k, item in enumerate(idx) if not isinstance(item, slice))
    return starts, sizes, dropped


def _traced_int(i: Any) -> bool:
    """A traced integer scalar (what a rolled loop's index is)."""
    return jnp.ndim(i) == 0 and jnp.issubdtype(jnp.result_type(i), jnp.integer)


def fit(new: Any, shape: tuple[int, ...]) -> Any:
    """``new`` broadcast to ``shape`` the way NumPy assignment does (leading 1s dropped)."""
    while new.ndim > len(shape) and new.shape[0] == 1:
        new = new[0]
    have = tuple(new.shape)
    if have != tuple(shape):
        if len(have) > len(shape) or any(h not in (1, n) for h, n in zip(
                have[::-1], shape[::-1], strict=False)):
            raise ValueError(f"could not broadcast input array from shape {have} into shape "
                             f"{tuple(shape)}: the value must broadcast to the shape it is "
                             "assigned to (length-1 axes of the value stretch)")
        new = jnp.broadcast_to(new, shape)
    return new


def write_where(root: Root, ops: tuple[ViewOp, ...], new: Any, where: Any) -> bool:
    """Write ``new`` into the view ``ops`` of ``root`` only where ``where`` (both of the view's
    shape) is True, by a scatter whose other elements land out of bounds and are dropped. The
    array is not read, so a loop-carried array written twice (a column, then a row) is updated
    in place: no read of it follows an update for XLA to fuse with the update and copy around.

    A scatter writes element by element: only for a view no larger than one section of the
    array across its shortest axis (a row, a column), where that costs far less than the copy
    it avoids. False (nothing written) for a larger view, or one of a complex array's real or
    imaginary part; False too while a loop body is traced for batching (``context.window_writes``),
    whose check reads the window form's slot, not a scatter's."""
    shape, size = root.shape, math.prod(root.shape)
    if any(isinstance(op, Part) for op in ops) or math.prod(where.shape) * min(shape) > size:
        return False
    if context.window_write():
        return False
    kind = jnp.int32 if size < 2**31 else jnp.int64
    coords = [lax.broadcasted_iota(kind, shape, axis) for axis in range(len(shape))]
    for op in ops:
        if isinstance(op, Index):
            inside = _inside(op.idx, tuple(coords[0].shape))
            if inside is not None:
                where = lax.bitwise_and(where, lax.broadcast(inside, where.shape))
        coords = [op.get(c) for c in coords]
    # Out of bounds: dropped. In lax's primitives (see wrap_index).
    coords[0] = lax.select(where, coords[0], lax.full(coords[0].shape, shape[0], kind))
    new = jnp.asarray(new)
    if new.dtype != root.dtype:
        new = lax.convert_element_type(new, root.dtype)
    if new.shape != coords[0].shape:
        new = jnp.broadcast_to(new, coords[0].shape)
    # One scatter of points, its indices the coordinates side by side: no negative index to
    # wrap (jax.numpy's .at[].set would add three ops per axis for that).
    rank = coords[0].ndim
    points = lax.concatenate([lax.broadcast_in_dim(c, (*c.shape, 1), tuple(range(rank)))
                              for c in coords], rank)
    axes = tuple(range(len(coords)))
    root.set_traced(lax.scatter(
        root.value, points, new,
        lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=axes,
                                    scatter_dims_to_operand_dims=axes),
        indices_are_sorted=False, unique_indices=False,
        mode=lax.GatherScatterMode.FILL_OR_DROP))
    return True


def _inside(idx: tuple[Any, ...], shape: tuple[int, ...]) -> Any | None:
    """Whether each traced integer of the basic index ``idx`` lies in its axis of ``shape``
    (NumPy's negative indices count): a write outside is dropped, as ``set_basic`` drops it.
    None when every one is a loop index known inside its axis (no check needed)."""
    checks = []
    axis = 0
    for i in idx:
        if i is Ellipsis:
            axis += len(shape) - sum(1 for j in idx if j is not None and j is not Ellipsis)
        elif i is not None:
            if is_traced(i) and not affine.within(i, 0, shape[axis] - 1):
                at = jnp.asarray(i)
                checks += [lax.ge(at, np.asarray(-shape[axis], at.dtype)),
                           lax.lt(at, np.asarray(shape[axis], at.dtype))]
            axis += 1
    return functools.reduce(lax.bitwise_and, checks) if checks else None
