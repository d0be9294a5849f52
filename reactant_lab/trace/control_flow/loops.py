"""Converted ``for`` and ``while`` statements. A ``for`` over a static ``range`` of at least
``ROLL_THRESHOLD`` iterations becomes one ``lax.fori_loop`` (a ``stablehlo.while``), a ``while``
whose condition is traced one ``lax.while_loop``; anything else runs as Python. A ``for`` that
cannot roll is unrolled (``loops='auto'``, with a note) or refused (``loops='roll'``)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
from jax import lax

from reactant_lab.errors import ControlFlowError
from reactant_lab.trace.control_flow.carry import Carry, attempt
from reactant_lab.trace.control_flow.session import GIVE_UP_AFTER, ROLL_THRESHOLD, Session, current
from reactant_lab.trace.control_flow.slots import CannotRoll, Undefined, is_traced, unwrap
from reactant_lab.trace.numpy_mode import carry, context
from reactant_lab.trace.user_errors import describe, user_frame

Site = tuple[str, int, str]
"""(file, line, header) of a converted statement."""


def where(site: Site) -> str:
    return f"{site[0]}:{site[1]}"


def cannot_roll(site: Site, reason: str, what: str) -> ControlFlowError:
    """The error for a statement that has to become a stablehlo op but cannot."""
    return ControlFlowError(
        f"The `{site[2]}` at {where(site)} {what}, but it cannot be converted: {reason}.\n"
        "Keep the carried variables' shapes and dtypes the same in every iteration, update "
        "arrays in place (a[...] = ...) rather than rebinding them to other arrays, and keep "
        "Python-side effects (lists, print) out of the loop; loops='unroll' runs it as Python.",
        site[0], site[1])


def reason_of(exc: BaseException) -> str:
    """A one-line reason from an exception raised while tracing a rolled body."""
    if isinstance(exc, CannotRoll):
        return str(exc)
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    frame = user_frame(exc.__traceback__)
    at = f" at {frame.filename}:{frame.lineno}" if frame is not None else ""
    return f"{type(exc).__name__}{at}: {text[:200]}"


@dataclass(frozen=True)
class TracedRange:
    """``range(start, stop, step)`` with a traced bound (only known when the code runs)."""

    start: Any
    stop: Any
    step: int


def iterate(fn: Callable[..., Any], *args: Any) -> Any:
    """``range(*args)`` in a converted ``for`` header: a TracedRange when a bound is traced."""
    session = current()
    if fn is not builtins.range or session is None or session.loops == "unroll" or not any(
            is_traced(a) for a in args) or (len(args) == 3 and is_traced(args[2])):
        return fn(*args)
    start, stop = (0, args[0]) if len(args) == 1 else args[:2]
    return TracedRange(unwrap(start), unwrap(stop), int(args[2]) if len(args) == 3 else 1)


def _plain(it: Any, body: Callable[..., Any], state: tuple[Any, ...]) -> tuple[Any, ...]:
    for item in it:
        state = body(item, state)
    return state


def _index(i: Any, numpy: bool) -> Any:
    return carry.python_scalar(jnp.asarray(i, jnp.int64)) if numpy else i


class _Fallback(Exception):  # a control signal
    def __init__(self, state: tuple[Any, ...], done: int, reason: str):
        super().__init__(reason)
        self.state, self.done, self.reason = state, done, reason


def for_stmt(it: Any, body: Callable[..., Any], target: str | None, state: tuple[Any, ...],
             names: tuple[str, ...], site: Site) -> tuple[Any, ...]:
    """A converted ``for``: rolled, or Python."""
    session = current()
    if isinstance(it, TracedRange):
        assert session is not None  # iterate() only makes one inside a session
        return _roll(it, body, target, state, names, site, session, traced=True)
    if (session is None or session.loops == "unroll" or not isinstance(it, range)
            or len(it) < ROLL_THRESHOLD):
        return _plain(it, body, state)
    key = (site[0], site[1])
    if session.failures.get(key, 0) >= GIVE_UP_AFTER:
        return _plain(it, body, state)
    try:
        return _roll(it, body, target, state, names, site, session, traced=False)
    except _Fallback as fallback:
        session.failures[key] = session.failures.get(key, 0) + 1
        if session.loops == "roll":
            raise cannot_roll(site, fallback.reason, "was asked to roll (loops='roll')"
                              ) from fallback.__cause__
        session.note(f"{where(site)}: `{site[2]}` unrolled ({len(it)} iterations): "
                     f"{fallback.reason}")
        return _plain(it[fallback.done:], body, fallback.state)


def _roll(it: range | TracedRange, body: Callable[..., Any], target: str | None,
          state: tuple[Any, ...], names: tuple[str, ...], site: Site, session: Session,
          traced: bool) -> tuple[Any, ...]:
    numpy = context.current() is not None
    mark = carry.stamp() if numpy else 0
    force: set[str] = set()
    done, peeled = 0, False
    undefined = any(isinstance(v, Undefined) for n, v in zip(names, state, strict=True)
                    if n != target)
    for _ in range(len(names) + 3):
        if isinstance(it, range) and not peeled and undefined:
            state, done, peeled = body(it[done], state), done + 1, True
        if isinstance(it, range) and done >= len(it):
            return state
        try:
            return _rolled(it, body, target, state, names, done, numpy, mark, force)
        except CannotRoll as exc:
            if not traced and not peeled:
                undefined = True  # peel one iteration, then try again
                continue
            if exc.forcible and exc.name not in force and (
                    traced or session.loops == "roll" or exc.root is not None):
                force.add(exc.name)  # type: ignore[arg-type]  # forcible: has a name
                continue
            if traced:
                raise cannot_roll(site, str(exc), "has a traced bound") from exc
            raise _Fallback(state, done, str(exc)) from exc
        except ControlFlowError:
            raise
        except Exception as exc:
            if traced:
                raise
            raise _Fallback(state, done, reason_of(exc)) from exc
    raise _Fallback(state, done, "its carried variables kept changing")


def _rolled(it: range | TracedRange, body: Callable[..., Any], target: str | None,
            state: tuple[Any, ...], names: tuple[str, ...], done: int, numpy: bool, mark: int,
            force: set[str]) -> tuple[Any, ...]:
    """Iterations ``done`` .. end of ``it`` as one lax.fori_loop."""
    start, step = it.start, it.step
    stop = it.stop if isinstance(it, TracedRange) else len(it)
    n = (stop - start + step - (1 if step > 0 else -1)) // step if isinstance(
        it, TracedRange) else stop

    def make(roots: list[carry.Root]) -> Carry:
        return Carry(names, state, skip=target, numpy=numpy, mark=mark, force=force, roots=roots)

    def run(c: Carry) -> list[Any]:
        def step_fn(k: Any, flat: list[Any]) -> list[Any]:
            i = _index(start + k * step, numpy)
            return c.leave(body(i, c.enter(list(flat), i)))

        upper = jnp.maximum(n, 0) if isinstance(it, TracedRange) else n
        return list(lax.fori_loop(done, upper, step_fn, list(c.init)))

    c, final = attempt(make, run, numpy, mark)
    last: Any = it[-1] if isinstance(it, range) else _index(start + (n - 1) * step, numpy)
    return c.finish(final, last)


def while_stmt(test: Callable[..., Any], body: Callable[..., Any], state: tuple[Any, ...],
               names: tuple[str, ...], site: Site) -> tuple[Any, ...]:
    """A converted ``while``: Python while its condition is static, then one lax.while_loop."""
    session = current()
    while True:
        cond = test(state)
        if session is None or session.loops == "unroll" or not is_traced(cond):
            if not cond:
                return state
            state = body(state)
            continue
        return _roll_while(test, body, state, names, site)


def to_pred(cond: Any) -> Any:
    """A traced condition as a boolean scalar (NumPy's error for arrays of several elements)."""
    value = jnp.asarray(unwrap(cond))
    if value.size != 1:
        raise ValueError("The truth value of an array with more than one element is "
                         "ambiguous. Use a.any() or a.all()")
    return value.reshape(()).astype(bool)


def _roll_while(test: Callable[..., Any], body: Callable[..., Any], state: tuple[Any, ...],
                names: tuple[str, ...], site: Site) -> tuple[Any, ...]:
    numpy = context.current() is not None
    mark = carry.stamp() if numpy else 0
    force: set[str] = set()
    for _ in range(len(names) + 2):
        def make(roots: list[carry.Root]) -> Carry:
            return Carry(names, state, skip=None, numpy=numpy, mark=mark, force=force,
                         roots=roots)

        def run(c: Carry) -> list[Any]:
            return list(lax.while_loop(lambda flat: to_pred(test(c.enter(list(flat)))),
                                       lambda flat: c.leave(body(c.enter(list(flat)))),
                                       list(c.init)))
        try:
            c, final = attempt(make, run, numpy, mark)
        except CannotRoll as exc:
            if exc.forcible and exc.name not in force:
                force.add(exc.name)  # type: ignore[arg-type]  # forcible: has a name
                continue
            raise cannot_roll(site, str(exc), "tests a traced value, so it must become a "
                              "stablehlo.while") from exc
        return c.finish(final, None)
    raise cannot_roll(site, "its carried variables kept changing", "tests a traced value")


__all__ = ["TracedRange", "cannot_roll", "describe", "for_stmt", "iterate", "to_pred",
           "where", "while_stmt"]
