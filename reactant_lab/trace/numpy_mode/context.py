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
    """An empty ``memo`` while the block runs (a rolled loop body or a branch traced as its own
    function: values it remembers belong to that trace, and must not reach another), the
    trace's own afterwards."""
    stack = _stack()
    if not stack:
        yield
        return
    name, saved = stack[-1]
    stack[-1] = (name, {})
    try:
        yield
    finally:
        stack[-1] = (name, saved)
