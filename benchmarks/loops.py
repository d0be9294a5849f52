"""Rolled Python loops: the traced op count and the first call (trace + stages + compile) of a
NumPy-mode 2-D heat stencil at 10 and at 1,000 steps, and the run time of the 200x200, 100-step
stencil under the default preset against NumPy eager (and against loops='unroll' when that
finishes within a minute). Targets: op counts within 10%, the 1,000-step first call <= 2x the
10-step one, the 100-step run >= 3x faster than NumPy.

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


def stencil(u: np.ndarray, steps: int) -> None:
    """``steps`` explicit heat steps in place, copying the edge rows."""
    for _ in range(steps):
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                                + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])
        u[0, :] = u[1, :]
        u[-1, :] = u[-2, :]


def first_call(u: np.ndarray, steps: int, loops: str = "auto") -> tuple[int, float, Any]:
    """(traced ops, seconds of the first call, the jitted function)."""
    f = rl.jit(stencil, loops=loops)
    start = time.perf_counter()
    f(u.copy(), steps)
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


def _unrolled(size: int, steps: int, out: Any) -> None:
    u = np.random.default_rng(0).random((size, size))
    ops, took, f = first_call(u, steps, loops="unroll")
    out.put((ops, took, median_seconds(lambda: f(u, steps), 5)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--unroll-budget", type=float, default=60.0)
    opts = parser.parse_args()
    u = np.random.default_rng(0).random((opts.size, opts.size))
    print(f"versions: {rl.versions()}")
    ops10, t10, _ = first_call(u, 10)
    ops1000, t1000, _ = first_call(u, 1000)
    print(f"stencil {opts.size}x{opts.size}, rolled: 10 steps {ops10} ops, first call "
          f"{t10:.2f} s; 1000 steps {ops1000} ops, first call {t1000:.2f} s")
    same = abs(ops1000 - ops10) <= 0.1 * ops10
    fast_compile = t1000 <= 2 * t10
    print(f"  op counts within 10%: {same}; 1000-step first call <= 2x: {fast_compile} "
          f"({t1000 / t10:.2f}x)")
    _, _, f = first_call(u, 100)
    ours = median_seconds(lambda: f(u, 100))
    eager = median_seconds(lambda: stencil(u.copy(), 100))
    print(f"100 steps: reactant_lab (rolled, preset all) {ours * 1e3:.2f} ms, NumPy eager "
          f"{eager * 1e3:.2f} ms: {eager / ours:.1f}x faster (target >= 3x)")
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
