"""Checks on the user's function before it is traced: kinds of function that tracing cannot run."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from reactant_lab.errors import TraceError

_MAX_UNWRAP = 100  # partial(partial(...)) chains deeper than this are not unwrapped further

_ADVICE = {
    "a generator function": (
        "Tracing runs the function once and needs its arrays as return values; yielded values "
        "are only produced when the generator is iterated, after tracing has ended. Return the "
        "arrays instead of yielding them (e.g. collect them in a list or tuple and return it)."),
    "an async generator function": (
        "Tracing runs the function once, synchronously, and needs its arrays as return values. "
        "Make it a plain function (def, no await) that returns the arrays instead of yielding "
        "them."),
    "an async function": (
        "Calling it only creates a coroutine; its body would run after tracing has ended. Call "
        "the coroutine's body synchronously: make it a plain function (def, no await) and trace "
        "that."),
}


def check_callable(fn: Any, who: str) -> None:
    """TraceError unless ``fn`` is callable; ``who`` (``trace``, ``jit``) names the entry point."""
    if callable(fn):
        return
    right = "rl.trace(f, x)" if who == "trace" else f"rl.{who}(f)"
    hint = (" It looks like the result of calling the function: pass the function itself, "
            f"e.g. {right} rather than rl.{who}(f(x))." if hasattr(fn, "shape") else "")
    raise TraceError(f"{who} expects a function, got {type(fn).__name__}.{hint}")


def check_traceable(fn: Callable[..., Any]) -> None:
    """Raise TraceError when ``fn`` is a generator, async or async generator function (also
    through functools.partial, bound methods and a ``__call__`` method), which tracing cannot
    run: it would only fail later, inside JAX, with an unrelated error."""
    target = underlying(fn)
    kind = _kind(target)
    if kind is None:
        return
    name = _name(fn, target)
    raise TraceError(f"{name} is {kind}, which reactant_lab cannot trace. {_ADVICE[kind]}")


def underlying(fn: Any) -> Any:
    """The plain function behind partials, bound methods and callable objects."""
    for _ in range(_MAX_UNWRAP):
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif inspect.ismethod(fn) or isinstance(fn, staticmethod | classmethod):
            fn = fn.__func__
        elif _kind(fn) is None and not inspect.isroutine(fn) and not inspect.isclass(fn):
            call = inspect.getattr_static(type(fn), "__call__", None)
            if call is None or call is fn:
                return fn
            fn = call
        else:
            return fn
    return fn


def _kind(fn: Any) -> str | None:
    if inspect.isasyncgenfunction(fn):
        return "an async generator function"
    if inspect.iscoroutinefunction(fn):
        return "an async function"
    if inspect.isgeneratorfunction(fn):
        return "a generator function"
    return None


def _name(fn: Any, target: Any) -> str:
    """How the user would recognise ``fn``: the function's qualified name, and the wrapper (a
    partial, an object with ``__call__``) it was reached through."""
    qualname = getattr(target, "__qualname__", None) or repr(target)
    if isinstance(fn, functools.partial):
        return f"{qualname} (wrapped in functools.partial)"
    if inspect.isroutine(fn):
        return qualname
    return f"{qualname} (called through an instance of {type(fn).__qualname__})"
