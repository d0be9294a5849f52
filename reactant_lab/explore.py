"""Reactant-style conveniences over the pipeline: explore, jit, code_hlo, code_xla; and the one
builder every entry point (explore, jit, the magics, the widget's re-run, the CLI) makes its
``Exploration`` with, from one frozen ``ExploreOptions``."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import jax
import numpy as np

from reactant_lab import backend, checks
from reactant_lab.analysis.provenance import LineOps, function_code, main_file, op_source_sets
from reactant_lab.analysis.provenance import ops_for_line as _ops_for_line
from reactant_lab.compile import Compiled, check_timeout, prelower
from reactant_lab.errors import (
    ArgumentTypeError,
    PipelineError,
    SignatureMismatchError,
    TraceError,
    UnknownStageError,
)
from reactant_lab.host_memory import read_in_place
from reactant_lab.stages.patterns import PatternChoice
from reactant_lab.stages.presets import check_preset, check_shardy_passes
from reactant_lab.stages.runner import (
    GRANULARITIES,
    Stage,
    StageTrace,
    run_deferred,
    run_on_text,
)
from reactant_lab.stages.xla import XlaStages
from reactant_lab.trace import LOOPS, MODES, SignatureCache, Traced, flatten_for, sharding, trace
from reactant_lab.trace.jax_mode import fn_name
from reactant_lab.trace.user_fn import check_callable, check_traceable
from reactant_lab.verify import Verification


@dataclass(frozen=True)
class ExploreOptions:
    """Everything that decides an exploration besides the function and its arguments, as one
    value, so that no entry point drops an option on the way."""

    optimize: str = "all"
    """Optimize preset (``reactant_lab.PRESETS``); ignored when ``pipeline`` is given."""
    pipeline: str | None = None
    """A pass pipeline to run instead of the preset."""
    granularity: str = "stage"
    """'stage' (one step per preset stage) or 'pass' (one step per pass)."""
    no_nan: bool = False
    """Let the enzyme-hlo patterns assume no NaNs."""
    device: Any = None
    """None (JAX's default device), 'cpu', 'gpu', 'tpu' or a jax Device."""
    donate: bool | str = False
    """Donate argument buffers to the executable: True (every one not preserved), 'updated'
    (those of the arguments a NumPy kernel updates in place), 'auto' (those, but for large
    64-byte-aligned NumPy arrays, which XLA reads in place: ``host_memory.read_in_place``) or
    False."""
    trace_scalars: bool | str = False
    """Trace Python numbers (else they are static); 'floats': trace Python floats and complex
    numbers only (ints and bools, which often decide shapes, stay static)."""
    mode: str = "auto"
    """Trace mode: 'auto', 'numpy' or 'jax'."""
    loops: str = "auto"
    """Python loops and branches: 'auto' (roll where possible), 'roll' or 'unroll'."""
    exclude_patterns: tuple[str, ...] = ()
    """enzyme-hlo patterns to leave out (entries or names, e.g. 'slice_of_dynamic_update')."""
    patterns: tuple[str, ...] | None = None
    """An enzyme-hlo pattern list to run instead of Reactant's."""
    exact: bool = False
    """Run Reactant's pattern list untouched (the exclusion table is not applied)."""
    verify: bool = False
    """Compile, run, compare and time every stage on the example arguments (``verified``)."""
    reference: str = "auto"
    """What verification compares with: 'auto', 'numpy', 'jax' or 'stage0'."""
    in_shardings: Any = None
    """Argument path -> jax.sharding.PartitionSpec over ``mesh`` (or a NamedSharding), as in
    ``trace``; JAX arrays placed over a mesh are sharded as they are without it."""
    mesh: Any = None
    """The mesh ``in_shardings`` lays arguments over: a jax.sharding.Mesh, or axis sizes such
    as ``{"data": 4, "model": 2}`` (a mesh over the first devices present)."""
    out_shardings: Any = None
    """Result path -> jax.sharding.PartitionSpec over the arguments' mesh (or a
    NamedSharding), as in ``trace``."""
    shardy_passes: str = "default"
    """Reactant's ``shardy_passes`` choice for a sharded call, as in ``Traced.stages``:
    'default' or 'to_mhlo_shardings' (Shardy's propagation and export as stages)."""
    timeout: float | None = None
    """Seconds each run of the compiled call may take before CallTimeoutError (None: no
    limit); see ``Compiled.guarded``."""
    xla_passes: bool = True
    """Keep XLA's own stages (its module after each HLO pass: ``Exploration.xla_stages``);
    XLA printing them makes the compile ~1.4x as long (benchmarks/xla_stages.py)."""

    def __post_init__(self) -> None:
        choice = PatternChoice.of(exact=self.exact, exclude_patterns=self.exclude_patterns,
                                  patterns=self.patterns)
        object.__setattr__(self, "exclude_patterns", choice.exclude)
        object.__setattr__(self, "patterns", choice.replace)
        for name in ("no_nan", "verify", "xla_passes"):
            checks.flag(name, getattr(self, name))
        checks.scalars(self.trace_scalars)
        if self.pipeline is None:
            check_preset(self.optimize)
        if self.granularity not in GRANULARITIES:
            raise PipelineError(f"granularity must be one of {GRANULARITIES}, not "
                                f"{self.granularity!r}")
        if self.mode not in MODES:
            raise TraceError(f"unknown trace mode {self.mode!r}; valid modes: {', '.join(MODES)}")
        if self.loops not in LOOPS:
            raise TraceError(f"unknown loops={self.loops!r}; valid values: {', '.join(LOOPS)}")
        check_shardy_passes(self.shardy_passes)
        object.__setattr__(self, "timeout", check_timeout(self.timeout))
        if self.in_shardings is not None or self.mesh is not None:
            # Checked (and a mesh of axis sizes built) once, before anything is traced.
            object.__setattr__(self, "mesh", sharding.make_mesh(self.mesh))
            object.__setattr__(self, "in_shardings",
                               tuple(sharding.in_mapping(self.in_shardings).items()) or None)
        if self.out_shardings is not None:
            object.__setattr__(self, "out_shardings",
                               sharding.check_out(self.out_shardings) or None)

    @property
    def sharding_kwargs(self) -> dict[str, Any]:
        """The sharding options as ``trace`` takes them."""
        return {"in_shardings": dict(self.in_shardings or ()) or None, "mesh": self.mesh,
                "out_shardings": dict(self.out_shardings or ()) or None}

    @property
    def pattern_kwargs(self) -> dict[str, Any]:
        """The pattern options as ``Traced.stages`` takes them."""
        return {"exclude_patterns": self.exclude_patterns, "patterns": self.patterns,
                "exact": self.exact}

    def replace(self, **changes: Any) -> ExploreOptions:
        """These options with ``changes`` (checked again)."""
        known = [f.name for f in dataclasses.fields(self)]
        unknown = checks.misspelt(changes, known)
        if unknown:
            raise ArgumentTypeError(f"unknown option{'s' if len(unknown) > 1 else ''} "
                                    f"{', '.join(unknown)}; the options are {', '.join(known)}")
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ModuleSource:
    """What an exploration of module text explored: the text itself. It has no Python call, so
    nothing is compiled or run."""

    ir: str = field(repr=False)
    """The module text as given."""
    fn_name: str = "module"
    """Name shown for it."""
    mode: None = None
    """No trace mode: the module was not traced."""


@dataclass(frozen=True, kw_only=True)
class Exploration:
    """One call explored end to end: trace, stages, compiled executable, and a run's outputs."""

    traced: Traced | ModuleSource
    """The traced call, or the module text for an exploration of text."""
    stages: StageTrace
    """The module after each stage of the preset."""
    compiled: Compiled | None
    """The executable of the last stage (None when not compiled)."""
    outputs: Any = field(repr=False, default=None)
    """What the compiled function returned on the example arguments (None when not run)."""
    run_seconds: float | None = None
    """Wall time of that run (first call: includes transfers)."""
    options: ExploreOptions = field(default_factory=ExploreOptions, repr=False)
    """The options it was built with (a re-run changes some of them)."""
    versions: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Versions of the compiler stack that built it (jax, jaxlib, enzyme-ad)."""
    verification: Verification | None = field(default=None, repr=False)
    """Every stage compiled, run, compared and timed (``verify=True``), or None."""

    @functools.cached_property
    def xla(self) -> XlaStages | None:
        """XLA's own pipeline for the compiled stage (``Compiled.xla``), its stages numbered on
        from the MLIR stages; None when nothing was compiled or the compile did not keep them
        (``rl.jit``'s explorations)."""
        found = self.compiled.xla if self.compiled is not None else None
        return found.reindexed(len(self.stages.stages)) if found is not None else None

    @property
    def xla_stages(self) -> tuple[Stage, ...]:
        """XLA's stages: the HLO module it began with, then the module after each of its HLO
        passes that changed it, the last being ``compiled.hlo_text()``; numbered on from the
        MLIR stages; empty when there are none (``xla``)."""
        return self.xla.stages if self.xla is not None else ()

    @property
    def all_stages(self) -> tuple[Stage, ...]:
        """The MLIR stages, then XLA's (``xla_stages``): what the explorer lists."""
        return (*self.stages.stages, *self.xla_stages)

    def stage(self, key: int | str) -> Stage:
        """One of ``all_stages``, by index or name (the first of that name):
        ``ex.stage('fusion')``, ``rl.diff(ex.stage('hlo'), ex.stage(-1))``."""
        every = self.all_stages
        if isinstance(key, int) and not isinstance(key, bool) and -len(every) <= key < len(every):
            return every[key]
        found = next((s for s in every if isinstance(key, str) and s.name == key), None)
        if found is not None:
            return found
        try:
            return self.stages[key]  # its error says what a key is and lists the MLIR stages
        except UnknownStageError as exc:
            if not self.xla_stages:
                raise
            listing = ", ".join(f"{s.index} {s.name!r}" for s in self.xla_stages)
            raise UnknownStageError(f"{exc} XLA's stages follow: {listing}.") from None

    @property
    def from_text(self) -> bool:
        """True for an exploration of module text (no trace, nothing compiled)."""
        return isinstance(self.traced, ModuleSource)

    @property
    def traced_call(self) -> Traced:
        """The traced call; an exploration of module text has none (TraceError)."""
        if isinstance(self.traced, ModuleSource):
            raise TraceError("this exploration was made from module text: it has no traced "
                             "call (no Python signature, nothing compiled)")
        return self.traced

    def summary(self) -> str:
        """Plain-text summary: signature, stage table (with the verification's columns when
        ``verification`` is set), compile and run times; for a call partitioned over several
        devices, its collectives and memory per device."""
        if isinstance(self.traced, ModuleSource):
            head = (f"Module text, optimize={self.stages.optimize}, granularity="
                    f"{self.stages.granularity}")
        else:
            head = self.traced.summary()
        parts = [head, "", self.stages.table(self.verification)]
        if self.compiled is not None:
            reused = (" (XLA did not run: the executable of an identical earlier compile)"
                      if self.compiled.reused else "")
            parts.append(f"\nXLA compile: {self.compiled.compile_seconds * 1e3:.1f} ms "
                         f"on {self.compiled.placement}{reused}")
            if self.xla is not None:
                parts.append(f"XLA's stages:\n{self.xla.table(passes=5)}")
            if len(self.compiled.devices) > 1:
                parts.append(self.compiled.collectives().table())
        if self.run_seconds is not None:
            parts.append(f"first run:   {self.run_seconds * 1e3:.2f} ms")
        return "\n".join(parts)

    @property
    def source_file(self) -> str | None:
        """The file the traced function is defined in, as its ops' locations name it (a notebook
        cell's own file); for module text, the file most of its ops come from; None if unknown."""
        if not isinstance(self.traced, ModuleSource) and self.traced.fn is not None:
            found = function_code(self.traced.fn)
            if found is not None:
                return found[0]
        return main_file([op_source_sets(self.stages.stages[0].ir)])

    def ops_for_line(self, n: int, file: str | None = None) -> LineOps:
        """The ops each stage holds that came from line ``n`` of ``file`` (default: the traced
        function's file; a notebook cell's line numbers are the cell's own, the ``%%`` line being
        line 1): per stage (of ``all_stages``: XLA's too, whose ops are HLO instructions) its
        index, name and ops (displayed line, op name, text), e.g.
        ``ex.ops_for_line(12).summary()`` -> ``line 12: 5 ops in traced, 2 in optimized``.
        ``file`` may be a bare file name (``kernels.py``)."""
        checks.count("ops_for_line's n (a line number)", n, minimum=1)
        if file is not None:
            checks.instance("file", file, str, "a file name (str) or None")
        file = file if file is not None else self.source_file
        if file is None:
            raise TraceError("no op of this exploration has a source location: pass file=")
        return _ops_for_line([(s.name, s.ir) for s in self.all_stages], n, file)

    def restaged(self, **changes: Any) -> Exploration:
        """The same trace (or text) staged and compiled again with some options changed, e.g.
        ``ex.restaged(optimize="none")``; nothing is run.

        Nor verified: an Exploration keeps no arguments to run the stages on, so the result's
        ``verification`` is None even when ``options.verify`` is set (kept, for the caller):
        ``verified(ex.restaged(...), args, kwargs)`` verifies it.
        """
        options = self.options.replace(**changes)
        if isinstance(self.traced, ModuleSource):
            return build_from_text(self.traced.ir, options)
        return build_from_trace(self.traced, options)

    def __repr__(self) -> str:
        return self.summary()


def build_from_trace(traced: Traced, options: ExploreOptions, *, defer: bool = False,
                     in_place: Collection[int] = ()) -> Exploration:
    """Stage ``traced`` with ``options`` and compile the last stage, keeping XLA's own stages
    (``options.xla_passes``); ``defer=True`` compiles the module of one run of all the passes
    (XLA's stages not kept) and runs the stages one by one only when they are first looked at
    (``run_deferred``: ``rl.jit``'s first call). ``in_place``: the linear arguments
    ``donate='auto'`` keeps (``compile_traced``)."""
    prelowered = None
    if defer:
        prelowered = prelower(traced, options.device, options.donate)  # while the passes run
        stages = run_deferred(traced, optimize=options.optimize,
                              granularity=options.granularity, pipeline=options.pipeline,
                              no_nan=options.no_nan, device=options.device,
                              shardy_passes=options.shardy_passes, **options.pattern_kwargs)
    else:
        stages = traced.stages(options.optimize, options.granularity,
                               pipeline=options.pipeline, no_nan=options.no_nan,
                               device=options.device, shardy_passes=options.shardy_passes,
                               **options.pattern_kwargs)
    compiled = stages.compile(device=options.device, donate=options.donate, in_place=in_place,
                              prelowered=prelowered, timeout=options.timeout,
                              xla_passes=options.xla_passes and not defer)
    return Exploration(traced=traced, stages=stages, compiled=compiled, options=options,
                       versions=_versions())


def build_from_text(text: str, options: ExploreOptions) -> Exploration:
    """Stage module text with ``options`` (Reactant's run_pass_pipeline_on_source)."""
    stages = run_on_text(text, optimize=options.optimize, granularity=options.granularity,
                         pipeline=options.pipeline, no_nan=options.no_nan,
                         device=options.device, choice=PatternChoice.of(**options.pattern_kwargs),
                         shardy_passes=options.shardy_passes)
    return Exploration(traced=ModuleSource(text), stages=stages, compiled=None, options=options,
                       versions=_versions())


@functools.cache
def _versions() -> Mapping[str, str]:
    return MappingProxyType(backend.versions())


def build(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any],
          options: ExploreOptions, *, run: bool = False, defer: bool = False,
          in_place: Collection[int] = ()) -> Exploration:
    """Trace ``fn(*args, **kwargs)``, stage, compile, (``options.verify``) verify every stage on
    copies of the arguments and (``run=True``) run it once: the one sequence every entry point
    uses (a NumPy kernel's arguments are then updated in place). ``defer`` and ``in_place`` as
    in ``build_from_trace`` (``defer`` not with ``verify``, which runs every stage)."""
    traced = trace(fn, *args, trace_scalars=options.trace_scalars, mode=options.mode,
                   loops=options.loops, **options.sharding_kwargs, **kwargs)
    ex = build_from_trace(traced, options, defer=defer and not options.verify,
                          in_place=in_place)
    if options.verify:
        ex = verified(ex, args, kwargs)
    return ran(ex, args, kwargs) if run else ex


def verified(ex: Exploration, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Exploration:
    """``ex`` with every stage compiled, run on fresh copies of ``args``, compared with the
    reference (``ex.options.reference``) and timed (whatever ``ex.options.verify`` says). An
    exploration of module text has no call to run: TraceError."""
    if isinstance(ex.traced, ModuleSource):
        raise TraceError("an exploration of module text has no Python call to run its stages "
                         "with, so it cannot be verified; explore the function itself: "
                         "rl.explore(fn, *args, verify=True)")
    verification = ex.stages.verify(*args, reference=ex.options.reference,
                                    device=ex.options.device, **kwargs)
    return dataclasses.replace(ex, verification=verification)


def ran(ex: Exploration, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Exploration:
    """``ex`` with the outputs and time of one run of its executable on ``args``."""
    assert ex.compiled is not None  # built from a trace
    start = time.perf_counter()
    outputs = jax.block_until_ready(ex.compiled(*args, **kwargs))
    return dataclasses.replace(ex, outputs=outputs, run_seconds=time.perf_counter() - start)


def explore(fn: Callable[..., Any], *args: Any, optimize: str = "all",
            granularity: str = "stage", pipeline: str | None = None, no_nan: bool = False,
            device: Any | None = None, trace_scalars: bool | str = False, run: bool = True,
            mode: str = "auto", donate: bool = False, exclude_patterns: Any = (),
            patterns: Any = None, exact: bool = False, verify: bool = False,
            reference: str = "auto", loops: str = "auto", in_shardings: Any = None,
            mesh: Any = None, out_shardings: Any = None, shardy_passes: str = "default",
            timeout: float | None = None, xla_passes: bool = True,
            **kwargs: Any) -> Exploration:
    """Trace, run the stages, compile the last one and (``run=True``) run it on the args (a NumPy
    kernel's updated arguments are then updated in place). The pattern options as in
    ``Traced.stages``. ``verify=True`` also compiles, runs and times every stage and compares
    it with ``reference`` (see ``StageTrace.verify``): ``Exploration.verification``.
    ``in_shardings`` / ``mesh`` / ``out_shardings`` as in ``trace``; ``shardy_passes`` as in
    ``Traced.stages``; ``timeout`` as in ``jit``. ``xla_passes``: keep XLA's own stages after
    the MLIR ones (``Exploration.xla_stages``: its module after each HLO pass that changed it,
    on the one compile)."""
    options = ExploreOptions(optimize=optimize, pipeline=pipeline, granularity=granularity,
                             no_nan=no_nan, device=device, donate=donate,
                             trace_scalars=trace_scalars, mode=mode, loops=loops,
                             exclude_patterns=exclude_patterns, patterns=patterns, exact=exact,
                             verify=verify, reference=reference,
                             in_shardings=in_shardings, mesh=mesh,
                             out_shardings=out_shardings, shardy_passes=shardy_passes,
                             timeout=timeout, xla_passes=xla_passes)
    checks.flag("run", run)
    return build(fn, args, kwargs, options, run=run)


def code_hlo(fn: Callable[..., Any], *args: Any, optimize: str = "all",
             no_nan: bool = False, debug_info: bool = False, mode: str = "auto",
             exclude_patterns: Any = (), patterns: Any = None, exact: bool = False,
             loops: str = "auto", **kwargs: Any) -> str:
    """The module after the ``optimize`` preset, as text (Reactant's ``@code_hlo``)."""
    _check_not_compiled(fn, "code_hlo")
    checks.flag("debug_info", debug_info)
    stages = trace(fn, *args, mode=mode, loops=loops, **kwargs).stages(
        optimize, no_nan=no_nan, exclude_patterns=exclude_patterns, patterns=patterns,
        exact=exact)
    return stages.final.as_text(debug_info=debug_info)


def code_xla(fn: Callable[..., Any], *args: Any, optimize: str = "all", no_nan: bool = False,
             device: Any | None = None, mode: str = "auto", exclude_patterns: Any = (),
             patterns: Any = None, exact: bool = False, loops: str = "auto",
             **kwargs: Any) -> str:
    """XLA's optimized HLO after the ``optimize`` preset (Reactant's ``@code_xla``)."""
    _check_not_compiled(fn, "code_xla")
    stages = trace(fn, *args, mode=mode, loops=loops, **kwargs).stages(
        optimize, no_nan=no_nan, device=device, exclude_patterns=exclude_patterns,
        patterns=patterns, exact=exact)
    return stages.compile(device=device).hlo_text()


def _check_not_compiled(fn: Any, what: str) -> None:
    if isinstance(fn, Compiled | JitFunction):
        raise TraceError(f"{what} expects the original function, not a compiled one: pass "
                         f"{fn.traced.fn_name if isinstance(fn, Compiled) else fn_name(fn.fn)} "
                         "itself.")


class JitFunction:
    """``fn`` compiled on first call per signature (structure, shapes, dtypes, static values).

    A NumPy kernel's updated arguments are updated in place by each call, as NumPy would.
    """

    def __init__(self, fn: Callable[..., Any], *, optimize: str = "all",
                 pipeline: str | None = None, no_nan: bool = False,
                 device: Any | None = None, trace_scalars: bool | str = False,
                 donate: bool | str = "auto", mode: str = "auto", exclude_patterns: Any = (),
                 patterns: Any = None, exact: bool = False, loops: str = "auto",
                 in_shardings: Any = None, mesh: Any = None, out_shardings: Any = None,
                 shardy_passes: str = "default", timeout: float | None = None):
        self.options = ExploreOptions(optimize=optimize, pipeline=pipeline, no_nan=no_nan,
                                      device=device, donate=donate,
                                      trace_scalars=trace_scalars, mode=mode, loops=loops,
                                      exclude_patterns=exclude_patterns, patterns=patterns,
                                      exact=exact, in_shardings=in_shardings, mesh=mesh,
                                      out_shardings=out_shardings,
                                      shardy_passes=shardy_passes, timeout=timeout)
        """How each signature is traced, staged and compiled."""
        check_callable(fn, "jit")
        check_traceable(fn)
        self.fn = fn
        self.last: Exploration | None = None
        """The exploration of the most recent call's signature."""
        self._cache = SignatureCache[Exploration](lambda e: e.traced_call)
        self._kinds: tuple[Any, ...] = ()
        """The types of the last call's leaves (see ``__call__``)."""
        self._arrays: tuple[type, ...] | None = None
        """The types of the last call's n positional arguments when they were NumPy arrays and
        static values (Python numbers, strings) and its executable takes such calls on a lean
        path (``call_arrays``, kept as ``_lean``, which compares the static values), else
        None."""
        self._lean: Callable[[tuple[Any, ...]], Any] = lambda args: self(*args)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs and tuple(map(type, args)) == self._arrays:
            # A NumPy kernel called again on NumPy arrays, as last time: the lean path.
            try:
                return self._lean(args)
            except SignatureMismatchError:
                pass
        last = self.last
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
        kinds = tuple(map(type, leaves))
        if last is not None and last.compiled is not None and kinds == self._kinds:
            # The common case, a call like the last one: with the same kinds of values (NumPy
            # arrays, JAX arrays, Python numbers), the compiled function's own checks
            # (structure, static values, the memory layouts its trace depends on, then JAX's
            # shapes and dtypes) tell its signature from any other, on the leaves flattened here.
            try:
                return last.compiled.call_flattened(args, kwargs, leaves, treedef)
            except SignatureMismatchError:
                pass
        flat = flatten_for(self.fn, args, kwargs, trace_scalars=self.options.trace_scalars,
                           **self.options.sharding_kwargs)
        entry = self._cache.get(flat)
        if entry is None:
            in_place = [i for i, v in enumerate(flat.linear_values) if read_in_place(v)] \
                if self.options.donate == "auto" else []
            entry = build(self.fn, args, kwargs, self.options, defer=True, in_place=in_place)
            self._cache.add(flat, entry)
        self.last, self._kinds = entry, kinds
        compiled = entry.compiled
        assert compiled is not None  # built from a trace
        self._arrays = kinds if (
            compiled.array_args == len(args) == len(kinds) and not kwargs
            and all(kinds[i] is np.ndarray for i in compiled.array_positions)) else None
        self._lean = compiled.call_arrays
        return compiled(*args, **kwargs)

    @property
    def cache_size(self) -> int:
        """Number of signatures compiled so far."""
        return len(self._cache)

    def explorations(self) -> list[Exploration]:
        """One exploration per signature compiled so far, oldest first."""
        return self._cache.values()


def jit(fn: Callable[..., Any] | None = None, *, optimize: str = "all",
        pipeline: str | None = None, no_nan: bool = False, device: Any | None = None,
        trace_scalars: bool | str = False, donate: bool | str = "auto", mode: str = "auto",
        exclude_patterns: Any = (), patterns: Any = None, exact: bool = False,
        loops: str = "auto", in_shardings: Any = None, mesh: Any = None,
        out_shardings: Any = None, shardy_passes: str = "default",
        timeout: float | None = None) -> Any:
    """Compile ``fn`` through the Reactant pipeline on first call per signature (Reactant's
    ``@jit``). Usable as ``rl.jit(f)`` or as a decorator ``@rl.jit(optimize=...)``. ``mode``
    as in ``trace``: a NumPy kernel updates its NumPy arguments in place. By default the
    enzyme-hlo patterns measured wrong, crashing, never finishing or slow on the target are
    left out; ``exact=True`` runs Reactant's list untouched, ``exclude_patterns`` /
    ``patterns`` as in ``Traced.stages``; ``loops`` as in ``trace``. ``donate='updated'`` hands
    JAX's copy of each argument a NumPy kernel updates in place to the executable, which computes
    the new value in that buffer before it is written back into the caller's array (half the
    peak memory of an in-place update); ``'auto'`` (the default) does so but for the arrays the
    first call passes that XLA reads where they lie (64-byte aligned and 4 MiB or more, see
    ``rl.use_aligned_arrays``: donating one would make JAX copy it first); ``True`` donates
    every argument (JAX arrays passed in are then consumed), ``False`` none. JAX arrays placed
    over a mesh run sharded over it; ``in_shardings`` / ``mesh`` (as in ``trace``) shard NumPy
    arguments, ``out_shardings`` (as in ``trace``) results; ``shardy_passes`` as in
    ``Traced.stages``.

    Ctrl-C stops a call that may not end (a loop whose length XLA cannot tell), and
    ``timeout`` (seconds) limits each call's run (not its first compile): past it,
    CallTimeoutError, the arguments untouched. XLA cannot stop a computation, so one that was
    interrupted runs on in the background (``Compiled.guarded``)."""
    def compiled(f: Callable[..., Any]) -> JitFunction:
        return JitFunction(f, optimize=optimize, pipeline=pipeline, no_nan=no_nan, device=device,
                           trace_scalars=trace_scalars, donate=donate, mode=mode,
                           exclude_patterns=exclude_patterns, patterns=patterns, exact=exact,
                           loops=loops, in_shardings=in_shardings, mesh=mesh,
                           out_shardings=out_shardings, shardy_passes=shardy_passes,
                           timeout=timeout)

    return compiled if fn is None else compiled(fn)
