"""Hoisted loop work, measured side by side: rl.jit as it runs (a rolled loop's work that reads
none of the arrays it updates is done for every iteration ahead of the loop,
trace/control_flow/hoisted.py) against the same trace with hoisting turned off (the loop does all
its work each iteration), on the kernels of benchmarks/numpy_speed.py whose loops hoist, with
NumPy eager beside them. Calls alternate between the variants (the two rl.jit ones take turns
going first), so machine noise hits them alike; each variant's first call (trace + stages + XLA
compile) is printed too. trisolv stays: its loop does not hoist (elementwise work only), so its
two columns time one program twice, a check on the comparison itself.

Run: .venv/bin/python benchmarks/hoisted_loops.py [--rounds N] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from batched_loops import _fresh
from numpy_speed import CASES, KERNELS

import reactant_lab as rl
from reactant_lab.trace.control_flow import hoisted

HOISTED = ("correlation", "covariance", "trisolv")
"""The benchmark kernels with a loop whose work is hoisted under loops='auto'."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--only", nargs="*", default=list(HOISTED))
    opts = parser.parse_args()
    print(f"versions: {rl.versions()}")
    warm = CASES["gemm"].make(np.random.default_rng(0))  # the process's own first-use costs
    rl.jit(KERNELS["gemm"].fn)(*_fresh(warm))
    print(f"{'kernel':<15}{'hoisted ms':>11}{'in loop ms':>11}{'numpy ms':>10}{'speedup':>9}"
          f"   first call hoisted / in loop (s)")
    for name in opts.only:
        kernel, args = KERNELS[name].fn, CASES[name].make(np.random.default_rng(0))
        variants = {"hoisted": rl.jit(kernel), "in loop": rl.jit(kernel)}
        first = {}
        for label, jf in variants.items():
            start = time.perf_counter()
            if label == "in loop":  # traced (on its first call) with hoisting turned off
                with mock.patch.object(hoisted, "split", lambda *_: None):
                    jf(*_fresh(args))
            else:
                jf(*_fresh(args))
            first[label] = time.perf_counter() - start
        notes = [n for n in variants["hoisted"].last.traced.loop_notes if "hoisted" in n]
        samples: dict[str, list[float]] = {"hoisted": [], "in loop": [], "numpy": []}
        calls = {**variants, "numpy": kernel}
        for r in range(opts.rounds):
            for label in (("hoisted", "in loop") if r % 2 else ("in loop", "hoisted")) + (
                    "numpy",):
                fresh = _fresh(args)
                start = time.perf_counter()
                calls[label](*fresh)
                samples[label].append(time.perf_counter() - start)
        ours, plain, eager = (float(np.median(samples[k])) * 1e3
                              for k in ("hoisted", "in loop", "numpy"))
        print(f"{name:<15}{ours:>11.2f}{plain:>11.2f}{eager:>10.2f}{plain / ours:>8.2f}x   "
              f"{first['hoisted']:.2f} / {first['in loop']:.2f}"
              + ("" if notes else "   (not hoisted)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
