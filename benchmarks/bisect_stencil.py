"""How long ``rl.bisect`` takes on the stencil of the bisect issue, and what it names: a float64
200x200 NumPy-mode heat stencil (20 sweeps with in-place row copies), preset ``all`` with
``exact=True`` (the exclusion table off), metric ``runtime``. Target: the culprit pattern
``slice_of_dynamic_update<1>`` named within 90 s on a 2-core machine. Then the reproducer's
rerun.py, run as a user would, prints the two timings.

Run: .venv/bin/python benchmarks/bisect_stencil.py [--threshold X] [--no-rerun]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl
from reactant_lab.bisect import bisect

CULPRIT = "slice_of_dynamic_update<1>"


def stencil(u: np.ndarray) -> None:
    """20 sweeps of an explicit heat step in place, copying the edge rows."""
    for _ in range(20):
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * (u[2:, 1:-1] - 2 * u[1:-1, 1:-1] + u[:-2, 1:-1])
        u[0, :] = u[1, :]
        u[-1, :] = u[-2, :]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threshold", type=float, default=None)
    parser.add_argument("--no-rerun", action="store_true")
    opts = parser.parse_args()
    u = np.random.default_rng().random((200, 200))
    print(f"versions: {rl.versions()}")
    start = time.perf_counter()
    result = bisect(stencil, u, metric="runtime", threshold=opts.threshold, exact=True,
                    progress=True)
    took = time.perf_counter() - start
    print(result.summary())
    print("\nlog:\n  " + "\n  ".join(result.log))
    named = CULPRIT in result.patterns
    print(f"\nbisect took {took:.1f} s wall ({result.tests} variants); culprit "
          f"{'named' if named else 'NOT named'}: {', '.join(result.patterns) or '-'} "
          f"(target: {CULPRIT} in <= 90 s)")
    if result.reproducer is not None and not opts.no_rerun:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(result.reproducer / "rerun.py")],
                              capture_output=True, text=True, check=False)
        print(f"\nrerun.py ({time.perf_counter() - start:.1f} s, exit {proc.returncode}):")
        print(proc.stdout + proc.stderr)
    return 0 if named and took <= 90 else 1


if __name__ == "__main__":
    sys.exit(main())
