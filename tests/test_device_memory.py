"""A call's buffers against the device's memory: refused before compiling or running when they
cannot fit, XLA's RESOURCE_EXHAUSTED explained, and never a refusal of what runs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend, device_memory
from tests.conftest import assert_close, float_rtol

CPU = jax.devices("cpu")[0]


def test_two_results_that_fit_alone_but_not_together_are_refused_before_compiling(rng):
    n = int(0.6 * backend.memory_bytes(CPU) / 8)  # each result 60% of the machine's memory

    def kernel(a):
        b = np.broadcast_to(a, (n,))
        return b + 1, b * 2

    a = rng.random(1)
    before = a.copy()
    with pytest.raises(rl.DeviceMemoryError) as info:
        rl.jit(kernel, optimize="none", device="cpu")(a)
    err = info.value
    assert isinstance(err, MemoryError) and err.when == "before compiling"
    assert err.needed == 2 * 8 * n and err.available == backend.memory_bytes(CPU)
    assert "with its other results the call needs" in str(err)
    assert f"{__file__}:{kernel.__code__.co_firstlineno + 2}" in str(err)  # `b + 1`'s line
    assert (a == before).all()


def test_a_broadcast_reduced_or_sliced_at_once_is_not_refused(rng):
    def kernel(a, k):
        b = np.broadcast_to(a, (2**20, 2**20))
        return b.sum() * k, b[:: 2**12, :: 2**12] + 1.0

    a = rng.random(1)
    total, corner = rl.jit(kernel, optimize="none")(a, 3)
    assert_close(total, 3 * 2.0**40 * a[0], rtol=1e-9)
    assert_close(corner, np.full((256, 256), a[0] + 1.0), float_rtol(np.float64))


def test_an_executable_whose_plan_cannot_fit_is_refused_before_it_runs(rng):
    x = rng.random(8)
    compiled = rl.trace(lambda a: a * 2, x).stages("none").compile(device="cpu")
    device_memory.check_plan("f", compiled.memory_analysis(), CPU, "traced")  # fits
    too_much = dict(compiled.memory_analysis(), temp_size_in_bytes=backend.memory_bytes(CPU))
    with pytest.raises(rl.DeviceMemoryError) as info:
        device_memory.check_plan("f", too_much, CPU, "traced")
    assert info.value.when == "before running" and "intermediate values" in str(info.value)
    assert "stage 'traced'" in str(info.value)


def test_xlas_resource_exhausted_names_the_allocation_and_the_stage(rng):
    x = jnp.asarray(rng.random(1), jnp.float32)
    # JAX's own jit, unchecked: XLA:CPU's error as it is. 256 TiB is past any process's address
    # space, so the allocation fails at once even where the kernel overcommits memory (4 TiB did
    # not on a TPU machine's host: the process grew until it was killed).
    with pytest.raises(Exception) as info:
        jax.jit(lambda a: jnp.broadcast_to(a, (2**23, 2**23)) * 2)(jax.device_put(x, CPU))
    err = device_memory.explained(info.value, "f", CPU, "final", "running")
    assert isinstance(err, rl.DeviceMemoryError) and err.needed == 4 * 2**46
    assert "could not allocate 256.0 TiB" in str(err) and "running stage 'final'" in str(err)
    assert "RESOURCE_EXHAUSTED" not in str(err) and "JaxRuntimeError" not in str(err)
    assert device_memory.explained(ValueError("shapes differ"), "f", CPU, "final", "running") \
        is None


def test_the_cpus_memory_is_the_machines_physical_memory():
    import os

    assert backend.memory_bytes(CPU) == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert device_memory.size(8 * 2**40) == "8.0 TiB (8,796,093,022,208 bytes)"


@pytest.mark.parametrize("said, needed", [
    ("RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 8.00G. That was "
     "not possible. There are 7.48G free.", 8 * 2**30),
    ("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space "
     "hbm. Used 21.95G of 15.48G hbm. Exceeded hbm capacity by 6.47G.", round(21.95 * 2**30)),
])
def test_an_accelerators_out_of_memory_message_names_the_size_too(said, needed):
    """A TPU's words for it (as XLA prints them, at run time and at compile time)."""
    err = device_memory.explained(RuntimeError(said), "f", CPU, "final", "running")
    assert isinstance(err, rl.DeviceMemoryError) and err.needed == needed
    assert f"could not allocate {device_memory.size(needed)}" in str(err)
