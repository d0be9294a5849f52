"""Sharding scaling: a data-parallel MLP training step (batch on 'data', weights replicated) over
meshes of 1, 2, 4 and 8 simulated CPU devices, ours (rl.jit) beside jax.jit with the same
shardings: time, speedup, parallel efficiency, the collectives (the gradients' all-reduce) and
ours / jax.jit per size. Target: ours / jax.jit <= 1.1 at each size. The simulated devices share
the host's cores, so absolute scaling is not the target; parity with jax.jit is.

Sets XLA_FLAGS itself before JAX starts (one process, no subprocess).

Run: .venv/bin/python benchmarks/sharding_scaling.py [--batch 4096] [--hidden 512]
     [--min-time 0.5] [--shardy-passes default]
"""

from __future__ import annotations

import os

DEVICES = 8
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           f" --xla_force_host_platform_device_count={DEVICES}").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl  # noqa: E402

TARGET = 1.1


def train_step(params: dict[str, jax.Array], x: jax.Array, y: jax.Array) -> dict[str, jax.Array]:
    """One SGD step of a two-layer MLP on a mean squared error."""
    def loss(p: dict[str, jax.Array]) -> jax.Array:
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    grads = jax.grad(loss)(params)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--shardy-passes", default="default",
                        choices=("default", "to_mhlo_shardings"))
    args = parser.parse_args()
    assert len(jax.devices()) == DEVICES, jax.devices()
    rng = np.random.default_rng(0)
    f32 = np.float32
    params = {"w1": rng.standard_normal((args.features, args.hidden)).astype(f32) * 0.05,
              "b1": np.zeros(args.hidden, f32),
              "w2": rng.standard_normal((args.hidden, 16)).astype(f32) * 0.05,
              "b2": np.zeros(16, f32)}
    x = rng.standard_normal((args.batch, args.features)).astype(f32)
    y = rng.standard_normal((args.batch, 16)).astype(f32)
    result = rl.bench_scaling(train_step, params, x, y,
                              in_shardings={"args[1]": P("data"), "args[2]": P("data")},
                              meshes=[(1,), (2,), (4,), (8,)], min_time=args.min_time,
                              shardy_passes=args.shardy_passes)
    print(result.table())
    print("ours / jax.jit per size: " + ", ".join(
        f"{n} device{'s' if n > 1 else ''} {r:.3f}" for n, r in result.ratios.items()))
    ok = result.max_ratio <= TARGET
    print(f"target ours / jax.jit <= {TARGET}: {'met' if ok else 'MISSED'} "
          f"(max {result.max_ratio:.3f})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
