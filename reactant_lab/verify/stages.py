"""Compiling, running and timing a stage's module against a reference outcome (``check_module``),
and every stage of a StageTrace in turn (``verify_stages`` -> ``Verification``)."""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reactant_lab import backend, device_support
from reactant_lab.checks import count, flag
from reactant_lab.errors import ArgumentTypeError, TraceError
from reactant_lab.trace.traced import Traced
from reactant_lab.verify.compare import (
    REFERENCE_LABELS,
    TOLERANCE_TEXT,
    Outcome,
    compare,
    first_line,
    fresh_inputs,
    outcome,
    precision_floors,
    reference_name,
    reference_outcome,
)

if TYPE_CHECKING:
    from reactant_lab.compile import Compiled
    from reactant_lab.stages.runner import StageTrace

SLOWER = 2.0
"""A stage is marked slower when its run time exceeds this many times the fastest earlier one
(fastest samples compared)."""
_SLOWER_FLOOR_S = 10e-6  # ... and by more than this: timer noise on microsecond kernels
_SAMPLE_TARGET_S = 1e-3  # calls faster than this are batched into one sample


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
    """Why the module could not be compiled, run or timed (the figures that step would have
    given are None; a timing failure keeps the comparison)."""
    same_as: int | None = None
    """The earlier stage whose module this one equals (its figures are reused)."""
    slower: bool = False
    """More than SLOWER times the fastest earlier stage (and by more than timer noise)."""
    run_min_seconds: float | None = None
    """The fastest timed sample: what ``slower`` compares, being the figure other work on the
    machine disturbs least."""


def run_timer(compiled: Compiled, args: tuple[Any, ...], kwargs: dict[str, Any],
              repeat: int) -> float:
    """Median seconds of one run of the executable alone on (copies of) ``args``."""
    return statistics.median(run_samples(compiled, args, kwargs, repeat))


def run_samples(compiled: Compiled, args: tuple[Any, ...], kwargs: dict[str, Any],
                repeat: int) -> list[float]:
    """``repeat`` timed samples of one run of the executable alone on (copies of) ``args``,
    placed on its device once; calls faster than a millisecond are batched into samples."""
    a, k = fresh_inputs(args, kwargs)
    run = compiled.device_runner(*a, **k)
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
    return samples


def check_module(traced: Traced, ir: str, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                 want: Outcome, index: int = 0, name: str = "module", repeat: int = 5,
                 device: Any | None = None, time_it: bool = True,
                 floors: dict[str, float] | None = None) -> StageCheck:
    """Compile ``ir`` (a stage's module of ``traced``), run it on fresh copies of the inputs,
    compare with ``want`` and (``time_it``) time it. Whatever fails (XLA refusing the module,
    the executable failing, the timing) is recorded in ``StageCheck.error``, not raised."""
    from reactant_lab.compile import compile_traced

    # Any exception is a finding about this module (XLA's errors carry no stable type), so
    # each step catches Exception; KeyboardInterrupt still stops the verification.
    try:
        compiled = compile_traced(traced, ir, device=device, stage_name=name)
    except Exception as exc:
        return StageCheck(index=index, name=name, error=f"XLA compile failed: {first_line(exc)}")
    try:
        got = outcome(compiled, args, kwargs)
    except Exception as exc:
        return StageCheck(index=index, name=name, compile_seconds=compiled.compile_seconds,
                          error=f"run failed: {first_line(exc)}")
    c = compare(got, want, floors)
    samples: list[float] = []
    error = None
    if time_it:
        try:
            samples = run_samples(compiled, args, kwargs, repeat)
        except Exception as exc:
            error = f"timing failed: {first_line(exc)}"
    return StageCheck(index=index, name=name, compile_seconds=compiled.compile_seconds,
                      run_seconds=statistics.median(samples) if samples else None,
                      run_min_seconds=min(samples) if samples else None,
                      max_abs=c.max_abs, max_rel=c.max_rel, ok=c.ok, first_bad=c.first_bad,
                      error=error)


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
    def first_error(self) -> StageCheck | None:
        """The first stage whose module XLA could not compile or run, or None."""
        return next((c for c in self.checks if c.ok is None and c.error and c.same_as is None),
                    None)

    @property
    def ok(self) -> bool:
        """Every stage compiled, ran and matched the reference."""
        return all(c.ok is True for c in self.checks)

    def cells(self, index: int) -> tuple[str, str, str, str]:
        """The CELLS columns of stage ``index`` as text (the stage table's extra columns)."""
        c = next((c for c in self.checks if c.index == index), None)
        if c is None:
            return ("", "", "", "")
        return (_ms(c.compile_seconds), _ms(c.run_seconds), _num(c.max_abs), self._verdict(c))

    def table(self) -> str:
        """Plain text: per stage, compile time, run time, errors, and the marks."""
        rows = [("#", "stage", "compile", "run", "max abs err", "max rel err", "ok")]
        for c in self.checks:
            rows.append((str(c.index), c.name, _ms(c.compile_seconds), _ms(c.run_seconds),
                         _num(c.max_abs), _num(c.max_rel), self._verdict(c)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(w) if i in (1, 6) else cell.rjust(w)
                           for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
                 for row in rows]
        return "\n".join(lines + self.notes())

    def notes(self) -> list[str]:
        """The lines under a table: reference, tolerance, errors, first wrong / slower stage."""
        lines = [f"reference: {REFERENCE_LABELS[self.reference]}; run time: median of "
                 f"{self.repeat} samples; tolerance: {self.tolerance}"]
        lines += [f"  {c.index} {c.name}: {c.error}" for c in self.checks
                  if c.error and c.same_as is None]
        wrong, slow = self.first_wrong, self.first_slower
        if wrong is not None:
            lines.append(f"first stage that went wrong: {wrong.index} {wrong.name}: "
                         f"{wrong.first_bad}")
        if slow is not None:
            lines.append(f"first stage more than {SLOWER:g}x slower than an earlier one: "
                         f"{slow.index} {slow.name}")
        return lines

    def _verdict(self, c: StageCheck) -> str:
        if c.ok is None:
            verdict = "error" if c.error else "-"
        else:
            verdict = ("ok" if c.ok else "WRONG") + (" SLOWER" if c.slower else "")
        if c is self.first_wrong or c is self.first_slower or c is self.first_error:
            verdict += " <- first"
        return verdict + (f" (= {c.same_as})" if c.same_as is not None else "")

    def __str__(self) -> str:
        return self.table()


CELLS = ("compile", "run", "max abs err", "ok")
"""The columns ``Verification.cells`` gives, as the stage table heads them."""


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.3g} s"
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-4 else f"{seconds * 1e6:.3g} us"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2g}"


def verify_stages(stages: StageTrace, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                  reference: str = "auto", repeat: int = 5, device: Any | None = None,
                  changed_only: bool = True,
                  progress: Callable[[str], None] | None = None) -> Verification:
    """Compile and run every stage's module (with ``changed_only``, a stage that left the module
    as it was reuses the figures of the one before) and compare each with the reference."""
    count("repeat", repeat, minimum=1)
    flag("changed_only", changed_only)
    if progress is not None and not callable(progress):
        raise ArgumentTypeError(f"progress must be a function taking a message (str) or None, "
                                f"not {type(progress).__name__} {progress!r:.40}")
    traced = stages.traced
    if traced is None:
        raise TraceError("this StageTrace came from module text: it has no Python call to run "
                         "its stages with. Verify a traced call instead: "
                         "rl.trace(fn, *args).stages(...).verify(*args), or "
                         "rl.explore(fn, *args, verify=True).")
    ref = reference_name(traced, reference)
    target = backend.resolve_device(device)
    want = reference_outcome(traced, args, kwargs, ref,
                             lambda: stages.compile(0, device=device), target)
    platform = device_support.platform_of(target)
    floors, widened = precision_floors(stages.stages[0].ir, platform)
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
                             name=stage.name, repeat=repeat, device=device, floors=floors)
        checks.append(dataclasses.replace(check, slower=_slower(check, checks)))
    tolerance = TOLERANCE_TEXT if widened is None else f"{TOLERANCE_TEXT}; {widened}"
    return Verification(reference=ref, tolerance=tolerance, repeat=repeat,
                        checks=tuple(checks))


def _slower(check: StageCheck, before: Sequence[StageCheck]) -> bool:
    """Whether ``check`` ran more than SLOWER times slower than the fastest stage before it,
    comparing fastest samples (a median can catch a burst of other work on the machine)."""
    def fastest(c: StageCheck) -> float | None:
        return c.run_min_seconds if c.run_min_seconds is not None else c.run_seconds
    times = [t for t in map(fastest, before) if t is not None]
    mine = fastest(check)
    if mine is None or not times:
        return False
    best = min(times)
    return mine > SLOWER * best and mine - best > _SLOWER_FLOOR_S
