"""Donating an updated array, or letting XLA read it in place: where ``donate='auto'`` draws the
line (``host_memory.IN_PLACE_MIN_BYTES``).

With reactant_lab's aligned allocator on (``rl.use_aligned_arrays()``), every NumPy array reaches
XLA without a copy unless it is donated: JAX does not donate memory it does not own, so a donated
caller array is copied first. Not donating saves that copy, but XLA then computes the new value
in a buffer of its own (and, for a loop carrying the array, copies the parameter it may not
overwrite into the loop's buffer). For each NumPy-speed kernel that updates arrays in place,
this times ``donate='updated'`` (every updated array donated) against ``donate=False``, side by
side in one process, with the sizes of the updated arrays.

Run: .venv/bin/python benchmarks/donation.py [--rounds 25] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl
from benchmarks import numpy_speed as ns
from benchmarks.batched_loops import _fresh
from reactant_lab import host_memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--only", nargs="*", default=[])
    opts = parser.parse_args()
    rl.use_aligned_arrays()
    names = opts.only or [n for n in ns.CASES if ns.KERNELS[n].mutates]
    print(f"aligned arrays; medians of {opts.rounds} rounds, variants interleaved; "
          f"donate='auto' keeps arrays of {host_memory.IN_PLACE_MIN_BYTES >> 20} MiB or more")
    print(f"{'kernel':<20}{'updated arrays':>22}{'donated ms':>12}{'kept ms':>10}"
          f"{'kept faster':>13}  auto picks")
    for name in names:
        kernel = ns.KERNELS[name].fn
        args = ns.CASES[name].make(np.random.default_rng(0))
        sizes = [args[int(p.removeprefix("args[").removesuffix("]"))].nbytes
                 for p in ns.KERNELS[name].mutates]
        variants = {"donated": rl.jit(kernel, donate="updated"),
                    "kept": rl.jit(kernel, donate=False)}

        with np.errstate(all="ignore"):
            for jf in variants.values():
                jf(*_fresh(args))
            times: dict[str, list[float]] = {k: [] for k in variants}
            for r in range(opts.rounds):
                for label in (list(variants) if r % 2 else list(variants)[::-1]):
                    call = _fresh(args)
                    start = time.perf_counter()
                    variants[label](*call)
                    times[label].append(time.perf_counter() - start)
        donated, kept = (float(np.median(times[k])) for k in ("donated", "kept"))
        picks = "kept" if any(s >= host_memory.IN_PLACE_MIN_BYTES for s in sizes) else "donated"
        shown = ", ".join(f"{s / 2**20:.2f}" for s in sizes[:4]) + (" ..." if len(sizes) > 4
                                                                     else "")
        print(f"{name:<20}{shown + ' MiB':>22}{donated * 1e3:>12.2f}{kept * 1e3:>10.2f}"
              f"{donated / kept:>12.2f}x  {picks}", flush=True)


if __name__ == "__main__":
    main()
