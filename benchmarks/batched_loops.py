"""Batched loops, measured side by side: rl.jit with loops='auto' (a loop whose iterations are
independent runs batched, trace/control_flow/batched.py) against loops='roll' (every loop a
stablehlo.while), on the kernels of benchmarks/numpy_speed.py whose loops batch, with NumPy eager
beside them. Calls alternate between the variants, so machine noise hits them alike; each
variant's first call (trace, stages, XLA compile) is printed too.

Run: .venv/bin/python benchmarks/batched_loops.py [--rounds N] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from numpy_speed import CASES, KERNELS

import reactant_lab as rl

BATCHED = ("doitgen", "gramschmidt", "trmm", "row_normalize")
"""The benchmark kernels with a loop that runs batched under loops='auto'."""


def _fresh(args: tuple) -> tuple:
    return tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in args)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--only", nargs="*", default=list(BATCHED))
    opts = parser.parse_args()
    print(f"versions: {rl.versions()}")
    warm = CASES["gemm"].make(np.random.default_rng(0))  # the process's own first-use costs
    rl.jit(KERNELS["gemm"].fn, loops="auto")(*_fresh(warm))
    print(f"{'kernel':<15}{'batched ms':>11}{'rolled ms':>11}{'numpy ms':>10}{'speedup':>9}"
          f"   first call batched / rolled (trace + stages + compile)")
    for name in opts.only:
        kernel, args = KERNELS[name].fn, CASES[name].make(np.random.default_rng(0))
        variants = {"auto": rl.jit(kernel, loops="auto"), "roll": rl.jit(kernel, loops="roll")}
        first = {}
        for loops, jf in variants.items():
            start = time.perf_counter()
            jf(*_fresh(args))
            ex = jf.last
            assert ex is not None and ex.compiled is not None
            first[loops] = (time.perf_counter() - start, ex.traced.seconds,
                            ex.stages.compile_path_seconds, ex.compiled.compile_seconds)
        notes = [n for n in variants["auto"].last.traced.loop_notes if " batched (" in n]
        samples: dict[str, list[float]] = {"auto": [], "roll": [], "numpy": []}
        calls = {**variants, "numpy": kernel}
        for _ in range(opts.rounds):
            for label, call in calls.items():
                fresh = _fresh(args)
                start = time.perf_counter()
                call(*fresh)
                samples[label].append(time.perf_counter() - start)
        auto, roll, eager = (float(np.median(samples[k])) * 1e3 for k in ("auto", "roll", "numpy"))
        parts = " / ".join(f"{f[0]:.2f} s ({f[1]:.2f} + {f[2]:.2f} + {f[3]:.2f})"
                           for f in (first["auto"], first["roll"]))
        print(f"{name:<15}{auto:>11.2f}{roll:>11.2f}{eager:>10.2f}{roll / auto:>8.2f}x   {parts}"
              + ("" if notes else "   (not batched)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
