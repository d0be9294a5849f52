"""Updated arrays computed into a buffer kept between calls, or into new memory per call: the
NumPy-speed kernels that update an array of ``compile.KEPT_RESULT_MIN_BYTES`` or more, before
and after, side by side in one process.

XLA:CPU allocates each result anew on the thread that runs it; from about 30 MiB up that memory
is new to the process on every call and each of its pages faults in as the executable writes it
(``benchmarks/in_place_floor.py`` takes one kernel apart). ``rl.jit`` now has XLA write an
updated array's new value into the buffer the call before left, then copies it into the
caller's array as before. For each kernel, round-robin, each call on fresh copies of the inputs
(copying not timed), with the minor page faults per call:

- ``numpy``    the kernel, eager;
- ``kept``     ``rl.jit(kernel)``, large updated arrays kept (the default);
- ``new``      the same with nothing kept (``KEPT_RESULT_MIN_BYTES`` out of reach while it
  compiles): what rl.jit did before;
- ``jax.jit``  the kernel's port of ``benchmarks/numpy_speed.py`` (it returns new arrays: no
  write-back).

Run: .venv/bin/python benchmarks/kept_buffers.py [--rounds 25] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl
from benchmarks import numpy_speed as ns
from benchmarks.batched_loops import _fresh
from reactant_lab import backend
from reactant_lab import compile as rl_compile


def _updated_bytes(name: str, args: tuple) -> list[int]:
    return [args[int(p.removeprefix("args[").removesuffix("]"))].nbytes
            for p in ns.KERNELS[name].mutates]


def _variants(name: str, args: tuple) -> dict[str, Callable[[tuple], Any]]:
    kernel, case = ns.KERNELS[name].fn, ns.CASES[name]
    kept = rl.jit(kernel)
    kept(*_fresh(args))
    threshold = rl_compile.KEPT_RESULT_MIN_BYTES
    rl_compile.KEPT_RESULT_MIN_BYTES = 1 << 62
    try:
        new = rl.jit(kernel)
        new(*_fresh(args))
    finally:
        rl_compile.KEPT_RESULT_MIN_BYTES = threshold
    assert kept.last.compiled.kept and not new.last.compiled.kept, name
    with backend.x64_scope(True):
        port = jax.jit(case.port, static_argnums=case.static)
        placed = tuple(a if i in case.static or not isinstance(a, np.ndarray)
                       else jax.device_put(a) for i, a in enumerate(args))
        jax.block_until_ready(port(*placed))

    def run_port(_: tuple) -> Any:
        with backend.x64_scope(True):
            return jax.block_until_ready(port(*placed))

    return {"numpy": lambda a: kernel(*a), "kept": lambda a: kept(*a),
            "new": lambda a: new(*a), "jax.jit": run_port}


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--only", nargs="*", default=[])
    opts = parser.parse_args()
    rl.use_aligned_arrays()
    print(f"aligned arrays; medians of {opts.rounds} rounds, variants interleaved; kept from "
          f"{rl_compile.KEPT_RESULT_MIN_BYTES >> 20} MiB; speedup = numpy / variant; "
          "faults = minor page faults per call")
    print(f"{'kernel':<18}{'updated MiB':>12}{'numpy ms':>10}{'new':>8}{'kept':>8}"
          f"{'jax.jit':>9}{'faults new':>12}{'kept':>6}{'kept/new':>10}")
    for name in opts.only or list(ns.CASES):
        args = ns.CASES[name].make(np.random.default_rng(0))
        sizes = _updated_bytes(name, args)
        if max(sizes, default=0) < rl_compile.KEPT_RESULT_MIN_BYTES:
            continue
        with np.errstate(all="ignore"):
            variants = _variants(name, args)
            times: dict[str, list[float]] = {k: [] for k in variants}
            faults = dict.fromkeys(variants, 0)
            for r in range(opts.rounds):
                for label in (list(variants) if r % 2 else list(variants)[::-1]):
                    call = _fresh(args)
                    before, start = _faults(), time.perf_counter()
                    variants[label](call)
                    times[label].append(time.perf_counter() - start)
                    faults[label] += _faults() - before
        med = {k: float(np.median(v)) for k, v in times.items()}
        shown = "+".join(f"{s / 2**20:.0f}" for s in sizes if s >= 1 << 20)
        print(f"{name:<18}{shown:>12}{med['numpy'] * 1e3:>10.2f}"
              + "".join(f"{med['numpy'] / med[k]:>{w}.2f}x" for k, w in
                        (("new", 7), ("kept", 7), ("jax.jit", 8)))
              + f"{faults['new'] / opts.rounds:>12.0f}{faults['kept'] / opts.rounds:>6.0f}"
              f"{med['new'] / med['kept']:>9.2f}x", flush=True)


if __name__ == "__main__":
    main()
