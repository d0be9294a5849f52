"""NumPy kernels: NumPy eager vs reactant_lab.jit (compiled, warm) vs jax.jit, side by side.

For each kernel of the PolyBench / NPBench-style corpus (tests/numpy_kernels.py) at a
benchmark size: the median run time of each variant, sampled round-robin in one run (so drift
of the machine hits all alike), each call on a fresh copy of the inputs (the kernels update their
arguments; copying is not timed). reactant_lab.jit takes and updates NumPy arrays, so its time
includes the transfers and the write-back a NumPy user pays. jax.jit is a functional rewrite,
given where one is easy to write, with its inputs already on the device. Compile time is
trace + the preset (default 'all') stage by stage + XLA compile.

NumPy's matrix products run on its BLAS threads: on a loaded machine they can be much slower than
on an idle one (run with OPENBLAS_NUM_THREADS=1 to compare single-threaded).

Run: .venv/bin/python benchmarks/numpy_kernels.py [--min-time S] [--only NAME ...] [--optimize P]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl
from reactant_lab import backend, timing
from reactant_lab.bench.measure import (
    Variant,
    copy_inputs,
    plan_rounds,
    round_robin,
    warm_up,
)
from tests import numpy_kernels as nk


def jax_jacobi_2d(tsteps, A, B):
    for _ in range(1, tsteps):
        B = B.at[1:-1, 1:-1].set(0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] +
                                        A[2:, 1:-1] + A[:-2, 1:-1]))
        A = A.at[1:-1, 1:-1].set(0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] +
                                        B[2:, 1:-1] + B[:-2, 1:-1]))
    return A, B


def jax_heat_3d(tsteps, A, B):
    def step(src):
        c = src[1:-1, 1:-1, 1:-1]
        return (0.125 * (src[2:, 1:-1, 1:-1] - 2.0 * c + src[:-2, 1:-1, 1:-1]) +
                0.125 * (src[1:-1, 2:, 1:-1] - 2.0 * c + src[1:-1, :-2, 1:-1]) +
                0.125 * (src[1:-1, 1:-1, 2:] - 2.0 * c + src[1:-1, 1:-1, :-2]) + c)

    for _ in range(1, tsteps):
        B = B.at[1:-1, 1:-1, 1:-1].set(step(A))
        A = A.at[1:-1, 1:-1, 1:-1].set(step(B))
    return A, B


def jax_gemm(alpha, beta, C, A, B):
    return alpha * A @ B + beta * C


def jax_softmax(x):
    e = jnp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def jax_mlp(x, w1, b1, w2, b2, w3, b3):
    h = jnp.maximum(x @ w1 + b1, 0)
    h = jnp.maximum(h @ w2 + b2, 0)
    return jax_softmax(h @ w3 + b3)


def jax_arc_distance(theta_1, phi_1, theta_2, phi_2):
    temp = (jnp.sin((theta_2 - theta_1) / 2) ** 2 +
            jnp.cos(theta_1) * jnp.cos(theta_2) * jnp.sin((phi_2 - phi_1) / 2) ** 2)
    return 2 * jnp.arctan2(jnp.sqrt(temp), jnp.sqrt(1 - temp))


def jax_floyd_warshall(path):
    for k in range(path.shape[0]):
        path = jnp.minimum(path, path[:, k, None] + path[None, k, :])
    return path


def jax_covariance(M, float_n, data):
    data = data - data.mean(axis=0)
    return data.T @ data / (float_n - 1.0)


@dataclass(frozen=True)
class Case:
    """A corpus kernel at benchmark size, with an optional jax.jit rewrite."""

    kernel: Callable[..., Any]
    make: Callable[[np.random.Generator], tuple]
    size: str
    jax_fn: Callable[..., Any] | None = None
    static: tuple[int, ...] = ()


def _sq(rng, n):
    return rng.standard_normal((n, n))


def _spd(rng, n):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def _pair(rng, shape):
    a = rng.random(shape)
    return a, a.copy()


CASES: dict[str, Case] = {
    "jacobi_2d": Case(nk.jacobi_2d, lambda r: (20, *_pair(r, (200, 200))), "200^2 x 20",
                      jax_jacobi_2d, (0,)),
    "heat_3d": Case(nk.heat_3d, lambda r: (10, *_pair(r, (40, 40, 40))), "40^3 x 10",
                    jax_heat_3d, (0,)),
    "fdtd_2d": Case(nk.fdtd_2d, lambda r: (20, r.random((200, 220)), r.random((200, 220)),
                                           r.random((200, 220)), r.random(20)), "200x220 x 20"),
    "seidel_2d": Case(nk.seidel_2d, lambda r: (3, 16, r.random((16, 16))), "16^2 x 3"),
    "floyd_warshall": Case(nk.floyd_warshall, lambda r: (r.random((64, 64)) * 10,), "64^2",
                           jax_floyd_warshall),
    "gemm": Case(nk.gemm, lambda r: (1.5, 1.2, r.random((256, 256)), r.random((256, 256)),
                                     r.random((256, 256))), "256^3", jax_gemm, (0, 1)),
    "gemver": Case(nk.gemver, lambda r: (1.5, 1.2, _sq(r, 400), *[r.random(400)
                                                                  for _ in range(8)]), "400^2"),
    "trisolv": Case(nk.trisolv, lambda r: (r.random((48, 48)) + 48 * np.eye(48),
                                           r.random(48), r.random(48)), "48"),
    "cholesky": Case(nk.cholesky, lambda r: (_spd(r, 24),), "24^2"),
    "covariance": Case(nk.covariance, lambda r: (64, 256.0, r.random((256, 64))), "256x64",
                       jax_covariance, (0, 1)),
    "correlation": Case(nk.correlation, lambda r: (64, 256.0, r.random((256, 64))), "256x64"),
    "softmax": Case(nk.softmax, lambda r: (r.standard_normal((16, 64, 128)),), "16x64x128",
                    jax_softmax),
    "mlp_forward": Case(nk.mlp_forward, lambda r: (
        r.standard_normal((128, 256)), r.standard_normal((256, 256)) / 16,
        r.standard_normal(256), r.standard_normal((256, 256)) / 16, r.standard_normal(256),
        r.standard_normal((256, 10)), r.standard_normal(10)), "128x256", jax_mlp),
    "nbody_step": Case(nk.nbody_step, lambda r: (
        r.random((256, 1)) + 0.5, r.standard_normal((256, 3)), r.standard_normal((256, 3)),
        r.standard_normal((256, 3)), 0.01, 1.0, 0.1), "256 bodies"),
    "arc_distance": Case(nk.arc_distance, lambda r: tuple(r.random(200_000) for _ in range(4)),
                         "200k", jax_arc_distance),
    "mask_updates": Case(nk.mask_updates, lambda r: tuple(r.standard_normal((300, 300))
                                                          for _ in range(4)), "300^2"),
}


def _fresh(inputs: tuple, place: Callable[[Any], Any]) -> Callable[[], tuple]:
    return lambda: copy_inputs(inputs, place)


def _jax_variant(case: Case, args: tuple) -> Variant:
    with backend.x64_scope(True):
        fn = jax.jit(case.jax_fn, static_argnums=case.static)
        dev = [a if i in case.static or not isinstance(a, np.ndarray) else jax.device_put(a)
               for i, a in enumerate(args)]
        jax.block_until_ready(fn(*dev))

    def call(*a):
        with backend.x64_scope(True):
            return fn(*a)

    return Variant("jax.jit", call, [(tuple(dev), {})])


def measure(name: str, case: Case, min_time: float, optimize: str) -> dict[str, Any]:
    args = case.make(np.random.default_rng())
    jf = rl.jit(case.kernel, optimize=optimize)
    start = time.perf_counter()
    jf(*copy_inputs((args, {}), np.array)[0])
    first_call = time.perf_counter() - start
    ex = jf.last
    compile_s = ex.traced.seconds + ex.stages.compile_path_seconds + ex.compiled.compile_seconds
    variants = [Variant("numpy", case.kernel, [], _fresh((args, {}), np.array)),
                Variant("reactant_lab", jf, [], _fresh((args, {}), np.array))]
    if case.jax_fn is not None:
        variants.append(_jax_variant(case, args))
    per_sample = [warm_up(v, 3) for v in variants]
    samples = round_robin(variants, plan_rounds(per_sample, min_time, None))
    medians = {v.name: timing.median(s) for v, s in zip(variants, samples, strict=True)}
    return {"name": name, "size": case.size, "medians": medians, "compile_s": compile_s,
            "first_call_s": first_call, "ops": ex.stages[0].ops}


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-time", type=float, default=0.3,
                        help="seconds of sampling for the slowest variant of each kernel")
    parser.add_argument("--only", nargs="*", default=[], help="kernel names")
    parser.add_argument("--optimize", default="all", choices=list(rl.PRESETS),
                        help="reactant_lab preset (default: all)")
    opts = parser.parse_args()
    versions = ", ".join(f"{k} {v}" for k, v in rl.versions().items())
    print(f"NumPy kernels: NumPy eager vs reactant_lab.jit (preset {opts.optimize!r}) vs jax.jit "
          f"({versions}; NumPy {np.__version__}; device {jax.devices()[0]})")
    header = (f"{'kernel':<15} {'size':<13} {'traced ops':>10} {'numpy us':>10} "
              f"{'rl.jit us':>10} {'jax.jit us':>10} {'numpy/rl':>9} {'numpy/jax':>10} "
              f"{'compile s':>10}")
    print(header)
    print("-" * len(header))
    speedups = []
    for name, case in CASES.items():
        if opts.only and name not in opts.only:
            continue
        m = measure(name, case, opts.min_time, opts.optimize)
        t = m["medians"]
        speedup = t["numpy"] / t["reactant_lab"]
        speedups.append(speedup)
        jax_ratio = f"{t['numpy'] / t['jax.jit']:.2f}x" if "jax.jit" in t else "-"
        print(f"{name:<15} {m['size']:<13} {m['ops']:>10} {_us(t['numpy']):>10} "
              f"{_us(t['reactant_lab']):>10} {_us(t.get('jax.jit')):>10} {speedup:>8.2f}x "
              f"{jax_ratio:>10} {m['compile_s']:>10.2f}")
    geo = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
    print("-" * len(header))
    print(f"geometric-mean speedup of reactant_lab.jit over NumPy eager: {geo:.2f}x "
          f"over {len(speedups)} kernels (ratios > 1: faster than NumPy)")


if __name__ == "__main__":
    main()
