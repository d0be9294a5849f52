"""Per-call cost of a guarded call (one that may not end, run where Ctrl-C and timeout= stop it)
against the same executable called unguarded, side by side.

A NumPy kernel whose ``while`` loop's length depends on the data (XLA cannot tell its trip
count, so ``rl.jit`` runs it guarded: on a runner thread, on a twin of the executable in a
synchronous XLA:CPU client of its own), on 1,000 float64 elements and a few iterations, against
``Compiled.unguarded()`` of the same executable (JAX's dispatch on the calling thread, as every
call without such a loop or a time limit runs). Then a loop-free kernel, unguarded as usual,
against the same with ``timeout=``. Calls alternate, so machine noise hits both alike.

Run: .venv/bin/python benchmarks/guarded_calls.py [--rounds N] [--size N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from call_overhead import side_by_side

import reactant_lab as rl


def halve_until_small(a: np.ndarray) -> np.float64:
    """A loop of data-dependent length: XLA cannot tell its trip count."""
    while a[0] > 1.0:
        a *= 0.5
    return a.sum()


def scale(a: np.ndarray) -> np.float64:
    """No loop."""
    a *= 0.5
    return a.sum()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5_000)
    parser.add_argument("--size", type=int, default=1_000)
    opts = parser.parse_args()
    a = np.random.default_rng(0).random(opts.size) + 0.5  # a[0] <= 1.5: one halving at most
    looped = rl.jit(halve_until_small)
    looped(a.copy())
    guarded = looped.last.compiled
    assert guarded.guarded, "expected the loop to be guarded"
    direct = guarded.unguarded()
    g, d = side_by_side(lambda: guarded(a.copy()), lambda: direct(a.copy()), opts.rounds)
    print(f"versions: {rl.versions()}")
    print(f"{opts.size} elements, a loop XLA cannot bound: guarded {g:.1f} us per call, "
          f"unguarded {d:.1f} us: {g - d:+.1f} us")
    plain = rl.jit(scale)
    plain(a.copy())
    limited = plain.last.compiled.with_timeout(60)
    p, t = side_by_side(lambda: plain(a.copy()), lambda: limited(a.copy()), opts.rounds)
    print(f"{opts.size} elements, no loop: unguarded {p:.1f} us per call, with timeout= "
          f"{t:.1f} us: {t - p:+.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
