"""What running passes in a worker process costs, measured side by side in one run (ratios, since
absolute times drift): preset 'all' stage by stage on each demo example, with the passes in the
worker (the default) over the same passes in this process (REACTANT_LAB_INPROCESS_PASSES=1).

Also: the worker's start, one round trip on an empty module, and the per-process probe of
Reactant's pattern list. Target: the per-stage ratio <= 1.10.

Run: .venv/bin/python benchmarks/pass_worker_overhead.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import numpy as np

import reactant_lab as rl
from reactant_lab import backend, timing
from reactant_lab.examples import EXAMPLES
from reactant_lab.stages import patterns

_IN_PROCESS = "REACTANT_LAB_INPROCESS_PASSES"
_EMPTY = "module {\n  func.func public @main() {\n    return\n  }\n}\n"


def _stage_seconds(traced: rl.Traced, in_process: bool) -> float:
    """Pass time of preset 'all' (the sum over stages), in the worker or in this process."""
    if in_process:
        os.environ[_IN_PROCESS] = "1"
    try:
        return traced.stages("all").seconds
    finally:
        os.environ.pop(_IN_PROCESS, None)


def measure(example, rounds: int) -> tuple[float, float, int]:
    """(median seconds in the worker, in process, number of stages) for one example."""
    traced = rl.trace(example.fn, *example.make_args(np.random.default_rng(0)))
    worker, here = [], []
    for _ in range(rounds):  # alternate, so drift hits both sides alike
        worker.append(_stage_seconds(traced, False))
        here.append(_stage_seconds(traced, True))
    return timing.median(worker), timing.median(here), len(traced.stages("all")) - 1


def startup() -> tuple[float, float, float]:
    """(worker start + first request, one round trip, pattern probe) in seconds."""
    backend._WORKER.close()
    start = time.perf_counter()
    backend.run_pipeline(_EMPTY, "canonicalize")
    first = time.perf_counter() - start
    trips = []
    for _ in range(200):
        start = time.perf_counter()
        backend.run_pipeline(_EMPTY, "canonicalize")
        trips.append(time.perf_counter() - start)
    patterns.pattern_list.cache_clear()
    start = time.perf_counter()
    patterns.pattern_list(no_nan=False)
    return first, timing.median(trips), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    opts = parser.parse_args()
    os.environ.pop(_IN_PROCESS, None)
    print(f"reactant_lab pass worker overhead ({', '.join(f'{k} {v}' for k, v in rl.versions().items())}"
          f"; device {jax.devices()[0]})")
    first, trip, probe = startup()
    print(f"worker start + first request {first * 1e3:.0f} ms; round trip (empty module) "
          f"{trip * 1e6:.0f} us; pattern-list probe {probe * 1e3:.0f} ms")
    header = f"{'example':<12} {'stages':>6} {'worker ms':>10} {'in-process ms':>14} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    total_worker = total_here = 0.0
    for example in EXAMPLES:
        worker, here, stages = measure(example, opts.rounds)
        total_worker, total_here = total_worker + worker, total_here + here
        print(f"{example.name:<12} {stages:>6} {worker * 1e3:>10.1f} {here * 1e3:>14.1f} "
              f"{worker / here:>6.3f}")
    print(f"{'all':<12} {'':>6} {total_worker * 1e3:>10.1f} {total_here * 1e3:>14.1f} "
          f"{total_worker / total_here:>6.3f}")
    print("target: ratio <= 1.10")


if __name__ == "__main__":
    main()
