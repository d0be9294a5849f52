"""The helpers converted code calls (``__rl_cf__`` in it): they decide at trace time whether a
statement runs as Python or becomes a stablehlo op."""

from __future__ import annotations

import inspect
import sys
from typing import Any

import numpy as np

from reactant_lab.errors import ControlFlowError
from reactant_lab.trace import rebinding
from reactant_lab.trace.control_flow.branches import and_, if_stmt, ifexp, not_, or_
from reactant_lab.trace.control_flow.convert import convert, is_user_function
from reactant_lab.trace.control_flow.loops import Site, for_stmt, iterate, where, while_stmt
from reactant_lab.trace.control_flow.minmax import minmax
from reactant_lab.trace.control_flow.session import ROLL_THRESHOLD, current
from reactant_lab.trace.control_flow.slots import Undefined, is_traced
from reactant_lab.trace.numpy_mode import context, creation
from reactant_lab.trace.user_errors import calling_user_frame, control_flow_error

__all__ = ["and_", "callee", "for_stmt", "if_stmt", "ifexp", "initial", "iterate", "minmax",
           "not_", "or_", "plain_cond", "plain_iter", "unset", "while_stmt"]


def initial(found: dict[str, Any], names: tuple[str, ...]) -> tuple[Any, ...]:
    """The values of ``names`` where a converted statement starts (``found``: the caller's
    ``locals()``), Undefined for those not assigned yet."""
    return tuple(found[n] if n in found else Undefined(n) for n in names)


def unset(value: Any) -> bool:
    """Whether a value a converted statement hands back for a variable means it has none (the
    converted code then deletes the variable); remembers why when that depends on traced
    values, for the error if it is read."""
    if not isinstance(value, Undefined):
        return False
    session = current()
    if value.why is not None and session is not None:
        file = sys._getframe(1).f_code.co_filename
        session.unassigned[(file, value.name)] = value.why
    return True


def callee(fn: Any) -> Any:
    """The function a converted call calls: a user function with its control flow converted,
    ``np.ndarray`` in NumPy mode a maker of a traced array, anything else as it is."""
    if fn is np.ndarray and context.current() is not None:
        return creation.ndarray  # NumPy's uninitialized constructor: np.empty
    session = current()
    if session is None or session.loops == "unroll" or not is_user_function(fn):
        return fn
    rebinding.check(fn, called=True)
    converted, why = convert(fn, sys.modules[__name__])
    if why is not None:
        session.note(f"{getattr(fn, '__qualname__', fn)!s} runs as Python: {why}")
    return _bounded(converted, fn)


def _bounded(fn: Any, original: Any) -> Any:
    """``fn`` as a call that turns Python's RecursionError into a ControlFlowError naming
    ``original``: a recursion that ends only on a traced condition never ends while tracing
    (both branches are traced), and its RecursionError would surface deep in our frames."""
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RecursionError as exc:
            raise _runaway(original, exc) from None
    return call


def _runaway(fn: Any, exc: RecursionError) -> ControlFlowError:
    """The error for a recursion of ``fn`` that reached Python's recursion limit."""
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    frames, tb = [], exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    frame = inspect.currentframe()
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    depth = 0 if code is None else sum(  # the original's code and its rewritten code
        f.f_code.co_name == code.co_name and f.f_code.co_filename == code.co_filename
        for f in set(frames))
    name = getattr(fn, "__qualname__", repr(fn))
    return ControlFlowError(
        f"{name}() calls itself without end while tracing: Python's recursion limit "
        f"({sys.getrecursionlimit()}) was reached with {depth} calls of it open. "
        "A recursion runs as Python at trace time, so it must end on static values (a Python "
        "int such as a depth argument); one that ends on a traced value (an array element) "
        "traces both branches of its test and never ends. Make the test static, or write the "
        "recursion as a loop (a `while` on a traced condition becomes one stablehlo.while). A "
        "static recursion this deep needs a higher sys.setrecursionlimit().",
        code.co_filename if code is not None else None,
        code.co_firstlineno if code is not None else None)


def plain_iter(it: Any, reason: str, site: Site) -> Any:
    """The iterable of a ``for`` that stays Python because of ``reason``."""
    session = current()
    if (session is not None and session.loops != "unroll" and isinstance(it, range)
            and len(it) >= ROLL_THRESHOLD):
        message = f"{where(site)}: `{site[2]}` unrolled ({len(it)} iterations): {reason}"
        if session.loops == "roll":
            raise ControlFlowError(
                f"The `{site[2]}` at {where(site)} was asked to roll (loops='roll') but cannot "
                f"be converted: {reason}. Rewrite the loop without it (e.g. set a result "
                "variable and `break` instead of `return`; keep prints and list updates out of "
                "the loop), or use loops='auto'.",
                site[0], site[1])
        session.note(message)
    return it


def plain_cond(test: Any, reason: str, site: Site) -> Any:
    """The condition of an ``if`` / ``while`` that stays Python because of ``reason``."""
    session = current()
    if session is not None and session.loops != "unroll" and is_traced(test):
        frame = calling_user_frame()
        name = context.current() or (frame.name if frame is not None else "the function")
        raise control_flow_error(
            name, frame,
            f"`{site[2]}` tests a traced value; reactant_lab converts such statements to "
            f"stablehlo ops, but not this one: {reason}. Assign a result variable (and "
            "`break` out of a loop) instead of returning from inside the statement, and return "
            "after it; keep prints and list updates out of it.",
            "numpy" if context.current() else "jax")
    return test
