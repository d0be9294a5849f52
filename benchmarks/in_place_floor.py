"""An in-place elementwise update of a large NumPy array: where XLA:CPU's time goes, against
NumPy's one pass (issue 39, family 4: ``np.clip(a, lo, hi, out=a)``, ``a[a < 0] = 0``).

NumPy updates ``a`` where it lies: one read and one write of each element. A compiled call
cannot: XLA:CPU reads the caller's 64-byte-aligned array in place, but computes the new value
into memory of its own, which is then copied into ``a``. It cannot write into ``a`` itself:
donating a buffer that wraps the caller's memory (zero-copy) does not make XLA write there (the
last line shows where the result landed). So the floor of a copy back is two passes over the
array, XLA's and the copy's, against NumPy's one; on Linux the copy's pass becomes a trade of
memory pages where the two buffers start at the same offset in a page.

On top of that floor, XLA:CPU allocates each result with the C library's malloc on the thread
that runs it; from about 30 MiB up that memory is new to the process on every call, and the
executable faults in each of its pages as it writes (~7,800 faults for 32 MB). rl.jit computes a
large updated array's new value into a buffer kept from the call before instead
(``compile.KEPT_RESULT_MIN_BYTES``): no page faults. Each variant, sampled round-robin (the
machine's drift hits all alike), with its minor page faults per call:

- ``numpy``            ``np.clip(a, -0.5, 0.5, out=a)``;
- ``xla, new memory``  jax.jit's clip of the array, result in memory XLA allocates per call;
- ``xla, kept buffer`` the same, the result written into the last call's result (donated);
- ``copy back, numpy`` copying a result into the caller's array with ``np.copyto``;
- ``copy back, ours``  the same as rl.jit wrote back a large array: two threads, each
  copying half with non-temporal stores (``host_memory.stream_copy``: the caller's lines are
  not read first, as a plain copy's are);
- ``page trade``       what rl.jit does instead where it can: the memory pages of a result
  nothing reads afterwards trade places with the caller's array's (``host_memory.swap_pages``,
  ``mremap``: page table entries move, not data);
- ``rl.jit``           ``rl.jit`` of the NumPy kernel: read in place, kept buffer, copy back;
- ``rl.jit, no keep``  the same with no buffer kept (what rl.jit did before).

Run: .venv/bin/python benchmarks/in_place_floor.py [--mb 32 128] [--rounds 30]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl
from reactant_lab import backend, host_memory
from reactant_lab import compile as rl_compile


def clip_inplace(a):
    np.clip(a, -0.5, 0.5, out=a)


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _variants(a: np.ndarray) -> dict[str, Callable[[], object]]:
    new = jax.jit(lambda x: jnp.clip(x, -0.5, 0.5))
    into = jax.jit(lambda x, _buf: jnp.clip(x, -0.5, 0.5), donate_argnums=1, keep_unused=True)
    x = jax.device_put(a)
    kept = [jnp.zeros_like(x)]
    result = np.asarray(new(x))
    spare = np.array(a)  # the aligned allocator's, at the same offset in its page as a
    keep_min = rl_compile.KEPT_RESULT_MIN_BYTES
    fast = rl.jit(clip_inplace)
    fast(a)
    rl_compile.KEPT_RESULT_MIN_BYTES = 1 << 62
    try:
        plain = rl.jit(clip_inplace)
        plain(a)
    finally:
        rl_compile.KEPT_RESULT_MIN_BYTES = keep_min
    assert fast.last.compiled.kept == ("args[0]",) and plain.last.compiled.kept == ()
    return {
        "numpy": lambda: np.clip(a, -0.5, 0.5, out=a),
        "xla, new memory": lambda: new(x).block_until_ready(),
        "xla, kept buffer": lambda: kept.append(into(x, kept.pop()).block_until_ready()),
        "copy back, numpy": lambda: np.copyto(a, result),
        "copy back, ours": lambda: rl_compile.copy_into(a, result),
        "page trade": lambda: host_memory.swap_pages(a, spare) or np.copyto(a, spare),
        "rl.jit": lambda: fast(a),
        "rl.jit, no keep": lambda: plain(a),
    }


def _where_donation_lands(a: np.ndarray) -> str:
    """Donate a zero-copy buffer over ``a`` to a clip: did XLA write into ``a``?"""
    x = jax.dlpack.from_dlpack(a, copy=False)
    if x.unsafe_buffer_pointer() != a.ctypes.data:
        return "the caller's array was copied in (not 64-byte aligned?)"
    y = jax.jit(lambda v: jnp.clip(v, -0.5, 0.5), donate_argnums=0)(x)
    same = y.unsafe_buffer_pointer() == a.ctypes.data
    return ("into the caller's array" if same else
            "into XLA's own memory: a buffer over the caller's memory is not donated")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, nargs="*", default=[32, 128])
    parser.add_argument("--rounds", type=int, default=30)
    opts = parser.parse_args()
    rl.use_aligned_arrays()
    with backend.x64_scope(True):
        for mb in opts.mb:
            a = np.random.default_rng(0).standard_normal(mb * (1 << 20) // 8)
            variants = _variants(a)
            times: dict[str, list[float]] = {k: [] for k in variants}
            faults = dict.fromkeys(variants, 0)
            for _ in range(opts.rounds):
                for name, run in variants.items():
                    before, start = _faults(), time.perf_counter()
                    run()
                    times[name].append(time.perf_counter() - start)
                    faults[name] += _faults() - before
            base = float(np.median(times["numpy"]))
            print(f"\n{mb} MiB float64, medians of {opts.rounds} rounds")
            print(f"{'variant':<18}{'ms':>9}{'numpy / it':>12}{'faults/call':>13}")
            for name, ts in times.items():
                med = float(np.median(ts))
                print(f"{name:<18}{med * 1e3:>9.2f}{base / med:>11.2f}x"
                      f"{faults[name] / opts.rounds:>13.0f}")
            print(f"donating the caller's array: XLA wrote {_where_donation_lands(a)}")


if __name__ == "__main__":
    main()
