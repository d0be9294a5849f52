"""What a rolled loop costs XLA:CPU's compile, in plain JAX: the reproducer behind the first calls
that stay above 3x the jax.jit port's in ``numpy_speed.py`` (issue 13).

NumPy code whose loop cannot run batched or as one sum keeps a ``stablehlo.while``; its port, a
vectorized expression, has none. Each case here is jit-compiled in plain JAX (no reactant_lab),
timed from the lowered module to the loaded executable, beside the loopless computation it
extends, in one process:

- ``product``: covariance's port, ``x.T @ x`` of a (1000, 300) array;
- ``product + loop of row writes``: the same product, then a 300-iteration ``fori_loop`` that
  writes one row of it per iteration (``dynamic_update_slice``), the smallest loop of
  covariance's shape;
- ``product + loop of masked scatters``: the loop that reactant_lab compiles for covariance's
  ``cov[i:, i] = cov[i, i:] = ...``: two masked scatters of row i per iteration;
- ``elementwise`` and ``elementwise + trivial loop``: ``x + c`` against a 300-iteration loop of
  ``x + c`` over a (300, 300) array.

Each compile uses a module of its own (a constant changes between repeats, so XLA's compile
cache never answers); the best of ``--repeats`` is printed with its ratio to the loopless case.
Measured on this project's 2-core machines: a loop adds 0.03-0.1 s to the compile whatever its
body, about what the whole first call of the ports of covariance, trmm and cholesky takes.

Run: .venv/bin/python benchmarks/xla_loop_compile.py [--repeats N]
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_enable_x64", True)

_constants = itertools.count(1)


def compile_seconds(make: Callable[[float], Callable[..., Any]], *args: Any,
                    repeats: int) -> float:
    """Best compile time of ``make(c)`` over ``repeats`` modules (a new constant ``c`` each)."""
    best = float("inf")
    for _ in range(repeats):
        lowered = jax.jit(make(1.0 + next(_constants) * 1e-6)).lower(*args)
        start = time.perf_counter()
        lowered.compile()
        best = min(best, time.perf_counter() - start)
    return best


def product(c: float) -> Callable[..., Any]:
    return lambda x: (x.T @ x) * c


def product_row_loop(c: float) -> Callable[..., Any]:
    def f(x: Any) -> Any:
        p = x.T @ x

        def body(i: Any, cov: Any) -> Any:
            return lax.dynamic_update_slice(cov, lax.dynamic_slice(p, (i, 0), (1, 300)) * c,
                                            (i, 0))
        return lax.fori_loop(0, 300, body, jnp.zeros_like(p))
    return f


def product_masked_scatters(c: float) -> Callable[..., Any]:
    def f(x: Any) -> Any:
        p = x.T @ x
        cols = lax.iota(jnp.int32, 300)

        def body(i: Any, cov: Any) -> Any:
            row = lax.dynamic_index_in_dim(p, i, keepdims=False) * c
            keep = cols >= i
            at = jnp.where(keep, cols, 300)  # out of bounds: dropped
            here = jnp.full_like(cols, i)
            cov = cov.at[here, at].set(row, mode="drop")
            return cov.at[at, here].set(row, mode="drop")
        return lax.fori_loop(0, 300, body, jnp.zeros_like(p))
    return f


def elementwise(c: float) -> Callable[..., Any]:
    return lambda y: y + c


def trivial_loop(c: float) -> Callable[..., Any]:
    return lambda y: lax.fori_loop(0, 300, lambda i, v: v + c, y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="modules compiled per case")
    opts = parser.parse_args()
    x, y = jnp.ones((1000, 300)), jnp.ones((300, 300))
    print(f"XLA:CPU compile seconds, best of {opts.repeats} (jax {jax.__version__}, "
          f"{jax.devices()[0].platform})")
    cases = [("product", product, x, None),
             ("product + loop of row writes", product_row_loop, x, "product"),
             ("product + loop of masked scatters", product_masked_scatters, x, "product"),
             ("elementwise", elementwise, y, None),
             ("elementwise + trivial loop", trivial_loop, y, "elementwise")]
    seconds: dict[str, float] = {}
    for name, make, arg, base in cases:
        seconds[name] = compile_seconds(make, arg, repeats=opts.repeats)
        ratio = f"  {seconds[name] / seconds[base]:.2f}x {base}" if base else ""
        print(f"  {name:<36} {seconds[name]:.3f} s{ratio}")


if __name__ == "__main__":
    main()
