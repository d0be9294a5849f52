"""Honest wall-clock sampling of a call: warm-up kept out, device synchronized, robust statistics."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax


def sample(fn: Callable[[], Any], *, repeats: int | None = None, min_time: float = 0.2,
           warmup: int = 3) -> list[float]:
    """Seconds per call of ``fn()``, each sample synchronized with ``block_until_ready``.

    Warm-up calls are not counted. Without ``repeats``, samples are taken until ``min_time``
    seconds have been spent (at least 5, at most 100,000).
    """
    for _ in range(warmup):
        jax.block_until_ready(fn())
    samples: list[float] = []
    spent = 0.0
    while True:
        start = time.perf_counter()
        jax.block_until_ready(fn())
        took = time.perf_counter() - start
        samples.append(took)
        spent += took
        if repeats is not None:
            if len(samples) >= repeats:
                return samples
        elif (spent >= min_time and len(samples) >= 5) or len(samples) >= 100_000:
            return samples


def interleaved(fns: Sequence[Callable[[], Any]], *, rounds: int = 200, batch: int = 20,
                warmup: int = 3) -> list[list[float]]:
    """Per-call seconds of several functions measured round-robin, so drift hits all alike.

    Each sample times ``batch`` back-to-back calls (for calls of a few microseconds, one call is
    below the timer's resolution) and records the mean per call.
    """
    for fn in fns:
        for _ in range(warmup):
            jax.block_until_ready(fn())
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(batch):
                result = fn()
            jax.block_until_ready(result)
            out[i].append((time.perf_counter() - start) / batch)
    return out


def format_seconds(seconds: float | None, micro: str = "µs") -> str:
    """``'1.23 ms'``: three significant digits in the largest unit that fits; ``'-'`` for None.
    ``micro`` spells microseconds (``'us'`` for plain-ASCII text)."""
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), (micro, 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def median(samples: Sequence[float]) -> float:
    """Median of samples."""
    return statistics.median(samples)


def iqr(samples: Sequence[float]) -> float:
    """Interquartile range of samples (0 for fewer than two)."""
    if len(samples) < 2:
        return 0.0
    q = statistics.quantiles(samples, n=4, method="inclusive")
    return q[2] - q[0]
