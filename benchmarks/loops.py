"""Rolled Python loops: the traced op count and the first call (trace + stages + compile) of a
NumPy-mode 2-D Jacobi stencil (PolyBench's jacobi_2d) at 10 and at 1,000 steps, and the run time
of the 200x200, 100-step stencil under the default preset against NumPy eager (and against
loops='unroll' when that finishes within a minute). Targets: op counts within 10%, the 1,000-step
first call <= 2x the 10-step one, the 100-step run >= 3x faster than NumPy.

Also printed, without a target: an in-place heat stencil (it reads the array it writes, so XLA's
CPU while loop copies it each step), and the covariance loop whose slices depend on the index
(``cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M]``, M=500), rolled with masks.

Run: .venv/bin/python benchmarks/loops.py [--size 200] [--unroll-budget 60]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl
from reactant_lab.analysis.ops import op_counts, total_ops


def jacobi_2d(A: np.ndarray, B: np.ndarray, steps: int) -> None:
    """PolyBench's jacobi_2d: ``steps`` double sweeps between A and B."""
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                               + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                               + B[:-2, 1:-1])


def heat(u: np.ndarray, steps: int) -> None:
    """``steps`` explicit heat steps in place, copying the edge rows."""
    for _ in range(steps):
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                                + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])
        u[0, :] = u[1, :]
        u[-1, :] = u[-2, :]


def covariance(data: np.ndarray) -> np.ndarray:
    M = data.shape[1]
    data -= data.mean(axis=0)
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (data.shape[0] - 1.0)
    return cov


def first_call(fn: Any, args: tuple[Any, ...], loops: str = "auto") -> tuple[int, float, Any]:
    """(traced ops, seconds of the first call, the jitted function)."""
    f = rl.jit(fn, loops=loops)
    start = time.perf_counter()
    f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    took = time.perf_counter() - start
    assert f.last is not None
    return total_ops(op_counts(f.last.traced_call.ir)), took, f


def median_seconds(call: Any, repeats: int = 20) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _pair(size: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((size, size)), rng.random((size, size))


def _unrolled(size: int, steps: int, out: Any) -> None:
    a, b = _pair(size)
    ops, took, f = first_call(jacobi_2d, (a, b, steps), loops="unroll")
    out.put((ops, took, median_seconds(lambda: f(a, b, steps), 5)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--unroll-budget", type=float, default=60.0)
    opts = parser.parse_args()
    a, b = _pair(opts.size)
    print(f"versions: {rl.versions()}")
    first_call(jacobi_2d, (a[:50, :50].copy(), b[:50, :50].copy(), 10))  # the process warms up
    ops10, t10, _ = first_call(jacobi_2d, (a, b, 10))
    ops1000, t1000, _ = first_call(jacobi_2d, (a, b, 1000))
    print(f"jacobi_2d {opts.size}x{opts.size}, rolled: 10 steps {ops10} ops, first call "
          f"{t10:.2f} s; 1000 steps {ops1000} ops, first call {t1000:.2f} s")
    same = abs(ops1000 - ops10) <= 0.1 * ops10
    fast_compile = t1000 <= 2 * t10
    print(f"  op counts within 10%: {same}; 1000-step first call <= 2x: {fast_compile} "
          f"({t1000 / t10:.2f}x)")
    _, _, f = first_call(jacobi_2d, (a, b, 100))
    ours = median_seconds(lambda: f(a, b, 100))
    eager = median_seconds(lambda: jacobi_2d(a.copy(), b.copy(), 100))
    print(f"100 steps: reactant_lab (rolled, preset all) {ours * 1e3:.2f} ms, NumPy eager "
          f"{eager * 1e3:.2f} ms: {eager / ours:.1f}x faster (target >= 3x)")
    u = a.copy()
    _, _, h = first_call(heat, (u, 100))
    heat_ours = median_seconds(lambda: h(u, 100))
    heat_eager = median_seconds(lambda: heat(u.copy(), 100))
    print(f"in-place heat stencil, 100 steps (no target): rolled {heat_ours * 1e3:.2f} ms, "
          f"NumPy eager {heat_eager * 1e3:.2f} ms: {heat_eager / heat_ours:.1f}x")
    data = np.random.default_rng(1).random((600, 500))
    cov_ops, cov_first, c = first_call(covariance, (data,))
    cov_ours = median_seconds(lambda: c(data.copy()), 5)
    cov_eager = median_seconds(lambda: covariance(data.copy()), 5)
    print(f"covariance M=500 (slices depend on the index, rolled with masks): {cov_ops} ops, "
          f"first call {cov_first:.2f} s, run {cov_ours * 1e3:.1f} ms, NumPy eager "
          f"{cov_eager * 1e3:.1f} ms: {cov_eager / cov_ours:.1f}x")
    queue: Any = multiprocessing.get_context("spawn").Queue()
    proc = multiprocessing.get_context("spawn").Process(target=_unrolled,
                                                        args=(opts.size, 100, queue))
    proc.start()
    proc.join(opts.unroll_budget)
    if proc.is_alive():
        proc.terminate()
        print(f"loops='unroll': skipped, the first call took over {opts.unroll_budget:.0f} s")
    else:
        ops, took, run = queue.get()
        print(f"loops='unroll': {ops} ops, first call {took:.1f} s, run {run * 1e3:.2f} ms "
              f"({run / ours:.1f}x the rolled run)")
    return 0 if same and fast_compile and eager / ours >= 3 else 1


if __name__ == "__main__":
    sys.exit(main())
