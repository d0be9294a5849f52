"""Run a preset or pipeline stage by stage, keeping the module after each stage: ``StageTrace``."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from reactant_lab import backend, checks
from reactant_lab.analysis.normalize import normalize, strip_locations
from reactant_lab.analysis.ops import op_counts, op_delta, total_ops
from reactant_lab.errors import PipelineError, ReactantLabError, UnknownStageError
from reactant_lab.stages.failures import check_parses, interrupted, pass_failed
from reactant_lab.stages.kernels import CustomCallView, custom_call_views
from reactant_lab.stages.patterns import (
    DEFAULT_CHOICE,
    PatternChoice,
    pattern_list,
    without_patterns,
)
from reactant_lab.stages.pipeline import (
    TRANSFORM_TRIO,
    fill,
    group_steps,
    pass_name,
    split_passes,
)
from reactant_lab.stages.presets import (
    LOCATIONS_NOTE,
    ONLY_ON,
    PRESETS,
    SHARDY_STAGES,
    STAGES,
    StageSpec,
    check_preset,
    check_shardy_passes,
    jit_after,
    stage_keys,
    target_of,
)
from reactant_lab.stages.presets import SHARDY_PASSES as SHARDY_CHOICES
from reactant_lab.stages.progress import StageProgress

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from reactant_lab.compile import Compiled
    from reactant_lab.trace.traced import Traced
    from reactant_lab.verify import Verification

GRANULARITIES = ("stage", "pass")


@dataclass(frozen=True, kw_only=True)
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


@dataclass(frozen=True, kw_only=True)
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
    pattern_choice: PatternChoice = DEFAULT_CHOICE
    """How the call changed the enzyme-hlo pattern list (exact, excluded, replaced)."""
    shardy_passes: str = "default"
    """Reactant's ``shardy_passes`` choice; its stages ran only when ``sharded``."""
    sharded: bool = False
    """Whether the module is sharded over a mesh (it has an ``sdy.mesh``)."""

    @classmethod
    def deferred(cls, compute: Callable[[], StageTrace], final: tuple[str, str, float],
                 **fields: Any) -> StageTrace:
        """A StageTrace whose ``stages`` are run on first use (``compute()``), which knows its
        final module already: ``final`` is (the last stage's name, its module text, seconds),
        from one run of all the passes (``run_deferred``). ``compile()`` of the last stage
        needs no more; anything that reads ``stages`` runs them, once."""
        made = cls.__new__(cls)
        for f in dataclasses.fields(cls):
            if f.name != "stages":  # every other field given, or its default
                value = fields.pop(f.name) if f.name in fields else f.default
                if value is dataclasses.MISSING:
                    raise TypeError(f"StageTrace.deferred needs {f.name}=")
                object.__setattr__(made, f.name, value)
        if fields:
            raise TypeError(f"StageTrace has no fields {sorted(fields)}")
        object.__setattr__(made, "_compute", compute)
        object.__setattr__(made, "_final", final)
        return made

    def custom_calls(self) -> tuple[CustomCallView, ...]:
        """The traced module's ``stablehlo.custom_call`` ops, each with its call target, the
        stages that pass it through unchanged, and the MLIR of the kernel a Pallas TPU call
        carries (decoded from its backend config); empty when there are none."""
        return custom_call_views(self.stages)

    def __getattr__(self, name: str) -> Any:
        # Reached only for an attribute not set: ``stages`` of a deferred StageTrace.
        compute = self.__dict__.get("_compute")
        if name != "stages" or compute is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        stages = compute().stages
        object.__setattr__(self, "stages", stages)
        return stages

    @property
    def is_deferred(self) -> bool:
        """True while a deferred StageTrace's stages have not been run yet."""
        return "stages" not in self.__dict__

    @property
    def one_shot(self) -> str | None:
        """The final module of the one run of all the passes a deferred StageTrace was made
        with (what ``rl.jit`` compiled); None for stages run one by one from the start."""
        final: tuple[str, str, float] | None = self.__dict__.get("_final")
        return final[1] if final is not None else None

    @property
    def compile_path_seconds(self) -> float:
        """Pass time of the run whose module is compiled: the one run of all the passes of a
        deferred StageTrace (its stages are not run for it), else ``seconds``."""
        final: tuple[str, str, float] | None = self.__dict__.get("_final")
        return final[2] if final is not None else self.seconds

    def __getitem__(self, key: int | str) -> Stage:
        if isinstance(key, bool):  # True is 1 to Python, never a stage the user meant
            raise UnknownStageError(f"no stage {key!r}: a stage is an index (int) or a name "
                                    "(str), not a bool")
        if isinstance(key, int) and -len(self.stages) <= key < len(self.stages):
            return self.stages[key]
        for stage in self.stages:
            if not isinstance(key, int) and stage.name == key:
                return stage
        what = f"index {key}" if isinstance(key, int) else f"named {key!r}"
        listing = ", ".join(f"{s.index} {s.name!r}" for s in self.stages)
        raise UnknownStageError(
            f"no stage {what}; this StageTrace has {len(self.stages)} stages: {listing}. Use an "
            f"index from {-len(self.stages)} to {len(self.stages) - 1} or one of these names.")

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
                donate: bool | str = False, in_place: Collection[int] = (),
                prelowered: Any = None, timeout: float | None = None,
                xla_passes: bool = False) -> Compiled:
        """Compile one stage's module (default: the last) with XLA for ``device``; ``donate``,
        ``in_place``, ``prelowered``, ``timeout`` and ``xla_passes`` (keep XLA's own stages:
        ``Compiled.xla``) as in ``compile_traced``."""
        from reactant_lab.compile import compile_traced

        if self.traced is None:
            raise PipelineError("this StageTrace came from module text, not a traced call; "
                                "there is no Python signature to run it with")
        final: tuple[str, str, float] | None = self.__dict__.get("_final")
        if final is not None and stage in (-1, final[0]):
            name, ir, _ = final  # the one-shot run's module: the stages need not run for it
        else:
            chosen = self[stage]
            name, ir = chosen.name, chosen.ir
        return compile_traced(self.traced, ir, device=device, donate=donate, stage_name=name,
                              in_place=in_place, prelowered=prelowered, timeout=timeout,
                              xla_passes=xla_passes)

    def verify(self, *args: Any, reference: str = "auto", repeat: int = 5,
               device: Any | None = None, changed_only: bool = True,
               progress: Callable[[str], None] | None = None, **kwargs: Any) -> Verification:
        """Compile every stage's module, run it on ``args`` (fresh copies: the caller's arrays
        are not touched), compare with the reference and time it.

        ``reference``: 'auto' (NumPy eager for NumPy-mode code, ``jax.jit`` for JAX code),
        'numpy', 'jax' or 'stage0' (the traced module). Per stage: XLA compile seconds, the
        median of ``repeat`` timed runs of the executable, max abs / rel error, ok; a stage that
        did not change the module reuses the figures before it (``changed_only``). Tolerances
        follow the dtype (``Verification.tolerance`` says how).
        """
        from reactant_lab.verify import verify_stages

        return verify_stages(self, args, kwargs, reference=reference, repeat=repeat,
                             device=device, changed_only=changed_only, progress=progress)

    def table(self, verification: Verification | None = None) -> str:
        """Plain-text table: stage, ops, change in ops, changed, milliseconds; with a
        ``verification`` (``verify()``'s) also XLA compile time, run time, max abs error and
        ok per stage, the first wrong and first >2x slower stage marked '<- first', and the
        reference and tolerance under it."""
        return stage_table(self.stages, verification)

    def op_delta(self, stage: int | str) -> dict[str, int]:
        """Change in op counts from the previous stage to ``stage``."""
        s = self[stage]
        prev = self.stages[s.index - 1] if s.index else s
        return op_delta(dict(prev.op_counts), dict(s.op_counts))

    def __str__(self) -> str:
        return f"StageTrace(optimize={self.optimize!r}, {len(self.stages)} stages)\n{self.table()}"


def stage_table(stages: Sequence[Stage], verification: Verification | None = None) -> str:
    """``StageTrace.table`` of any stages (XLA's too: ``stages.xla``)."""
    rows: list[tuple[str, ...]] = [("#", "stage", "ops", "Δops", "changed", "ms")]
    prev: Stage | None = None
    for s in stages:
        delta = "" if prev is None else f"{s.ops - prev.ops:+d}"
        mark = "yes" if s.changed else ("n/a" if s.unavailable and not s.pipeline else "-")
        rows.append((str(s.index), s.name, str(s.ops), delta, mark, f"{s.seconds * 1e3:.1f}"))
        prev = s
    left = 2  # columns aligned left: '#' and 'stage' (and 'ok' when verified)
    if verification is not None:
        from reactant_lab.verify import CELLS, Verification

        checks.instance("verification", verification, Verification,
                        "a Verification from StageTrace.verify(*args), or None")
        rows = [rows[0] + CELLS] + [row + verification.cells(s.index)
                                    for row, s in zip(rows[1:], stages, strict=True)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i < left or i == 9 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(r, widths, strict=True))).rstrip() for r in rows]
    shared: dict[str, list[str]] = {}  # one line per note, however many stages share it
    for s in stages:
        if s.unavailable:
            shared.setdefault(s.unavailable, []).append(s.name)
    notes = [f"  {', '.join(names)}: {note}" for note, names in shared.items()]
    lines += (["notes (passes or patterns not run, or run another way):", *notes]
              if notes else [])
    return "\n".join(lines + (verification.notes() if verification is not None else []))


def plan(optimize: str, pipeline: str | None, granularity: str, *, no_nan: bool,
         target: str, choice: PatternChoice = DEFAULT_CHOICE, shardy_passes: str = "default",
         sharded: bool = False) -> list[tuple[str, str, str]]:
    """(step name, group, pipeline) for each step a run will execute: the preset's (or the
    custom pipeline's), then, for a ``sharded`` module, those of the ``shardy_passes`` choice
    (``shardy_stage`` says how they run)."""
    if granularity not in GRANULARITIES:
        raise PipelineError(f"granularity must be one of {GRANULARITIES}, not {granularity!r}")
    check_shardy_passes(shardy_passes)
    if pipeline is not None:
        if not isinstance(pipeline, str):
            raise PipelineError(f"pipeline must be a str of comma-separated passes such as "
                                f"'inline,canonicalize,cse', not {type(pipeline).__name__} "
                                f"({pipeline!r})")
        passes = split_passes(pipeline)
        if choice.exact or choice.replace is not None:
            raise PipelineError("exact= and patterns= choose a preset's pattern list; with "
                                "pipeline=..., write the list into its "
                                "enzyme-hlo-generate-td{patterns=...} pass")
        if choice.exclude:
            pipeline = ",".join(without_patterns(passes, choice.exclude))
        stages = [("custom", pipeline.strip())]
    else:
        check_preset(optimize)
        listed = pattern_list(no_nan=no_nan, target=target, choice=choice).text \
            if PRESETS[optimize] else ""
        stages = [(STAGES[k].name, fill(STAGES[k].pipeline, patterns=listed, target=target,
                                        exact=choice.exact))
                  for k in stage_keys(optimize, target)]
    if sharded:
        stages += [(SHARDY_STAGES[k].name, SHARDY_STAGES[k].pipeline)
                   for k in SHARDY_CHOICES[shardy_passes]]
    if granularity == "stage":
        return [(name, name, pipe) for name, pipe in stages]
    return [(step, name, pipe) for name, stage_pipe in stages
            for step, pipe in group_steps(split_passes(stage_pipe))]


def shardy_stage(group: str) -> StageSpec | None:
    """The spec of a ``shardy_passes`` stage named ``group``; None for any other stage."""
    return next((s for s in SHARDY_STAGES.values() if s.name == group), None)


def run_stages(traced: Traced, *, optimize: str = "all", granularity: str = "stage",
               pipeline: str | None = None, no_nan: bool = False,
               device: Any | None = None, exclude_patterns: Any = (), patterns: Any = None,
               exact: bool = False, shardy_passes: str = "default") -> StageTrace:
    """Run ``optimize`` (or ``pipeline``) on ``traced``'s module one step at a time (the
    pattern options and ``shardy_passes`` as in ``Traced.stages``)."""
    choice = PatternChoice.of(exact=exact, exclude_patterns=exclude_patterns, patterns=patterns)
    return run_on_text(traced.ir, optimize=optimize, granularity=granularity,
                       pipeline=pipeline, no_nan=no_nan, device=device, traced=traced,
                       first_seconds=traced.seconds, choice=choice,
                       shardy_passes=shardy_passes, sharded=bool(traced.layout.shardings))


def run_deferred(traced: Traced, *, optimize: str = "all", granularity: str = "stage",
                 pipeline: str | None = None, no_nan: bool = False, device: Any | None = None,
                 exclude_patterns: Any = (), patterns: Any = None, exact: bool = False,
                 shardy_passes: str = "default") -> StageTrace:
    """``run_stages``' StageTrace with the final module from one run of all the preset's passes
    in the worker (one parse and print instead of one per stage: about a third of the time),
    the stages themselves run when first looked at (``StageTrace.deferred``): what ``rl.jit``
    compiles from. The one-shot run leaves out the passes that cannot change the module
    (``without_idle_passes``); its module is the stage-by-stage one, text for text (tested over
    the differential suite). A custom pipeline, a sharded module (whose Shardy stages run on
    another pass manager) or passes without enzyme-ad run stage by stage, as does a one-shot
    run that fails (so the failing stage is named)."""
    kwargs: dict[str, Any] = {
        "optimize": optimize, "granularity": granularity, "pipeline": pipeline,
        "no_nan": no_nan, "device": device, "exclude_patterns": exclude_patterns,
        "patterns": patterns, "exact": exact, "shardy_passes": shardy_passes}
    if pipeline is not None or traced.layout.shardings or not backend.enzyme_available():
        return run_stages(traced, **kwargs)
    choice = PatternChoice.of(exact=exact, exclude_patterns=exclude_patterns, patterns=patterns)
    target = backend.platform(backend.resolve_device(device))
    steps = plan(optimize, None, granularity, no_nan=no_nan, target=target, choice=choice,
                 shardy_passes=shardy_passes)
    if not steps:
        return run_stages(traced, **kwargs)
    text = backend.module_text(traced.ir)
    passes = without_idle_passes([p for _, _, step in steps for p in split_passes(step)], text)
    start, span = time.perf_counter(), f"{steps[0][0]} to {steps[-1][0]}"
    try:
        final = backend.run_pipeline(text, ",".join(passes), on_wait=StageProgress(
            span, None)) if passes else text
    except (backend.PassRunFailure, ReactantLabError):
        return run_stages(traced, **kwargs)  # stage by stage: it names the stage that fails
    except KeyboardInterrupt:
        raise interrupted(span, time.perf_counter() - start, None) from None
    seconds = time.perf_counter() - start
    return StageTrace.deferred(
        lambda: run_stages(traced, **kwargs), (steps[-1][0], final, seconds), traced=traced,
        optimize=optimize, granularity=granularity, no_nan=no_nan, target=target,
        pattern_choice=choice, shardy_passes=shardy_passes, sharded=False)


def without_idle_passes(passes: list[str], text: str) -> list[str]:
    """``passes`` less those that cannot change module ``text``: each pass of ``ONLY_ON`` when the
    text holds none of its markers (no pass of a preset writes them, so none can before it)."""
    found = {m: m in text for markers in ONLY_ON.values() for m in markers}
    return [p for p in passes
            if not (markers := ONLY_ON.get(pass_name(p))) or any(found[m] for m in markers)]


def run_on_text(text: str, *, optimize: str = "all", granularity: str = "stage",
                pipeline: str | None = None, no_nan: bool = False, device: Any | None = None,
                traced: Traced | None = None, first_seconds: float = 0.0,
                choice: PatternChoice = DEFAULT_CHOICE, shardy_passes: str = "default",
                sharded: bool | None = None) -> StageTrace:
    """Like ``run_stages`` for a module given as text (Reactant's run_pass_pipeline_on_source).

    ``sharded`` (None: whether the text has an ``sdy.mesh``) says whether the
    ``shardy_passes`` stages run. Text that does not parse raises ModuleTextError naming MLIR's
    error, line and column.
    """
    text = backend.module_text(text)
    if sharded is None:
        sharded = "sdy.mesh @" in text
    target = backend.platform(backend.resolve_device(device))
    steps = plan(optimize, pipeline, granularity, no_nan=no_nan, target=target, choice=choice,
                 shardy_passes=shardy_passes, sharded=sharded)
    if pipeline is not None:
        backend.check_pipeline(split_passes(pipeline))
    elif traced is None:  # (with a custom pipeline, its first step parses the text)
        check_parses(text)
    first = Stage(index=0, name="traced", group="traced", pipeline="", ir=text,
                  seconds=first_seconds, changed=True, op_counts=MappingProxyType(op_counts(text)))
    stages = [first]
    current, current_norm = text, normalize(text)
    note = pattern_list(no_nan=no_nan, target=target, choice=choice).note \
        if pipeline is None else None
    # a pass of Reactant's left out after the jit lowering (presets.LOCATIONS_PASS)
    lowering = target_of(target)
    kept_locations = pipeline is None and jit_after(lowering, choice.exact) != lowering.jit_after
    for name, group, step in steps:
        step_note = note if TRANSFORM_TRIO[0] in step else (
            LOCATIONS_NOTE if kept_locations and "lower-jit" in step else None)
        stage = _run_step(len(stages), name, group, step, current, current_norm, step_note,
                          stages[-1].ops, shardy_stage(group) if sharded else None)
        if stage.ir is not current:
            current, current_norm = stage.ir, normalize(stage.ir)
        stages.append(stage)
    label = "custom" if pipeline is not None else optimize
    return StageTrace(traced=traced, optimize=label, granularity=granularity, no_nan=no_nan,
                      target=target, stages=tuple(stages), pattern_choice=choice,
                      shardy_passes=shardy_passes, sharded=sharded)


def _run_step(index: int, name: str, group: str, step: str, current: str,
              current_norm: str, note: str | None, ops: int,
              spec: StageSpec | None = None) -> Stage:
    on_jaxlib = spec is not None and spec.runner == "jaxlib"
    if on_jaxlib:
        passes = split_passes(step)
        runnable = [p for p in passes if backend.upstream_pass_available(p)]
        skipped = [p for p in passes if p not in runnable]
        reasons = [f"{', '.join(skipped)} not available: jaxlib's pass manager does not "
                   "register it, nor does enzyme-ad"] if skipped else []
    else:
        runnable, skipped = backend.runnable_passes(split_passes(step))
        reasons = [f"{', '.join(skipped)} not available: "
                   f"{backend.enzyme_unavailable_reason() or 'not registered'}"] if skipped else []
    if note and runnable:
        reasons.append(note)
    if spec is not None and spec.note and runnable:
        reasons.append(spec.note)
    reason = "; ".join(reasons) or None
    if not runnable:
        return Stage(index=index, name=name, group=group, pipeline="", ir=current, seconds=0.0,
                     changed=False, op_counts=MappingProxyType(op_counts(current)),
                     unavailable=reason)
    ran = ",".join(runnable)
    start = time.perf_counter()
    try:
        new = backend.run_pipeline(current, ran, use_enzyme=not on_jaxlib,
                                   on_wait=StageProgress(name, ops))
    except backend.PassRunFailure as exc:
        raise pass_failed(name, ran, current, exc) from None
    except KeyboardInterrupt:
        raise interrupted(name, time.perf_counter() - start, ops) from None
    seconds = time.perf_counter() - start
    changed = normalize(new) != current_norm
    return Stage(index=index, name=name, group=group, pipeline=ran, ir=new, seconds=seconds,
                 changed=changed, op_counts=MappingProxyType(op_counts(new)), unavailable=reason)


def run_pipeline(source: str | bytes, pipeline: str) -> str:
    """Run a pass pipeline on MLIR text (a str, or UTF-8 bytes) in one shot; return the new text.

    Raises ModuleTextError when the text does not parse (with MLIR's error, line and column),
    UnknownPassError for a pass that does not exist, PassFailedError (PassCrashedError for a
    crash) when a pass fails.
    """
    source = backend.module_text(source)
    if not isinstance(pipeline, str):
        raise PipelineError(f"the pipeline must be a str of comma-separated passes, not "
                            f"{type(pipeline).__name__} ({pipeline!r}), e.g. 'canonicalize,cse'")
    backend.check_pipeline(split_passes(pipeline))
    start = time.perf_counter()
    try:
        return backend.run_pipeline(source, pipeline, on_wait=StageProgress("pipeline", None))
    except backend.PassRunFailure as exc:
        raise pass_failed("pipeline", pipeline, source, exc) from None
    except KeyboardInterrupt:
        raise interrupted("pipeline", time.perf_counter() - start, None) from None
