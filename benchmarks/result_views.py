"""The cost of copying results out, measured on the benchmark's kernels (issue 13).

rl.jit gives a NumPy caller each computed result as a writable array over XLA's own output
buffer (compile._owned). This runs each kernel of benchmarks/numpy_speed.py that returns new
arrays two ways in one process, alternating calls: as rl.jit runs it, and with every computed
result copied into a new NumPy array instead (what rl.jit did before). It prints the warm
medians and their ratio per kernel (the two take turns going first) and the geometric mean.

Run: .venv/bin/python benchmarks/result_views.py [--only NAME ...] [--rounds 30]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl
from benchmarks.batched_loops import _fresh
from benchmarks.numpy_speed import CASES, KERNELS
from reactant_lab import compile as rl_compile

DEFAULT = ("compute", "hdiff", "layer_norm", "batch_norm", "softmax", "histogram", "arc_distance",
           "fft_lowpass", "median_filter", "gesummv", "row_normalize", "attention")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=list(DEFAULT))
    parser.add_argument("--rounds", type=int, default=30)
    opts = parser.parse_args()
    owned = rl_compile._owned
    print(f"{'kernel':<16} {'viewed ms':>10} {'copied ms':>10} {'viewed/copied':>14}")
    ratios = []
    for name in opts.only:
        kernel, case = KERNELS[name].fn, CASES[name]
        args = case.make(np.random.default_rng(0))
        jf = rl.jit(kernel)
        jf(*_fresh(args))
        times: dict[str, list[float]] = {"viewed": [], "copied": []}
        for r in range(opts.rounds):
            for mode in (("viewed", "copied") if r % 2 else ("copied", "viewed")):
                rl_compile._owned = owned if mode == "viewed" else np.array
                call = _fresh(args)
                start = time.perf_counter()
                out = jf(*call)
                times[mode].append(time.perf_counter() - start)
                del out
        rl_compile._owned = owned
        v, c = (float(np.median(times[m])) for m in ("viewed", "copied"))
        ratios.append(v / c)
        print(f"{name:<16} {v * 1e3:>10.2f} {c * 1e3:>10.2f} {v / c:>13.2f}x")
    print(f"geometric mean viewed/copied: "
          f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}x over {len(ratios)} kernels")


if __name__ == "__main__":
    main()
