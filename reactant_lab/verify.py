"""What each stage did to the answer and to the speed: compile a stage's module, run it on the
example inputs, compare what the user would see with a reference and time the executable.

The building blocks (``Outcome``, ``reference_outcome``, ``compare``, ``check_module``) serve
``StageTrace.verify`` and the bisection in ``reactant_lab.bisect``; both compare on the same
terms: every result leaf and the final value of every array argument (a NumPy kernel updates
them in place), each within a tolerance that follows its dtype.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from reactant_lab import backend
from reactant_lab.errors import ReactantLabError, TraceError
from reactant_lab.trace.traced import Traced

if TYPE_CHECKING:
    from reactant_lab.compile import Compiled
    from reactant_lab.stages.runner import StageTrace

REFERENCES = ("auto", "numpy", "jax", "stage0")
SLOWER = 2.0
"""A stage is marked slower when its run time exceeds this many times the fastest earlier one."""
_SLOWER_FLOOR_S = 10e-6  # ... and by more than this: timer noise on microsecond kernels
_SAMPLE_TARGET_S = 1e-3  # calls faster than this are batched into one sample


# -- tolerances ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tolerance:
    """How close a value must be to the reference: ``|got - want| <= rtol * (|want| + scale)``
    with ``scale`` the largest magnitude in the reference leaf (so cancellation near zero in a
    large-valued result is judged against the result's size); exact for integers and bools."""

    rtol: float
    """Relative tolerance (0: exact)."""

    def holds(self, got: np.ndarray, want: np.ndarray) -> np.ndarray:
        """Elementwise: whether ``got`` is close enough to ``want`` (NaN matches NaN)."""
        if self.rtol == 0:
            return np.asarray(got == want)
        g, w = got.astype(np.complex128 if np.iscomplexobj(want) else np.float64), \
            want.astype(np.complex128 if np.iscomplexobj(want) else np.float64)
        finite = np.isfinite(w)
        scale = float(np.max(np.abs(w[finite]), initial=0.0))
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(g - w) <= self.rtol * (np.abs(w) + scale)
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        return np.asarray(np.where(finite, close, same))


_RTOL = {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-4, "complex64": 1e-4,
         "float64": 1e-9, "complex128": 1e-9}


def tolerance_for(dtype: Any) -> Tolerance:
    """The tolerance for values of ``dtype``: 1e-2 for 16-bit floats, 1e-4 for float32 and
    complex64, 1e-9 for float64 and complex128, exact otherwise."""
    return Tolerance(_RTOL.get(np.dtype(dtype).name, 0.0))


TOLERANCE_TEXT = ("|got − want| ≤ rtol·(|want| + max|want|) per result: rtol 1e-2 for 16-bit "
                  "floats, 1e-4 for float32, 1e-9 for float64; integers and bools exact")


# -- outcomes --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    """What one call leaves for the user to see, on the host: each result leaf and the final
    value of each array argument (a NumPy kernel updates its arguments in place)."""

    names: tuple[str, ...]
    """One name per value: ``result[0]``, ``arg a`` ..."""
    values: tuple[np.ndarray, ...] = field(repr=False)
    """The values, as NumPy arrays."""


def fresh_inputs(args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A copy of the NumPy array leaves of the call (layout kept), so a run cannot touch the
    caller's arrays; JAX arrays are immutable and are kept."""
    def copy(leaf: Any) -> Any:
        return leaf.copy(order="K") if isinstance(leaf, np.ndarray) else leaf
    copied: tuple[tuple[Any, ...], dict[str, Any]] = jax.tree_util.tree_map(copy, (args, kwargs))
    return copied


def outcome(call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
            ) -> Outcome:
    """Run ``call`` on fresh copies of the inputs; what it returned and left in the arrays."""
    a, k = fresh_inputs(args, kwargs)
    result = jax.block_until_ready(call(*a, **k))
    return outcome_of(result, a, k)


def outcome_of(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
    """The outcome of a call that returned ``result`` and left ``args`` / ``kwargs`` so."""
    names, values = [], []
    for path, leaf in jax.tree_util.tree_leaves_with_path(result):
        names.append(f"result{jax.tree_util.keystr(path)}")
        values.append(np.asarray(leaf))
    for path, leaf in jax.tree_util.tree_leaves_with_path((args, kwargs)):
        if isinstance(leaf, np.ndarray):
            names.append(f"argument {_arg_name(path)}")
            values.append(np.array(leaf))
    return Outcome(tuple(names), tuple(values))


def _arg_name(path: tuple[Any, ...]) -> str:
    where, rest = path[0], path[1:]
    head = "kwargs" if getattr(where, "idx", 0) == 1 else "args"
    return head + jax.tree_util.keystr(tuple(rest))


def reference_name(traced: Traced, reference: str) -> str:
    """'numpy', 'jax' or 'stage0': what ``reference`` ('auto' included) stands for here."""
    if reference not in REFERENCES:
        raise ReactantLabError(f"unknown reference {reference!r}; valid: {', '.join(REFERENCES)}")
    if reference == "auto":
        return "numpy" if traced.mode == "numpy" else "jax"
    if reference == "numpy" and traced.mode != "numpy":
        raise TraceError("reference='numpy' needs NumPy-mode code; this function was traced in "
                         "JAX mode: use reference='jax' or 'stage0'")
    return reference


REFERENCE_LABELS = {"numpy": "NumPy eager", "jax": "jax.jit", "stage0": "the traced module"}


def reference_outcome(traced: Traced, args: tuple[Any, ...], kwargs: dict[str, Any],
                      reference: str, stage0: Callable[[], Compiled] | None = None) -> Outcome:
    """The reference outcome: the function run eagerly by NumPy, under ``jax.jit``, or the
    traced module (stage 0, compiled by ``stage0()``)."""
    fn = traced.fn
    if reference in ("numpy", "jax") and fn is None:
        raise TraceError("the traced call keeps no function to run as a reference; use "
                         "reference='stage0'")
    if reference == "numpy":
        assert fn is not None
        with np.errstate(all="ignore"):
            return outcome(fn, args, kwargs)
    if reference == "jax":
        assert fn is not None
        statics = tuple(i for i, a in enumerate(args) if not any(
            isinstance(x, np.ndarray | np.generic | jax.Array)
            for x in jax.tree_util.tree_leaves(a)))
        with backend.x64_scope(traced.layout.x64):
            jitted = jax.jit(fn, static_argnums=statics)
            return outcome(jitted, args, kwargs)
    if stage0 is None:
        raise ReactantLabError("reference='stage0' needs the traced module compiled")
    return outcome(stage0(), args, kwargs)


# -- comparison ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """How an outcome differs from the reference."""

    ok: bool
    """Every value within its dtype's tolerance (and of the reference's shape and dtype)."""
    max_abs: float
    """Largest absolute difference over all values (0 when equal; inf for a shape mismatch)."""
    max_rel: float
    """Largest difference relative to the reference value's magnitude."""
    first_bad: str | None = None
    """The first value that is off, with where and what: for the user to read."""


def compare(got: Outcome, want: Outcome) -> Comparison:
    """Compare value by value, each within the tolerance of the reference value's dtype."""
    max_abs = max_rel = 0.0
    first_bad: str | None = None
    if got.names != want.names:
        return Comparison(False, float("inf"), float("inf"),
                          f"different outputs: {list(got.names)} vs {list(want.names)}")
    for name, g, w in zip(want.names, got.values, want.values, strict=True):
        if g.shape != w.shape or g.dtype != w.dtype:
            bad = f"{name}: {g.dtype}{list(g.shape)}, reference {w.dtype}{list(w.shape)}"
            return Comparison(False, float("inf"), float("inf"), first_bad or bad)
        if w.size == 0:
            continue
        holds = tolerance_for(w.dtype).holds(g, w)
        if w.dtype.kind in "fciu":
            diff = np.abs(g.astype(np.complex128) - w.astype(np.complex128)) if \
                w.dtype.kind == "c" else np.abs(g.astype(np.float64) - w.astype(np.float64))
            finite = np.isfinite(diff)
            if finite.any():
                max_abs = max(max_abs, float(diff[finite].max()))
                mag = np.abs(w.astype(np.complex128 if w.dtype.kind == "c" else np.float64))
                with np.errstate(divide="ignore", invalid="ignore"):
                    rel = np.where(mag > 0, diff / np.where(mag > 0, mag, 1), diff > 0)
                max_rel = max(max_rel, float(np.asarray(rel)[finite].max()))
        if not holds.all() and first_bad is None:
            where = tuple(int(i) for i in np.argwhere(~holds)[0])
            first_bad = (f"{name}{list(where) if where else ''}: got {g[where]!r}, reference "
                         f"{w[where]!r} ({int((~holds).sum())} of {w.size} values off)")
    return Comparison(first_bad is None, max_abs, max_rel, first_bad)


# -- one module ------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class StageCheck:
    """One stage's module compiled, run on the example inputs and compared with the reference."""

    index: int
    """The stage's index (0: the traced module)."""
    name: str
    """The stage's name."""
    compile_seconds: float | None = None
    """XLA compile time of the stage's module (None when it did not compile)."""
    run_seconds: float | None = None
    """Median run time of the executable alone (inputs already on the device)."""
    max_abs: float | None = None
    """Largest absolute difference from the reference."""
    max_rel: float | None = None
    """Largest relative difference from the reference."""
    ok: bool | None = None
    """Within tolerance of the reference (None when it could not run)."""
    first_bad: str | None = None
    """The first value off, when not ok."""
    error: str | None = None
    """Why the module could not be compiled or run (then the figures are None)."""
    same_as: int | None = None
    """The earlier stage whose module this one equals (its figures are reused)."""
    slower: bool = False
    """More than SLOWER times the fastest earlier stage (and by more than timer noise)."""


def run_timer(compiled: Compiled, args: tuple[Any, ...], kwargs: dict[str, Any],
              repeat: int) -> float:
    """Median seconds of one run of the executable alone on ``args`` (placed on its device once;
    calls faster than a millisecond are batched into samples)."""
    run = compiled.device_runner(*args, **kwargs)
    run()  # the first call may allocate
    start = time.perf_counter()
    run()
    once = max(time.perf_counter() - start, 1e-9)
    batch = max(1, min(1000, int(_SAMPLE_TARGET_S / once)))
    samples = []
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        for _ in range(batch):
            run()
        samples.append((time.perf_counter() - start) / batch)
    return statistics.median(samples)


def check_module(traced: Traced, ir: str, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                 want: Outcome, index: int = 0, name: str = "module", repeat: int = 5,
                 device: Any | None = None, time_it: bool = True) -> StageCheck:
    """Compile ``ir`` (a stage's module of ``traced``), run it on fresh copies of the inputs,
    compare with ``want`` and (``time_it``) time it; failures are recorded, not raised."""
    from reactant_lab.compile import compile_traced

    try:
        compiled = compile_traced(traced, ir, device=device, stage_name=name)
    except ReactantLabError as exc:
        return StageCheck(index=index, name=name, error=f"XLA compile failed: {_first(exc)}")
    try:
        got = outcome(compiled, args, kwargs)
        seconds = run_timer(compiled, args, kwargs, repeat) if time_it else None
    except ReactantLabError as exc:
        return StageCheck(index=index, name=name, compile_seconds=compiled.compile_seconds,
                          error=f"run failed: {_first(exc)}")
    c = compare(got, want)
    return StageCheck(index=index, name=name, compile_seconds=compiled.compile_seconds,
                      run_seconds=seconds, max_abs=c.max_abs, max_rel=c.max_rel, ok=c.ok,
                      first_bad=c.first_bad)


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:400] if text else type(exc).__name__


# -- every stage -----------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Verification:
    """Every stage of a StageTrace compiled, run, compared and timed."""

    reference: str
    """'numpy', 'jax' or 'stage0': what the stages were compared with."""
    tolerance: str
    """The tolerance rule, in words."""
    repeat: int
    """Timed samples per stage (the median is reported)."""
    checks: tuple[StageCheck, ...]
    """One per stage, in stage order."""

    @property
    def first_wrong(self) -> StageCheck | None:
        """The first stage whose result is off the reference, or None."""
        return next((c for c in self.checks if c.ok is False and c.same_as is None), None)

    @property
    def first_slower(self) -> StageCheck | None:
        """The first stage more than SLOWER times slower than the fastest before it, or None."""
        return next((c for c in self.checks if c.slower and c.same_as is None), None)

    @property
    def ok(self) -> bool:
        """Every stage that ran matched the reference."""
        return all(c.ok is not False for c in self.checks)

    def table(self) -> str:
        """Plain text: per stage, compile time, run time, errors, and the marks."""
        rows = [("#", "stage", "compile", "run", "max abs err", "max rel err", "ok")]
        for c in self.checks:
            rows.append((str(c.index), c.name, _ms(c.compile_seconds), _ms(c.run_seconds),
                         _num(c.max_abs), _num(c.max_rel), _verdict(c)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(w) if i in (1, 6) else cell.rjust(w)
                           for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
                 for row in rows]
        lines.append(f"reference: {REFERENCE_LABELS[self.reference]}; tolerance: "
                     f"{self.tolerance}; run time: median of {self.repeat} samples")
        for c in self.checks:
            if c.error:
                lines.append(f"  {c.index} {c.name}: {c.error}")
        wrong, slow = self.first_wrong, self.first_slower
        if wrong is not None:
            lines.append(f"first stage that went wrong: {wrong.index} {wrong.name}: "
                         f"{wrong.first_bad}")
        if slow is not None:
            lines.append(f"first stage more than {SLOWER:g}x slower than an earlier one: "
                         f"{slow.index} {slow.name}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-4 else f"{seconds * 1e6:.3g} us"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2g}"


def _verdict(c: StageCheck) -> str:
    if c.ok is None:
        return "error" if c.error else "-"
    marks = ("ok" if c.ok else "WRONG") + (" SLOWER" if c.slower else "")
    return marks + (f" (= {c.same_as})" if c.same_as is not None else "")


def verify_stages(stages: StageTrace, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                  reference: str = "auto", repeat: int = 5, device: Any | None = None,
                  changed_only: bool = True,
                  progress: Callable[[str], None] | None = None) -> Verification:
    """Compile and run every stage's module (with ``changed_only``, a stage that left the module
    as it was reuses the figures of the one before) and compare each with the reference."""
    traced = stages.traced
    if traced is None:
        raise TraceError("this StageTrace came from module text: there are no inputs to run "
                         "it on. Verify a traced call (rl.trace(fn, *args).stages(...)).")
    ref = reference_name(traced, reference)
    want = reference_outcome(traced, args, kwargs, ref,
                             lambda: stages.compile(0, device=device))
    checks: list[StageCheck] = []
    for stage in stages.stages:
        if changed_only and checks and not stage.changed:
            prev = checks[-1]
            checks.append(dataclasses.replace(prev, index=stage.index, name=stage.name,
                                              same_as=prev.same_as if prev.same_as is not None
                                              else prev.index, slower=False))
            continue
        if progress is not None:
            progress(f"verify: stage {stage.index}/{len(stages) - 1} {stage.name}")
        check = check_module(traced, stage.ir, args, kwargs, want=want, index=stage.index,
                             name=stage.name, repeat=repeat, device=device)
        checks.append(dataclasses.replace(check, slower=_slower(check, checks)))
    return Verification(reference=ref, tolerance=TOLERANCE_TEXT, repeat=repeat,
                        checks=tuple(checks))


def _slower(check: StageCheck, before: Sequence[StageCheck]) -> bool:
    times = [c.run_seconds for c in before if c.run_seconds is not None]
    if check.run_seconds is None or not times:
        return False
    best = min(times)
    return check.run_seconds > SLOWER * best and check.run_seconds - best > _SLOWER_FLOOR_S
