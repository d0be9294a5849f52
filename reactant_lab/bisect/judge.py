"""Measure module variants of one traced call and say which are bad (``Judge``); run the
enzyme-hlo pattern step with a subset of its patterns and find the minimal bad subset."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from reactant_lab import backend, timing
from reactant_lab.analysis.normalize import normalize
from reactant_lab.bisect.search import ddmin
from reactant_lab.errors import PassFailedError, PipelineError
from reactant_lab.stages.pipeline import TRANSFORM_TRIO, split_passes
from reactant_lab.trace import Traced
from reactant_lab.verify import StageCheck, check_module, reference_outcome

COMPILE_FLOOR_S = 0.05
"""compile_time: bad only when also slower than the traced module by more than this."""
_BORDERLINE = 1.25  # a run time within this factor of the threshold is measured once more
_TD = "enzyme-hlo-generate-td{patterns="
PATTERN_STEP = "enzyme-hlo patterns"
"""The name of the pattern step (the transform trio) at pass granularity."""


class Judge:
    """Compiles and measures module variants of one traced call, and says which are bad; each
    distinct module (up to locations and SSA names) is measured once."""

    def __init__(self, traced: Traced, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                 metric: str, threshold: float, reference: str, repeat: int, device: Any,
                 say: Callable[[str], None]):
        self.traced, self.args, self.kwargs = traced, args, kwargs
        self.metric, self.threshold, self.repeat, self.device = metric, threshold, repeat, device
        self.say, self.reference = say, reference
        self.want = reference_outcome(traced, args, kwargs, reference,
                                      lambda: self._compile(traced.ir), device)
        self.tests = 0
        self.log: list[str] = []
        self._seen: dict[str, tuple[StageCheck, bool]] = {}
        self.base = self._check(traced.ir, 0, "traced")
        if metric == "runtime":  # a slow baseline would hide every slowdown: keep the faster
            again = self._check(traced.ir, 0, "traced")
            self.base = min(self.base, again, key=lambda c: c.run_seconds or math.inf)
        self._seen[normalize(traced.ir)] = (self.base, self.metric == "result" and
                                            self.base.ok is False)
        self.note("traced module (stage 0)", self.base, self._seen[normalize(traced.ir)][1])

    def _compile(self, ir: str) -> Any:
        from reactant_lab.compile import compile_traced
        return compile_traced(self.traced, ir, device=self.device, stage_name="traced")

    def _check(self, ir: str, index: int, name: str) -> StageCheck:
        self.tests += 1
        return check_module(self.traced, ir, self.args, self.kwargs, want=self.want,
                            index=index, name=name, repeat=self.repeat, device=self.device,
                            time_it=self.metric == "runtime")

    def ratio(self, check: StageCheck) -> float | None:
        """The variant's figure over the traced module's (runtime / compile_time)."""
        key = "run_seconds" if self.metric == "runtime" else "compile_seconds"
        got, base = getattr(check, key), getattr(self.base, key)
        return None if got is None or not base else got / base

    def is_bad(self, check: StageCheck) -> bool:
        """Whether the variant's metric is bad (a variant that failed to compile or run is not)."""
        if check.error:
            return False
        if self.metric == "result":
            return check.ok is False
        ratio = self.ratio(check)
        if ratio is None or ratio <= self.threshold:
            return False
        return self.metric == "runtime" or (check.compile_seconds or 0.0) - (
            self.base.compile_seconds or 0.0) > COMPILE_FLOOR_S

    def judge(self, ir: str, index: int, name: str) -> tuple[StageCheck, bool]:
        """The figures of module ``ir`` and whether it is bad (a borderline run time is
        measured twice, the faster kept: noise only ever slows a run down)."""
        key = normalize(ir)
        if key in self._seen:
            return self._seen[key]
        check = self._check(ir, index, name)
        ratio = self.ratio(check) if self.metric == "runtime" else None
        twice = ratio is not None and self.threshold / _BORDERLINE < ratio < \
            self.threshold * _BORDERLINE
        if twice:
            again = self._check(ir, index, name)
            check = min(check, again, key=lambda c: c.run_seconds or math.inf)
        verdict = self.is_bad(check)
        self._seen[key] = (check, verdict)
        self.note(name, check, verdict, " (measured twice)" if twice else "")
        return check, verdict

    def figure(self, check: StageCheck) -> str:
        """The measured figure of the metric, in words."""
        if check.error:
            return check.error
        if self.metric == "result":
            return "ok" if check.ok else f"off: {check.first_bad}"
        seconds = check.run_seconds if self.metric == "runtime" else check.compile_seconds
        ratio = self.ratio(check)
        return (f"{'run' if self.metric == 'runtime' else 'compile'} "
                f"{timing.format_seconds(seconds, 'us')}" +
                (f" ({ratio:.2f}x the traced module)" if ratio is not None else ""))

    def note(self, what: str, check: StageCheck, verdict: bool, extra: str = "") -> None:
        line = f"{what}: {self.figure(check)} -> {'BAD' if verdict else 'good'}{extra}"
        self.log.append(line)
        self.say(f"test {self.tests}: {line}")



# -- the enzyme-hlo pattern step -------------------------------------------------------------

def _pattern_list(step: str) -> tuple[list[str], list[str]] | None:
    """The passes of a pattern step and its pattern list, or None if it is not the plain trio."""
    passes = split_passes(step)
    if len(passes) != 3 or not (passes[0].startswith(_TD) and passes[0].endswith("}")):
        return None
    return passes, [p for p in passes[0][len(_TD):-1].split(";") if p]


def trio(passes: list[str], chosen: Sequence[str]) -> str:
    return ",".join([f"{_TD}{';'.join(chosen)}}}", *passes[1:]])


def minimal_patterns(judge: Judge, index: int, before: str, step: str
                      ) -> tuple[tuple[str, ...], str, StageCheck] | None:
    """The minimal bad pattern set of the pattern step ``step`` run on ``before``, the module it
    gives, and its figures; None when the step is not the plain trio or its list alone is not
    bad. Most sets give a module already measured (often the one before), which costs a pass
    run and no compile."""
    parsed = _pattern_list(step)
    if parsed is None:
        judge.log.append(f"pass {index}: not the plain {'/'.join(TRANSFORM_TRIO)} trio; "
                         "its patterns were not searched")
        return None
    passes, listed = parsed
    outputs: dict[frozenset[str], str | None] = {}

    def run(chosen: tuple[str, ...]) -> str | None:
        key = frozenset(chosen)
        if key not in outputs:
            try:
                outputs[key] = backend.run_pipeline(before, trio(passes, chosen))
            except (backend.PassRunFailure, PassFailedError, PipelineError) as exc:
                judge.log.append(f"{_names(chosen)}: the pass failed "
                                 f"({_first(exc)}) -> not reproducing")
                outputs[key] = None
        return outputs[key]

    def bad(chosen: tuple[str, ...]) -> bool:
        out = run(chosen)
        return out is not None and judge.judge(out, index, _names(chosen))[1]

    if not bad(tuple(listed)):
        judge.log.append(f"pass {index}: its patterns run alone on the module before it are not "
                         "bad; the patterns were not searched")
        return None
    judge.say(f"patterns: the smallest bad set of {len(listed)}")
    chosen = ddmin(listed, bad)
    out = run(chosen)
    assert out is not None  # bad(chosen) held
    return chosen, out, judge.judge(out, index, _names(chosen))[0]


def _names(chosen: Sequence[str]) -> str:
    """``2 patterns: a<1>, b<16>`` (the first three of a longer list)."""
    shown = ", ".join(chosen) if len(chosen) <= 4 else f"{', '.join(chosen[:3])}, ..."
    return f"{len(chosen)} pattern{'' if len(chosen) == 1 else 's'}: {shown}"


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__

