"""Reactant-style conveniences over the pipeline: explore, jit, code_hlo, code_xla."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax

from reactant_lab.compile import Compiled
from reactant_lab.errors import TraceError
from reactant_lab.stages.presets import check_preset
from reactant_lab.stages.runner import StageTrace
from reactant_lab.trace import SignatureCache, Traced, flatten_for, trace
from reactant_lab.trace.user_fn import check_traceable


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

    def graph_dot(self, stage: int | str = -1, *, max_ops: int = 300,
                  result: str | int | None = None) -> str:
        """DOT source of the dataflow graph of a stage's ``main``: a summary of which results
        depend on which arguments past ``max_ops`` ops; ``result=PATH`` draws one result's slice."""
        from reactant_lab.render.explorer import stage_graph
        from reactant_lab.render.graph_dot import to_dot

        return to_dot(stage_graph(self, stage, max_ops, result))

    def graph_svg(self, stage: int | str = -1, *, max_ops: int = 300,
                  result: str | int | None = None) -> str:
        """The graph of ``graph_dot`` laid out as SVG (graphviz-pure, else Graphviz's dot)."""
        from reactant_lab.render.svg import render_svg

        return render_svg(self.graph_dot(stage, max_ops=max_ops, result=result))

    def payload(self) -> dict[str, Any]:
        """The explorer payload (JSON-able; schema in docs/explorer-schema.md)."""
        from reactant_lab import backend
        from reactant_lab.render.explorer import exploration_payload

        return exploration_payload(self, meta={"versions": backend.versions()})

    def to_html(self, run: dict[str, Any] | None = None) -> str:
        """A self-contained HTML report: stages, IR, diffs, graphs, op metrics, XLA HLO, timing
        (``run`` adds measured run times, e.g. ``{"median_seconds": ...}``)."""
        from reactant_lab import backend
        from reactant_lab.render.explorer import exploration_html

        return exploration_html(self, meta={"versions": backend.versions()}, run=run)

    def save_html(self, path: str, run: dict[str, Any] | None = None) -> str:
        """Write ``to_html()`` to ``path``; returns the path."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_html(run))
        return path


def explore(fn: Callable[..., Any], *args: Any, optimize: str = "all",
            granularity: str = "stage", pipeline: str | None = None, no_nan: bool = False,
            device: Any | None = None, trace_scalars: bool = False, run: bool = True,
            mode: str = "auto", **kwargs: Any) -> Exploration:
    """Trace, run the stages, compile the last one and (``run=True``) run it on the args (a NumPy
    kernel's updated arguments are then updated in place)."""
    traced = trace(fn, *args, trace_scalars=trace_scalars, mode=mode, **kwargs)
    stages = traced.stages(optimize, granularity, pipeline=pipeline, no_nan=no_nan,
                           device=device)
    compiled = stages.compile(device=device)
    if not run:
        return Exploration(traced, stages, compiled)
    start = time.perf_counter()
    outputs = jax.block_until_ready(compiled(*args, **kwargs))
    return Exploration(traced, stages, compiled, outputs, time.perf_counter() - start)


def code_hlo(fn: Callable[..., Any], *args: Any, optimize: str = "all",
             no_nan: bool = False, debug_info: bool = False, mode: str = "auto",
             **kwargs: Any) -> str:
    """The module after the ``optimize`` preset, as text (Reactant's ``@code_hlo``)."""
    _check_not_compiled(fn, "code_hlo")
    stages = trace(fn, *args, mode=mode, **kwargs).stages(optimize, no_nan=no_nan)
    return stages.final.as_text(debug_info=debug_info)


def code_xla(fn: Callable[..., Any], *args: Any, optimize: str = "all", no_nan: bool = False,
             device: Any | None = None, mode: str = "auto", **kwargs: Any) -> str:
    """XLA's optimized HLO after the ``optimize`` preset (Reactant's ``@code_xla``)."""
    _check_not_compiled(fn, "code_xla")
    stages = trace(fn, *args, mode=mode, **kwargs).stages(optimize, no_nan=no_nan,
                                                          device=device)
    return stages.compile(device=device).hlo_text()


def _check_not_compiled(fn: Any, what: str) -> None:
    if isinstance(fn, Compiled | JitFunction):
        raise TraceError(f"{what} expects the original function, not a compiled one: pass "
                         f"{fn.traced.fn_name if isinstance(fn, Compiled) else fn.__name__} "
                         "itself.")


class JitFunction:
    """``fn`` compiled on first call per signature (structure, shapes, dtypes, static values).

    A NumPy kernel's updated arguments are updated in place by each call, as NumPy would.
    """

    def __init__(self, fn: Callable[..., Any], *, optimize: str = "all",
                 pipeline: str | None = None, no_nan: bool = False,
                 device: Any | None = None, trace_scalars: bool = False, donate: bool = False,
                 mode: str = "auto"):
        if pipeline is None:
            check_preset(optimize)
        check_traceable(fn)
        self.fn = fn
        self.optimize = optimize
        self.pipeline = pipeline
        self.no_nan = no_nan
        self.device = device
        self.trace_scalars = trace_scalars
        self.donate = donate
        self.mode = mode
        self.last: Exploration | None = None
        """The exploration of the most recent call's signature."""
        self._cache = SignatureCache[Exploration](lambda e: e.traced)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        flat = flatten_for(self.fn, args, kwargs, trace_scalars=self.trace_scalars)
        entry = self._cache.get(flat)
        if entry is None:
            traced = trace(self.fn, *args, trace_scalars=self.trace_scalars, mode=self.mode,
                           **kwargs)
            stages = traced.stages(self.optimize, pipeline=self.pipeline, no_nan=self.no_nan,
                                   device=self.device)
            entry = Exploration(traced, stages,
                                stages.compile(device=self.device, donate=self.donate))
            self._cache.add(flat, entry)
        self.last = entry
        return entry.compiled(*args, **kwargs)

    @property
    def cache_size(self) -> int:
        """Number of signatures compiled so far."""
        return len(self._cache)

    def explorations(self) -> list[Exploration]:
        """One exploration per signature compiled so far, oldest first."""
        return self._cache.values()


def jit(fn: Callable[..., Any] | None = None, *, optimize: str = "all",
        pipeline: str | None = None, no_nan: bool = False, device: Any | None = None,
        trace_scalars: bool = False, donate: bool = False, mode: str = "auto") -> Any:
    """Compile ``fn`` through the Reactant pipeline on first call per signature (Reactant's
    ``@jit``). Usable as ``rl.jit(f)`` or as a decorator ``@rl.jit(optimize=...)``. ``mode``
    as in ``trace``: a NumPy kernel updates its NumPy arguments in place."""
    options = {"optimize": optimize, "pipeline": pipeline, "no_nan": no_nan, "device": device,
               "trace_scalars": trace_scalars, "donate": donate, "mode": mode}
    if fn is None:
        return lambda f: JitFunction(f, **options)
    return JitFunction(fn, **options)
