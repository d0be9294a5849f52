"""Round-robin measurement of several variants of one call, each sample synchronized."""

from __future__ import annotations

import gc
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

if TYPE_CHECKING:  # transfers imports this module's Inputs
    from reactant_lab.bench.transfers import Transfers

Inputs = tuple[tuple[Any, ...], dict[str, Any]]
"""(positional arguments, keyword arguments) of one call."""

_SAMPLE_TARGET_S = 1e-3  # one sample spans at least this long: calls of microseconds are batched
_ROTATE_BELOW_BYTES = 8 * 1024 * 1024  # inputs smaller than this are rotated among copies
_MAX_COPIES = 16


@dataclass
class Variant:
    """One thing to time: a call on prepared inputs."""

    name: str
    """Row name: a preset or a baseline."""
    call: Callable[..., Any]
    """``call(*args, **kwargs)``."""
    pool: list[Inputs]
    """Input sets to rotate among (one when inputs are large)."""
    fresh: Callable[[], Inputs] | None = None
    """For functions that update their arguments: makes a fresh input set (not timed)."""
    calls_per_sample: int = 1
    """Calls timed back to back in one sample (chosen from a first timing)."""
    transfers: Transfers | None = None
    """The copies to and from the device a call of NumPy arrays makes, timed apart
    or None."""

    def inputs(self, i: int) -> Inputs:
        """The input set for the i-th call of a sample (a fresh copy for mutating functions)."""
        return self.fresh() if self.fresh is not None else self.pool[i % len(self.pool)]

    def run_once(self, inputs: Inputs) -> Any:
        """One synchronized call."""
        args, kwargs = inputs
        return jax.block_until_ready(self.call(*args, **kwargs))


def is_array(leaf: Any) -> bool:
    """NumPy or JAX array leaf (NumPy scalars included)."""
    return isinstance(leaf, np.ndarray | np.generic | jax.Array)


def copies(inputs: Inputs, place: Callable[[Any], Any]) -> list[Inputs]:
    """Several copies of small inputs (so caches do not flatter the result), one of large ones."""
    nbytes = sum(np.asarray(leaf).nbytes for leaf in jax.tree_util.tree_leaves(inputs)
                 if is_array(leaf))
    n = 1 if nbytes >= _ROTATE_BELOW_BYTES else min(
        _MAX_COPIES, max(1, math.ceil(_ROTATE_BELOW_BYTES / max(nbytes, 1))))
    return [copy_inputs(inputs, place) for _ in range(n)]


def copy_inputs(inputs: Inputs, place: Callable[[Any], Any]) -> Inputs:
    """A copy of the array leaves of ``inputs`` made by ``place`` (statics are kept as they are)."""
    copied: Inputs = jax.tree_util.tree_map(lambda leaf: place(leaf) if is_array(leaf) else leaf,
                                            inputs)
    return copied


def warm_up(variant: Variant, warmup: int) -> float:
    """Run ``warmup`` calls (at least three, untimed as samples) and pick calls per sample;
    returns the expected seconds of one sample.

    Only calls well under ``_SAMPLE_TARGET_S`` are batched, and the choice comes from the median
    warm-up call, so that one slow warm-up call does not change what a sample measures.
    """
    took = []
    for i in range(max(3, warmup)):
        inputs = variant.inputs(i)
        start = time.perf_counter()
        variant.run_once(inputs)
        took.append(time.perf_counter() - start)
    typical = sorted(took[1:])[len(took[1:]) // 2]
    variant.calls_per_sample = (1 if typical >= _SAMPLE_TARGET_S / 4 else
                                min(10_000, math.ceil(_SAMPLE_TARGET_S / max(typical, 1e-9))))
    return typical * variant.calls_per_sample


def take_sample(variant: Variant) -> float:
    """Seconds per call over one sample of ``calls_per_sample`` calls; input copies not timed."""
    n = variant.calls_per_sample
    prepared = [variant.inputs(i) for i in range(n)]
    results = []
    collecting = gc.isenabled()
    gc.disable()  # as timeit does: no collection of another variant's garbage inside this sample
    try:
        start = time.perf_counter()
        for args, kwargs in prepared:
            results.append(variant.call(*args, **kwargs))
        jax.block_until_ready(results)  # every call, not just the last: the device may overlap
        return (time.perf_counter() - start) / n
    finally:
        if collecting:
            gc.enable()


def plan_rounds(sample_seconds: Sequence[float], min_time: float,
                repeats: int | None) -> int:
    """Rounds of round-robin sampling: ``repeats``, or enough for the slowest variant to fill
    ``min_time`` (between 10 and 2,000)."""
    if repeats is not None:
        return max(1, repeats)
    slowest = max(sample_seconds, default=min_time)
    return max(10, min(2000, math.ceil(min_time / max(slowest, 1e-9))))


def round_robin(variants: Sequence[Variant], rounds: int,
                progress: Callable[[int], None] | None = None) -> list[list[float]]:
    """Samples of each variant, interleaved so that drift of the machine hits all alike; each
    round in its own order (shuffled, seeded: the same from run to run), so that no variant
    mostly follows the same one. What runs just before a sample shows in it: right after
    NumPy's eager loops a compiled call measured up to twice its time after another compiled
    call here, and a fixed order gave that to the variant listed after NumPy alone. Much of it
    is OpenBLAS's threads, which spin for about 0.1 s after each of NumPy's matrix products and
    share the cores with the call sampled next (a 256x1024 @ 1024x1024 MLP layer pair compiled:
    23-25 ms after NumPy's, 15-16 ms alone); OPENBLAS_THREAD_TIMEOUT=4 in the environment before
    Python starts makes them sleep at once (benchmarks/numpy_speed.py sets it)."""
    samples: list[list[float]] = [[] for _ in variants]
    order = list(range(len(variants)))
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)
        for i in order:
            samples[i].append(take_sample(variants[i]))
            if progress is not None:
                progress(1)
    return samples
