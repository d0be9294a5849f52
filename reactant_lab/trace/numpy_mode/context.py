"""Which NumPy-mode trace is running on this thread (its function's name), if any, and what it
remembers while it runs."""

from __future__ import annotations

import contextlib
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import jax

from reactant_lab.trace.user_errors import calling_user_frame

_STATE = threading.local()


@dataclass
class _Trace:
    """One NumPy-mode trace on this thread."""

    name: str
    """The traced function's name."""
    platform: str | None = None
    """The platform the trace is lowered for ('cpu', 'tpu', ...); None: JAX's default."""
    memo: dict[Any, Any] = field(default_factory=dict)
    """See ``memo``."""
    handed: traceback.FrameSummary | None = None
    """Where the kernel first handed one of its arrays to a JAX function (see ``handed_to_jax``);
    None while it has not."""
    handed_any: bool = False
    """Whether it did (also where no frame of the user's could be found)."""


def _stack() -> list[_Trace]:
    if not hasattr(_STATE, "stack"):
        _STATE.stack = []
    stack: list[_Trace] = _STATE.stack
    return stack


def current() -> str | None:
    """Name of the function being traced in NumPy mode on this thread, or None."""
    stack = _stack()
    return stack[-1].name if stack else None


def platform() -> str:
    """The platform the current NumPy-mode trace is lowered for (JAX's default backend's where
    the trace named none, 'cpu' outside of one): how an op is lowered may follow what that
    platform's compiler does well. Asked only where it matters: JAX opens its backends for it."""
    stack = _stack()
    if not stack:
        return "cpu"
    return stack[-1].platform or jax.default_backend()


def memo() -> dict[Any, Any]:
    """A dictionary that lives as long as the current trace (empty outside of one)."""
    stack = _stack()
    return stack[-1].memo if stack else {}


def handed_to_jax() -> None:
    """Note that the kernel hands one of its arrays to a JAX function (which gets its traced
    value): the first time, where (the innermost frame of the user's code)."""
    stack = _stack()
    if stack and not stack[-1].handed_any:
        stack[-1].handed_any = True
        stack[-1].handed = calling_user_frame()


def handoff() -> tuple[bool, traceback.FrameSummary | None]:
    """Whether the current trace handed an array to JAX, and where it first did."""
    stack = _stack()
    return (stack[-1].handed_any, stack[-1].handed) if stack else (False, None)


@contextlib.contextmanager
def tracing(fn_name: str, platform: str | None = None) -> Iterator[None]:
    """Mark this thread as tracing ``fn_name`` in NumPy mode, lowered for ``platform``, while
    the block runs."""
    stack = _stack()
    stack.append(_Trace(fn_name, platform))
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
    trace = stack[-1]
    saved = trace.memo
    trace.memo = {k: v for k, v in saved.items() if type(k) is tuple and k and k[0] == "affine"}
    try:
        yield
    finally:
        trace.memo = saved


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
