"""Per-call cost of a NumPy-mode call against a jax.jit call with NumPy inputs, side by side.

A small kernel (1,000 float64 elements) that updates one argument in place and returns a
reduction, through ``rl.jit`` (signature checks, write-back into the caller's array and the NumPy
scalar result included), against ``jax.jit`` of the functional equivalent called on the same
NumPy arrays with 64-bit types on (the same arithmetic), its outputs fetched as NumPy values.
Then the same with two Python numbers among the arrays (``axpby(alpha, x, beta, y)``, static in
both: NumPy mode's default, ``static_argnums`` for jax.jit). Calls alternate between the two,
so machine noise hits both alike. Target (issue 13): <= 1.2 for each.

Run: .venv/bin/python benchmarks/call_overhead.py [--rounds N] [--size N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def axpby(alpha: float, x: np.ndarray, beta: float, y: np.ndarray) -> np.float64:
    """NumPy mode with Python numbers: ``y`` updated in place, a scalar returned."""
    y *= beta
    y += alpha * x
    return y.max()


def axpby_functional(alpha: float, x: jax.Array, beta: float,
                     y: jax.Array) -> tuple[jax.Array, jax.Array]:
    new = beta * y + alpha * x
    return new, new.max()


def side_by_side(ours: Callable[[], Any], theirs: Callable[[], Any],
                 rounds: int) -> tuple[float, float]:
    """Median microseconds per call of each, their calls alternating."""
    samples: list[list[float]] = [[], []]
    for _ in range(rounds):
        for k, call in enumerate((ours, theirs)):
            start = time.perf_counter()
            call()
            samples[k].append(time.perf_counter() - start)
    a, b = (float(np.median(s)) * 1e6 for s in samples)
    return a, b


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
    a, b = side_by_side(lambda: ours(x, y), theirs, opts.rounds)
    print(f"versions: {rl.versions()}")
    print(f"{opts.size} elements: rl.jit (NumPy mode) {a:.1f} us per call, jax.jit with NumPy "
          f"inputs {b:.1f} us: ratio {a / b:.2f} (target <= 1.2)")

    scaled = rl.jit(axpby)
    scaled(1.5, x, 0.5, y)
    jitted_scaled = jax.jit(axpby_functional, static_argnums=(0, 2))

    def theirs_scaled() -> None:
        with jax.enable_x64(True):
            new, top = jitted_scaled(1.5, x, 0.5, y)
        y[...] = np.asarray(new)
        np.asarray(top)[()]

    theirs_scaled()
    c, d = side_by_side(lambda: scaled(1.5, x, 0.5, y), theirs_scaled, opts.rounds)
    print(f"{opts.size} elements, two Python numbers: rl.jit {c:.1f} us per call, jax.jit "
          f"{d:.1f} us: ratio {c / d:.2f} (target <= 1.2)")
    return 0 if a / b <= 1.2 and c / d <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
