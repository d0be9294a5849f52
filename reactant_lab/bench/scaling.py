"""``bench_scaling``: one sharded call timed over meshes of 1, 2, 4, 8... devices beside
``jax.jit`` with the same shardings: time, speedup over the smallest mesh, parallel efficiency,
and the collectives of each partitioned executable (from its HLO) with XLA's cost analysis."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from reactant_lab import checks, timing
from reactant_lab.analysis.collectives import CollectiveReport, collective_report
from reactant_lab.bench.measure import Inputs, Variant, copies, plan_rounds, round_robin, warm_up
from reactant_lab.errors import ShardingError
from reactant_lab.explore import JitFunction
from reactant_lab.trace import sharding
from reactant_lab.trace.paths import call_path

__all__ = ["ScalingResult", "ScalingRow", "bench_scaling"]

MeshSpec = Sequence[int] | Mapping[str, int]
"""A mesh size: axis sizes in the order of ``axis_names`` (``(4,)``, ``(2, 4)``) or a dict of
axis sizes (``{"data": 4}``)."""


@dataclass(frozen=True)
class ScalingRow:
    """One mesh: ours and ``jax.jit`` timed side by side on the same sharded inputs."""

    mesh: Mapping[str, int]
    """Axis sizes of the mesh (over the first devices present)."""
    devices: int
    """Devices of the mesh."""
    ours_s: float
    """Median seconds per call of ours (``rl.jit``)."""
    jax_s: float
    """Median seconds per call of ``jax.jit`` with the same shardings."""
    ours_iqr_s: float
    """Interquartile range of ours' samples."""
    jax_iqr_s: float
    """Interquartile range of jax.jit's samples."""
    speedup: float
    """Ours: the smallest mesh's time over this one's."""
    jax_speedup: float
    """jax.jit: the smallest mesh's time over this one's."""
    collectives: CollectiveReport = field(repr=False)
    """The collectives of our partitioned executable, with its memory per device."""
    jax_collectives: CollectiveReport = field(repr=False)
    """The collectives of jax.jit's partitioned executable."""
    bytes_accessed: float | None = None
    """XLA's cost analysis of our per-device program: bytes accessed on one device."""
    compile_s: float | None = None
    """Ours: trace, stages and XLA compile, seconds."""
    jax_compile_s: float | None = None
    """jax.jit: lower and compile, seconds."""
    base_devices: int = 1
    """Devices of the smallest mesh, which the speedups are against."""

    @property
    def ratio(self) -> float:
        """Ours over jax.jit (below 1: ours is faster)."""
        return self.ours_s / self.jax_s

    @property
    def efficiency(self) -> float:
        """Ours: speedup over the device ratio to the smallest mesh (1.0: linear scaling)."""
        return self.speedup * self.base_devices / self.devices

    @property
    def jax_efficiency(self) -> float:
        """jax.jit's parallel efficiency."""
        return self.jax_speedup * self.base_devices / self.devices

    @property
    def collective_bytes(self) -> int:
        """Bytes the collectives of our executable produce on one device (each op once)."""
        return self.collectives.bytes


@dataclass(frozen=True)
class ScalingResult:
    """``bench_scaling``'s rows, one per mesh, smallest first."""

    fn_name: str
    """The function timed."""
    rows: tuple[ScalingRow, ...]
    """One row per mesh."""
    in_shardings: Mapping[str, Any]
    """Argument path -> PartitionSpec, as given."""
    shardy_passes: str = "default"
    """Our ``shardy_passes`` choice."""

    @property
    def ratios(self) -> dict[int, float]:
        """Devices -> ours / jax.jit median time."""
        return {r.devices: r.ratio for r in self.rows}

    @property
    def max_ratio(self) -> float:
        """The largest ours / jax.jit ratio over the meshes."""
        return max(self.ratios.values())

    def table(self) -> str:
        """Plain text: per mesh, both times, ours / jax, speedups and efficiencies, and the
        collectives (count and bytes per device; jax.jit's in brackets where they differ)."""
        specs = ", ".join(f"{k}: {v}" for k, v in self.in_shardings.items()) or "none"
        head = (f"scaling of {self.fn_name} (in_shardings {specs}; shardy_passes="
                f"{self.shardy_passes})")
        cols = ("devices", "mesh", "ours", "jax.jit", "ours/jax", "speedup", "jax speedup",
                "efficiency", "jax eff.", "collectives", "coll. bytes/dev", "bytes acc./dev")
        body = []
        for r in self.rows:
            coll = ", ".join(f"{n} {op}" for op, n in r.collectives.counts.items()) or "none"
            jcoll = ", ".join(f"{n} {op}" for op, n in r.jax_collectives.counts.items()) or "none"
            cbytes = _size(r.collective_bytes)
            if r.jax_collectives.bytes != r.collective_bytes:
                cbytes += f" (jax {_size(r.jax_collectives.bytes)})"
            if jcoll != coll:
                coll += f" (jax {jcoll})"
            body.append((str(r.devices), " x ".join(f"{k}={v}" for k, v in r.mesh.items()),
                         _time(r.ours_s), _time(r.jax_s), f"{r.ratio:.3f}",
                         f"{r.speedup:.2f}x", f"{r.jax_speedup:.2f}x", f"{r.efficiency:.0%}",
                         f"{r.jax_efficiency:.0%}", coll, cbytes,
                         "-" if r.bytes_accessed is None else _size(int(r.bytes_accessed))))
        widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(cols)]
        lines = [head, "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip()]
        lines += ["  ".join(v.ljust(w) for v, w in zip(b, widths, strict=True)).rstrip()
                  for b in body]
        lines.append(f"ours/jax: median time of ours over jax.jit's (max {self.max_ratio:.3f}); "
                     "speedup and efficiency against the smallest mesh; collective bytes: "
                     "what the partitioned HLO's collectives produce on one device, each op once; "
                     "bytes acc./dev: XLA's cost analysis of our per-device program")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return self.table()


def check_timing(repeats: Any, min_time: Any, warmup: Any) -> None:
    """The timing options of ``bench`` and ``bench_scaling``, checked before anything runs."""
    checks.count("repeats", repeats, minimum=1, none=True)
    checks.number("min_time", min_time)
    checks.count("warmup", warmup)


def bench_scaling(fn: Callable[..., Any], *args: Any, in_shardings: Mapping[str, Any],
                  meshes: Sequence[MeshSpec] = ((1,), (2,), (4,), (8,)),
                  axis_names: Sequence[str] | None = None, optimize: str = "all",
                  shardy_passes: str = "default", repeats: int | None = None,
                  min_time: float = 0.2, warmup: int = 3, timeout: float | None = None,
                  **kwargs: Any) -> ScalingResult:
    """Time ``fn(*args, **kwargs)`` sharded over each mesh of ``meshes``, ours (``rl.jit``)
    beside ``jax.jit`` with the same shardings.

    ``in_shardings``: argument path (``"args[1]"``, ``"args[0]['w1']"``, as ``trace`` names
    them) -> PartitionSpec; the arguments it does not name are replicated. Each mesh is built
    over the first devices present, its axes named ``axis_names`` (default: the axes the
    PartitionSpecs name, in order), and the arguments are placed over it as JAX arrays with
    those shardings; both executables get the same placed arrays (sampled round-robin, as in
    ``bench``). A mesh of one device runs the call unsharded. The function must be one
    ``jax.jit`` traces (JAX code). On CPU, simulate devices with
    ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` set before JAX starts: they share
    the host's cores, so parity with jax.jit is the measure there, not absolute scaling.
    ``timeout`` (seconds) limits our first run on each mesh, as in ``bench``.
    """
    check_timing(repeats, min_time, warmup)
    names = _axis_names(in_shardings, axis_names)
    sized = [_mesh_sizes(m, names) for m in meshes]
    if not sized:
        raise ShardingError("meshes= is empty: give at least one mesh, e.g. [(1,), (2,)]")
    for sizes in sized:  # every mesh checked before anything is timed
        sharding.make_mesh(sizes)
    leaves, treedef = jax.tree_util.tree_flatten_with_path((args, kwargs))
    paths = [call_path(tuple(p)) for p, _ in leaves]
    unknown = sorted(set(in_shardings) - set(paths))
    if unknown:
        raise ShardingError(f"in_shardings names {', '.join(unknown)}, which is not an argument "
                            f"path; the call's: {', '.join(paths)}", unknown[0])
    measured = [_one_mesh(fn, sizes, in_shardings, paths, treedef, [v for _, v in leaves],
                          optimize, shardy_passes, repeats, min_time, warmup, timeout)
                for sizes in sized]
    first, first_devices = measured[0], math.prod(sized[0].values())
    rows = []
    for sizes, row in zip(sized, measured, strict=True):
        n = math.prod(sizes.values())
        rows.append(ScalingRow(
            mesh=sizes, devices=n, ours_s=row["ours"], jax_s=row["jax"],
            ours_iqr_s=row["ours_iqr"], jax_iqr_s=row["jax_iqr"],
            speedup=first["ours"] / row["ours"], jax_speedup=first["jax"] / row["jax"],
            collectives=row["collectives"], jax_collectives=row["jax_collectives"],
            bytes_accessed=row["bytes_accessed"], compile_s=row["compile_s"],
            jax_compile_s=row["jax_compile_s"], base_devices=first_devices))
    return ScalingResult(getattr(fn, "__name__", repr(fn)), tuple(rows), dict(in_shardings),
                         shardy_passes)


def _axis_names(in_shardings: Mapping[str, Any], axis_names: Sequence[str] | None
                ) -> tuple[str, ...]:
    if axis_names is not None:
        return tuple(axis_names)
    found: list[str] = []
    for spec in in_shardings.values():
        if not isinstance(spec, PartitionSpec):
            raise ShardingError(f"in_shardings values must be PartitionSpecs (each mesh is built "
                                f"here), not {type(spec).__name__}")
        for entry in spec:
            for name in entry if isinstance(entry, tuple) else (entry,):
                if name is not None and name not in found:
                    found.append(name)
    if not found:
        raise ShardingError("no PartitionSpec of in_shardings names a mesh axis: give "
                            "axis_names=, or shard an argument, e.g. {'args[1]': P('data')}")
    return tuple(found)


def _mesh_sizes(mesh: MeshSpec, names: tuple[str, ...]) -> dict[str, int]:
    if isinstance(mesh, Mapping):
        return dict(mesh)
    sizes = tuple(mesh)
    if len(sizes) != len(names):
        raise ShardingError(f"mesh {sizes} has {len(sizes)} axes and the axis names are "
                            f"{names}: give axis_names= or a dict such as {{'data': 4}}")
    return dict(zip(names, sizes, strict=True))


def _one_mesh(fn: Callable[..., Any], sizes: dict[str, int], in_shardings: Mapping[str, Any],
              paths: list[str], treedef: Any, values: list[Any], optimize: str,
              shardy_passes: str, repeats: int | None, min_time: float,
              warmup: int, timeout: float | None) -> dict[str, Any]:
    mesh = sharding.make_mesh(sizes)
    assert mesh is not None
    specs = [in_shardings.get(p, PartitionSpec()) for p in paths]  # type: ignore[no-untyped-call]  # JAX ships PartitionSpec untyped
    for path, spec, value in zip(paths, specs, values, strict=True):
        if _is_array(value):
            sharding.check(path, np.shape(value), mesh, spec)
    placements = [NamedSharding(mesh, s) for s in specs]

    def place(inputs: Inputs) -> Inputs:
        leaves = jax.tree_util.tree_leaves(inputs)
        put = [jax.device_put(v, s) if _is_array(v) else v
               for v, s in zip(leaves, placements, strict=True)]
        placed: Inputs = jax.tree_util.tree_unflatten(treedef, put)
        return placed

    inputs: Inputs = jax.tree_util.tree_unflatten(treedef, values)
    pool = [place(c) for c in copies(inputs, np.array)]
    args, kwargs = pool[0]
    ours = JitFunction(fn, optimize=optimize, shardy_passes=shardy_passes, donate=False,
                       timeout=timeout)
    start = time.perf_counter()
    jax.block_until_ready(ours(*args, **kwargs))
    compile_s = time.perf_counter() - start
    assert ours.last is not None and ours.last.compiled is not None
    compiled = ours.last.compiled
    statics = tuple(i for i, a in enumerate(args)
                    if not any(_is_array(v) for v in jax.tree_util.tree_leaves(a)))
    start = time.perf_counter()
    theirs = jax.jit(fn, static_argnums=statics).lower(*args, **kwargs).compile()
    jax_compile_s = time.perf_counter() - start
    jax_pool = [(tuple(a for i, a in enumerate(p[0]) if i not in statics), p[1]) for p in pool]
    # The first call ended: the timed ones, on the same inputs, run unguarded.
    variants = [Variant("ours", compiled.unguarded(), pool), Variant("jax", theirs, jax_pool)]
    rounds = plan_rounds([warm_up(v, warmup) for v in variants], min_time, repeats)
    ours_samples, jax_samples = round_robin(variants, rounds)
    cost = compiled.cost_analysis()
    return {"ours": timing.median(ours_samples), "jax": timing.median(jax_samples),
            "ours_iqr": timing.iqr(ours_samples), "jax_iqr": timing.iqr(jax_samples),
            "collectives": compiled.collectives(),
            "jax_collectives": collective_report(theirs.as_text() or ""),
            "bytes_accessed": cost.get("bytes accessed"), "compile_s": compile_s,
            "jax_compile_s": jax_compile_s}


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray | np.generic | jax.Array)


def _time(seconds: float) -> str:
    return timing.format_seconds(seconds, micro="us")


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 ** 2:.1f} MiB"
