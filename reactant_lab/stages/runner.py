"""Run a preset or pipeline stage by stage, keeping the module after each stage: ``StageTrace``."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from reactant_lab import backend
from reactant_lab.analysis.normalize import normalize, strip_locations
from reactant_lab.analysis.ops import op_counts, op_delta, total_ops
from reactant_lab.errors import PassFailedError, PipelineError
from reactant_lab.stages.pipeline import fill, group_steps, split_passes
from reactant_lab.stages.presets import PRESETS, STAGES, check_preset
from reactant_lab.stages.reproducer import write_reproducer

if TYPE_CHECKING:
    from reactant_lab.compile import Compiled
    from reactant_lab.trace.traced import Traced

GRANULARITIES = ("stage", "pass")


@dataclass(frozen=True)
class Stage:
    """The module after one stage (or one pass) of a pipeline."""

    index: int
    """Position in the stage list; 0 is the traced module."""
    name: str
    """Stage name (``granularity='stage'``) or pass name (``granularity='pass'``)."""
    group: str
    """The preset stage this step belongs to (equal to ``name`` at stage granularity)."""
    pipeline: str
    """The pass pipeline that ran; empty for the traced module."""
    ir: str = field(repr=False)
    """Module text after the stage, with locations."""
    seconds: float
    """Wall time of the stage's passes."""
    changed: bool
    """Whether the module changed, ignoring locations and SSA renumbering."""
    op_counts: Mapping[str, int] = field(repr=False)
    """Op name -> number of such ops after the stage."""
    unavailable: str | None = None
    """Why (some of) the stage's passes could not run here; None when all ran."""

    @property
    def ops(self) -> int:
        """Number of ops, not counting the module and function shells."""
        return total_ops(dict(self.op_counts))

    def as_text(self, debug_info: bool = False) -> str:
        """The module after this stage (op locations only with ``debug_info=True``)."""
        return self.ir if debug_info else strip_locations(self.ir)


@dataclass(frozen=True)
class StageTrace:
    """Every stage of one pipeline run over a traced module."""

    traced: Traced | None = field(repr=False)
    """The traced call (None for a module given as text)."""
    optimize: str
    """Preset name, or 'custom' for a pipeline string."""
    granularity: str
    """'stage' or 'pass'."""
    no_nan: bool
    """Whether the enzyme-hlo patterns assumed no NaNs."""
    target: str
    """'cpu' or 'cuda': the target the lowering passes were run for."""
    stages: tuple[Stage, ...]
    """Stage 0 is the traced module; each later one is the module after that stage."""

    def __getitem__(self, key: int | str) -> Stage:
        if isinstance(key, int):
            return self.stages[key]
        for stage in self.stages:
            if stage.name == key:
                return stage
        raise KeyError(f"no stage named {key!r}; stages: {[s.name for s in self.stages]}")

    def __len__(self) -> int:
        return len(self.stages)

    @property
    def final(self) -> Stage:
        """The last stage."""
        return self.stages[-1]

    @property
    def pipeline(self) -> str:
        """All stages' passes as one pipeline string (what a one-shot run would execute)."""
        return ",".join(s.pipeline for s in self.stages[1:] if s.pipeline)

    @property
    def seconds(self) -> float:
        """Total pass time, stage 0 (tracing) excluded."""
        return sum(s.seconds for s in self.stages[1:])

    def compile(self, stage: int | str = -1, device: Any | None = None,
                donate: bool = False) -> Compiled:
        """Compile one stage's module (default: the last) with XLA for ``device``."""
        from reactant_lab.compile import compile_traced

        if self.traced is None:
            raise PipelineError("this StageTrace came from module text, not a traced call; "
                                "there is no Python signature to run it with")
        return compile_traced(self.traced, self[stage].ir, device=device, donate=donate,
                              stage_name=self[stage].name)

    def table(self) -> str:
        """Plain-text table: stage, ops, change in ops, changed, milliseconds."""
        rows = [("#", "stage", "ops", "Δops", "changed", "ms")]
        prev: Stage | None = None
        for s in self.stages:
            delta = "" if prev is None else f"{s.ops - prev.ops:+d}"
            mark = "yes" if s.changed else ("n/a" if s.unavailable and not s.pipeline else "-")
            rows.append((str(s.index), s.name, str(s.ops), delta, mark,
                         f"{s.seconds * 1e3:.1f}"))
            prev = s
        widths = [max(len(r[i]) for r in rows) for i in range(6)]
        lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in
                           enumerate(zip(r, widths, strict=True))) for r in rows]
        notes = [f"  {s.name}: {s.unavailable}" for s in self.stages if s.unavailable]
        return "\n".join(lines + (["unavailable here:", *notes] if notes else []))

    def op_delta(self, stage: int | str) -> dict[str, int]:
        """Change in op counts from the previous stage to ``stage``."""
        s = self[stage]
        prev = self.stages[s.index - 1] if s.index else s
        return op_delta(dict(prev.op_counts), dict(s.op_counts))

    def __str__(self) -> str:
        return f"StageTrace(optimize={self.optimize!r}, {len(self.stages)} stages)\n{self.table()}"


def plan(optimize: str, pipeline: str | None, granularity: str, *, no_nan: bool,
         target: str) -> list[tuple[str, str, str]]:
    """(step name, group, pipeline) for each step a run will execute."""
    if granularity not in GRANULARITIES:
        raise PipelineError(f"granularity must be one of {GRANULARITIES}, not {granularity!r}")
    if pipeline is not None:
        split_passes(pipeline)
        stages = [("custom", pipeline.strip())]
    else:
        check_preset(optimize)
        patterns = _patterns(no_nan) if PRESETS[optimize] else ""
        stages = [(STAGES[k].name, fill(STAGES[k].pipeline, patterns=patterns, target=target))
                  for k in PRESETS[optimize]]
    if granularity == "stage":
        return [(name, name, pipe) for name, pipe in stages]
    return [(step, name, pipe) for name, stage_pipe in stages
            for step, pipe in group_steps(split_passes(stage_pipe))]


@functools.lru_cache(maxsize=4)
def _patterns(no_nan: bool) -> str:
    return backend.transform_patterns(no_nan=no_nan)


def run_stages(traced: Traced, *, optimize: str = "all", granularity: str = "stage",
               pipeline: str | None = None, no_nan: bool = False,
               device: Any | None = None) -> StageTrace:
    """Run ``optimize`` (or ``pipeline``) on ``traced``'s module one step at a time."""
    return run_on_text(traced.text, optimize=optimize, granularity=granularity,
                       pipeline=pipeline, no_nan=no_nan, device=device, traced=traced,
                       first_seconds=traced.seconds)


def run_on_text(text: str, *, optimize: str = "all", granularity: str = "stage",
                pipeline: str | None = None, no_nan: bool = False, device: Any | None = None,
                traced: Traced | None = None, first_seconds: float = 0.0) -> StageTrace:
    """Like ``run_stages`` for a module given as text (Reactant's run_pass_pipeline_on_source)."""
    target = backend.platform(backend.resolve_device(device))
    steps = plan(optimize, pipeline, granularity, no_nan=no_nan, target=target)
    if pipeline is not None:
        backend.check_pipeline(split_passes(pipeline))
    first = Stage(0, "traced", "traced", "", text, first_seconds, True,
                  MappingProxyType(op_counts(text)))
    stages = [first]
    current, current_norm = text, normalize(text)
    for name, group, step in steps:
        stage = _run_step(len(stages), name, group, step, current, current_norm)
        if stage.ir is not current:
            current, current_norm = stage.ir, normalize(stage.ir)
        stages.append(stage)
    label = "custom" if pipeline is not None else optimize
    return StageTrace(traced, label, granularity, no_nan, target, tuple(stages))


def _run_step(index: int, name: str, group: str, step: str, current: str,
              current_norm: str) -> Stage:
    runnable, skipped = backend.runnable_passes(split_passes(step))
    reason = None
    if skipped:
        reason = (f"{', '.join(skipped)} not available: "
                  f"{backend.enzyme_unavailable_reason() or 'not registered'}")
    if not runnable:
        return Stage(index, name, group, "", current, 0.0, False,
                     MappingProxyType(op_counts(current)), reason)
    ran = ",".join(runnable)
    start = time.perf_counter()
    try:
        new = backend.run_pipeline(current, ran)
    except backend.PassRunFailure as exc:
        raise _pass_failed(name, ran, current, exc) from None
    seconds = time.perf_counter() - start
    changed = normalize(new) != current_norm
    return Stage(index, name, group, ran, new, seconds, changed,
                 MappingProxyType(op_counts(new)), reason)


def _pass_failed(stage: str, pipeline: str, before: str,
                 exc: backend.PassRunFailure) -> PassFailedError:
    """Find the failing pass of a stage (re-running it pass by pass) and describe it."""
    failing, ir, diagnostics = pipeline, before, exc.diagnostics
    steps = group_steps(split_passes(pipeline))
    if len(steps) > 1:
        for _, step in steps:
            try:
                ir = backend.run_pipeline(ir, step)
            except backend.PassRunFailure as inner:
                failing, diagnostics = step, inner.diagnostics
                break
        else:  # each pass alone succeeds: only the whole stage fails
            ir = before
    where = write_reproducer(ir, failing, diagnostics)
    message = (f"pass {failing[:200]!r} failed in stage {stage!r}.\nMLIR diagnostics:\n"
               f"  {diagnostics.strip()[:2000]}\n"
               + (f"Reproducer: {where} (python {where}/rerun.py)" if where else
                  "No reproducer could be written."))
    return PassFailedError(message, stage=stage, pass_name=failing, diagnostics=diagnostics,
                           last_good_ir=ir, reproducer=where)


def run_pipeline(source: str, pipeline: str) -> str:
    """Run a pass pipeline on MLIR text in one shot and return the new text."""
    backend.check_pipeline(split_passes(pipeline))
    try:
        return backend.run_pipeline(source, pipeline)
    except backend.PassRunFailure as exc:
        raise _pass_failed("pipeline", pipeline, source, exc) from None
