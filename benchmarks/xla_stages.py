"""What keeping XLA's own stages costs a compile: the compile of the final stage with XLA's dump
of every pass (``xla_passes=True``, what ``rl.explore`` does) against the same compile without
(what ``rl.jit`` does), side by side, alternating, for the in-place NumPy heat stencil (200x200,
20 steps) rolled and unrolled and a small JAX MLP; then building the stages from the dump (read
back, normalized, op counts) and where XLA's time went by its own clock.

Run: .venv/bin/python benchmarks/xla_stages.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from saved_size import heat

import reactant_lab as rl


def mlp(x, w1, w2):
    return jnp.sum(jnp.tanh(jnp.tanh(x @ w1) @ w2) ** 2, axis=1)


def cases() -> list[tuple[str, rl.Traced]]:
    u = np.random.default_rng(0).random((200, 200))
    rng = np.random.default_rng(1)
    f32 = np.float32
    return [("heat stencil, rolled", rl.trace(heat, u.copy(), 20)),
            ("heat stencil, unrolled", rl.trace(heat, u.copy(), 20, loops="unroll")),
            ("MLP 64x128x32", rl.trace(mlp, rng.standard_normal((64, 128)).astype(f32),
                                       rng.standard_normal((128, 128)).astype(f32),
                                       rng.standard_normal((128, 32)).astype(f32)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    opts = parser.parse_args()
    print(f"versions: {rl.versions()}")
    print(f"{'case':<24} {'plain ms':>9} {'kept ms':>9} {'ratio':>6} {'stages':>7} "
          f"{'build ms':>9}  XLA's own clock")
    for name, traced in cases():
        st = traced.stages("all")
        st.compile(xla_passes=True)  # warm-up: the template lowering, the compile worker
        plain, kept = [], []
        compiled = None
        for _ in range(opts.repeats):
            for keep, into in ((False, plain), (True, kept)):
                start = time.perf_counter()
                c = st.compile(xla_passes=keep)
                into.append(time.perf_counter() - start)
                compiled = c if keep else compiled
        assert compiled is not None
        start = time.perf_counter()
        xla = compiled.xla
        build = time.perf_counter() - start
        assert xla is not None
        p, k = statistics.median(plain), statistics.median(kept)
        print(f"{name:<24} {p * 1e3:9.1f} {k * 1e3:9.1f} {k / p:6.2f} {len(xla):7d} "
              f"{build * 1e3:9.1f}  {xla.timing().removeprefix('XLA: ')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
