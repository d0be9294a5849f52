"""``bisect``: trace, measure the traced module, run the pipeline pass by pass, find the first
bad pass and, in the pattern pass, the minimal bad patterns; say why in words."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from reactant_lab import timing
from reactant_lab.bisect.judge import PATTERN_STEP, Judge, minimal_patterns, trio
from reactant_lab.bisect.reproducer import write_reproducer
from reactant_lab.bisect.result import BisectResult
from reactant_lab.bisect.search import first_bad
from reactant_lab.errors import ReactantLabError, TraceError
from reactant_lab.stages.patterns import pattern_list
from reactant_lab.stages.pipeline import split_passes
from reactant_lab.stages.runner import StageTrace
from reactant_lab.trace import Traced, trace
from reactant_lab.verify import REFERENCE_LABELS, StageCheck, reference_name

METRICS = ("result", "runtime", "compile_time")
DEFAULT_THRESHOLD = 2.0
"""Runtime and compile_time: bad above this many times the traced module's figure."""
_QUIET_S = 2.0  # progress=None prints nothing during the first seconds


def bisect(fn: Callable[..., Any], *args: Any, optimize: str = "all",
           pipeline: str | None = None, metric: str = "result", threshold: float | None = None,
           no_nan: bool = False, device: Any | None = None, mode: str = "auto",
           trace_scalars: bool | str = False, exclude_patterns: Any = (), patterns: Any = None,
           exact: bool = False, reference: str = "auto", repeat: int = 5,
           reproducer: bool | str | os.PathLike[str] = True,
           progress: bool | Callable[[str], None] | None = None, **kwargs: Any) -> BisectResult:
    """Find the first pass of ``optimize`` (or ``pipeline``) that makes ``fn(*args)`` bad, and
    inside the enzyme-hlo pattern pass the minimal set of patterns that does.

    ``metric``: 'result' (bad when off the ``reference``: NumPy eager for NumPy-mode code,
    ``jax.jit`` for JAX code, see ``StageTrace.verify``), 'runtime' (bad when the run time
    exceeds ``threshold``, default 2, times the traced module's) or 'compile_time' (the same for
    XLA compile time, and by more than COMPILE_FLOOR_S). The pass search assumes that once bad,
    the module stays bad through later passes. ``reproducer``: True writes a fresh directory
    under the reproducer root (``$REACTANT_LAB_REPRO_DIR`` or the temp dir), a path writes
    there, False writes none. ``progress``: None prints progress to stderr once a bisection has
    run 2 s; True / False always / never; a callable gets each line. The pattern options as in
    ``Traced.stages``.
    """
    start = time.perf_counter()
    factor = _check_arguments(fn, metric, threshold, repeat)
    say = _progress(progress, start)
    traced = trace(fn, *args, trace_scalars=trace_scalars, mode=mode, **kwargs)
    ref = reference_name(traced, reference)
    say("measuring the traced module")
    judge = Judge(traced, args, kwargs, metric=metric, threshold=factor, reference=ref,
                   repeat=repeat, device=device, say=say)
    head: dict[str, Any] = {"fn_name": traced.fn_name, "metric": metric,
            "threshold": None if metric == "result" else factor,
            "reference": ref if metric == "result" else None}

    def done(**fields: Any) -> BisectResult:
        return BisectResult(**head, **fields, tests=judge.tests, log=tuple(judge.log),
                            seconds=time.perf_counter() - start)

    if judge.base.error:
        return done(found=False, why=f"The traced module (stage 0) could not be measured: "
                                     f"{judge.base.error}. Nothing to compare the passes with.")
    if metric == "result" and judge.base.ok is False:
        return done(found=False, why=_stage0_differs(judge, ref))
    say("running the pipeline pass by pass")
    st = traced.stages(optimize, "pass", pipeline=pipeline, no_nan=no_nan, device=device,
                       exclude_patterns=exclude_patterns, patterns=patterns, exact=exact)
    final, final_bad = judge.judge(st.final.ir, len(st) - 1, "final module")
    if not final_bad:
        return done(found=False, regressed=False,
                    why=_not_bad(judge, final, st, exact=exact, custom=pipeline is not None))
    changed = [s.index for s in st.stages[1:] if s.changed]
    say(f"passes: the first bad one of the {len(changed)} that changed the module")
    culprit = st[changed[first_bad(len(changed), lambda i: judge.judge(
        st[changed[i - 1]].ir, changed[i - 1], f"pass {changed[i - 1]} {st[changed[i - 1]].name}"
    )[1]) - 1]]
    before = st[culprit.index - 1].ir
    good = judge.judge(before, culprit.index - 1, "before")[0]
    bad, after = judge.judge(culprit.ir, culprit.index, "after")[0], culprit.ir
    chosen: tuple[str, ...] = ()
    alone = culprit.pipeline
    if culprit.name == PATTERN_STEP:
        minimal = minimal_patterns(judge, culprit.index, before, culprit.pipeline)
        if minimal is not None:
            chosen, after, bad = minimal
            alone = trio(split_passes(culprit.pipeline), chosen)
    result = done(found=True, regressed=True, why=_found(judge, culprit.index, culprit.name, culprit.group,
                                         chosen, good, bad),
                  stage=culprit.group, pass_index=culprit.index, pass_name=culprit.name,
                  pass_pipeline=culprit.pipeline, patterns=chosen, before_ir=before,
                  after_ir=after, good=good, bad=bad)
    if reproducer is False:
        return result
    where = write_reproducer(reproducer, traced, args, kwargs, result, alone)
    return dataclasses.replace(result, reproducer=where, seconds=time.perf_counter() - start)


def _check_arguments(fn: Any, metric: str, threshold: Any, repeat: Any) -> float:
    """The threshold to use; ReactantLabError naming the bad argument otherwise."""
    from reactant_lab.compile import Compiled

    if isinstance(fn, str | bytes | Traced | StageTrace | Compiled):
        raise TraceError(f"bisect needs the Python function and its example arguments, e.g. "
                         f"rl.bisect(f, x, metric='runtime'), not a {type(fn).__name__}: it "
                         "traces the call, then compiles and runs each variant on the arguments "
                         "(module text has no inputs to run on)")
    if metric not in METRICS:
        raise ReactantLabError(f"unknown metric {metric!r}; valid: {', '.join(METRICS)}")
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ReactantLabError(f"repeat must be a positive int (timed samples), not {repeat!r}")
    if metric == "result":
        if threshold is not None:
            raise ReactantLabError("threshold applies to metric='runtime' or 'compile_time'; "
                                   "metric='result' uses the dtype's tolerance")
        return 0.0
    if threshold is None:
        return DEFAULT_THRESHOLD
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or \
            not threshold > 1:
        raise ReactantLabError(f"threshold must be a factor above 1 (bad when {metric} exceeds "
                               f"threshold x the traced module's), not {threshold!r}; e.g. 2.0")
    return float(threshold)


def _progress(progress: Any, start: float) -> Callable[[str], None]:
    """Where progress lines go (see ``bisect``)."""
    if progress is not None and not isinstance(progress, bool) and not callable(progress):
        raise ReactantLabError(f"progress must be None, True, False or a callable taking a "
                               f"str, not {progress!r}")
    quiet = _QUIET_S if progress is None else 0.0

    def say(line: str) -> None:
        elapsed = time.perf_counter() - start
        if callable(progress) and not isinstance(progress, bool):
            progress(f"[{elapsed:.1f} s] {line}")
        elif progress is not False and elapsed >= quiet:
            print(f"reactant_lab bisect [{elapsed:.0f} s]: {line}", file=sys.stderr, flush=True)
    return say


def _criterion(judge: Judge) -> str:
    if judge.metric == "result":
        return f"a result off {REFERENCE_LABELS[judge.reference]} beyond its dtype's tolerance"
    what = "run time" if judge.metric == "runtime" else "compile time"
    base = judge.base.run_seconds if judge.metric == "runtime" else judge.base.compile_seconds
    return (f"{what} above {judge.threshold:g}x the traced module's "
            f"{timing.format_seconds(base, 'us')}")


def _stage0_differs(judge: Judge, ref: str) -> str:
    return (f"The traced module (stage 0) already differs from {REFERENCE_LABELS[ref]}: "
            f"{judge.base.first_bad}. No pass is to blame: the difference comes from tracing "
            "(or the reference computes differently, e.g. in another precision). Use "
            "reference='stage0' to bisect the passes against the traced module.")


def _not_bad(judge: Judge, final: StageCheck, st: StageTrace, *, exact: bool,
             custom: bool) -> str:
    why = (f"The final module is not bad: {judge.figure(final)} (bad means {_criterion(judge)}). "
           "Nothing to bisect.")
    if not (exact or custom):
        left_out = pattern_list(no_nan=st.no_nan, target=st.target,
                                choice=st.pattern_choice).excluded
        if left_out:
            why += (f" The exclusion table left out {len(left_out)} of Reactant's enzyme-hlo "
                    "patterns measured wrong, crashing, never finishing or slow here "
                    f"({', '.join(left_out)}); exact=True runs them and may show what they do.")
    return why


def _found(judge: Judge, index: int, name: str, group: str, chosen: tuple[str, ...],
           good: StageCheck, bad: StageCheck) -> str:
    why = (f"The first bad pass (bad means {_criterion(judge)}) is pass {index} {name!r} of stage "
           f"{group!r}: {judge.figure(good)} before it, {judge.figure(bad)} after it.")
    if len(chosen) == 1:
        why += f" Inside it, the enzyme-hlo pattern {chosen[0]} alone does it."
    elif chosen:
        why += (f" Inside it, these {len(chosen)} enzyme-hlo patterns do it together (none of "
                f"them without the others): {', '.join(chosen)}.")
    return why + (" The pass search assumes that once bad, the module stays bad through later "
                  "passes.")

