"""The loop policy of the trace running on this thread (``loops=``), and the notes it keeps about
each loop and branch: which rolled, which stayed Python, and why."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from reactant_lab.errors import TraceError, UnassignedVariableError
from reactant_lab.trace.user_errors import describe, user_frame

_UNBOUND = re.compile(r"local variable '(\w+)'")
"""The variable in Python's UnboundLocalError message."""

LOOPS = ("auto", "roll", "unroll")
"""``loops=`` values: roll what can be rolled (in NumPy mode, batch a loop whose iterations are
independent: see batched) and unroll the rest ('auto'), roll or fail ('roll'),
or run every loop as Python, unrolled into the trace ('unroll', the behaviour before loops were
converted)."""

ROLL_THRESHOLD = 8
"""A ``for`` over a static ``range`` with fewer iterations than this stays Python (unrolled)."""

GIVE_UP_AFTER = 2
"""A loop that failed to roll this many times in one trace is unrolled without trying again."""


@dataclass
class Session:
    """One trace's loop policy and what happened to its loops."""

    loops: str
    """'auto', 'roll' or 'unroll'."""
    numpy: bool = False
    """Whether the trace runs in NumPy mode (proxies) rather than JAX mode."""
    notes: dict[str, None] = field(default_factory=dict)
    """Notes in the order they were first made (a loop met many times is noted once)."""
    failures: dict[tuple[str, int], int] = field(default_factory=dict)
    """(file, line) of a loop -> how often it failed to roll."""
    unassigned: dict[tuple[str, str], str] = field(default_factory=dict)
    """(file, variable) -> why the variable may have no value there (see ``Undefined.why``),
    for the error when it is read."""

    depth: int = 0
    """How many converted loops are being traced around the point the trace is at (the loop
    being rolled counts): above 1, a loop's iterations run once per iteration of another."""
    peeling: int = 0
    """How many loops' first iterations, run apart before the rest rolls (``loops._roll``), are
    being traced around the point the trace is at: not counted in ``depth``, but their code is
    the loop body's."""

    def note(self, text: str) -> None:
        self.notes[text] = None

    def inside_loop(self) -> contextlib.AbstractContextManager[None]:
        """Trace a converted loop in here (``depth``)."""
        return self._counted("depth")

    def peeled_iteration(self) -> contextlib.AbstractContextManager[None]:
        """Trace a loop's first iteration, run apart, in here (``peeling``)."""
        return self._counted("peeling")

    @contextlib.contextmanager
    def _counted(self, name: str) -> Iterator[None]:
        """One more of ``name`` (a count of this session) while in here."""
        setattr(self, name, getattr(self, name) + 1)
        try:
            yield
        finally:
            setattr(self, name, getattr(self, name) - 1)

    def unassigned_error(self, exc: UnboundLocalError) -> UnassignedVariableError | None:
        """The error for ``exc`` (a read of a variable converted code deleted) when the
        variable may have a value for some inputs, else None (Python's own error stands)."""
        found = _UNBOUND.search(str(exc))
        frame = user_frame(exc.__traceback__)
        if found is None or frame is None:
            return None
        why = self.unassigned.get((frame.filename, found.group(1)))
        if why is None:
            return None
        return UnassignedVariableError(
            f"`{found.group(1)}` may have no value at {describe(frame)}\nIt {why}",
            found.group(1), frame.filename, frame.lineno)


_STATE = threading.local()


def check_loops(loops: str) -> None:
    if loops not in LOOPS:
        raise TraceError(f"unknown loops={loops!r}; valid values: {', '.join(LOOPS)}")


def current() -> Session | None:
    """The session of the trace running on this thread, if any."""
    stack: list[Session] = getattr(_STATE, "stack", [])
    return stack[-1] if stack else None


@contextlib.contextmanager
def session(loops: str, numpy: bool) -> Iterator[Session]:
    """Run a trace under the loop policy ``loops``."""
    check_loops(loops)
    if not hasattr(_STATE, "stack"):
        _STATE.stack = []
    opened = Session(loops, numpy)
    _STATE.stack.append(opened)
    try:
        yield opened
    finally:
        _STATE.stack.pop()
