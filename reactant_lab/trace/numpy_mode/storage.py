"""Storage behind proxy arrays: a root holds one array's value; a view re-derives its own from the
root through a chain of view ops and writes back through the same chain.

This is Reactant's ``set_mlir_data!`` (an in-place update rebinds the traced value) and
``get_ancestor_and_indices`` (a view knows its parent and index) for NumPy semantics. A root made
by the kernel from static values (``np.zeros((n, n))``, ``np.arange(n)``) keeps concrete NumPy data
until a traced value is written into it, so Python can still loop over it or index with it.
"""

from __future__ import annotations

import traceback
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from reactant_lab.trace.paths import element_strides
from reactant_lab.trace.user_errors import calling_user_frame

_ANY = np.empty((), np.uint8)  # broadcast to any shape without memory: shapes of basic indexing


def is_traced(x: Any) -> bool:
    """True for a JAX tracer (a value only known when the compiled code runs)."""
    return isinstance(x, jax.core.Tracer)


def to_jax(concrete: np.ndarray) -> jax.Array:
    """A traced constant for concrete data; a uniform array becomes a broadcast scalar, not a
    dense constant in the module."""
    flat = concrete.reshape(-1)
    if flat.size > 1 and (flat == flat[0]).all():
        return jnp.full(concrete.shape, flat[0], concrete.dtype)
    # A copy: JAX keeps a reference to the buffer, which NumPy may update in place later.
    return jnp.asarray(concrete.copy())


class Root:
    """One array's storage: a traced value, or concrete NumPy data, and who may write to it."""

    __slots__ = ("_order", "_shadow", "_value", "arg", "concrete", "first_write", "frozen",
                 "layout_read", "strides", "version", "weak")

    def __init__(self, value: Any = None, concrete: np.ndarray | None = None, *,
                 frozen: str | None = None, arg: str | None = None, weak: bool = False,
                 memory: np.ndarray | None = None):
        if concrete is not None and not (concrete.flags.c_contiguous or
                                         concrete.flags.f_contiguous):
            concrete = np.ascontiguousarray(concrete)
        self._value = value
        self.concrete = concrete
        """Concrete data while no traced value has been written in (kernel-made arrays only)."""
        self.frozen = frozen
        """Why it cannot be written to (None when it can)."""
        self.arg = arg
        """Path of the argument it stands for, or None for an array the kernel made."""
        self.weak = weak
        """A traced Python scalar: promotes like one."""
        laid_out = memory if memory is not None else concrete
        self._order = "F" if laid_out is not None and laid_out.flags.f_contiguous and not (
            laid_out.flags.c_contiguous) else "C"
        self.strides = None if memory is None or memory.flags.c_contiguous or (
            memory.flags.f_contiguous) else element_strides(memory)
        """Element strides of an argument that is neither C- nor F-contiguous (a strided or
        reversed view), else None: NumPy's view-or-copy rule depends on them."""
        self.layout_read = False
        """Whether tracing looked at the memory layout (order, strides): the trace then holds
        only for arguments laid out the same way."""
        self.version = 0
        """Bumped on every write; views compare it to know their cached value is stale."""
        self.first_write: traceback.FrameSummary | None = None
        """Where the user's code first updated this argument in place (arguments only)."""
        self._shadow: np.ndarray | None = None

    @property
    def order(self) -> str:
        """'F' for a Fortran-contiguous array, else 'C' (what order='A' / 'K' resolve to)."""
        self.layout_read = True
        return self._order

    @order.setter
    def order(self, order: str) -> None:
        self._order = order

    @property
    def value(self) -> Any:
        """The traced value (made from the concrete data on first use)."""
        if self._value is None:
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
        self._value, self.concrete = new, None
        self.version += 1
        if self.arg is not None and self.first_write is None:
            self.first_write = calling_user_frame()

    def touched(self) -> None:
        """The concrete data was updated in place by NumPy."""
        self._value = None
        self.version += 1

    def shadow(self) -> np.ndarray:
        """An uninitialized byte array with this array's shape and memory layout: NumPy itself
        then tells which reshapes of a view are views and which are copies."""
        self.layout_read = True
        if self._shadow is None:
            self._shadow = (np.empty(self.shape, np.uint8, order=self._order)
                            if self.strides is None else strided_shadow(self.shape, self.strides))
        return self._shadow


def strided_shadow(shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """A byte array of ``shape`` whose strides (in elements, negative allowed) are ``strides``."""
    if 0 in shape:
        return np.empty(shape, np.uint8)
    low = sum(s * (n - 1) for s, n in zip(strides, shape, strict=True) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(strides, shape, strict=True) if s > 0)
    buffer = np.empty(high - low + 1, np.uint8)
    return np.lib.stride_tricks.as_strided(buffer[-low:], shape, strides)


class Index:
    """Basic indexing (ints, slices, None, Ellipsis; traced integer scalars allowed)."""

    __slots__ = ("idx", "static")

    def __init__(self, idx: tuple):
        self.idx = idx
        self.static = not any(is_traced(i) for i in idx)

    def _probe(self) -> tuple:
        return tuple(0 if is_traced(i) else i for i in self.idx)

    def shape(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[tuple[int, ...], np.dtype]:
        return np.broadcast_to(_ANY, shape)[self._probe()].shape, dtype

    def get(self, x: Any) -> Any:
        return x[self.idx]

    def put(self, parent: Any, new: Any) -> Any:
        return set_basic(parent, self.idx, new)

    def on_shadow(self, s: np.ndarray) -> np.ndarray:
        return s[self._probe()]


class Reshape:
    """A reshape that NumPy makes a view."""

    __slots__ = ("order", "src", "static", "target")

    def __init__(self, src: tuple[int, ...], target: tuple[int, ...], order: str):
        self.src, self.target, self.order, self.static = src, target, order, True

    def shape(self, shape, dtype):
        return self.target, dtype

    def get(self, x):
        return x.reshape(self.target, order=self.order)

    def put(self, parent, new):
        return new.reshape(self.src, order=self.order)

    def on_shadow(self, s):
        return s.reshape(self.target, order=self.order)


class Transpose:
    """A permutation of the axes."""

    __slots__ = ("axes", "static")

    def __init__(self, axes: tuple[int, ...]):
        self.axes, self.static = axes, True

    def shape(self, shape, dtype):
        return tuple(shape[a] for a in self.axes), dtype

    def get(self, x):
        return x.transpose(self.axes)

    def put(self, parent, new):
        return new.transpose(tuple(int(i) for i in np.argsort(self.axes)))

    def on_shadow(self, s):
        return s.transpose(self.axes)


class Part:
    """The real or imaginary part of a complex array (a writable view in NumPy)."""

    __slots__ = ("imag", "static")

    def __init__(self, imag: bool):
        self.imag, self.static = imag, True

    def shape(self, shape, dtype):
        return shape, np.dtype(np.empty(0, dtype).real.dtype)

    def get(self, x):
        return x.imag if self.imag else x.real

    def put(self, parent, new):
        return lax.complex(parent.real, new) if self.imag else lax.complex(new, parent.imag)

    def on_shadow(self, s):
        return s


def view_value(root: Root, ops: tuple) -> Any:
    """The traced value of a view: the chain applied to the root's current value."""
    value = root.value
    for op in ops:
        value = op.get(value)
    return value


def write(root: Root, ops: tuple, new: Any) -> None:
    """Write the traced value ``new`` (already of the view's shape and dtype) through ``ops``."""
    if not ops:
        root.set_traced(new)
        return
    chain = [root.value]
    for op in ops[:-1]:
        chain.append(op.get(chain[-1]))
    for op, parent in zip(reversed(ops), reversed(chain), strict=True):
        new = op.put(parent, new)
    root.set_traced(new)


def write_concrete(root: Root, ops: tuple, new: Any, key: Any = Ellipsis) -> bool:
    """``view[key] = new`` with NumPy itself when the view and ``new`` are concrete data; False
    when the write cannot stay concrete."""
    if root.concrete is None or not all(op.static for op in ops):
        return False
    target = root.concrete
    for op in ops:
        target = op.get(target)
    if not isinstance(target, np.ndarray) or not np.may_share_memory(target, root.concrete):
        return False
    target[key] = new
    root.touched()
    return True


def set_basic(parent: Any, idx: tuple, new: Any) -> Any:
    """``parent`` with the basic index ``idx`` set to ``new`` (of the indexed shape): a
    dynamic_update_slice for a block, a scatter otherwise."""
    block = _block(idx, tuple(parent.shape))
    if block is None:
        return parent.at[idx].set(new)
    starts, sizes = block
    return lax.dynamic_update_slice(parent, jnp.reshape(new, sizes), starts)


def _block(idx: tuple, shape: tuple[int, ...]) -> tuple[list[int], list[int]] | None:
    """(starts, sizes) when ``idx`` is static ints and unit-step slices; else None."""
    if any(i is None or is_traced(i) for i in idx) or sum(i is Ellipsis for i in idx) > 1:
        return None
    if Ellipsis in idx:
        at = idx.index(Ellipsis)
        idx = idx[:at] + (slice(None),) * (len(shape) - len(idx) + 1) + idx[at + 1:]
    idx = idx + (slice(None),) * (len(shape) - len(idx))
    starts, sizes = [], []
    for item, dim in zip(idx, shape, strict=True):
        if isinstance(item, slice):
            start, stop, step = item.indices(dim)
            if step != 1:
                return None
            starts.append(start)
            sizes.append(max(0, stop - start))
        else:
            i = int(item)
            if not -dim <= i < dim:
                raise IndexError(f"index {i} is out of bounds for axis {len(starts)} with size {dim}")
            starts.append(i % dim)
            sizes.append(1)
    return starts, sizes


def fit(new: Any, shape: tuple[int, ...]) -> Any:
    """``new`` broadcast to ``shape`` the way NumPy assignment does (leading 1s dropped)."""
    while new.ndim > len(shape) and new.shape[0] == 1:
        new = new[0]
    if tuple(new.shape) != tuple(shape):
        if new.ndim > len(shape):
            raise ValueError(f"could not broadcast input array from shape {tuple(new.shape)} "
                             f"into shape {tuple(shape)}")
        new = jnp.broadcast_to(new, shape)
    return new
