"""Which arrays a stretch of tracing wrote (a rolled loop body, a branch), and how to undo it.

A rolled loop's body is traced once, on stand-ins for the values it carries; the arrays it wrote
are the ones the loop must carry. A trace that is given up (the loop unrolls after all, or is
traced again with more carried arrays) must leave every array as it found it: a journal saves
each array's state before its first write. Kernel-made arrays that still hold concrete data are
written by NumPy itself, in place: the journal is told first (``concrete_write``) and copies the
data then, once.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from reactant_lab.trace.numpy_mode import context

if TYPE_CHECKING:
    from reactant_lab.trace.numpy_mode.storage import Root

_STATE = threading.local()
_STAMPS = itertools.count(1)


def stamp() -> int:
    """A number above every root's ``serial`` and ``epoch`` so far (roots made after it have
    higher ones)."""
    return next(_STAMPS)


class Journal:
    """The arrays written while it is open, and their states before the first write."""

    def __init__(self, concrete: list[Root]):
        self.concrete = [r for r in concrete if r.concrete is not None]
        """The kernel-made arrays holding concrete data when the journal was opened."""
        self.saved: dict[Root, tuple[Any, ...]] = {}
        """Root -> its state before its first write while the journal was open."""
        self.written: dict[Root, None] = {}
        """Roots written while the journal was open, in order."""

    def wrote(self, root: Root, copy: bool = False) -> None:
        """``root`` is written; ``copy``: NumPy is about to write its concrete data in place, so
        the state saved is a copy of it (a traced write leaves the data as it was)."""
        if root not in self.saved:
            self.saved[root] = root.save(copy=copy)
        self.written[root] = None

    def undo(self) -> None:
        """Put every written root back as it was."""
        for root in self.written:
            root.load(self.saved[root])


def _journals() -> list[Journal]:
    if not hasattr(_STATE, "journals"):
        _STATE.journals = []
    journals: list[Journal] = _STATE.journals
    return journals


def _registry() -> weakref.WeakSet[Root] | None:
    registry: weakref.WeakSet[Root] | None = getattr(_STATE, "registry", None)
    return registry


@contextlib.contextmanager
def recording() -> Iterator[None]:
    """Remember the kernel-made arrays with concrete data made while the block runs (a trace
    whose loops may roll), so that journals can restore them."""
    previous = _registry()
    _STATE.registry = weakref.WeakSet() if previous is None else previous
    try:
        yield
    finally:
        _STATE.registry = previous


@contextlib.contextmanager
def journal() -> Iterator[Journal]:
    """Record the roots written while the block runs (nested journals see the writes too)."""
    registry = _registry()
    opened = Journal(list(registry) if registry is not None else [])
    journals = _journals()
    journals.append(opened)
    try:
        with context.fresh_memo():
            yield opened
    finally:
        journals.remove(opened)
        # Values derived while the journal was open belong to the trace that is ending: the
        # traced constants of concrete arrays, and views' cached values (see ``generation``).
        for root in {**dict.fromkeys(opened.concrete), **opened.saved}:
            if root.concrete is not None:
                root.forget()
        _STATE.generation = generation() + 1


def generation() -> int:
    """Bumped whenever a journal closes: a view's cached value from an earlier generation may
    be a value of a finished trace (a rolled body's), so it is derived again."""
    value: int = getattr(_STATE, "generation", 0)
    return value


def created(root: Root) -> None:
    """A root was made (storage calls this)."""
    registry = _registry()
    if registry is not None and root.concrete is not None:
        registry.add(root)


def writing(root: Root) -> None:
    """``root`` is about to be written, or NumPy just wrote its concrete data (storage calls
    this)."""
    for opened in _journals():
        opened.wrote(root)


def concrete_write(root: Root) -> None:
    """NumPy is about to write ``root``'s concrete data in place (storage calls this first):
    each open journal saves a copy of it, once. Copying only what is written, when it is,
    spares every rolled loop's trace a copy of each kernel-made array (conv2d's 8 MB
    accumulator was copied twice per trace)."""
    for opened in _journals():
        opened.wrote(root, copy=True)
