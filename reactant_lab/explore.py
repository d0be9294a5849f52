"""Reactant-style conveniences over the pipeline: explore, jit, code_hlo, code_xla."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax

from reactant_lab.compile import Compiled
from reactant_lab.errors import TraceError, UnknownPresetError
from reactant_lab.stages.presets import PRESETS
from reactant_lab.stages.runner import StageTrace
from reactant_lab.trace import Traced, trace
from reactant_lab.trace.paths import flatten_call


@dataclass(frozen=True)
class Exploration:
    """One call explored end to end: trace, stages, compiled executable, and a run's outputs."""

    traced: Traced
    """The traced call."""
    stages: StageTrace
    """The module after each stage of the preset."""
    compiled: Compiled | None
    """The executable of the last stage (None when not compiled)."""
    outputs: Any = field(repr=False, default=None)
    """What the compiled function returned on the example arguments (None when not run)."""
    run_seconds: float | None = None
    """Wall time of that run (first call: includes transfers)."""

    def summary(self) -> str:
        """Plain-text summary: signature, stage table, compile and run times."""
        parts = [self.traced.summary(), "", self.stages.table()]
        if self.compiled is not None:
            parts.append(f"\nXLA compile: {self.compiled.compile_seconds * 1e3:.1f} ms "
                         f"on {self.compiled.device}")
        if self.run_seconds is not None:
            parts.append(f"first run:   {self.run_seconds * 1e3:.2f} ms")
        return "\n".join(parts)

    def __repr__(self) -> str:
        return self.summary()


def explore(fn: Callable[..., Any], *args: Any, optimize: str = "all",
            granularity: str = "stage", pipeline: str | None = None, no_nan: bool = False,
            device: Any | None = None, trace_scalars: bool = False, run: bool = True,
            **kwargs: Any) -> Exploration:
    """Trace, run the stages, compile the last one and (``run=True``) run it on the args."""
    traced = trace(fn, *args, trace_scalars=trace_scalars, **kwargs)
    stages = traced.stages(optimize, granularity, pipeline=pipeline, no_nan=no_nan,
                           device=device)
    compiled = stages.compile(device=device)
    if not run:
        return Exploration(traced, stages, compiled)
    start = time.perf_counter()
    outputs = jax.block_until_ready(compiled(*args, **kwargs))
    return Exploration(traced, stages, compiled, outputs, time.perf_counter() - start)


def code_hlo(fn: Callable[..., Any], *args: Any, optimize: str = "all",
             no_nan: bool = False, debug_info: bool = False, **kwargs: Any) -> str:
    """The module after the ``optimize`` preset, as text (Reactant's ``@code_hlo``)."""
    _check_not_compiled(fn, "code_hlo")
    stages = trace(fn, *args, **kwargs).stages(optimize, no_nan=no_nan)
    return stages.final.as_text(debug_info=debug_info)


def code_xla(fn: Callable[..., Any], *args: Any, optimize: str = "all", no_nan: bool = False,
             device: Any | None = None, **kwargs: Any) -> str:
    """XLA's optimized HLO after the ``optimize`` preset (Reactant's ``@code_xla``)."""
    _check_not_compiled(fn, "code_xla")
    stages = trace(fn, *args, **kwargs).stages(optimize, no_nan=no_nan, device=device)
    return stages.compile(device=device).hlo_text()


def _check_not_compiled(fn: Any, what: str) -> None:
    if isinstance(fn, Compiled | JitFunction):
        raise TraceError(f"{what} expects the original function, not a compiled one: pass "
                         f"{fn.traced.fn_name if isinstance(fn, Compiled) else fn.__name__} "
                         "itself.")


class JitFunction:
    """``fn`` compiled on first call per signature (structure, shapes, dtypes, static values)."""

    def __init__(self, fn: Callable[..., Any], *, optimize: str = "all",
                 pipeline: str | None = None, no_nan: bool = False,
                 device: Any | None = None, trace_scalars: bool = False, donate: bool = False):
        if pipeline is None and optimize not in PRESETS:
            raise UnknownPresetError(f"unknown optimize preset {optimize!r}. Valid presets: "
                                     f"{', '.join(PRESETS)}")
        self.fn = fn
        self.optimize = optimize
        self.pipeline = pipeline
        self.no_nan = no_nan
        self.device = device
        self.trace_scalars = trace_scalars
        self.donate = donate
        self.last: Exploration | None = None
        """The exploration of the most recent call's signature."""
        self._cache: dict[tuple, Exploration] = {}
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        flat = flatten_call(args, kwargs, trace_scalars=self.trace_scalars)
        key = (flat.signature(), flat.all_numpy)
        entry = self._cache.get(key)
        if entry is None:
            traced = trace(self.fn, *args, trace_scalars=self.trace_scalars, **kwargs)
            stages = traced.stages(self.optimize, pipeline=self.pipeline, no_nan=self.no_nan,
                                   device=self.device)
            entry = Exploration(traced, stages,
                                stages.compile(device=self.device, donate=self.donate))
            self._cache[key] = entry
        self.last = entry
        return entry.compiled(*args, **kwargs)

    @property
    def cache_size(self) -> int:
        """Number of signatures compiled so far."""
        return len(self._cache)

    def explorations(self) -> list[Exploration]:
        """One exploration per signature compiled so far, oldest first."""
        return list(self._cache.values())


def jit(fn: Callable[..., Any] | None = None, *, optimize: str = "all",
        pipeline: str | None = None, no_nan: bool = False, device: Any | None = None,
        trace_scalars: bool = False, donate: bool = False) -> Any:
    """Compile ``fn`` through the Reactant pipeline on first call per signature (Reactant's
    ``@jit``). Usable as ``rl.jit(f)`` or as a decorator ``@rl.jit(optimize=...)``."""
    options = {"optimize": optimize, "pipeline": pipeline, "no_nan": no_nan, "device": device,
               "trace_scalars": trace_scalars, "donate": donate}
    if fn is None:
        return lambda f: JitFunction(f, **options)
    return JitFunction(fn, **options)
