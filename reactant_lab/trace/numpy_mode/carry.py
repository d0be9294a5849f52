"""NumPy mode's side of a rolled loop or a converted branch: what a proxy held by a loop variable
is (a new array or NumPy scalar, or an array that existed before the loop, or a view of one), its
stand-in inside the traced body, and the arrays the body writes through (carried by value)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reactant_lab.trace.numpy_mode.journal import journal, recording, stamp
from reactant_lab.trace.numpy_mode.proxy import ProxyArray, new_scalar, proxy_for
from reactant_lab.trace.numpy_mode.storage import IMMUTABLE, Root, ViewOp

__all__ = ["Held", "Root", "describe_proxy", "journal", "python_scalar", "recording",
           "stamp", "to_numpy_scalar"]


@dataclass(frozen=True)
class Held:
    """What a loop variable holding a proxy is, as far as the loop's carry is concerned."""

    kind: str
    """'new' (an array or NumPy scalar made inside the loop: carried by value) or 'ref' (an array
    that existed before the loop, or a static view of one: its root is carried, if written)."""
    key: tuple[Any, ...]
    """What must be the same before and after one iteration."""
    root: Root | None = field(default=None, compare=False)
    """The existing array ('ref')."""
    ops: tuple[ViewOp, ...] = field(default=(), compare=False)
    """The view ops over ``root`` ('ref')."""
    kept: tuple[Any, ...] = field(default=(), compare=False)
    """``stand_in`` of the proxy ('new')."""

    def stand_in(self, value: Any, shape: tuple[int, ...], dtype: np.dtype) -> ProxyArray:
        """The proxy the body sees: ``value`` as a new array, or the existing array (view)."""
        if self.kind == "new":
            return proxy_for(value, self.kept)
        assert self.root is not None
        return ProxyArray(self.root, self.ops, shape, dtype)


def _ops_key(ops: tuple[ViewOp, ...]) -> tuple[Any, ...] | None:
    """A comparable key of static view ops (None when one holds a traced index)."""
    if not all(op.static for op in ops):
        return None
    slots = [getattr(type(op), "__slots__", ()) for op in ops]
    return tuple((type(op).__name__, repr([getattr(op, s) for s in names]))
                 for op, names in zip(ops, slots, strict=True))


def describe_proxy(p: ProxyArray, mark: int, by_value: bool = False) -> Held | str:
    """How the loop carries ``p`` (roots made at or after ``mark`` are the loop's own; NumPy
    scalars and, with ``by_value``, any array are carried by value), or why it cannot."""
    if p.mask is not None:
        return "it is a masked selection a[mask] (its shape is only known when the code runs)"
    root, ops = p.root, p._ops
    if by_value or root.serial >= mark or (root.frozen in IMMUTABLE and not ops):
        if ops and not by_value:
            return "it is a view of an array made inside the loop"
        kept = (root.frozen, None, root.weak, root.order if not ops else "C")
        return Held("new", ("new", p.shape, p.dtype, root.frozen, root.weak, kept[3]), kept=kept)
    key = _ops_key(ops)
    if key is None:
        return "it is a view whose index changes from one iteration to the next"
    return Held("ref", ("ref", id(root), key, p.shape, p.dtype), root=root, ops=ops)


def python_scalar(value: Any) -> ProxyArray:
    """A traced Python number (an int loop index, a carried Python float): promotes weakly."""
    return ProxyArray(Root(value, frozen=IMMUTABLE[2], weak=True))


def to_numpy_scalar(value: Any) -> ProxyArray:
    """A traced NumPy scalar."""
    return new_scalar(value)
