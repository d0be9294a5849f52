"""Python control flow on traced values, converted automatically (Reactant's ``@trace for`` /
``@trace if`` / ``@trace while``, AutoGraph's approach): the traced function's source is rewritten
so that each ``for`` / ``while`` / ``if`` calls a runtime helper, which decides at trace time
whether it runs as Python (static conditions, small static ranges, anything but ``range``) or
becomes one ``stablehlo.while`` / ``stablehlo.case`` whose carried values it finds by itself.

Modules: transform (the AST rewrite), convert (source -> rewritten function), runtime (the
helpers converted code calls), loops and branches (the statements), minmax (Python's ``min`` /
``max`` on traced values), slots and carry (what a loop or branch carries), session (``loops=``
and the notes of one trace), batched and hoisted (NumPy mode's rolled loops run as one batched
body, or with their invariant work done ahead of them).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from reactant_lab.errors import UnassignedVariableError
from reactant_lab.trace.control_flow import runtime
from reactant_lab.trace.control_flow.convert import convert
from reactant_lab.trace.control_flow.session import LOOPS, ROLL_THRESHOLD, check_loops, session
from reactant_lab.trace.numpy_mode import carry

__all__ = ["LOOPS", "ROLL_THRESHOLD", "check_loops", "converted", "converted_callee", "tracing"]


def converted(fn: Callable[..., Any], loops: str) -> tuple[Callable[..., Any], str | None]:
    """``fn`` with its control flow converted (``loops='unroll'``: ``fn`` itself), and a note
    when it could not be converted."""
    check_loops(loops)
    if loops == "unroll":
        return fn, None
    return convert(fn, sys.modules[runtime.__name__])


def converted_callee(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as a converted function calls it while a trace runs: with its control flow
    converted when ``loops`` asks for it and ``fn`` is user code, else ``fn`` itself."""
    result: Callable[..., Any] = runtime.callee(fn)
    return result


@contextlib.contextmanager
def tracing(loops: str) -> Iterator[list[str]]:
    """Trace under the loop policy ``loops``; the list yielded gets the notes (loops unrolled
    and why, functions run as Python) when the block ends."""
    notes: list[str] = []
    with session(loops, numpy=False) as opened, carry.recording():
        try:
            yield notes
        except UnboundLocalError as exc:
            error = None if isinstance(exc, UnassignedVariableError) else (
                opened.unassigned_error(exc))
            if error is None:
                raise
            raise error from exc
        finally:
            notes.extend(opened.notes)
