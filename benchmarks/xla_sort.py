"""XLA:CPU's sort, reproduced with jax.jit alone: a sort of floats against the same sort of
integer keys, and an argsort carrying its indices as a second operand against one that packs
them into the keys (issue 13: what is XLA's, with a reproducer).

XLA:CPU sorts a single operand of a primitive type with a plain comparison quickly. jax.numpy's
float sort builds a total-order comparator (NaN and signed-zero handling inside it) that XLA:CPU
calls per comparison, and a sort of several operands takes the same generic path: both several
times slower. NumPy mode sorts floats by order-preserving integer keys and packs argsort's indices
into the keys (reactant_lab/trace/numpy_mode/order.py); this prints both against the plain
jax.numpy calls and NumPy, as ratios measured side by side in one run.

    .venv/bin/python benchmarks/xla_sort.py [--rows 2000] [--cols 500] [--rounds 15]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

FLIP = np.int64(0x7FFFFFFFFFFFFFFF)


def float_sort(x):
    return jnp.sort(x, axis=-1)


def key_sort(x):
    b = jax.lax.bitcast_convert_type(x, jnp.int64)
    key = jnp.where(jnp.isnan(x), np.int64(0x7FF8000000000000), jnp.where(b < 0, b ^ FLIP, b))
    key = jax.lax.sort(key, dimension=x.ndim - 1)
    return jax.lax.bitcast_convert_type(jnp.where(key < 0, key ^ FLIP, key), x.dtype)


def two_operand_argsort(x):
    return jnp.argsort(x, axis=-1, stable=True)


def packed_argsort(x):  # float32 keys: one pass of (key << 32 | index)
    b = jax.lax.bitcast_convert_type(x, jnp.int32)
    key = jnp.where(b < 0, b ^ np.int32(0x7FFFFFFF), b).astype(jnp.int64)
    index = jax.lax.broadcasted_iota(jnp.int64, x.shape, x.ndim - 1)
    return jax.lax.sort((key << 32) | index, dimension=x.ndim - 1) & np.int64(0xFFFFFFFF)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--cols", type=int, default=500, help="length of each sorted row")
    parser.add_argument("--rounds", type=int, default=15)
    opts = parser.parse_args()
    rng = np.random.default_rng(0)
    x64 = rng.standard_normal((opts.rows, opts.cols))
    x32 = x64.astype(np.float32)
    pairs = [
        ("sort float64", jax.jit(float_sort), jax.jit(key_sort), x64,
         lambda a: np.sort(a, axis=-1)),
        ("argsort float32", jax.jit(two_operand_argsort), jax.jit(packed_argsort), x32,
         lambda a: np.argsort(a, axis=-1, kind="stable")),
    ]
    print(f"jax {jax.__version__}, device {jax.devices()[0]}; {opts.rows} rows of {opts.cols}, "
          f"median of {opts.rounds} rounds, taken in turn")
    for name, plain, keyed, x, numpy_fn in pairs:
        dev = jax.device_put(x)
        np.testing.assert_array_equal(np.asarray(plain(dev)), np.asarray(keyed(dev)))
        np.testing.assert_array_equal(np.asarray(keyed(dev)), numpy_fn(x))
        times: dict[str, list[float]] = {"jax.numpy": [], "integer keys": [], "numpy": []}
        for _ in range(opts.rounds):
            for label, fn, arg in (("jax.numpy", plain, dev), ("integer keys", keyed, dev),
                                   ("numpy", numpy_fn, x)):
                start = time.perf_counter()
                jax.block_until_ready(fn(arg))
                times[label].append(time.perf_counter() - start)
        med = {k: float(np.median(v)) for k, v in times.items()}
        print(f"{name:16s} jax.numpy {med['jax.numpy'] * 1e3:8.2f} ms   integer keys "
              f"{med['integer keys'] * 1e3:8.2f} ms   numpy {med['numpy'] * 1e3:8.2f} ms   "
              f"keys {med['jax.numpy'] / med['integer keys']:.2f}x faster than jax.numpy, "
              f"{med['numpy'] / med['integer keys']:.2f}x numpy")


if __name__ == "__main__":
    main()
