"""Preserved arguments are decided after the pipeline, as Reactant's compile_mlir! does: a result
the passes reduce to an argument returned unchanged is removed from @main, not computed or
copied on the device, and its argument is not donated; callers still get what NumPy or JAX
would give them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from tests.conftest import assert_close, assert_values_equal


def identity_arith(a):
    return a * 1.0 + 0.0, a * 2.0


def test_a_result_the_passes_reduce_to_the_argument_is_not_computed(rng):
    x = rng.random(5)
    j = rl.jit(identity_arith)
    same, doubled = j(x)
    compiled = j.last.compiled
    assert j.last.traced.preserved == {}  # the traced view: computed
    assert compiled.forwarded == (("result[0]", "args[0]"),)  # after the pipeline: preserved
    text = compiled.as_text()
    assert text.count("jax.result_info") == 1 and '"result[1]"' in text
    # NumPy callers get a new array, as NumPy's a * 1.0 + 0.0 is one
    assert isinstance(same, np.ndarray) and same is not x
    np.testing.assert_array_equal(same, x)
    assert_close(doubled, x * 2.0)
    same[0] = -1.0
    assert x[0] != -1.0


def test_the_traced_module_keeps_computing_it(rng):
    x = rng.random(5)
    ex = rl.explore(identity_arith, x, optimize="none")
    assert ex.compiled.forwarded == ()
    assert_values_equal(ex.outputs[0], x)


def test_jax_callers_get_the_argument_itself(rng):
    x = jnp.asarray(rng.random(5))
    same, _ = rl.jit(identity_arith)(x)
    assert same is x


def test_a_forwarded_argument_is_not_donated(rng):
    x = jnp.asarray(rng.random(5))
    ex = rl.explore(identity_arith, x, donate=True, run=False)
    assert "tf.aliasing_output" not in ex.compiled.as_text()
    same, doubled = ex.compiled(x)
    np.testing.assert_array_equal(np.asarray(same), np.asarray(x))  # x was not consumed
    assert_close(np.asarray(doubled), np.asarray(x) * 2.0)


def copy_then_update(a):
    c = a * 1.0
    a += 1.0
    return c


def test_a_forwarded_result_is_the_value_before_the_kernels_update(rng):
    a = rng.random(4)
    before = a.copy()
    j = rl.jit(copy_then_update)
    c = j(a)
    assert j.last.compiled.forwarded == (("result", "args[0]"),)
    np.testing.assert_array_equal(c, before)
    assert_close(a, before + 1.0)


def no_op_update(a, b):
    a[:] = a
    b += 1.0
    return a.sum() * 0.0 + b


def test_an_update_that_writes_the_arguments_own_value_is_not_written_back(rng):
    a, b = rng.random(3), rng.random(3)
    a_before, b_before = a.copy(), b.copy()
    j = rl.jit(no_op_update)
    out = j(a, b)
    assert [arg for arg, _ in j.last.compiled._layout.writeback] == [1]
    np.testing.assert_array_equal(a, a_before)
    assert_close(b, b_before + 1.0)
    assert_close(out, b_before + 1.0)


@pytest.mark.parametrize("preset", list(rl.PRESETS))
def test_every_preset_gives_numpys_answer_when_results_are_forwarded(preset, rng):
    def kernel(a, b):
        t = a + 0.0
        b *= 1.0
        return t, b * 1.0, a[::-1] * 1.0

    a, b = rng.random(6), rng.random(6)
    want_a, want_b = a.copy(), b.copy()
    want = kernel(want_a, want_b)
    got = rl.jit(kernel, optimize=preset)(a, b)
    for g, w in zip(got, want, strict=True):
        assert_close(g, w)
    np.testing.assert_array_equal(a, want_a)
    assert_close(b, want_b)


def test_a_jax_function_returning_a_scaled_copy_of_a_kwarg(rng):
    def f(x, *, y):
        return jnp.sin(x), y * 1

    x, y = rng.random(3).astype(np.float32), jnp.asarray(rng.random(3).astype(np.float32))
    s, yy = rl.jit(f)(x, y=y)
    assert_close(np.asarray(s), np.sin(x), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(yy), np.asarray(y))
    assert isinstance(yy, jax.Array | np.ndarray)


def test_the_explorer_shows_both_views(rng):
    x = jnp.asarray(rng.random(5))
    ex = rl.explore(identity_arith, x, donate=True)
    payload = rl.exploration_payload(ex, None)
    first, second = payload["signature"]["results"]
    assert first["preserved_from"] is None  # traced: computed
    assert first["preserved_after"] == "args[0]" and first["index"] == 0  # in the stages' main
    assert second["preserved_after"] is None
    assert payload["signature"]["args"][0]["donated"] is False


def empty_update_returned(a):
    v = a.reshape(-1)  # a copy for a Fortran-order a
    a[2:2:2] = 0.125  # writes nothing: the write-back is the argument's own value
    return v * 1.0, a


def test_an_updated_argument_whose_write_back_is_dropped_is_still_returned(rng):
    a = np.asfortranarray(rng.random((3, 6)))
    before = a.copy()
    got_v, got_a = rl.jit(empty_update_returned)(a)
    assert got_a is a
    np.testing.assert_array_equal(a, before)
    assert_values_equal(got_v, before.reshape(-1))
