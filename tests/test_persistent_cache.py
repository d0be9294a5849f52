"""A user who turns on JAX's persistent compilation cache (``jax_compilation_cache_dir``) still
gets right answers from guarded calls (a rolled loop runs in the interruptible twin) and from
the compile worker: reactant_lab's own compiles keep out of that cache (an XLA:CPU executable
loaded from it serializes without its compiled functions), while the user's jax.jit uses it."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from tests.conftest import assert_close


@pytest.fixture
def persistent_cache(tmp_path) -> Any:
    from jax._src import compilation_cache

    names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
             "jax_persistent_cache_min_entry_size_bytes")
    before = {name: getattr(jax.config, name) for name in names}
    compilation_cache.reset_cache()
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "cache"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    try:
        yield tmp_path / "cache"
    finally:
        for name, value in before.items():
            jax.config.update(name, value)
        compilation_cache.reset_cache()


def doubling(x: np.ndarray) -> np.ndarray:
    while x.sum() < 1000:
        x = x * 2
        if x.max() > 500:
            break
    return x


def running_sum(a: np.ndarray) -> float:
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i] * a[i]
    return total


@pytest.mark.parametrize("kernel", [doubling, running_sum])
def test_guarded_loops_run_right_with_jaxs_persistent_cache_on(persistent_cache, kernel, rng):
    x = rng.random(40) + 0.1
    want = kernel(x.copy())
    for _ in range(2):  # the second compile would be a cache hit, were ours cached
        got = rl.jit(kernel, loops="roll")(x.copy())
        assert_close(np.asarray(got), np.asarray(want), rtol=1e-12)
    # The user's own jax.jit still uses the cache.
    x32 = x.astype(np.float32)
    y = jax.jit(lambda v: jnp.sin(v) * 2)(x32)
    assert_close(np.asarray(y), np.sin(x32) * 2, rtol=1e-5)
    assert any(persistent_cache.iterdir())


def test_the_compile_worker_executable_runs_with_jaxs_persistent_cache_on(persistent_cache,
                                                                           rng, monkeypatch):
    monkeypatch.setenv("REACTANT_LAB_COMPILE_CHECK", "always")
    a = rng.random((8, 8))
    for _ in range(2):
        got = rl.jit(lambda m: jnp.tanh(m @ m.T) + 1)(a)
        assert_close(np.asarray(got), np.tanh(a @ a.T) + 1, rtol=1e-12)
