"""Per-call cost of a NumPy-mode call against a jax.jit call with NumPy inputs, side by side.

A small kernel (1,000 float64 elements) that updates one argument in place and returns a
reduction, through ``rl.jit`` (signature checks, write-back into the caller's array and the NumPy
scalar result included), against ``jax.jit`` of the functional equivalent called on the same
NumPy arrays with 64-bit types on (the same arithmetic), its outputs fetched as NumPy values.
Calls alternate between the two, so machine noise hits both alike. Target (issue 13): <= 1.2.

Run: .venv/bin/python benchmarks/call_overhead.py [--rounds N] [--size N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax

import reactant_lab as rl


def kernel(x: np.ndarray, y: np.ndarray) -> np.float64:
    """NumPy mode: ``y`` updated in place, a scalar returned."""
    y[:] = x * 2.0 + 1.0
    return x.sum()


def functional(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    return x * 2.0 + 1.0, x.sum()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=1_000)
    opts = parser.parse_args()
    rng = np.random.default_rng(0)
    x, y = rng.random(opts.size), np.zeros(opts.size)
    ours = rl.jit(kernel)
    ours(x, y)
    jitted = jax.jit(functional)

    def theirs() -> None:
        with jax.enable_x64(True):
            new, total = jitted(x)
        y[...] = np.asarray(new)
        np.asarray(total)[()]

    theirs()
    samples: list[list[float]] = [[], []]
    for _ in range(opts.rounds):
        for k, call in enumerate((lambda: ours(x, y), theirs)):
            start = time.perf_counter()
            call()
            samples[k].append(time.perf_counter() - start)
    a, b = (float(np.median(s)) * 1e6 for s in samples)
    print(f"versions: {rl.versions()}")
    print(f"{opts.size} elements: rl.jit (NumPy mode) {a:.1f} us per call, jax.jit with NumPy "
          f"inputs {b:.1f} us: ratio {a / b:.2f} (target <= 1.2)")
    return 0 if a / b <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
