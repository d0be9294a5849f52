"""The copies a call of NumPy arrays makes around its run on the device, measured apart from it:
host to device (its inputs) and device to host (its results and updated arrays)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from reactant_lab import timing
from reactant_lab.bench.measure import Inputs

REPEATS = 5
"""Copies timed each way; the median is kept (the first copy of an array pays for more than the
link: allocation, page faults)."""


@dataclass(frozen=True)
class Transfers:
    """Bytes and seconds per call copied to and from the device, each way timed on its own."""

    h2d_bytes: int
    """Bytes copied host to device: the arrays the executable takes."""
    h2d_s: float
    """Seconds to put them on the device (median of ``REPEATS``, waited for)."""
    d2h_bytes: int
    """Bytes copied device to host: the results and the updated arrays' new values."""
    d2h_s: float
    """Seconds to read them into host memory (median of ``REPEATS``)."""


def device_arrays(tree: Any) -> list[jax.Array]:
    """The JAX arrays among the leaves of ``tree``."""
    return [leaf for leaf in jax.tree_util.tree_leaves(tree) if isinstance(leaf, jax.Array)]


def measure(place: Callable[[], Inputs], run: Callable[..., Any],
            repeats: int = REPEATS) -> Transfers:
    """Time ``place()`` (the host-to-device copies, waited for) and the reading of what
    ``run(*args, **kwargs)`` returns on them into NumPy arrays (device to host), ``repeats``
    times each, each time on fresh copies and fresh results (a JAX array keeps its host copy
    once read). The run itself is not timed."""
    up: list[float] = []
    down: list[float] = []
    h2d_bytes = d2h_bytes = 0
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        args, kwargs = jax.block_until_ready(place())
        up.append(time.perf_counter() - start)
        h2d_bytes = sum(a.nbytes for a in device_arrays((args, kwargs)))
        outs = device_arrays(jax.block_until_ready(run(*args, **kwargs)))
        start = time.perf_counter()
        on_host = [np.asarray(a) for a in outs]
        down.append(time.perf_counter() - start)
        d2h_bytes = sum(a.nbytes for a in on_host)
    return Transfers(h2d_bytes, timing.median(up), d2h_bytes, timing.median(down))
