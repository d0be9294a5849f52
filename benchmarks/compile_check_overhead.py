"""What guarding XLA compiles costs, measured side by side in one run (ratios, since absolute
times drift): each demo example's `all` module, and one large module (the cov NumPy loop of the
crash report at M=100, 1,099 ops), compiled in this process (REACTANT_LAB_COMPILE_CHECK=never),
under 'auto' (the default), under 'always' (the compile worker compiles, the executable is
loaded here), and as a probe (the worker compiles, then this process compiles again: the
alternative not chosen, and backend's fallback).

Also: the compile worker's start (first compile), the cost of the 'auto' decision, the first call
of a fresh rl.jit under 'auto' over 'never' (target: <= 1.10 for small modules), and with
--emitters the run-time effect of XLA:CPU's fusion emitters being off (the fallback after a
crash) on the demo examples and a few NumPy kernels.

Run: .venv/bin/python benchmarks/compile_check_overhead.py [--rounds N] [--large-rounds N]
     [--emitters] [--min-time S]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl
from reactant_lab import _compile_isolation, backend, timing
from reactant_lab.bench.measure import Variant, copy_inputs, plan_rounds, round_robin, warm_up
from reactant_lab.examples import EXAMPLES

_MODES = ("never", "auto", "always", "probe")
"""'probe' is option (b) measured: the worker compiles first, then this process compiles too."""
_EMITTERS_OFF = "--xla_cpu_use_fusion_emitters=false"
_KERNELS = ("jacobi_2d", "heat_3d", "softmax", "covariance", "mlp_forward", "arc_distance",
            "floyd_warshall")


def cov(data, out, n):
    """The triangular NumPy loop of the crash report (crashed XLA at M=376, enzyme-ad patterns)."""
    m = out.shape[0]
    for i in range(m):
        out[i:m, i] = out[i, i:m] = data[:, i] @ data[:, i:m] / (n - 1.0)


def _cov_args(rng: np.random.Generator, m: int = 100) -> tuple:
    return rng.random((m + 100, m)), np.zeros((m, m)), float(m + 100)


@contextmanager
def _mode(mode: str) -> Iterator[None]:
    """REACTANT_LAB_COMPILE_CHECK=mode; 'probe' is 'always' without loading the worker's
    executable (backend's route when JAX has no compile function to wrap)."""
    os.environ[backend.COMPILE_CHECK_VAR] = "always" if mode == "probe" else mode
    wrap = _compile_isolation.wrap_jax_compile
    if mode == "probe":
        _compile_isolation.wrap_jax_compile = lambda: False
    try:
        yield
    finally:
        _compile_isolation.wrap_jax_compile = wrap
        os.environ.pop(backend.COMPILE_CHECK_VAR, None)


def compile_seconds(st: rl.StageTrace, rounds: int) -> dict[str, list[float]]:
    """XLA compile seconds (Compiled.compile_seconds) per mode, modes interleaved."""
    samples: dict[str, list[float]] = {m: [] for m in _MODES}
    for _ in range(rounds):
        for mode, taken in samples.items():
            with _mode(mode):
                taken.append(st.compile().compile_seconds)
    return samples


def first_call_seconds(fn: Callable, args: tuple, rounds: int) -> dict[str, list[float]]:
    """Seconds of a fresh rl.jit's first call (trace, passes, compile, run), never / auto."""
    samples: dict[str, list[float]] = {"never": [], "auto": []}
    for _ in range(rounds):
        for mode, taken in samples.items():
            with _mode(mode):
                start = time.perf_counter()
                jax.block_until_ready(rl.jit(fn)(*args))
                taken.append(time.perf_counter() - start)
    return samples


def _ratio(over: list[float], base: list[float]) -> str:
    """'median ratio (min ratio)': on a shared machine the minima drift less."""
    return f"{timing.median(over) / timing.median(base):.2f} ({min(over) / min(base):.2f})"


def worker_start() -> tuple[float, float]:
    """(first 'always' compile with a cold compile worker, the same compile in this process)."""
    st = rl.trace(EXAMPLES[0].fn, *EXAMPLES[0].make_args(np.random.default_rng(0))).stages("all")
    backend._COMPILER.close()
    with _mode("always"):
        cold = st.compile().compile_seconds
    with _mode("never"):
        here = st.compile().compile_seconds
    return cold, here


def decision_seconds(text: str) -> float:
    """What deciding 'auto' costs on one module."""
    start, n = time.perf_counter(), 20
    for _ in range(n):
        backend.isolation_reason(text)
    return (time.perf_counter() - start) / n


def _row(name: str, ops: int, times: dict[str, list[float]], decide: float) -> str:
    ms = {m: timing.median(s) * 1e3 for m, s in times.items()}
    return (f"{name:<12} {ops:>6,} {ms['never']:>9.1f} {ms['auto']:>9.1f} {ms['always']:>10.1f} "
            f"{ms['probe']:>9.1f} {_ratio(times['auto'], times['never']):>12} "
            f"{_ratio(times['always'], times['never']):>12} "
            f"{_ratio(times['probe'], times['never']):>12} {decide * 1e6:>9.0f}")


def overhead_table(rounds: int, large_rounds: int) -> None:
    header = (f"{'module':<12} {'ops':>6} {'never ms':>9} {'auto ms':>9} {'always ms':>10} "
              f"{'probe ms':>9} {'auto/never':>12} {'always/never':>12} {'probe/never':>12} "
              f"{'decide µs':>9}")
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(0)
    for example in EXAMPLES:
        st = rl.trace(example.fn, *example.make_args(rng)).stages("all")
        print(_row(example.name, st.final.ops, compile_seconds(st, rounds),
                   decision_seconds(st.final.ir)), flush=True)
    st = rl.trace(cov, *_cov_args(rng)).stages("all")
    print(_row("cov M=100", st.final.ops, compile_seconds(st, large_rounds),
               decision_seconds(st.final.ir)), flush=True)
    print(f"('auto' compiles cov M=100 in the worker: {backend.isolation_reason(st.final.ir)})")


def first_call_table(rounds: int) -> None:
    print(f"\n{'first call':<12} {'never ms':>9} {'auto ms':>9} {'auto/never':>12}")
    rng = np.random.default_rng(1)
    for example in EXAMPLES:
        times = first_call_seconds(example.fn, jax.device_put(example.make_args(rng)), rounds)
        print(f"{example.name:<12} {timing.median(times['never']) * 1e3:>9.1f} "
              f"{timing.median(times['auto']) * 1e3:>9.1f} "
              f"{_ratio(times['auto'], times['never']):>12}", flush=True)
    print("target: auto/never <= 1.10 for small modules; ratios: of medians (of minima)")


def _compile_with_flags(st: rl.StageTrace, flags: str | None) -> tuple[rl.Compiled, float]:
    """Compile in a fresh compile worker started with XLA_FLAGS=``flags`` (the flags of this
    process are fixed at its start); both variants load the same way."""
    saved = os.environ.pop("XLA_FLAGS", None)
    if flags:
        os.environ["XLA_FLAGS"] = flags
    backend._COMPILER.close()
    try:
        with _mode("always"):
            start = time.perf_counter()
            compiled = st.compile()
            return compiled, time.perf_counter() - start
    finally:
        os.environ.pop("XLA_FLAGS", None)
        if saved is not None:
            os.environ["XLA_FLAGS"] = saved
        backend._COMPILER.close()


def emitter_row(name: str, fn: Callable, args: tuple, min_time: float) -> None:
    st = rl.trace(fn, *args).stages("all")
    on, on_s = _compile_with_flags(st, None)
    off, off_s = _compile_with_flags(st, _EMITTERS_OFF)
    numpy_in = any(isinstance(a, np.ndarray) for a in jax.tree_util.tree_leaves(args))
    place = np.array if numpy_in else (lambda a: a)
    fresh = (lambda: copy_inputs((args, {}), place)) if numpy_in else None
    variants = [Variant(n, c, [(args, {})], fresh) for n, c in (("on", on), ("off", off))]
    per_sample = [warm_up(v, 3) for v in variants]
    samples = round_robin(variants, plan_rounds(per_sample, min_time, None))
    t_on, t_off = (timing.median(s) for s in samples)
    print(f"{name:<16} {st.final.ops:>6,} {t_on * 1e6:>10.1f} {t_off * 1e6:>10.1f} "
          f"{t_off / t_on:>8.2f} {on_s:>8.2f} {off_s:>8.2f}", flush=True)


def emitter_table(min_time: float) -> None:
    from benchmarks.numpy_kernels import CASES

    header = (f"\n{'fusion emitters':<16} {'ops':>6} {'on µs':>10} {'off µs':>10} {'off/on':>8} "
              f"{'on s':>8} {'off s':>8}")
    print(header)
    print("-" * (len(header) - 1))
    rng = np.random.default_rng(2)
    for example in EXAMPLES:
        emitter_row(example.name, example.fn, jax.device_put(example.make_args(rng)), min_time)
    for name in _KERNELS:
        emitter_row(name, CASES[name].kernel, CASES[name].make(rng), min_time)
    emitter_row("cov M=100", cov, _cov_args(rng), min_time)
    print("(run time: median per call, both compiled in the compile worker and loaded here; "
          "compile: wall seconds)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--large-rounds", type=int, default=3)
    parser.add_argument("--emitters", action="store_true",
                        help="also measure the run-time effect of fusion emitters off")
    parser.add_argument("--min-time", type=float, default=0.5)
    opts = parser.parse_args()
    print(f"reactant_lab compile check overhead ({', '.join(f'{k} {v}' for k, v in rl.versions().items())}"
          f"; device {jax.devices()[0]})")
    cold, here = worker_start()
    print(f"compile worker start + first compile {cold * 1e3:.0f} ms (in this process "
          f"{here * 1e3:.0f} ms)\n")
    overhead_table(opts.rounds, opts.large_rounds)
    first_call_table(opts.rounds)
    if opts.emitters:
        emitter_table(opts.min_time)


if __name__ == "__main__":
    main()
