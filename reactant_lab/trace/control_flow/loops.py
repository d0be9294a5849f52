"""Converted ``for`` and ``while`` statements. A ``for`` over a static ``range`` of at least
``ROLL_THRESHOLD`` iterations (``NESTED_ROLL_MIN`` when its body has a loop of its own) becomes
one ``lax.fori_loop`` (a ``stablehlo.while``), a ``while`` whose condition is traced one
``lax.while_loop``; anything else runs as Python. A ``for`` that
cannot roll is unrolled (``loops='auto'``, with a note) or refused (``loops='roll'``). In NumPy
mode under ``loops='auto'``, a rolled ``for`` whose iterations are independent runs batched
(see batched), and one whose work reads nothing it updates has that work hoisted (see hoisted)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from reactant_lab.errors import ControlFlowError
from reactant_lab.trace.control_flow import batched
from reactant_lab.trace.control_flow import names as labels
from reactant_lab.trace.control_flow.carry import Carry, attempt, written_roots
from reactant_lab.trace.control_flow.session import GIVE_UP_AFTER, ROLL_THRESHOLD, Session, current
from reactant_lab.trace.control_flow.slots import (
    CannotRoll,
    Forced,
    Undefined,
    is_traced,
    unwrap,
)
from reactant_lab.trace.control_flow.transform import FLAG
from reactant_lab.trace.numpy_mode import affine, carry, context
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


def _plain(it: Any, body: Callable[..., Any], state: tuple[Any, ...],
           names: tuple[str, ...] = (), brk: str | None = None,
           site: Site | None = None) -> tuple[Any, ...]:
    """The loop as Python; with a break flag ``brk``, it stops when the flag is set, and once
    the flag is traced (a ``break`` under a traced condition) each further iteration runs
    under ``if not flag`` (one lax.cond)."""
    if brk is None:
        for item in it:
            state = body(item, state)
        return state
    from reactant_lab.trace.control_flow.branches import if_stmt, not_  # branches imports us

    k = names.index(brk)
    session = current()
    converted = session is not None and session.loops != "unroll"
    flag = state[k]
    for item in it:  # the flag is tested before the next item is taken, as Python's break
        if converted and is_traced(flag):
            assert site is not None
            what = (f"The `{site[2]}` at {where(site)} runs as Python, and its `break` depends "
                    "on a traced value: each further iteration runs only if the loop has not "
                    "broken (a lax.cond), and the variables it changes disagree")
            state = if_stmt(not_(flag), lambda s, item=item: body(item, s), lambda s: s,
                            state, names, site, what=what)
        else:
            state = body(item, state)
        flag = state[k]
        if not (converted and is_traced(flag)) and flag:
            break
    return state


def _broke(state: tuple[Any, ...], names: tuple[str, ...], brk: str | None) -> bool:
    """Whether the loop's break flag is set (and static)."""
    if brk is None:
        return False
    flag = state[names.index(brk)]
    return not is_traced(flag) and bool(flag)


def _index(i: Any, numpy: bool, values: range | None = None) -> Any:
    """The loop index as the body sees it (NumPy mode: a traced Python int); ``values``: the
    values it takes, when static (``x[i:i + 3]`` then has a static length)."""
    if not numpy:
        return i
    index = carry.python_scalar(i if _strong_int64(i) else jnp.asarray(i, jnp.int64))
    if values is not None and len(values) and is_traced(index.value):
        affine.note_index(index.value, min(values), max(values))
    return index


def _strong_int64(i: Any) -> bool:
    """Whether ``i`` is a traced int64 that is not weakly typed (no conversion needed)."""
    aval = getattr(i, "aval", None)
    return (aval is not None and getattr(aval, "dtype", None) == np.int64
            and not getattr(aval, "weak_type", True) and aval.shape == ())


def _counted(start: Any, k: Any, step: Any) -> Any:
    """``start + k * step`` for the loop's count ``k``, with no op for a static step of 1 or
    start of 0 (``range(n)``: the count itself)."""
    if not (isinstance(step, int | np.integer) and step == 1):
        k = k * step
    return k if isinstance(start, int | np.integer) and start == 0 else start + k


class _Fallback(Exception):  # a control signal
    def __init__(self, state: tuple[Any, ...], done: int, reason: str):
        super().__init__(reason)
        self.state, self.done, self.reason = state, done, reason


def for_stmt(it: Any, body: Callable[..., Any], target: str | None, state: tuple[Any, ...],
             names: tuple[str, ...], site: Site, brk: str | None = None,
             guarded: bool = False, nested: bool = False, writes: tuple[Any, ...] = ()
             ) -> tuple[Any, ...]:
    """A converted ``for``: rolled, or Python. ``brk``: the variable of its break flag;
    ``guarded``: its body had ``break`` / ``continue`` (statements after them run under
    ``if not flag``); ``nested``: its body has a loop of its own (see NESTED_ROLL_MIN);
    ``writes``: the values of the names its body writes in place (``C[i] = ...``) where it
    starts, the arrays a rolled loop first tries to carry (see ``attempt``)."""
    session = current()
    if isinstance(it, TracedRange):
        assert session is not None  # iterate() only makes one inside a session
        return _roll(it, body, target, state, names, site, session, traced=True, brk=brk,
                     guarded=guarded, writes=writes)
    if (session is None or session.loops == "unroll" or not isinstance(it, range)
            or len(it) < (NESTED_ROLL_MIN if nested else ROLL_THRESHOLD)):
        return _plain(it, body, state, names, brk, site)
    key = (site[0], site[1])
    if session.failures.get(key, 0) >= GIVE_UP_AFTER:
        return _plain(it, body, state, names, brk, site)
    if len(it) < ROLL_THRESHOLD:  # short, around a loop: rolled if it can, else as before
        try:
            return _roll(it, body, target, state, names, site, session, traced=False,
                         brk=brk, guarded=guarded, writes=writes)
        except _Fallback as fallback:
            session.failures[key] = session.failures.get(key, 0) + 1
            return _plain(it[fallback.done:], body, fallback.state, names, brk, site)
    try:
        return _roll(it, body, target, state, names, site, session, traced=False, brk=brk,
                     guarded=guarded, writes=writes)
    except _Fallback as fallback:
        session.failures[key] = session.failures.get(key, 0) + 1
        if session.loops == "roll":
            raise cannot_roll(site, fallback.reason, "was asked to roll (loops='roll')"
                              ) from fallback.__cause__
        session.note(f"{where(site)}: `{site[2]}` unrolled ({len(it)} iterations): "
                     f"{fallback.reason}")
        return _plain(it[fallback.done:], body, fallback.state, names, brk, site)


def _carry_early(exc: CannotRoll, force: Forced, numpy: bool) -> bool:
    """Whether the variable at fault is a Python number the body makes traced, not tried yet,
    in a NumPy kernel: then it is carried so from the first iteration (``Forced.exact``), and
    the loop tried again. If not, the numbers carried so are no longer forced: the loop peels
    its first iteration instead. Not in JAX mode: a carried scalar there is not weakly typed, and
    with 64-bit types on, ``total = 0`` carried as int64 made ``total += x[i]`` of int32 values
    int64 where JAX gives int32 (the exact type check cannot tell: int64 is what it left)."""
    if not numpy or exc.name is None or not exc.forcible or exc.root is not None \
            or exc.name in force or exc.name in force.exact:
        force -= force.exact  # carried in a type one iteration does not keep: peeled instead
        return False
    force.exact.add(exc.name)
    force.add(exc.name)
    return True


NESTED_ROLL_MIN = 3
"""A ``for`` over a static range shorter than ROLL_THRESHOLD rolls anyway from this many
iterations when its body has a loop of its own (adi's 5 time steps around 4 rolled loops): its
body is then traced about twice instead of once per iteration, and the module holds its inner
loops once instead of once per iteration (adi: 5 ``stablehlo.while``, one around four, instead
of 20; its first call 1.8x shorter). Should it not roll, it runs as Python as a short loop
always did, with no note (and after GIVE_UP_AFTER failures at one place, it is not tried
again in that trace)."""

MAX_PERIOD = 4
"""A loop that rebinds names among existing arrays (``u, v = v, u``) rolls when the names are
back where they started after at most this many iterations (its body is traced that often)."""


def _flags(names: tuple[str, ...]) -> set[str]:
    """The break / continue flags among ``names``: always carried as traced booleans."""
    return {n for n in names if n.startswith(FLAG)}


def _roll(it: range | TracedRange, body: Callable[..., Any], target: str | None,
          state: tuple[Any, ...], names: tuple[str, ...], site: Site, session: Session,
          traced: bool, brk: str | None = None, guarded: bool = False,
          writes: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    numpy = context.current() is not None
    mark = carry.stamp() if numpy else 0
    guess = written_roots(writes, mark) if numpy else []
    force = Forced(_flags(names))
    done, peeled, period = 0, False, 1
    # A variable unassigned before the loop: peel one iteration first. Not in a body with
    # break / continue, where it may be assigned only under `if not flag` (and stays unassigned).
    undefined = not guarded and any(isinstance(v, Undefined) for n, v in zip(
        names, state, strict=True) if n != target)
    for _ in range(2 * len(names) + MAX_PERIOD + 3):  # each name: carried early, then peeled
        if isinstance(it, range) and not peeled and undefined:
            with session.peeled_iteration():
                state = body(it[done], state)
            done, peeled = done + 1, True
        if (isinstance(it, range) and done >= len(it)) or _broke(state, names, brk):
            return state
        try:
            with labels.at(site), session.inside_loop():  # not the peeled iteration
                if period == 1:
                    return _rolled(it, body, target, state, names, done, numpy, mark, force,
                                   brk, site, session, guess)
                assert isinstance(it, range)
                count = (len(it) - done) // period
                state = _rolled_by(it, period, count, body, target, state, names, done, numpy,
                                   mark, force, guess)
            return _plain(it[done + count * period:], body, state)
        except CannotRoll as exc:
            if _next_period(exc, it, brk, period, done) > period:
                period += 1  # trace the body `period` times per iteration of the rolled loop
                continue
            if not traced and not peeled:
                # a Python number carried from the first iteration, else one iteration peeled
                undefined = not _carry_early(exc, force, numpy)
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


def _next_period(exc: CannotRoll, it: range | TracedRange, brk: str | None, period: int,
                 done: int) -> int:
    """How many iterations the rolled loop's body should run after ``exc``: one more when a
    name was rebound to another existing array (``u, v = v, u``) and that can roll, else
    ``period`` (and ``exc`` says why a swap cannot roll)."""
    if not exc.swap or period >= MAX_PERIOD:
        return period
    if brk is not None or not isinstance(it, range):
        exc.args = (f"{exc} (a loop that swaps arrays by name rolls only over a static range "
                    "and without `break`; copy instead: v[...] = u)",)
        return period
    return period + 1 if (len(it) - done) // (period + 1) >= 1 else period


def _rolled_by(it: range, period: int, count: int, body: Callable[..., Any],
               target: str | None, state: tuple[Any, ...], names: tuple[str, ...], done: int,
               numpy: bool, mark: int, force: Forced, guess: Sequence[carry.Root]
               ) -> tuple[Any, ...]:
    """Iterations ``done`` .. ``done + count * period`` of ``it`` as one lax.fori_loop whose
    body runs ``period`` iterations (names swapped among existing arrays are back where they
    started after them)."""
    start, step = it.start, it.step

    def make(roots: list[carry.Root]) -> Carry:
        return Carry(names, state, skip=target, numpy=numpy, mark=mark, force=force, roots=roots)

    def run(c: Carry) -> list[Any]:
        def step_fn(m: Any, flat: list[Any]) -> list[Any]:
            first = done + m * period
            seen = it[done:done + count * period]
            values = c.enter(list(flat), _index(start + first * step, numpy, seen))
            for j in range(period):
                values = body(_index(start + (first + j) * step, numpy, seen), values)
            return c.leave(values)

        with labels.region(None, labels.counted, c, 2):
            return list(lax.fori_loop(0, count, step_fn, list(c.init)))

    c, final = attempt(make, run, numpy, mark, guess)
    return c.finish(final, it[done + count * period - 1])


def _rolled(it: range | TracedRange, body: Callable[..., Any], target: str | None,
            state: tuple[Any, ...], names: tuple[str, ...], done: int, numpy: bool, mark: int,
            force: Forced, brk: str | None = None, site: Site | None = None,
            session: Session | None = None, guess: Sequence[carry.Root] = ()
            ) -> tuple[Any, ...]:
    """Iterations ``done`` .. end of ``it`` as one lax.fori_loop; with a break flag ``brk``
    one lax.while_loop that also ends when the flag is set. In NumPy mode under loops='auto',
    a loop over a static range whose iterations are independent runs batched (see batched)."""
    if brk is not None:
        return _rolled_until(it, body, target, state, names, done, numpy, mark, force, brk,
                             guess, site)
    start, step = it.start, it.step
    stop = it.stop if isinstance(it, TracedRange) else len(it)
    n = (stop - start + step - (1 if step > 0 else -1)) // step if isinstance(
        it, TracedRange) else stop

    def make(roots: list[carry.Root]) -> Carry:
        return Carry(names, state, skip=target, numpy=numpy, mark=mark, force=force, roots=roots)

    batch = numpy and session is not None and session.loops == "auto"
    runs: list[str | None] = []
    # Known before the body's trace, which starts with a memo of its own.
    span = _envelope(it) if batch and isinstance(it, TracedRange) else None

    def run(c: Carry) -> list[Any]:
        def step_fn(k: Any, flat: list[Any]) -> list[Any]:
            i = _index(_counted(start, k, step), numpy,
                       it[done:] if isinstance(it, range) else None)
            return c.leave(body(i, c.enter(list(flat), i)))

        if isinstance(it, TracedRange):
            with labels.region(None, labels.fori, c, target, False):
                if span is None:
                    return list(lax.fori_loop(done, jnp.maximum(n, 0), step_fn, list(c.init)))

                def at_value(v: Any, flat: list[Any]) -> list[Any]:
                    i = _index(v, numpy, range(*span))
                    return c.leave(body(i, c.enter(list(flat), i)))

                final, was = batched.fori_between(span, it.start, it.stop, n, at_value,
                                                  list(c.init))
            runs.append(was)
            return final
        with labels.region(None, labels.fori, c, target, True):
            final, was = batched.fori(done, n, step_fn, list(c.init), batch,
                                      nested=session is not None and session.depth > 1)
        runs.append(was)
        return final

    c, final = attempt(make, run, numpy, mark, guess)
    if runs and runs[-1] and site is not None and session is not None:
        count = f"{n - done}" if span is None else f"up to {span[1] - span[0]}"
        if runs[-1] == batched.BATCHED:
            session.note(f"{where(site)}: `{site[2]}` batched ({count} iterations): each one "
                         "writes only its own slot of the arrays it updates and reads no slot an "
                         "earlier one wrote, so they run at once")
        elif runs[-1] == batched.SUMMED:
            session.note(f"{where(site)}: `{site[2]}` summed ({count} iterations): it only adds "
                         "to the arrays it updates terms that read none of them, so it is their "
                         "first values plus the terms' sum, with no loop")
        elif runs[-1] == batched.SPLIT:
            session.note(f"{where(site)}: `{site[2]}` split ({count} iterations): the values it "
                         "updates fall into groups that read nothing of each other, and each "
                         "group's loop runs batched or as a sum, with no loop left")
        elif runs[-1] == batched.SELECTED:
            session.note(f"{where(site)}: `{site[2]}` gone ({count} iterations): its work that "
                         "reads none of the arrays it updates done for all iterations at once, "
                         "and its writes of rows and columns, a triangle of the matrix each, "
                         "made one select each, with no loop")
        else:
            session.note(f"{where(site)}: `{site[2]}` rolled, its work that reads none of the "
                         f"arrays it updates hoisted ahead of it ({count} iterations at once)")
    if isinstance(it, range):
        return c.finish(final, it[-1])
    return c.finish(final, _target_after(start + (n - 1) * step, n > done, target, state,
                                         names, site, numpy))


def _target_after(last: Any, ran: Any, target: str | None, state: tuple[Any, ...],
                  names: tuple[str, ...], site: Site | None, numpy: bool) -> Any:
    """The loop variable after a loop over a traced range: its last index when the loop ran
    (``ran``, traced), else what it held before, as in Python. Undefined (with why) when that
    cannot be one integer: it had no value (Python: UnboundLocalError when no iteration runs)
    or held something else."""
    if target is None or target not in names:
        return None
    before = state[names.index(target)]
    raw = unwrap(before)
    if isinstance(raw, int | np.integer) or (is_traced(before) and np.ndim(raw) == 0 and (
            np.issubdtype(jnp.asarray(raw).dtype, np.integer))):
        return _index(jnp.where(ran, last, raw), numpy)
    held = ("has no value before it" if isinstance(before, Undefined) else
            f"holds {before!r} before it")
    header = f"`{site[2]}` at {where(site)}" if site is not None else "the loop"
    why = (f"is the index of {header}, whose trip count is only known when the code runs, and "
           f"{held}: when that loop runs no iteration, Python leaves it "
           f"{'unassigned (UnboundLocalError)' if isinstance(before, Undefined) else 'so'}, "
           f"which compiled code cannot do. Give `{target}` an int before the loop (e.g. "
           f"`{target} = -1`), which it keeps when the loop runs no iteration.")
    return Undefined(target, why)


def _envelope(it: TracedRange) -> tuple[int, int] | None:
    """The static values ``lo .. hi - 1`` that every iteration's index of ``it`` (step 1) lies
    in, from its bounds' known ranges (``range(k + 1, n)`` inside a loop over k); None when a
    bound's range is not known or the envelope is shorter than a rolled loop."""
    if it.step != 1:
        return None

    def bounds(x: Any) -> tuple[int, int] | None:
        if isinstance(x, int | np.integer):
            return int(x), int(x)
        known = affine.of(x)
        return None if known is None else (known[2] + known[1], known[3] + known[1])

    start, stop = bounds(it.start), bounds(it.stop)
    if start is None or stop is None or stop[1] - start[0] < ROLL_THRESHOLD:
        return None
    return start[0], stop[1]


def _rolled_until(it: range | TracedRange, body: Callable[..., Any], target: str | None,
                  state: tuple[Any, ...], names: tuple[str, ...], done: int, numpy: bool,
                  mark: int, force: Forced, brk: str, guess: Sequence[carry.Root],
                  site: Site | None = None) -> tuple[Any, ...]:
    """Iterations ``done`` .. end of ``it`` as one lax.while_loop over the iteration number,
    ending early when the break flag ``brk`` is set (the index after the loop: the last
    iteration's, traced)."""
    start, step = it.start, it.step
    stop = it.stop if isinstance(it, TracedRange) else len(it)
    n = (stop - start + step - (1 if step > 0 else -1)) // step if isinstance(
        it, TracedRange) else stop
    upper = jnp.maximum(n, 0) if isinstance(it, TracedRange) else n
    counts: list[Any] = []

    def make(roots: list[carry.Root]) -> Carry:
        return Carry(names, state, skip=target, numpy=numpy, mark=mark, force=force, roots=roots)

    def run(c: Carry) -> list[Any]:
        carried = [s.name for s in c.slots if s.carried]
        if brk not in carried:
            raise CannotRoll(f"its break flag is {state[names.index(brk)]!r}")
        pos = carried.index(brk)

        def cond(loop: tuple[Any, list[Any]]) -> Any:
            k, flat = loop
            return jnp.logical_and(k < upper, jnp.logical_not(to_pred(flat[pos])))

        def step_fn(loop: tuple[Any, list[Any]]) -> tuple[Any, list[Any]]:
            k, flat = loop
            i = _index(start + k * step, numpy, it[done:] if isinstance(it, range) else None)
            return k + 1, c.leave(body(i, c.enter(list(flat), i)))

        k0 = jnp.asarray(done, jnp.asarray(upper).dtype)
        with labels.region(None, labels.counted, c):
            k, flat = lax.while_loop(cond, step_fn, (k0, list(c.init)))
        counts.append(k)
        return list(flat)

    c, final = attempt(make, run, numpy, mark, guess)
    last = start + (counts[-1] - 1) * step
    if isinstance(it, range):  # at least one iteration runs: it was not broken yet
        return c.finish(final, _index(last, numpy))
    return c.finish(final, _target_after(last, counts[-1] > done, target, state, names,
                                         site, numpy))


def while_stmt(test: Callable[..., Any], body: Callable[..., Any], state: tuple[Any, ...],
               names: tuple[str, ...], site: Site, writes: tuple[Any, ...] = ()
               ) -> tuple[Any, ...]:
    """A converted ``while``: Python while its condition is static, then one lax.while_loop
    (``writes``: as ``for_stmt``'s)."""
    session = current()
    while True:
        cond = test(state)
        if session is None or session.loops == "unroll" or not is_traced(cond):
            if not cond:
                return state
            state = body(state)
            continue
        with session.inside_loop():
            return _roll_while(test, body, state, names, site, writes)


def to_pred(cond: Any) -> Any:
    """A traced condition as a boolean scalar (NumPy's error for arrays of several elements)."""
    value = jnp.asarray(unwrap(cond))
    if value.size != 1:
        raise ValueError("The truth value of an array with more than one element is "
                         "ambiguous. Use a.any() or a.all()")
    return value.reshape(()).astype(bool)


def _roll_while(test: Callable[..., Any], body: Callable[..., Any], state: tuple[Any, ...],
                names: tuple[str, ...], site: Site, writes: tuple[Any, ...]) -> tuple[Any, ...]:
    numpy = context.current() is not None
    mark = carry.stamp() if numpy else 0
    guess = written_roots(writes, mark) if numpy else []
    force = Forced(_flags(names))
    for _ in range(len(names) + 2):
        def make(roots: list[carry.Root]) -> Carry:
            return Carry(names, state, skip=None, numpy=numpy, mark=mark, force=force,
                         roots=roots)

        def run(c: Carry) -> list[Any]:
            with labels.region(site, labels.carried, c):
                return list(lax.while_loop(lambda flat: to_pred(test(c.enter(list(flat)))),
                                           lambda flat: c.leave(body(c.enter(list(flat)))),
                                           list(c.init)))
        try:
            c, final = attempt(make, run, numpy, mark, guess)
        except CannotRoll as exc:
            if exc.forcible and exc.name not in force:
                force.add(exc.name)  # type: ignore[arg-type]  # forcible: has a name
                continue
            reason = str(exc) + (" (a `while` whose trip count is only known at run time "
                                 "cannot swap arrays by name; copy instead: v[...] = u)"
                                 if exc.swap else "")
            raise cannot_roll(site, reason, "tests a traced value, so it must become a "
                              "stablehlo.while") from exc
        return c.finish(final, None)
    raise cannot_roll(site, "its carried variables kept changing", "tests a traced value")


__all__ = ["TracedRange", "cannot_roll", "describe", "for_stmt", "iterate", "to_pred",
           "where", "while_stmt"]
