"""``ProxyArray``: what a NumPy kernel receives in NumPy mode, an ndarray look-alike backed by a
JAX tracer. NumPy's protocols (``__array_ufunc__``, ``__array_function__``) route every NumPy call
on it to a jax.numpy equivalent; in-place updates rebind the traced value (see storage)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import jax.numpy as jnp
import numpy as np

from reactant_lab import backend
from reactant_lab.trace.numpy_mode import context, errors, journal
from reactant_lab.trace.numpy_mode.operators import install_operators
from reactant_lab.trace.numpy_mode.storage import (
    IMMUTABLE,
    SCALAR,
    Casting,
    Index,
    Order,
    OrderACF,
    OrderKACF,
    Part,
    Reshape,
    Root,
    ViewOp,
    fit,
    view_value,
    write,
    write_concrete,
)

if TYPE_CHECKING:
    from reactant_lab.trace.numpy_mode.masks import Selection

_T = TypeVar("_T")
_CONCRETE_SCALARS = (bool, int, float, complex, np.generic, np.ndarray)


class ProxyArray:
    """A traced array with NumPy's API; a view when it has view ops over its root."""

    __slots__ = ("_cache", "_dtype", "_ops", "_root", "_shape", "mask")
    __array_priority__ = 1000.0
    __hash__ = None  # type: ignore[assignment]  # arrays compare elementwise, like ndarray

    def __init__(self, root: Root, ops: tuple[ViewOp, ...] = (),
                 shape: tuple[int, ...] | None = None, dtype: Any = None,
                 mask: Selection | None = None):
        self._root, self._ops = root, ops
        self._shape = tuple(shape) if shape is not None else root.shape
        self._dtype = np.dtype(dtype) if dtype is not None else root.dtype
        self._cache: tuple[tuple[int, int], Any] | None = None
        self.mask = mask
        """For ``a[mask]`` with a traced mask: the selection (see masks); else None."""

    # ------------------------------------------------------------------ values and writes
    @property
    def value(self) -> Any:
        """The traced JAX value (for a view: derived from its root's current value)."""
        if not self._ops:
            return self._root.value
        stamp = (self._root.epoch, journal.generation())
        if self._cache is None or self._cache[0] != stamp:
            self._cache = (stamp, view_value(self._root, self._ops))
        return self._cache[1]

    @property
    def concrete(self) -> np.ndarray | None:
        """Concrete NumPy data (a view into its root's) while no traced value is in it."""
        data = self._root.concrete
        if data is None or self.mask is not None:
            return None
        for op in self._ops:
            if not op.static:
                return None
            data = op.get(data)
        return data

    @property
    def root(self) -> Root:
        """The storage this array (or view) lives in."""
        return self._root

    @property
    def is_scalar(self) -> bool:
        """Whether this stands for a NumPy scalar (immutable), not an array: what NumPy's
        reductions, ``a[i, j]`` and arithmetic on scalars give."""
        return self._root.frozen == SCALAR and not self._ops

    def shadow(self) -> np.ndarray:
        """Bytes laid out like this array in memory, for NumPy to judge view-or-copy and the
        layout of results computed from it."""
        s = self._root.shadow()
        for op in self._ops:
            s = op.on_shadow(s)
        return s

    def view_of(self, op: ViewOp) -> ProxyArray:
        """A view of this array through one more view op (of a NumPy scalar, which has no
        memory to view: a new scalar, or a new array when not 0-d, as NumPy gives)."""
        shape, dtype = op.shape(self._shape, self._dtype)
        if self.is_scalar:
            return new_result(op.get(self.value))
        return ProxyArray(self._root, (*self._ops, op), shape, dtype)

    def check_writable(self) -> None:
        """Raise NumPy's error (or ours, for immutable arguments) when this cannot be written."""
        frozen = self._root.frozen
        if frozen is None:
            return
        if frozen in IMMUTABLE:
            raise errors.immutable(self._root.arg, frozen, self._dtype)
        raise ValueError(f"assignment destination is read-only ({frozen})")

    def write(self, new: Any, key: Any = Ellipsis) -> None:
        """``self[key] = new`` for a basic ``key``, with NumPy's (unsafe) assignment cast."""
        self.check_writable()
        data = concrete_of(new)
        if data is not None and write_concrete(self._root, self._ops, data, key):
            return
        target = self if key is Ellipsis else self.view_of(Index(key))
        value = fit(jnp.asarray(unwrap(new)).astype(target.dtype), target._shape)
        write(self._root, target._ops, value)

    # ------------------------------------------------------------------ array attributes
    @property
    def shape(self) -> tuple[int, ...]:
        if self.mask is not None:
            raise errors.dynamic_shape("The shape of a[mask] was asked for")
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def T(self) -> ProxyArray:
        return views.transpose(self)

    @property
    def mT(self) -> ProxyArray:
        return views.swapaxes(self, -1, -2)

    @property
    def real(self) -> ProxyArray:
        return self.view_of(Part(imag=False)) if self._dtype.kind == "c" else self

    @real.setter
    def real(self, value: Any) -> None:
        self.real.write(value)

    @property
    def imag(self) -> ProxyArray | np.generic:
        if self._dtype.kind == "c":
            return self.view_of(Part(imag=True))
        if self.is_scalar:
            zero: np.generic = self._dtype.type(0)
            return zero
        return ProxyArray(Root(concrete=np.zeros(self.shape, self._dtype),
                               frozen="the imaginary part of a real array"))

    @imag.setter
    def imag(self, value: Any) -> None:
        part = self.imag
        if not isinstance(part, ProxyArray):  # a real NumPy scalar's: a new 0, as in NumPy
            raise AttributeError("attribute 'imag' of 'numpy.generic' objects is not writable")
        part.write(value)

    @property
    def flat(self) -> FlatIter:
        return FlatIter(self)

    @property
    def at(self) -> Any:
        # an ndarray has no .at: code that uses it is JAX code, written for JAX arrays
        raise errors.JaxCodeError("x.at[...] is JAX's functional update; this is JAX code")

    # ------------------------------------------------------------------ NumPy protocols
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return ufuncs.apply(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> Any:
        return functions.apply(func, args, kwargs)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        data = self.concrete
        if data is None:
            raise errors.array_conversion(repr(self))
        return np.array(data, dtype=dtype, copy=True)

    def __jax_array__(self) -> Any:
        return jax_value(self)

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, key: Any) -> Any:
        return indexing.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        indexing.setitem(self, key, value)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    # ------------------------------------------------------------------ Python values
    def _python(self, kind: Callable[[Any], _T]) -> _T:
        data = self.concrete
        return kind(data) if data is not None else kind(self.value)  # JAX explains why not

    def __bool__(self) -> bool:
        return self._python(bool)

    def __int__(self) -> int:
        return self._python(int)

    def __float__(self) -> float:
        return self._python(float)

    def __complex__(self) -> complex:
        return self._python(complex)

    def __index__(self) -> int:
        data = self.concrete
        return data.__index__() if data is not None else self.value.__index__()

    def item(self, *args: Any) -> Any:
        data = self.concrete
        if data is None:
            raise errors.concrete_value_needed(context.current() or "the kernel", "x.item()")
        return data.item(*args)

    def tolist(self) -> Any:
        data = self.concrete
        if data is None:
            raise errors.concrete_value_needed(context.current() or "the kernel", "x.tolist()")
        return data.tolist()

    def __repr__(self) -> str:
        kind = "concrete" if self.concrete is not None else "traced"
        where = f", {self._root.arg}" if self._root.arg else ""
        return f"ProxyArray({kind} {self._dtype.name}{list(self._shape)}{where})"

    __str__ = __repr__

    def __copy__(self) -> Any:
        return np.copy(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return np.copy(self)

    # ------------------------------------------------------------------ methods with own signatures
    def reshape(self, *shape: Any, order: OrderACF = "C", copy: bool | None = None) -> Any:
        target = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape
        return np.reshape(self, target, order=order, copy=copy)

    def transpose(self, *axes: Any) -> Any:
        perm = axes[0] if len(axes) == 1 and isinstance(axes[0], tuple | list | None) else axes
        return np.transpose(self, perm or None)

    def astype(self, dtype: Any, order: OrderKACF = "K", casting: Casting = "unsafe",
               subok: bool = True, copy: bool = True) -> Any:
        dtype = np.dtype(dtype)
        if dtype == self._dtype and not copy:
            return self
        if not np.can_cast(self._dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {self._dtype!r} to {dtype!r} "
                            f"according to the rule {casting!r}")
        data = self.concrete
        if data is not None:
            return concrete_array(data.astype(dtype, order=order))
        if self.is_scalar:
            return new_scalar(self.value.astype(dtype))
        made = new_array(self.value.astype(dtype))
        made.root.follow(lambda: np.empty_like(self.shadow(), order=order))
        return made

    def copy(self, order: OrderKACF = "C") -> Any:
        return self if self.is_scalar else np.copy(self, order=order)

    def flatten(self, order: OrderKACF = "C") -> Any:
        return np.copy(np.ravel(self, order=order))

    def fill(self, value: Any) -> None:
        self.write(value)

    def sort(self, axis: int = -1, kind: Any = None, order: Any = None) -> None:
        self.write(np.sort(self, axis=axis, kind=kind, order=order))

    def view(self, dtype: Any = None, type: Any = None) -> Any:
        if (dtype is not None and np.dtype(dtype) != self._dtype) or type is not None:
            raise errors.unsupported("ndarray.view", " (only views of the same dtype)")
        return self.view_of(Index((Ellipsis,)))

    def __round__(self, ndigits: int | None = None) -> Any:
        """``round(x)`` / ``round(x, n)`` as on the NumPy scalar or Python number this stands
        for: a traced Python int, rounded half to even (for a NaN or an infinity, where Python
        raises, the int XLA's conversion gives), for ``round(x)``; ``np.round(x, n)`` of
        ``x``'s type for ``round(x, n)``. An array has no ``round()`` in NumPy: TypeError."""
        if not (self.is_scalar or self._root.frozen == IMMUTABLE[2]) or self._dtype.kind not in (
                "iuf") or self._dtype.name == "bfloat16":
            kind = "numpy.ndarray" if not self.is_scalar else f"numpy.{self._dtype.name}"
            raise TypeError(f"type {kind} doesn't define __round__ method")
        data = self.concrete
        if data is not None:
            number: Any = data[()] if self.is_scalar else data.item()
            return round(number, ndigits)
        if ndigits is not None:
            return np.round(self, ndigits)
        value = self.value if self._dtype.kind in "iu" else jnp.round(self.value)
        return ProxyArray(Root(value.astype(jnp.int64), frozen=IMMUTABLE[2], weak=True))


class FlatIter:
    """``a.flat``: a C-order 1-D view that reads and writes through to ``a``."""

    def __init__(self, base: ProxyArray):
        self._flat = base.view_of(Reshape(base.shape, (base.size,), "C"))

    def __getitem__(self, key: Any) -> Any:
        return self._flat[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._flat[key] = value

    def __iter__(self) -> Iterator[Any]:
        return iter(self._flat)

    def __len__(self) -> int:
        return len(self._flat)


def unwrap(x: Any) -> Any:
    """The traced value of a proxy; anything else as it is."""
    if isinstance(x, ProxyArray):
        if x.mask is not None:
            raise errors.dynamic_shape(f"a[mask] was used as {x!r}")
        return x.value
    return x


def concrete_of(x: Any) -> Any:
    """Concrete data for ``x`` (a concrete proxy, a NumPy array or scalar, a Python number), or
    None when it is traced."""
    if isinstance(x, ProxyArray):
        return x.concrete
    return x if isinstance(x, _CONCRETE_SCALARS) else None


def new_array(value: Any) -> ProxyArray:
    """A new writable array the kernel computed."""
    return ProxyArray(Root(value))


def new_scalar(value: Any) -> ProxyArray:
    """A new NumPy scalar the kernel computed (0-d, immutable)."""
    return ProxyArray(Root(value, frozen=SCALAR))


def new_result(value: Any) -> ProxyArray:
    """A computed result as NumPy's ufuncs and reductions give it: a NumPy scalar when 0-d,
    else a new array."""
    return new_scalar(value) if jnp.ndim(value) == 0 else new_array(value)


def stand_in(p: ProxyArray) -> tuple[str | None, str | None, bool, Order]:
    """What a proxy for ``p``'s value in another traced function must keep of ``p``: who may
    write to it, the argument it stands for, its promotion, and its memory order (a view's
    value crosses as a new C-order array)."""
    root = p.root
    whole = p.value is root.value  # the argument itself, not a view of it
    return (root.frozen, root.arg, root.weak, root.order if whole else "C")


def proxy_for(value: Any, kept: tuple[str | None, str | None, bool, Order]) -> ProxyArray:
    """A proxy of the traced ``value`` that behaves as the proxy ``stand_in`` described."""
    frozen, arg, weak, order = kept
    root = Root(value, frozen=frozen, arg=arg, weak=weak)
    root.order = order
    return ProxyArray(root)


def concrete_array(data: np.ndarray, frozen: str | None = None) -> ProxyArray:
    """A new array of concrete data the kernel made from static values."""
    return ProxyArray(Root(concrete=np.asarray(data), frozen=frozen))


def jax_value(a: ProxyArray) -> Any:
    """What a JAX function the kernel hands ``a`` to gets: its traced value as it is now (JAX
    computes a new value from it; an in-place update of ``a`` afterwards does not reach that
    value, as NumPy's does not reach an array JAX copied). Noted, so that a function that turns
    out to be JAX code throughout can be traced in JAX mode (``context.handoff``)."""
    if a.mask is not None:
        raise errors.dynamic_shape("a[mask] was handed to a JAX function")
    context.handed_to_jax()
    return a.value


install_operators(ProxyArray)
JAX_TAKES_PROXIES = backend.register_array_like(ProxyArray, jax_value)
"""Whether JAX's functions take NumPy mode's arrays (as their traced values); else handing one
to JAX raises, and the kernel is traced in JAX mode (or refused, see ``trace``)."""

# The dispatch modules import ProxyArray; they are looked up when a method runs.
from reactant_lab.trace.numpy_mode import functions, indexing, ufuncs, views  # noqa: E402
