"""Cost of one iteration of XLA:CPU's while loop, in ns: rl.jit vs jax.jit vs numba, per XLA option.

Four loops, each written once as a NumPy kernel (rl.jit with ``loops='roll'``, the trip count
traced so no pass can unroll or fold it; numba.njit of the same function) and once with
``lax.fori_loop`` under jax.jit (the trip count an argument):

- ``counted``  a counted loop whose body is one integer multiply-add of the index into the carry
  (an empty body, or one that only counts, is removed or folded by the passes and by XLA, and
  numba vectorizes an xor of the index);
- ``scalar``   one float64 carried, ``x = x * c + d``;
- ``3 scalars`` three float64 carried, each updated from the others;
- ``array``    a 1e6-element float64 array carried, one element written per iteration from the
  one before it (``a[i] = a[i - 1] * c + d``: a dynamic_update_slice, not batchable).

``jax unroll=8`` is the same fori_loop with ``unroll=8`` (the body repeated 8 times inside the
rolled loop, a remainder after it; JAX needs static bounds for it, so the trip count is static
there): what unrolling a short body buys on XLA:CPU.

Each time is the least process CPU time of several calls at two trip counts, ns/iteration their
difference over the difference in iterations (call overheads cancel). CPU time, not wall time:
the loops run on one thread, and on a shared machine wall time also counts the time the process
waited for a core (up to 3x the CPU time here, from run to run). Then
the same in a fresh process per XLA:CPU option (set through XLA_FLAGS before JAX starts: an
option this jaxlib does not know aborts that process, which is reported, not fatal):

- ``xla_cpu_use_thunk_runtime=false``, the legacy runtime that compiled a whole module into
  one function: jaxlib 0.10.2 accepts the flag and runs as before (the legacy runtime is gone;
  jaxlib 0.7 failed every executable with "CpuExecutable has no thunks"). What is left of it is
  the small-loop path below;
- ``xla_cpu_small_while_loop_byte_threshold`` raised to 1 GiB for both rl.jit and jax.jit (a loop
  touching less compiles into one native function, XLA:CPU's legacy emitter; rl.jit's own
  default is ``REACTANT_LAB_SMALL_LOOP_BYTES``, jax.jit's 1 KiB) and lowered to 0 for both (every
  loop runs on the thunk runtime, one dispatch per op per iteration);
- ``xla_cpu_copy_insertion_use_region_analysis=true``: fewer copies of carried scalars (3
  scalars 4.1 -> 2.7 ns, counted 1.5 -> 1.1 here), but rl.jit's csr_matvec (the loop kernel
  of tests/loop_kernels.py, 4000 rows) gives wrong results with it, so reactant_lab does not set
  it (the same nested loop written with lax.fori_loop is right: a miscompile of XLA's);
- the other XLA:CPU options that touch loops or their code generation:
  ``xla_cpu_use_fusion_emitters``, ``xla_cpu_enable_fast_math``,
  ``xla_gpu_enable_while_loop_unrolling`` (XLA's while-loop unroller, on GPU only: no effect on
  CPU), and ``xla_cpu_disable_loop_unrolling`` and ``xla_cpu_flatten_after_fusion``, names in
  jaxlib's binary that its flag parser refuses ("Unknown flag in XLA_FLAGS").

Run: .venv/bin/python benchmarks/while_cost.py [--quick] [--only-baseline]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ARRAY_SIZE = 1_000_000
"""Elements of the carried array (8 MB of float64)."""


# ---------------------------------------------------------------- the loops, NumPy kernels


def counted(n):
    k = np.int64(0)
    for i in range(n):
        k = k * 3 + i
    return k


def scalar(x, n):
    for _ in range(n):
        x = x * 0.999999 + 0.5
    return x


def three_scalars(x, n):
    a = x
    b = x * 0.5
    c = x * 0.25
    for _ in range(n):
        a, b, c = a * 0.999999 + b, b * 0.999 + c, c * 0.9 + 1.0
    return a + b + c


def array(a, n):
    for i in range(1, n):
        a[i] = a[i - 1] * 0.999999 + 0.5


# ---------------------------------------------------------------- the same, lax.fori_loop


def _ports(unroll: int = 1) -> dict[str, Callable[..., Any]]:
    """The loops with lax.fori_loop (``unroll`` > 1: unrolled by it, the bounds static)."""
    import jax.numpy as jnp
    from jax import lax

    def jx_counted(n):
        return lax.fori_loop(0, n, lambda i, k: k * 3 + i, jnp.int64(0), unroll=unroll)

    def jx_scalar(x, n):
        return lax.fori_loop(0, n, lambda _, x: x * 0.999999 + 0.5, x, unroll=unroll)

    def jx_three(x, n):
        def step(_, s):
            a, b, c = s
            return a * 0.999999 + b, b * 0.999 + c, c * 0.9 + 1.0

        a, b, c = lax.fori_loop(0, n, step, (x, x * 0.5, x * 0.25), unroll=unroll)
        return a + b + c

    def jx_array(a, n):
        return lax.fori_loop(1, n, lambda i, a: a.at[i].set(a[i - 1] * 0.999999 + 0.5), a,
                             unroll=unroll)

    return {"counted": jx_counted, "scalar": jx_scalar, "3 scalars": jx_three,
            "array": jx_array}


LOOPS: dict[str, tuple[Callable[..., Any], Callable[[int], tuple], tuple[int, int]]] = {
    "counted": (counted, lambda n: (n,), (2_000_000, 200_000)),
    "scalar": (scalar, lambda n: (1.0, n), (2_000_000, 200_000)),
    "3 scalars": (three_scalars, lambda n: (1.0, n), (2_000_000, 200_000)),
    "array": (array, lambda n: (np.zeros(ARRAY_SIZE), n), (ARRAY_SIZE, ARRAY_SIZE // 10)),
}
"""Loop -> (NumPy kernel, its arguments for n iterations, the two trip counts timed)."""
ENGINES = ("rl.jit", "jax.jit", "jax unroll=8", "numba")
UNROLL = 8
"""The unroll factor of the ``jax unroll=8`` engine."""


def _least(call: Callable[..., Any], args: tuple, repeats: int) -> float:
    """The least process CPU time of ``repeats`` calls on ``args`` (an array updated in place
    stays finite: the recurrences converge)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        call(*args)
        best = min(best, time.process_time() - start)
    return best


def _engine(name: str, fn: Callable[..., Any], port: Callable[..., Any]) -> Callable[..., Any]:
    """The loop compiled by ``name``: a callable that runs it to completion."""
    import jax

    if name == "rl.jit":
        import reactant_lab as rl

        jf = rl.jit(fn, loops="roll", trace_scalars=True)
        return lambda *a: jax.block_until_ready(jf(*a))
    if name.startswith("jax"):
        from reactant_lab import backend

        jitted = jax.jit(port, static_argnums=(port.__code__.co_argcount - 1,)
                         if name != "jax.jit" else ())

        def run(*a):
            with backend.x64_scope(True):
                return jax.block_until_ready(jitted(*a))

        return run
    import numba

    return numba.njit(fn)


def _placer(engine: str) -> Callable[[tuple], tuple]:
    """The arguments as ``engine`` takes them without a copy per call: jax.jit's arrays on the
    device (rl.jit and numba take NumPy's)."""
    if not engine.startswith("jax"):
        return lambda args: args
    import jax

    from reactant_lab import backend

    def placed(args: tuple) -> tuple:
        with backend.x64_scope(True):
            return tuple(jax.device_put(a) if isinstance(a, np.ndarray) else a for a in args)

    return placed


def ns_per_iteration(repeats: int, quick: bool) -> dict[str, dict[str, float | str]]:
    """Loop -> engine -> ns per iteration (or why it did not run)."""
    ports, unrolled = _ports(), _ports(UNROLL)
    out: dict[str, dict[str, float | str]] = {}
    for loop, (fn, make, trips) in LOOPS.items():
        big, small = (t // 10 for t in trips) if quick else trips
        row: dict[str, float | str] = {}
        for engine in ENGINES:
            if loop == "array" and "unroll" in engine:
                row[engine] = ("not run: XLA:CPU copies the whole array in each step of the "
                               "unrolled body (1.5 ms per iteration at 1,000 iterations)")
                continue
            try:
                call = _engine(engine, fn, (unrolled if "unroll" in engine else ports)[loop])
                placed = _placer(engine)
                call(*placed(make(small)))  # compiles (the trip count is traced but for unroll=)
                call(*placed(make(big)))
                t_big = _least(call, placed(make(big)), repeats)
                t_small = _least(call, placed(make(small)), repeats)
                row[engine] = max(t_big - t_small, 0.0) / (big - small) * 1e9
            except Exception as exc:  # an engine that cannot run the loop: its reason
                row[engine] = f"{type(exc).__name__}: {str(exc).strip()[:100]}"
        out[loop] = row
    return out


# ---------------------------------------------------------------- XLA options, one process each

_BIG = 1 << 30
OPTIONS: dict[str, dict[str, str]] = {
    "defaults": {},
    "thunk runtime off": {"XLA_FLAGS": "--xla_cpu_use_thunk_runtime=false"},
    "small-loop threshold 1 GiB": {
        "XLA_FLAGS": f"--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold={_BIG}",
        "REACTANT_LAB_SMALL_LOOP_BYTES": str(_BIG)},
    "small-loop threshold 0": {
        "XLA_FLAGS": "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=0",
        "REACTANT_LAB_SMALL_LOOP_BYTES": "0"},
    "fusion emitters off": {"XLA_FLAGS": "--xla_cpu_use_fusion_emitters=false"},
    "loop unrolling off": {"XLA_FLAGS": "--xla_cpu_disable_loop_unrolling=true"},
    "copy insertion region analysis": {
        "XLA_FLAGS": "--xla_cpu_copy_insertion_use_region_analysis=true"},
    "flatten after fusion": {"XLA_FLAGS": "--xla_cpu_flatten_after_fusion=true"},
    "fast math": {"XLA_FLAGS": "--xla_cpu_enable_fast_math=true"},
    "GPU while unroller (full)": {
        "XLA_FLAGS": "--xla_gpu_enable_while_loop_unrolling=WHILE_LOOP_UNROLLING_FULL_UNROLL"},
}
"""Option setting -> the environment of its process (added to this one's)."""


def _child(setting: str, repeats: int, quick: bool) -> dict[str, Any]:
    """Run this script in a fresh process under ``setting``'s environment."""
    env = {**os.environ, **OPTIONS[setting]}
    out = subprocess.run([sys.executable, __file__, "--child", "--repeats", str(repeats),
                          *(["--quick"] if quick else [])],
                         env=env, capture_output=True, text=True, check=False)
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        said = (out.stderr.strip().splitlines() or ["(nothing)"])[-1]
        return {"error": f"exit {out.returncode}: {said[:150]}"}
    return json.loads(lines[-1])


def _cell(value: float | str | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if isinstance(value, float) else "-"


def print_table(setting: str, got: dict[str, Any]) -> None:
    print(f"\n{setting}  {OPTIONS[setting] or '(no XLA_FLAGS)'}")
    if "error" in got:
        print(f"  did not run: {got['error']}")
        return
    head = f"  {'loop':<10} " + " ".join(f"{e:>12}" for e in ENGINES) + "   rl/numba  jax/numba"
    print(head)
    for loop, row in got.items():
        cells = " ".join(f"{_cell(row.get(e)):>12}" for e in ENGINES)
        nb = row.get("numba")

        def ratio(engine: str, row: dict[str, Any] = row, nb: Any = nb) -> str:
            mine = row.get(engine)
            if not isinstance(mine, float) or not isinstance(nb, float) or nb <= 0:
                return "-"
            return f"{mine / nb:.1f}x"

        print(f"  {loop:<10} {cells}   {ratio('rl.jit'):>8}  {ratio('jax.jit'):>9}")
        for engine in ENGINES:
            if isinstance(row.get(engine), str):
                print(f"    {engine}: {row[engine]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="trip counts / 10, 2 repeats")
    parser.add_argument("--repeats", type=int, default=7, help="calls per trip count")
    parser.add_argument("--only-baseline", action="store_true", help="no XLA option runs")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    repeats = 2 if opts.quick else opts.repeats
    if opts.child:
        print(json.dumps(ns_per_iteration(repeats, opts.quick)))
        return 0
    print("ns per iteration of a while loop (least of "
          f"{repeats} calls at two trip counts, their difference per iteration); "
          f"the array is {ARRAY_SIZE:,} float64")
    for setting in OPTIONS:
        print_table(setting, _child(setting, repeats, opts.quick))
        if opts.only_baseline:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
