"""``bench``: presets and baselines of one call timed side by side, with ratios and roofline."""

from __future__ import annotations

import dataclasses
import os
import time
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, overload

import jax
import numpy as np

from reactant_lab import backend, checks
from reactant_lab.bench import numba_baseline, transfers
from reactant_lab.bench.measure import (
    Inputs,
    Variant,
    copies,
    copy_inputs,
    plan_rounds,
    round_robin,
    warm_up,
)
from reactant_lab.bench.result import BenchResult, BenchRow, blas_spin_caveat, make_row
from reactant_lab.bench.roofline import LOW_PRECISION, Roofline, calibrate
from reactant_lab.bench.scaling import ScalingResult, ScalingRow, bench_scaling, check_timing
from reactant_lab.errors import ReactantLabError, ShardingError
from reactant_lab.explore import ExploreOptions, build_from_trace
from reactant_lab.stages.presets import check_preset
from reactant_lab.trace import Traced, trace

__all__ = ["BenchResult", "BenchRow", "Roofline", "ScalingResult", "ScalingRow", "bench",
           "bench_scaling", "calibrate", "default_baselines"]

BASELINES = ("numpy", "jax", "numba")
"""Every baseline name; ``default_baselines()`` are those timed when none are named."""
_EAGER = ("numpy", "numba")
"""Baselines that run the user's NumPy code itself: no cost model, the same work as ours."""
_PROGRESS_AFTER_S = 2.0

_Cost = tuple[float | None, float | None]
"""(flops, bytes accessed) from a cost model; None where it gives none."""


def default_baselines() -> tuple[str, ...]:
    """``numpy`` and ``jax``, and ``numba`` where it is installed (the extra ``numba``)."""
    return BASELINES if numba_baseline.available() else ("numpy", "jax")


@overload
def bench(fn: Callable[..., Any], *args: Any, meshes: None = None, **kwargs: Any
          ) -> BenchResult: ...


@overload
def bench(fn: Callable[..., Any], *args: Any, meshes: Sequence[Any], **kwargs: Any
          ) -> ScalingResult: ...


def bench(fn: Callable[..., Any], *args: Any, presets: Sequence[str] = ("none", "all"),
          baselines: Sequence[str] | None = None, repeats: int | None = None,
          min_time: float = 0.2, warmup: int = 3, device: Any | None = None,
          roofline: bool | Roofline = True, progress: bool | None = None, exclude_patterns: Any = (),
          patterns: Any = None, exact: bool = False, meshes: Sequence[Any] | None = None,
          in_shardings: Mapping[str, Any] | None = None, shardy_passes: str = "default",
          timeout: float | None = None, jax_fn: Callable[..., Any] | None = None,
          **kwargs: Any) -> BenchResult | ScalingResult:
    """Time ``fn(*args, **kwargs)`` compiled with each preset beside the baselines.

    With ``meshes`` (e.g. ``[(1,), (2,), (4,), (8,)]``) and ``in_shardings`` (argument path ->
    PartitionSpec), a scaling sweep instead: the call sharded over each mesh, ours (the last
    preset) beside ``jax.jit`` with the same shardings, as ``bench_scaling`` (its
    ScalingResult is returned).

    A preset named ``"<preset>+exact"`` (e.g. ``"all+exact"``) runs Reactant's pattern list
    untouched beside the default (which leaves out the patterns measured wrong, crashing, never
    finishing or slow here); ``exclude_patterns`` / ``patterns`` / ``exact`` apply to every
    preset, as in ``jit``.

    Baselines (default ``default_baselines()``): ``numpy`` runs the function eagerly on copies of
    NumPy inputs (NumPy-mode code only), ``jax`` is ``jax.jit`` of the function, ``numba`` is
    ``numba.njit`` of the function on copies of NumPy inputs (NumPy-mode code only; its compile,
    the first call, is timed apart as its compile time and its result checked against NumPy's;
    skipped with numba's reason where it refuses the code; ``pip install reactant-lab[numba]``).
    ``jax_fn``: the ``jax`` baseline is ``jax.jit`` of this function instead, called with the
    same arguments (a JAX version of NumPy code that updates its arguments in place, which
    ``jax.jit`` cannot trace).
    Ratios are taken against the first baseline measured. Warm-up runs are not counted, each sample is
    synchronized, variants are sampled round-robin, small inputs rotate among copies, and
    functions that update their arguments get fresh copies per call (copying is not timed).

    Every sample waits for the device (``block_until_ready``), and JAX code's inputs are on the
    device before the timed region, for ours and ``jax.jit`` alike. NumPy code's rows (ours and
    ``jax.jit``) time the run alone, its inputs put on the device first; the copies a call of
    NumPy arrays makes (its inputs to the device, its results and updated arrays back) are
    timed apart, as each row's ``h2d_*`` and ``d2h_*`` fields (``with_transfers_s`` adds them
    up).

    ``roofline``: True measures the device's peaks (``calibrate``: float32 and bfloat16 matmul
    FLOP/s and copy bandwidth, once per device and process), a Roofline uses the peaks it holds
    (``calibrate(peak_flops=...)`` gives some and measures the rest), False draws none. A call
    of 16-bit floats is held to the bfloat16 peak.

    Each preset runs once as soon as it is compiled, before any baseline: Ctrl-C stops that run
    when it may not end (``Compiled.guarded``), and ``timeout`` (seconds) limits it
    (CallTimeoutError past it, the arguments untouched). The timed runs repeat it on the same
    inputs, unguarded. The baselines are not limited (NumPy's stops at Ctrl-C).
    """
    check_timing(repeats, min_time, warmup)
    if not isinstance(roofline, Roofline):
        roofline = checks.flag("roofline (True, False or a Roofline)", roofline)
    if progress is not None:
        checks.instance("progress", progress, (bool, np.bool_), "True, False or None")
    presets = checks.names("presets", presets, "('none', 'all')")
    if meshes is not None or in_shardings is not None:
        if meshes is None or not in_shardings:
            raise ShardingError("bench(meshes=..., in_shardings=...) sweeps a sharded call over "
                                "meshes and needs both: in_shardings maps argument paths to "
                                "PartitionSpecs, meshes lists the mesh shapes, e.g. "
                                "[(1,), (2,), (4,), (8,)]")
        return bench_scaling(fn, *args, in_shardings=in_shardings, meshes=meshes,
                             optimize=presets[-1] if presets else "all",
                             shardy_passes=shardy_passes, repeats=repeats, min_time=min_time,
                             warmup=warmup, timeout=timeout, **kwargs)
    baselines = default_baselines() if baselines is None else checks.names(
        "baselines", baselines, "('numpy', 'jax')")
    _check_names(presets, baselines)
    dev = backend.resolve_device(device)
    traced = _trace_for_device(fn, args, kwargs, dev)
    # XLA's own stages are not kept: printing them would lengthen the compile times measured
    options = ExploreOptions(device=dev, exclude_patterns=exclude_patterns, patterns=patterns,
                             exact=exact, timeout=timeout, xla_passes=False)
    variants, compile_s, costs, skipped = _presets(traced, presets, args, kwargs, options)
    for name in baselines:
        made = _baseline(name, jax_fn if name == "jax" and jax_fn is not None else fn, traced,
                         args, kwargs, dev)
        if isinstance(made, str):
            skipped[name] = made
            continue
        variant, c_s, cost = made
        variants.append(variant)
        compile_s[name] = c_s
        if cost is not None:
            costs[name] = cost
    same_work = next((c for c in costs.values() if c is not None), (None, None))
    for name in _EAGER:  # NumPy and Numba have no cost model: they do the same work as ours
        costs.setdefault(name, same_work)
    roof = roofline if isinstance(roofline, Roofline) else calibrate(dev) if roofline else None
    dtype = compute_dtype(traced)
    rows = _measure(variants, repeats, min_time, warmup, progress, compile_s, costs,
                    roof, set(presets), dtype)
    reference = next((b for b in baselines if b not in skipped), None)
    if reference is not None:
        base = next(r.median_s for r in rows if r.name == reference)
        rows = [_with_ratio(r, r.median_s / base) for r in rows]
    numpy_row = next((r for r in rows if r.name == "numpy"), None)
    caveat = blas_spin_caveat(_numpy_blas(), os.environ,
                              None if numpy_row is None else numpy_row.median_s,
                              any(r.name not in _EAGER for r in rows))
    return BenchResult(traced.fn_name, traced.mode, str(dev), tuple(rows),
                       types.MappingProxyType(skipped), reference, roof,
                       () if caveat is None else (caveat,), dtype)


def compute_dtype(traced: Traced) -> str:
    """``bfloat16`` when the call's floating-point arguments are 16-bit floats (its matmuls are
    then bounded by that peak), else ``float32``."""
    floats = {str(a.dtype) for a in traced.linear_args
              if np.issubdtype(a.dtype, np.floating) or str(a.dtype) in LOW_PRECISION}
    return "bfloat16" if floats and floats <= LOW_PRECISION else "float32"


def _numpy_blas() -> str | None:
    """The name NumPy's build gives its BLAS (``scipy-openblas`` in NumPy's wheels), if known."""
    try:
        config = np.show_config(mode="dicts")
        return str(config["Build Dependencies"]["blas"]["name"])
    except Exception:  # an older NumPy, or a build that does not say
        return None


def _check_names(presets: Sequence[str], baselines: Sequence[str]) -> None:
    for preset in presets:
        check_preset(preset.removesuffix(EXACT))
    bad = [b for b in baselines if b not in BASELINES]
    if bad:
        raise ReactantLabError(f"unknown baseline(s) {bad}; valid baselines: "
                               f"{', '.join(BASELINES)}")
    if not presets and not baselines:
        raise ReactantLabError("nothing to measure: give at least one preset or baseline")


def _trace_for_device(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                      dev: Any) -> Traced:
    """Trace; JAX code gets device-resident inputs, so results stay on the device like jit's."""
    traced = trace(fn, *args, **kwargs)
    if traced.mode == "jax" and traced.layout.numpy_out:
        with backend.x64_scope(traced.layout.x64):
            ready = backend.transfer_ready(dev)
            on_dev = copy_inputs((args, kwargs), lambda a: jax.device_put(ready(a), dev))
        traced = trace(fn, *on_dev[0], **on_dev[1])
    return traced


def _place(traced: Traced, dev: Any) -> Callable[[Any], Any]:
    if traced.mode == "numpy":
        return np.array  # NumPy-mode executables take and update NumPy arrays
    return _to_device(dev)


def _to_device(dev: Any) -> Callable[[Any], Any]:
    """A leaf as a fresh array on ``dev`` (in C order where the device's copy needs it:
    ``backend.transfer_ready``)."""
    ready = backend.transfer_ready(dev)
    return lambda leaf: jax.device_put(ready(np.array(leaf)), dev)


def _fresh(traced: Traced, inputs: Inputs, place: Callable[[Any], Any]
           ) -> Callable[[], Inputs] | None:
    if not traced.mutated:
        return None
    return lambda: copy_inputs(inputs, place)


EXACT = "+exact"
"""Suffix of a preset name that runs Reactant's pattern list untouched ("all+exact")."""


def _presets(traced: Traced, presets: Sequence[str], args: tuple[Any, ...], kwargs: dict[str, Any],
             base: ExploreOptions) -> tuple[list[Variant], dict[str, float | None],
                                            dict[str, _Cost], dict[str, str]]:
    dev = base.device
    variants: list[Variant] = []
    compile_s: dict[str, float | None] = {}
    costs: dict[str, _Cost] = {}
    skipped: dict[str, str] = {}
    place = _place(traced, dev)
    with backend.x64_scope(traced.layout.x64):
        pool = copies((args, kwargs), place)
    on_host = traced.mode == "numpy"
    for preset in presets:
        exact = base.exact or preset.endswith(EXACT)
        with backend.fresh_compiles():  # each preset's compile time is XLA's, run anew
            ex = build_from_trace(traced, base.replace(optimize=preset.removesuffix(EXACT),
                                                       exact=exact))
        compiled = ex.compiled
        assert compiled is not None  # built from a trace
        if compiled.guarded:  # the first run where Ctrl-C and the time limit reach it
            first_args, first_kwargs = copy_inputs(pool[0], place)
            jax.block_until_ready(compiled(*first_args, **first_kwargs))
        if on_host:  # the run alone, on inputs put on the device; the copies timed apart
            run, put = compiled.unguarded().device_call(*pool[0][0], **pool[0][1])
            variant = Variant(preset, run, [put() for _ in pool])
            variant.transfers = transfers.measure(put, run)
        else:
            variant = Variant(preset, compiled.unguarded(), pool,
                              _fresh(traced, (args, kwargs), place))
        cost = compiled.cost_analysis()
        compile_s[preset] = ex.stages.seconds + compiled.compile_seconds
        costs[preset] = (cost.get("flops"), cost.get("bytes accessed"))
        variants.append(variant)
    return variants, compile_s, costs, skipped


def _baseline(name: str, fn: Callable[..., Any], traced: Traced, args: tuple[Any, ...],
              kwargs: dict[str, Any], dev: Any
              ) -> tuple[Variant, float | None, _Cost | None] | str:
    """(variant, compile seconds, (flops, bytes)) or the reason it cannot run."""
    if name == "numba":
        made = numba_baseline.numba_variant(fn, traced, args, kwargs)
        return made if isinstance(made, str) else (made[0], made[1], None)
    if name == "numpy":
        if traced.mode != "numpy":
            return ("the function is JAX code (traced in JAX mode); there is no NumPy eager "
                    "version of it to time")
        pool = copies((args, kwargs), np.array)
        return Variant("numpy", fn, pool, _fresh(traced, (args, kwargs), np.array)), None, None
    statics = {i for i, leaf in enumerate(args) if not _is_array_tree(leaf)}
    start = time.perf_counter()
    try:
        with backend.x64_scope(traced.layout.x64):
            compiled = jax.jit(fn, static_argnums=tuple(sorted(statics))).lower(
                *args, **kwargs).compile()
    except Exception as exc:  # whatever JAX raises on code it cannot trace
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first = numba_baseline.whole(first)  # keep whole sentences
        hint = (" (bench(..., jax_fn=...) times jax.jit of a JAX version of it instead)"
                if traced.mode == "numpy" else "")
        return f"jax.jit cannot trace the function: {type(exc).__name__}: {first}{hint}"
    seconds = time.perf_counter() - start
    cost = compiled.cost_analysis() or {}
    cost = cost[0] if isinstance(cost, list | tuple) else cost
    dyn = tuple(a for i, a in enumerate(args) if i not in statics)
    place = _to_device(dev)
    with backend.x64_scope(traced.layout.x64):
        pool = copies((dyn, kwargs), place)
    variant = Variant("jax", _x64_call(compiled, traced.layout.x64), pool)
    if traced.mode == "numpy":  # a NumPy caller of jax.jit makes the same copies as of ours

        def put() -> Inputs:
            with backend.x64_scope(traced.layout.x64):
                return copy_inputs((dyn, kwargs), place)

        variant.transfers = transfers.measure(put, variant.call)
    return variant, seconds, (cost.get("flops"), cost.get("bytes accessed"))


def _x64_call(compiled: Callable[..., Any], x64: bool) -> Callable[..., Any]:
    if not x64:
        return compiled

    def call(*a: Any, **k: Any) -> Any:
        with backend.x64_scope(True):
            return compiled(*a, **k)

    return call


def _is_array_tree(value: Any) -> bool:
    return any(isinstance(leaf, np.ndarray | np.generic | jax.Array)
               for leaf in jax.tree_util.tree_leaves(value))


def _measure(variants: list[Variant], repeats: int | None, min_time: float, warmup: int,
             progress: bool | None, compile_s: dict[str, float | None], costs: dict[str, _Cost],
             roof: Roofline | None, presets: set[str], dtype: str) -> list[BenchRow]:
    per_sample = [warm_up(v, warmup) for v in variants]
    rounds = plan_rounds(per_sample, min_time, repeats)
    expected = rounds * sum(per_sample)
    bar = None
    if progress or (progress is None and expected > _PROGRESS_AFTER_S):
        from tqdm.auto import tqdm

        bar = tqdm(total=rounds * len(variants), desc="bench", unit="sample", leave=False)
    try:
        samples = round_robin(variants, rounds, bar.update if bar else None)
    finally:
        if bar is not None:
            bar.close()
    return [make_row(v.name, "preset" if v.name in presets else "baseline", s,
                     compile_s=compile_s.get(v.name), flops=costs[v.name][0],
                     bytes_accessed=costs[v.name][1], roofline=roof,
                     calls_per_sample=v.calls_per_sample, transfers=v.transfers, dtype=dtype)
            for v, s in zip(variants, samples, strict=True)]


def _with_ratio(row: BenchRow, ratio: float) -> BenchRow:
    return dataclasses.replace(row, ratio=ratio)
