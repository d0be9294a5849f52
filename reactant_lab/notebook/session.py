"""What one ``%%reactant_jit`` cell records: its functions wrapped so that each call is traced,
staged, compiled and run once per signature, and one exploration per distinct signature."""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from reactant_lab.errors import ReactantLabError
from reactant_lab.explore import Exploration, ExploreOptions, build_from_trace, ran, verified
from reactant_lab.notebook.nested import call_nested, has_traced
from reactant_lab.trace import SignatureCache, flatten_for, trace
from reactant_lab.trace.user_errors import is_user_file

Example = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]
"""A call to re-run: the function, its positional and its keyword arguments."""


@dataclass(frozen=True)
class CellOptions:
    """The options of one ``%%reactant_jit`` cell."""

    explore: ExploreOptions = field(default_factory=ExploreOptions)
    """How each call signature is traced, staged and compiled."""
    run: bool = True
    """Run the compiled code (False: the calls run the original Python)."""
    bench: int | None = None
    """Benchmark each signature after the cell: None no, 0 with automatic repeats, N repeats."""
    baselines: tuple[str, ...] | None = None
    """The baselines of that benchmark (None: ``bench``'s default)."""


@dataclass
class Explored:
    """One distinct traced call signature of the cell."""

    fn: Callable[..., Any]
    """The cell's own function."""
    exploration: Exploration
    """Its trace, stages and executable (with the first compiled run's time)."""
    calls: int = 0
    """How many calls of the cell had this signature."""
    inputs: tuple[tuple[Any, ...], dict[str, Any]] = ((), {})
    """The first call's arguments as they were before it ran (for --bench, and the widget's
    verify and bisect): copies when the call updates arguments in place, else the arguments."""

    def example(self) -> Example:
        """The first call: the function and its arguments as they were before it ran."""
        args, kwargs = self.inputs
        return self.fn, args, kwargs


class CellFunction:
    """A cell function while its cell runs: each call goes through the cell's session."""

    def __init__(self, fn: Callable[..., Any], session: CellSession):
        self.fn = fn
        """The original function."""
        self.session = session
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return self.session.call(self.fn, args, kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)


class CellSession:
    """Explores and runs the calls of one cell; after ``close()`` its wrappers call through."""

    def __init__(self, options: CellOptions):
        self.options = options
        self.explored = SignatureCache[Explored](lambda e: e.exploration.traced_call)
        """The cell's entries, one per distinct call signature (per function)."""
        self._state = "idle"  # "tracing" / "plain" while a cell function runs, "closed" after
        self._nested: dict[Any, Any] = {}

    def wrap(self, fn: Any) -> Any:
        """``fn`` wrapped for this cell (non-callables and classes are returned unchanged)."""
        if isinstance(fn, CellFunction) or not callable(fn) or isinstance(fn, type):
            return fn
        return CellFunction(fn, self)

    def close(self) -> None:
        """The cell is over: wrappers kept somewhere call the original functions from now on."""
        self._state = "closed"

    def explorations(self) -> list[Exploration]:
        """One exploration per distinct call signature, in the order they first ran."""
        return [e.exploration for e in self.explored.values()]

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One call of a cell function."""
        __tracebackhide__ = True
        if self._state == "tracing":
            return call_nested(fn, args, kwargs, self._nested)
        if self._state != "idle" or has_traced(args, kwargs):
            # after the cell, inside --no-run's plain Python, or under the user's own JAX
            # transformation (jax.grad / vmap / jit of cell code): the original Python
            return fn(*args, **kwargs)
        flat = flatten_for(fn, args, kwargs, trace_scalars=self.options.explore.trace_scalars)
        if not flat.linear:  # no array argument: nothing to compile
            return fn(*args, **kwargs)
        entry = self.explored.get(flat, prefix=fn)
        first = entry is None
        if entry is None:
            entry = self._explore(fn, args, kwargs)
            self.explored.add(flat, entry, prefix=fn)
        entry.calls += 1
        if not self.options.run:
            with self._in("plain"):
                return fn(*args, **kwargs)
        if not first:
            compiled = entry.exploration.compiled
            assert compiled is not None  # built from a trace
            return compiled(*args, **kwargs)
        entry.exploration = ran(entry.exploration, args, kwargs)
        return entry.exploration.outputs

    def _explore(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> Explored:
        __tracebackhide__ = True
        self._nested = {}
        try:
            with self._in("tracing"):
                opts = self.options.explore
                traced = trace(fn, *args, trace_scalars=opts.trace_scalars, mode=opts.mode,
                               loops=opts.loops, **kwargs)
        except ReactantLabError:
            raise
        except Exception as exc:
            raise exc.with_traceback(user_traceback(exc.__traceback__)) from None
        finally:
            self._nested = {}
        inputs = _copy_inputs(args, kwargs) if traced.mutated else (args, dict(kwargs))
        ex = build_from_trace(traced, self.options.explore)
        if self.options.explore.verify:  # on copies, before the call runs
            ex = verified(ex, args, kwargs)
        return Explored(fn, ex, inputs=inputs)

    @contextlib.contextmanager
    def _in(self, state: str) -> Iterator[None]:
        saved, self._state = self._state, state
        try:
            yield
        finally:
            self._state = saved


def _copy_inputs(args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """NumPy arrays copied (the call may update them in place); everything else shared."""
    copied: tuple[tuple[Any, ...], dict[str, Any]] = jax.tree_util.tree_map(
        lambda x: x.copy() if isinstance(x, np.ndarray) else x, (args, kwargs))
    return copied


def user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` with only the user's own frames (the notebook's cells and the user's files): what
    went wrong in their code while it was traced, without reactant_lab's and JAX's frames."""
    frames, t = [], tb
    while t is not None:
        if is_user_file(t.tb_frame.f_code.co_filename):
            frames.append(t)
        t = t.tb_next
    if not frames:
        return tb
    out = None
    for t in reversed(frames):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out
