"""Arrays a function reads from its closure or its module's globals are arguments of the trace
(paths fn.NAME / fn.<closure>.NAME), read again on every call and written back when updated."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np

import reactant_lab as rl
from tests.conftest import assert_close

G = np.ones(3)


def add_global(a):
    a += G


def test_a_global_changed_between_calls_is_a_new_input_not_a_stale_constant(rng,
                                                                         monkeypatch):
    module = sys.modules[__name__]
    monkeypatch.setattr(module, "G", rng.random(3) + 0.5)
    jitted, a = rl.jit(add_global), rng.random(3)
    want = a.copy()
    for k in range(3):
        if k:
            monkeypatch.setattr(module, "G", module.G * 2)  # a new array bound to the name
        jitted(a)
        want += module.G
    assert_close(a, want, rtol=1e-12)
    assert jitted.cache_size == 1
    assert [s.path for s in jitted.last.traced.linear_args] == ["args[0]", "fn.G"]


def test_a_closure_array_updated_in_place_is_read_again(rng):
    w = rng.random(4)

    def scale(x):
        return x * w

    jitted, x = rl.jit(scale), rng.random(4)
    assert_close(jitted(x), x * w, rtol=1e-12)
    w[:] = rng.random(4) + 2.0
    assert_close(jitted(x), x * w, rtol=1e-12)
    traced = jitted.last.traced
    assert [s.path for s in traced.linear_args] == ["args[0]", "fn.<closure>.w"]
    assert 'loc("fn.<closure>.w")' in traced.as_text() and jitted.cache_size == 1


def test_a_captured_array_updated_in_place_is_written_back(rng):
    acc = np.zeros(5)

    def accumulate(x):
        acc[:] += x
        acc[0] = x.sum()

    jitted, x = rl.jit(accumulate), rng.random(5)
    jitted(x)
    jitted(x)
    want = np.zeros(5)
    for _ in range(2):
        want[:] += x
        want[0] = x.sum()
    assert_close(acc, want, rtol=1e-12)
    assert jitted.last.traced.mutated == ("fn.<closure>.acc",)


def test_jax_code_closing_over_a_jax_array_traces_it_as_an_argument(rng):
    w = jnp.asarray(rng.standard_normal((3, 3)), jnp.float32)

    def mat(x):
        return w @ x

    x = jnp.asarray(rng.standard_normal(3), jnp.float32)
    for preset in ("none", "all"):
        np.testing.assert_allclose(rl.jit(mat, optimize=preset)(x), jax.jit(mat)(x), rtol=1e-5,
                                   atol=1e-6)
    assert rl.trace(mat, x).linear_args[1].path == "fn.<closure>.w"


def test_a_captured_array_of_a_new_shape_recompiles(rng):
    table = rng.random(3)

    def look(x):
        return x + table.sum()

    jitted, x = rl.jit(look), rng.random(2)
    assert_close(jitted(x), x + table.sum(), rtol=1e-12)
    table = rng.random(7)  # read by look() through its closure cell
    assert_close(jitted(x), look(x), rtol=1e-12)
    assert jitted.cache_size == 2


def test_a_compiled_call_reads_the_captured_arrays_of_the_moment(rng):
    w = rng.random(3)

    def f(x):
        return x * w

    x = rng.random(3)
    compiled = rl.trace(f, x).stages("all").compile()
    w[:] = 3.0
    assert_close(compiled(x), x * 3.0, rtol=1e-12)
