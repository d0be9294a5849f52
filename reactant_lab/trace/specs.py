"""The values tracing hands on: argument / result specs with paths, and the call layout."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np


@dataclass(frozen=True)
class ArgSpec:
    """One linear (traced) argument of the module, in flattening order."""

    path: str
    """Where the leaf sits in the call, e.g. ``args[0]['w']`` or ``kwargs['bias']``."""
    shape: tuple[int, ...]
    """Its shape."""
    dtype: np.dtype
    """Its dtype as traced (64-bit stays 64-bit)."""
    index: int
    """Block-argument index of ``@main`` (``%argN``)."""
    weak_type: bool = False
    """True for a traced Python scalar (``trace_scalars=True``): it promotes like a Python number."""
    sharding: str | None = None
    """How it is laid out over a mesh of devices, e.g. ``mesh['data'=8] P('data', None)``
    (a JAX array's NamedSharding, or ``in_shardings=``); None when the call is not sharded."""

    def __str__(self) -> str:
        where = f" {self.sharding}" if self.sharding else ""
        return f"%arg{self.index}: {self.path} {_type_str(self.shape, self.dtype)}{where}"


@dataclass(frozen=True)
class SkippedArg:
    """A leaf of the arguments that is not traced: its value is baked into the trace."""

    path: str
    """Where the leaf sits in the call."""
    value_repr: str
    """``repr`` of the value that was baked in (shortened when long)."""

    def __str__(self) -> str:
        return f"{self.path} = {self.value_repr}"


@dataclass(frozen=True)
class ResultSpec:
    """One array leaf of the result."""

    path: str
    """Where the leaf sits in the result, e.g. ``result[1]['loss']``."""
    shape: tuple[int, ...]
    """Its shape."""
    dtype: np.dtype
    """Its dtype."""
    index: int | None
    """Result index of ``@main``; None when the result is not computed by the module."""
    preserved_from: str | None = None
    """Path of the argument this result is (returned unchanged) or is a view of, if any."""
    view: bool = False
    """True when the result is a view of that argument (NumPy mode), not the argument itself."""
    constant: bool = False
    """True when NumPy mode computed the result while tracing, from constants alone (no argument
    reaches it): the module does not compute it, and each call hands back a new copy."""

    def __str__(self) -> str:
        kind = "view" if self.view else "alias"
        where = f"{kind} of {self.preserved_from}" if self.preserved_from else (
            "constant, computed while tracing" if self.constant else f"#{self.index}")
        return f"{self.path} {_type_str(self.shape, self.dtype)} ({where})"


@dataclass(frozen=True)
class Static:
    """A static leaf of a call layout: the value itself."""

    value: Any
    """The baked-in value."""


@dataclass(frozen=True)
class Computed:
    """A result leaf computed by the module."""

    index: int
    """Result index of ``@main``."""
    scalar: bool = False
    """Handed back as a NumPy scalar, not a 0-d array, when results are NumPy values (NumPy
    gives scalars for reductions and ``a[i, j]``, 0-d arrays for ``a[i, ...]``)."""


@dataclass(frozen=True)
class Preserved:
    """A result leaf that is one of the linear arguments, returned unchanged."""

    arg: int
    """Linear-argument index."""


@dataclass(frozen=True)
class UpdatedArg:
    """A result leaf that is an argument the function updated in place (NumPy mode): the call
    hands back the caller's own array, after the new value is written into it."""

    arg: int
    """Linear-argument index."""


@dataclass(frozen=True)
class ArgView:
    """A result leaf that is a view of a NumPy argument (a basic slice, a reshape NumPy makes a
    view, a transpose, ``.real``): the call hands back that view of the caller's own array,
    after any in-place update is written into it, as NumPy returns it."""

    arg: int
    """Linear-argument index."""
    ops: tuple[Any, ...]
    """The view ops, applied in order to the caller's array (each has ``get``)."""


@dataclass(frozen=True)
class Forwarded:
    """A result leaf the passes reduced to a linear argument returned unchanged (Reactant's
    preserved arguments, decided after the pipeline): the executable does not compute it; the
    call hands back the argument itself (JAX callers: it is immutable) or a new host copy of it
    (NumPy callers, to whom NumPy gives a new array)."""

    arg: int
    """Linear-argument index."""
    scalar: bool = False
    """As ``Computed.scalar``."""


@dataclass(frozen=True, eq=False)
class Constant:
    """A result leaf NumPy mode computed while tracing, from constants alone (no argument reaches
    it, e.g. ``np.cumprod(np.ones(n) * 1.01)``), of at least ``CONSTANT_RESULT_BYTES``: the module
    does not compute it (a folded constant of that size costs every stage and XLA's compile the
    time to print, parse and copy it); each call hands back a new copy, as NumPy's call gives a
    new array. Compared by identity (an array has no truth value)."""

    value: np.ndarray
    """The value, never handed out itself."""


CONSTANT_RESULT_BYTES = 64 << 10
"""From this size up, a result computed while tracing is a ``Constant``; a smaller one stays a
constant of the module, where the stages show it."""

OutSlot: TypeAlias = Computed | Preserved | UpdatedArg | ArgView | Forwarded | Static | Constant
"""What one result leaf of a call is (see ``CallLayout.out_slots``)."""


@dataclass(frozen=True)
class CallLayout:
    """How a Python call maps onto the module: what compile needs to run it and rebuild results."""

    in_treedef: Any
    """Tree structure of ``(args, kwargs)``, None counted as a leaf."""
    in_slots: tuple[int | Static, ...]
    """Per input leaf: its linear-argument index, or the static value baked in."""
    avals: tuple[tuple[tuple[int, ...], np.dtype, bool], ...]
    """Per linear argument: shape, dtype, weak_type."""
    out_treedef: Any
    """Tree structure of the result, None counted as a leaf."""
    out_slots: tuple[OutSlot, ...]
    """Per result leaf: computed by the module, an argument returned unchanged, an argument
    updated in place, a view of an argument, or static."""
    x64: bool
    """Whether tracing and running need 64-bit types."""
    numpy_out: bool
    """Whether array results are handed back as NumPy arrays (NumPy arrays went in)."""
    trace_scalars: bool | str = False
    """Whether Python numbers were traced (else they are static)."""
    writeback: tuple[tuple[int, int], ...] = ()
    """Per mutated argument: (linear-argument index, ``@main`` result index). After a successful
    call that result is copied into the caller's array, in place."""
    layout_deps: tuple[tuple[int, Any], ...] = ()
    """(linear index, memory layout) per argument whose memory layout the trace depends on
    (NumPy mode: a reshape or ravel that is a view for one layout and a copy for another);
    a call with another layout needs another trace."""
    captures: tuple[str, ...] = ()
    """Keys of the arrays the function reads from closures and globals (``captures``): read
    again on every call, they are linear arguments after those of ``(args, kwargs)``."""

    shardings: tuple[Any, ...] = ()
    """Per linear argument, its jax.sharding.NamedSharding over the call's mesh (``trace``'s
    ``in_shardings=`` or the JAX array's own); empty when the call is not sharded."""
    in_shardings: tuple[tuple[str, Any], ...] = ()
    """(path, NamedSharding) per argument given a sharding by ``in_shardings=``: a call's NumPy
    arguments are laid out so again."""

    @property
    def n_outputs(self) -> int:
        """Number of results of ``@main``."""
        return sum(isinstance(s, Computed) for s in self.out_slots) + len(self.writeback)


def _type_str(shape: tuple[int, ...], dtype: np.dtype) -> str:
    dims = "x".join(str(d) for d in shape)
    return f"{np.dtype(dtype).name}[{dims}]"
