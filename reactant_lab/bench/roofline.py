"""The machine's limits, measured: peak compute (dense matmuls at float32 and bfloat16) and memory
bandwidth (a large copy), once per device and process; any of them may be given instead."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from reactant_lab import backend
from reactant_lab.errors import ReactantLabError

PEAKS = ("peak_flops", "peak_flops_bf16", "peak_bytes_per_s")
"""The peaks a Roofline holds, by field name."""
PEAK_LABELS = {"peak_flops": "float32 matmul", "peak_flops_bf16": "bfloat16 matmul",
               "peak_bytes_per_s": "copy"}
"""What measures each peak, in words."""
LOW_PRECISION = frozenset({"bfloat16", "float16"})
"""Element types whose work is bounded by the bfloat16 matmul peak."""


@dataclass(frozen=True)
class Roofline:
    """Peak compute and memory bandwidth of one device, as measured through XLA (or given)."""

    device: str
    """The device measured."""
    peak_flops: float
    """Floating-point operations per second of a dense float32 matmul."""
    peak_bytes_per_s: float
    """Bytes per second (read + write) of a large copy."""
    seconds: float
    """How long the measurements took."""
    peak_flops_bf16: float | None = None
    """Floating-point operations per second of a dense bfloat16 matmul (None: not known; the
    float32 peak stands in)."""
    measured: tuple[str, ...] = ()
    """The peaks (field names, of ``PEAKS``) measured on the device; the others were given."""

    def flops_peak(self, dtype: str | None = None) -> float:
        """The compute peak for work in ``dtype``: bfloat16's for 16-bit floats, else float32's."""
        if dtype in LOW_PRECISION and self.peak_flops_bf16:
            return self.peak_flops_bf16
        return self.peak_flops

    def floor_s(self, flops: float | None, bytes_accessed: float | None,
                dtype: str | None = None) -> float | None:
        """The least time the machine needs for this work: max(flops/peak, bytes/bandwidth)."""
        if not flops and not bytes_accessed:
            return None
        return max((flops or 0.0) / self.flops_peak(dtype),
                   (bytes_accessed or 0.0) / self.peak_bytes_per_s)

    def fraction(self, flops: float | None, bytes_accessed: float | None,
                 median_s: float, dtype: str | None = None) -> float | None:
        """Share of the roofline reached: the time floor over the measured median."""
        floor = self.floor_s(flops, bytes_accessed, dtype)
        return None if floor is None or median_s <= 0 else floor / median_s

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity where compute and bandwidth limits meet (float32)."""
        return self.peak_flops / self.peak_bytes_per_s

    def describe(self) -> str:
        """The peaks in words, each marked measured or given: ``37.7 GFLOP/s float32 matmul
        (measured), ...``."""
        parts = []
        for name in PEAKS:
            value = getattr(self, name)
            if value is None:
                continue
            rate = (f"{value / 1e9:.3g} GB/s" if name == "peak_bytes_per_s"
                    else flops_rate(value))
            how = "measured" if name in self.measured else "given"
            parts.append(f"{rate} {PEAK_LABELS[name]} ({how})")
        return ", ".join(parts)


def flops_rate(flops_per_s: float) -> str:
    """``186 GFLOP/s``, ``197 TFLOP/s`` (from 10^12 up)."""
    if flops_per_s >= 1e12:
        return f"{flops_per_s / 1e12:.3g} TFLOP/s"
    return f"{flops_per_s / 1e9:.3g} GFLOP/s"


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
    """(matmul edge, copy elements of float32): on the CPU small enough that all three
    measurements take well under a second, the copy still twice a large last-level cache;
    on an accelerator large enough to keep its matrix units and memory busy."""
    if device.platform == "cpu":
        return 512, 64 * 1024 * 1024 // 4
    return 8192, 1024 * 1024 * 1024 // 4


def _made_on(device: Any, make: Callable[[], Any]) -> Any:
    """``make()``'s array made on ``device`` itself: nothing crosses from the host (a 1 GiB
    operand would otherwise be timed through the host link first)."""
    with jax.default_device(device):
        return jax.block_until_ready(jax.jit(make)())


@functools.cache
def _matmul_peak(device: Any, dtype: str) -> tuple[float, float]:
    """(FLOP/s of a dense ``dtype`` matmul, seconds measuring it) on ``device``."""
    start = time.perf_counter()
    n, _ = _sizes(device)
    # Values of both signs and many magnitudes (not ones: a constant may be folded), cheap
    # to make (a random generator's compile alone took longer than the matmuls on the CPU).
    a = _made_on(device, lambda: ((jnp.arange(n * n, dtype=jnp.float32).reshape(n, n) % 17
                                   - 8.0) / 8.0).astype(dtype))
    best = _best_seconds(jax.jit(lambda m: m @ m), a, repeats=5)
    return 2.0 * n**3 / best, time.perf_counter() - start


@functools.cache
def _copy_peak(device: Any) -> tuple[float, float]:
    """(bytes per second read + written by a large in-place scaling, seconds measuring it)."""
    start = time.perf_counter()
    _, elems = _sizes(device)
    x = _made_on(device, lambda: jnp.ones(elems, jnp.float32))
    nbytes = x.nbytes
    # One read and one write per element, in place: a fresh output buffer would time the
    # operating system's page faults rather than the memory.
    copy = jax.jit(lambda v: v * jnp.float32(1.0000001), donate_argnums=0)
    best = _best_seconds(copy, x, repeats=5, feed_back=True)
    return 2.0 * nbytes / best, time.perf_counter() - start


def calibrate(device: Any | None = None, *, peak_flops: float | None = None,
              peak_flops_bf16: float | None = None,
              peak_bytes_per_s: float | None = None) -> Roofline:
    """The device's roofline: each peak not given is measured once per device and process
    (cached), under a second on the CPU (a 512² matmul at float32 and bfloat16, a 64 MB copy);
    an accelerator gets an 8192² matmul and a 1 GiB copy, made on the device."""
    dev = backend.resolve_device(device)
    given = {"peak_flops": peak_flops, "peak_flops_bf16": peak_flops_bf16,
             "peak_bytes_per_s": peak_bytes_per_s}
    for name, value in given.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not math.isfinite(value) or value <= 0):
            raise ReactantLabError(f"{name} must be a positive number (per second), not "
                                   f"{value!r}; leave it out to measure it")
    measure = {"peak_flops": lambda: _matmul_peak(dev, "float32"),
               "peak_flops_bf16": lambda: _matmul_peak(dev, "bfloat16"),
               "peak_bytes_per_s": lambda: _copy_peak(dev)}
    values: dict[str, float] = {}
    seconds = 0.0
    for name in PEAKS:
        value = given[name]
        if value is None:
            value, took = measure[name]()
            seconds += took
        values[name] = float(value)
    return Roofline(str(dev), values["peak_flops"], values["peak_bytes_per_s"], seconds,
                    values["peak_flops_bf16"],
                    tuple(name for name in PEAKS if given[name] is None))
