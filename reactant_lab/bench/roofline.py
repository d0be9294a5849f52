"""The machine's limits, measured: peak compute (a large matmul) and memory bandwidth (a large copy)."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab import backend


@dataclass(frozen=True)
class Roofline:
    """Peak compute and memory bandwidth of one device, as measured through XLA."""

    device: str
    """The device measured."""
    peak_flops: float
    """Floating-point operations per second of a large float32 matmul."""
    peak_bytes_per_s: float
    """Bytes per second (read + write) of a large copy."""
    seconds: float
    """How long the calibration took."""

    def floor_s(self, flops: float | None, bytes_accessed: float | None) -> float | None:
        """The least time the machine needs for this work: max(flops/peak, bytes/bandwidth)."""
        if not flops and not bytes_accessed:
            return None
        return max((flops or 0.0) / self.peak_flops,
                   (bytes_accessed or 0.0) / self.peak_bytes_per_s)

    def fraction(self, flops: float | None, bytes_accessed: float | None,
                 median_s: float) -> float | None:
        """Share of the roofline reached: the time floor over the measured median."""
        floor = self.floor_s(flops, bytes_accessed)
        return None if floor is None or median_s <= 0 else floor / median_s

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity where compute and bandwidth limits meet."""
        return self.peak_flops / self.peak_bytes_per_s


def _best_seconds(fn: Any, arg: Any, repeats: int, *, feed_back: bool = False) -> float:
    """Fastest of ``repeats`` synchronized calls after one warm-up; with ``feed_back`` each
    result is the next input (for a function that donates its input)."""
    best = float("inf")
    for i in range(repeats + 1):
        start = time.perf_counter()
        out = jax.block_until_ready(fn(arg))
        if i:
            best = min(best, time.perf_counter() - start)
        if feed_back:
            arg = out
    return best


def _sizes(device: Any) -> tuple[int, int]:
    """(matmul edge, copy elements): the copy is far larger than any cache, both are quick."""
    if device.platform == "cpu":
        return 1024, 256 * 1024 * 1024 // 4
    return 8192, 2 * 1024 * 1024 * 1024 // 4


@functools.cache
def calibrate(device: Any | None = None) -> Roofline:
    """Measure the device's roofline once per process (cached per device)."""
    dev = backend.resolve_device(device)
    start = time.perf_counter()
    n, elems = _sizes(dev)
    rng = np.random.default_rng()
    a = jax.device_put(rng.standard_normal((n, n), dtype=np.float32), dev)
    matmul = jax.jit(lambda m: m @ m)
    t_mm = _best_seconds(matmul, a, repeats=5)
    del a
    x = jax.device_put(np.ones(elems, dtype=np.float32), dev)
    nbytes = x.nbytes
    # One read and one write per element, in place: a fresh output buffer would time the
    # operating system's page faults rather than the memory.
    copy = jax.jit(lambda v: v * jnp.float32(1.0000001), donate_argnums=0)
    t_copy = _best_seconds(copy, x, repeats=5, feed_back=True)
    return Roofline(str(dev), 2.0 * n**3 / t_mm, 2.0 * nbytes / t_copy,
                    time.perf_counter() - start)
