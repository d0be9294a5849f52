"""Which NumPy-mode trace is running on this thread (its function's name), if any, and what it
remembers while it runs."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

_STATE = threading.local()


def _stack() -> list[tuple[str, dict[Any, Any]]]:
    if not hasattr(_STATE, "stack"):
        _STATE.stack = []
    stack: list[tuple[str, dict[Any, Any]]] = _STATE.stack
    return stack


def current() -> str | None:
    """Name of the function being traced in NumPy mode on this thread, or None."""
    stack = _stack()
    return stack[-1][0] if stack else None


def memo() -> dict[Any, Any]:
    """A dictionary that lives as long as the current trace (empty outside of one)."""
    stack = _stack()
    return stack[-1][1] if stack else {}


@contextlib.contextmanager
def tracing(fn_name: str) -> Iterator[None]:
    """Mark this thread as tracing ``fn_name`` in NumPy mode while the block runs."""
    stack = _stack()
    stack.append((fn_name, {}))
    try:
        yield
    finally:
        stack.pop()


@contextlib.contextmanager
def fresh_memo() -> Iterator[None]:
    """A new ``memo`` while the block runs (a rolled loop body or a branch traced as its own
    function: values it remembers belong to that trace, and must not reach another), the
    trace's own afterwards. Facts about traced values (``("affine", ...)`` keys: an enclosing
    loop's index and its range) hold inside it too, and are kept."""
    stack = _stack()
    if not stack:
        yield
        return
    name, saved = stack[-1]
    stack[-1] = (name, {k: v for k, v in saved.items()
                        if type(k) is tuple and k and k[0] == "affine"})
    try:
        yield
    finally:
        stack[-1] = (name, saved)


class WindowWrites:
    """While open (``window_writes``): how many masked row / column writes took the window form
    (see ``storage.write_where``)."""

    def __init__(self) -> None:
        self.count = 0


@contextlib.contextmanager
def window_writes() -> Iterator[WindowWrites]:
    """Masked writes of a row or column (``C[i, :i + 1] *= beta``) as the masked window read and
    written back (``dynamic_slice``, select, ``dynamic_update_slice``), not a scatter, while
    the block runs: the form whose slot a batched loop's check can read (a loop body traced for
    batching); the block's result tells whether any write took it."""
    previous = getattr(_STATE, "window", None)
    opened = WindowWrites()
    _STATE.window = opened
    try:
        yield opened
    finally:
        _STATE.window = previous


def window_write() -> bool:
    """Whether a masked row or column write is to take the window form now (and count it)."""
    opened: WindowWrites | None = getattr(_STATE, "window", None)
    if opened is None:
        return False
    opened.count += 1
    return True
