"""Turn errors raised inside the user's function while tracing into messages about the user's code."""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
import traceback
from collections.abc import Iterator
from types import TracebackType

import jax

from reactant_lab.errors import ControlFlowError, ReactantLabError, TraceError

_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.abspath(m.__file__)) + os.sep
    for m in (jax, sys.modules["numpy"], sys.modules["reactant_lab"])
    if getattr(m, "__file__", None))
_CONTROL_FLOW = (jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError,
                 jax.errors.ConcretizationTypeError)
_ADVICE = (
    "The value is only known when the compiled code runs, so Python cannot branch or loop on it.\n"
    "  - for a branch, use jax.lax.cond(pred, true_fn, false_fn, ...) or jnp.where(pred, a, b);\n"
    "  - for a loop, use jax.lax.while_loop / jax.lax.fori_loop;\n"
    "  - if the value is really a constant, pass it as a Python scalar (a static argument).")


def user_frame(tb: TracebackType | None) -> traceback.FrameSummary | None:
    """The innermost frame of ``tb`` that is the user's code (not JAX, NumPy or reactant_lab)."""
    found = None
    for frame in traceback.extract_tb(tb):
        path = os.path.abspath(frame.filename)
        if frame.filename.startswith("<frozen") or path.startswith(_LIBRARY_DIRS):
            continue
        found = frame
    return found


def describe(frame: traceback.FrameSummary | None) -> str:
    """``file:line in func`` and the source line, for messages."""
    if frame is None:
        return "an unknown place in your function"
    line = (frame.line or linecache.getline(frame.filename, frame.lineno or 0)).strip()
    return f"{frame.filename}:{frame.lineno} in {frame.name}()\n    {line}"


@contextlib.contextmanager
def user_code_errors(fn_name: str) -> Iterator[None]:
    """Re-raise control flow on traced values as ControlFlowError; annotate other user errors."""
    try:
        yield
    except _CONTROL_FLOW as exc:
        frame = user_frame(exc.__traceback__)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        message = (f"Python control flow on a traced value while tracing {fn_name}, at "
                   f"{describe(frame)}\n{first}\n{_ADVICE}")
        raise ControlFlowError(message, frame.filename if frame else None,
                               frame.lineno if frame else None) from None
    except jax.errors.TracerArrayConversionError as exc:
        frame = user_frame(exc.__traceback__)
        raise TraceError(
            f"A traced value was converted to a NumPy array while tracing {fn_name}, at "
            f"{describe(frame)}\nUse jax.numpy instead of numpy on traced values, or pass NumPy "
            "arrays so the function is traced in NumPy mode.") from None
    except ReactantLabError:
        raise
    except Exception as exc:
        frame = user_frame(exc.__traceback__)
        exc.add_note(f"(raised while reactant_lab traced {fn_name}, at {describe(frame)})")
        raise
