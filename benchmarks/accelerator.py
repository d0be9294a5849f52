"""On the attached device (a TPU where there is one): ours vs jax.jit, copies apart, first calls.

Four cases, each one ``rl.bench`` run (ours, preset ``all``, sampled round-robin beside jax.jit,
and beside NumPy eager for NumPy code): an MLP in JAX at bfloat16 and at float32, a 2-D stencil
in NumPy mode at float32 (jax.jit of a JAX version of it, as ``bench(jax_fn=...)``), and a chain
of matmuls in JAX. Every sample waits for the device and starts from inputs already on it; for
the NumPy stencil the copies a call of NumPy arrays makes (its inputs to the device, its result
back) are timed apart, for ours and jax.jit alike. Then each case's first call, from a function
neither has seen (trace, passes and XLA compile for ours, trace and compile for jax.jit, both
then running once, waited for), after one warm-up of each on an unrelated function: the JAX
cases on inputs on the device, results left there; the stencil from NumPy arrays to NumPy
arrays for both (ours writes the result back into the caller's array, jax.jit's is fetched).

Targets (issue: the accelerator, part 4): run time ours / jax.jit <= 1.05, first call ours /
jax.jit <= 2. The roofline share uses the device's measured peaks (bfloat16 work against the
bfloat16 matmul peak).

Run: .venv/bin/python benchmarks/accelerator.py [--size N] [--min-time S] [--steps N]
(``--size``: the model width, batch and stencil edge; default 256 on the CPU, 2048 elsewhere.)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl
from reactant_lab.timing import format_seconds

RUN_TARGET = 1.05
FIRST_CALL_TARGET = 2.0


def mlp(params: dict[str, Any], x: Any) -> Any:
    """Three dense layers with GELU between them."""
    h = jax.nn.gelu(x @ params["w1"] + params["b1"])
    h = jax.nn.gelu(h @ params["w2"] + params["b2"])
    return h @ params["w3"] + params["b3"]


def mlp_args(rng: np.random.Generator, n: int, dtype: Any) -> tuple[Any, ...]:
    def w(rows: int, cols: int) -> Any:
        return jnp.asarray(rng.standard_normal((rows, cols)) / math.sqrt(rows), dtype)

    params = {"w1": w(n, 4 * n), "b1": jnp.zeros(4 * n, dtype), "w2": w(4 * n, n),
              "b2": jnp.zeros(n, dtype), "w3": w(n, n), "b3": jnp.zeros(n, dtype)}
    return params, jnp.asarray(rng.standard_normal((n, n)), dtype)


def matmul_chain(a: Any, b: Any, c: Any, d: Any) -> Any:
    """((a @ b) @ c) @ d, scaled so the values stay of order one."""
    n = a.shape[0]
    return ((a @ b) @ c) @ d / (n * math.sqrt(n))


def stencil(u: np.ndarray, steps: int) -> np.ndarray:
    """NumPy: ``steps`` Jacobi sweeps of a 2-D five-point stencil, in place, edges held."""
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.2 * (u[1:-1, 1:-1] + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2]
                               + u[1:-1, 2:])
    return u


def jax_stencil(u: Any, steps: int) -> Any:
    """The same in JAX, the loop a ``fori_loop``."""
    def sweep(_: Any, v: Any) -> Any:
        return v.at[1:-1, 1:-1].set(0.2 * (v[1:-1, 1:-1] + v[:-2, 1:-1] + v[2:, 1:-1]
                                           + v[1:-1, :-2] + v[1:-1, 2:]))
    return jax.lax.fori_loop(0, steps, sweep, u)


@dataclass
class Case:
    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    jax_fn: Callable[..., Any] | None = None


def cases(n: int, steps: int, dev: Any) -> list[Case]:
    rng = np.random.default_rng(0)
    on_dev = lambda tree: jax.device_put(tree, dev)  # noqa: E731
    chain = tuple(jnp.asarray(rng.standard_normal((n, n)), jnp.float32) for _ in range(4))
    return [Case("mlp bf16", mlp, on_dev(mlp_args(rng, n, jnp.bfloat16))),
            Case("mlp f32", mlp, on_dev(mlp_args(rng, n, jnp.float32))),
            Case("stencil f32 (numpy)", stencil,
                 (rng.random((n, n), dtype=np.float32), steps), jax_stencil),
            Case("matmul chain f32", matmul_chain, on_dev(chain))]


def fresh_copy(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A new function object of the same code: jax.jit's caches are keyed on the function."""
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def first_calls(case: Case) -> tuple[float, float]:
    """Seconds of the first call of ours (rl.jit) and of jax.jit, each waited for."""
    args = tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in case.args)
    statics = tuple(i for i, a in enumerate(args) if isinstance(a, int))
    start = time.perf_counter()
    jax.block_until_ready(rl.jit(fresh_copy(case.fn))(*args))
    ours = time.perf_counter() - start
    theirs_fn = fresh_copy(case.jax_fn or case.fn)
    args = tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in case.args)
    on_host = any(isinstance(a, np.ndarray) for a in args)
    start = time.perf_counter()
    out = jax.block_until_ready(jax.jit(theirs_fn, static_argnums=statics)(*args))
    if on_host:  # a NumPy caller reads the result back, as ours hands it back
        jax.tree_util.tree_map(np.asarray, out)
    return ours, time.perf_counter() - start


def warm_up(dev: Any) -> None:
    """One first call of each on an unrelated function: what a session pays once."""
    x = jax.device_put(np.ones(8, np.float32), dev)
    jax.block_until_ready(rl.jit(lambda v: jnp.sin(v) * 2)(x))
    jax.block_until_ready(jax.jit(lambda v: jnp.cos(v) * 2)(x))


def _copies(row: rl.BenchRow) -> str:
    if row.h2d_s is None or row.d2h_s is None:
        return "-"
    return (f"{row.h2d_bytes / 1e6:.3g} MB {format_seconds(row.h2d_s, micro='us')} / "
            f"{row.d2h_bytes / 1e6:.3g} MB {format_seconds(row.d2h_s, micro='us')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None)
    parser.add_argument("--steps", type=int, default=50, help="stencil sweeps per call")
    parser.add_argument("--min-time", type=float, default=0.5)
    opts = parser.parse_args()
    dev = jax.devices()[0]
    n = opts.size or (256 if dev.platform == "cpu" else 2048)
    roof = rl.calibrate(dev)
    print(f"device: {dev.device_kind} ({dev.platform}, {dev}), size {n}, stencil {opts.steps} "
          f"sweeps")
    print(f"peaks: {roof.describe()} ({roof.seconds:.2f} s to measure)")
    warm_up(dev)
    header = ("case", "ours", "jax.jit", "ours/jax", "numpy", "roofline", "copies ours (to / from)",
              "copies jax.jit (to / from)", "1st ours", "1st jax", "1st ratio")
    lines = [header]
    worst_run = worst_first = 0.0
    for case in cases(n, opts.steps, dev):
        first_ours, first_jax = first_calls(case)
        baselines = ("jax", "numpy") if isinstance(case.args[0], np.ndarray) else ("jax",)
        result = rl.bench(case.fn, *case.args, presets=("all",), baselines=baselines,
                          min_time=opts.min_time, roofline=roof, progress=False,
                          jax_fn=case.jax_fn)
        ours, theirs = result.row("all"), result.row("jax")
        numpy = next((r for r in result.rows if r.name == "numpy"), None)
        ratio = ours.median_s / theirs.median_s
        worst_run, worst_first = max(worst_run, ratio), max(worst_first, first_ours / first_jax)
        noisy = " (noisy)" if ours.noisy or theirs.noisy else ""
        lines.append((case.name, format_seconds(ours.median_s, micro="us"),
                      format_seconds(theirs.median_s, micro="us"), f"{ratio:.3f}{noisy}",
                      format_seconds(numpy.median_s, micro="us") if numpy else "-",
                      f"{ours.roofline_fraction:.1%}" if ours.roofline_fraction else "-",
                      _copies(ours), _copies(theirs), f"{first_ours:.3f} s",
                      f"{first_jax:.3f} s", f"{first_ours / first_jax:.2f}"))
        print("  ".join(lines[-1]), flush=True)  # each case as it is measured
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    for row in lines:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    print(f"worst run-time ratio ours/jax.jit: {worst_run:.3f} (target <= {RUN_TARGET}); worst "
          f"first-call ratio: {worst_first:.2f} (target <= {FIRST_CALL_TARGET})")
    print("run times: inputs on the device, every sample waited for; copies of a NumPy call "
          "(host to device of its inputs, device to host of its results) timed apart")


if __name__ == "__main__":
    main()
