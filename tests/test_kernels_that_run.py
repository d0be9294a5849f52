"""Kernels that did not run before: a helper returning out of an `if` on traced values called in
a loop, np.ndarray(shape) filled in loops, traced scalars stored into elements, and kernels of
Python numbers only (Mandelbrot). Each against NumPy, in-place effects included."""

from __future__ import annotations

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.trace.control_flow.convert import rewritten_code
from tests import numpy_kernels as nk
from tests.conftest import assert_close, target_platform
from tests.test_fuzz_differential import assert_same_as_numpy

HERE = __file__


def _seeded(rng, make, *extra):
    seed = int(rng.integers(2**32))
    return lambda: make(np.random.default_rng(seed), *extra)


def sign_class(x):
    if x > 0.5:
        return 2.0
    if x < -0.5:
        if x < -1.5:
            return -3.0
        return -2.0
    return x * 10


def classify(a):
    out = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = sign_class(a[i])
    return out


def test_helper_returning_out_of_an_if_on_traced_values_in_a_loop(rng):
    assert_same_as_numpy(nk.pair_matches, _seeded(rng, nk._mk_matches, 40), "all", rtol=0)
    a = rng.standard_normal(25) * 2
    np.testing.assert_allclose(rl.jit(classify)(a), classify(a))


def test_a_helper_defined_in_the_calling_function_converts_too_and_is_rewritten_once(rng):
    def kernel(x):
        def step(v):
            if v > 0:
                return v * 2
            return -v

        total = 0.0
        for i in range(x.shape[0]):
            total += step(x[i])
        return total

    x = rng.standard_normal(30)
    np.testing.assert_allclose(rl.jit(kernel)(x), kernel(x))
    before = rewritten_code.cache_info()
    np.testing.assert_allclose(rl.jit(kernel)(x[:20]), kernel(x[:20]))  # a new shape: retraced
    after = rewritten_code.cache_info()
    assert after.misses == before.misses and after.hits > before.hits


def test_a_return_out_of_a_loop_on_a_traced_value_still_names_its_line(rng):
    def first_positive(x):
        for i in range(x.shape[0]):
            if x[i] > 0:
                return i
        return -1

    with pytest.raises(rl.ControlFlowError, match="return") as info:
        rl.jit(first_positive)(rng.standard_normal(5))
    assert info.value.filename == HERE


def test_ndarray_constructor_is_np_empty(rng):
    x = rng.standard_normal((3, 4, 5))
    got, want = rl.jit(nk.ndarray_fill)(x), nk.ndarray_fill(x)
    assert [g.dtype for g in got] == [w.dtype for w in want]
    for g, w in zip(got, want, strict=True):
        assert_close(g, w, rtol=1e-12)  # x * 2 - mean(x) cancels: a bound to each result's scale

    def sized(n):
        return np.ndarray(n)

    with pytest.raises(rl.DynamicShapeError, match=r"np\.ndarray"):
        rl.jit(sized)(np.int64(3))


def test_traced_scalars_stored_into_elements(rng):
    assert_same_as_numpy(nk.chain_energies, _seeded(rng, nk._mk_chains, (20, 7)), "all")


def test_mandelbrot_with_static_or_traced_bounds(rng):
    args = nk._mk_mandelbrot(rng)
    if target_platform() == "tpu":  # |z| of complex128: refused there (XLA:TPU aborts on it)
        with pytest.raises(rl.UnsupportedOnDeviceError, match="complex128"):
            rl.jit(nk.mandelbrot)(*args)
        return
    want = nk.mandelbrot(*args)
    static = rl.jit(nk.mandelbrot)
    floats = rl.jit(nk.mandelbrot, trace_scalars="floats")
    for jf in (static, floats):
        z, n = jf(*args)
        assert isinstance(z, np.ndarray) and z.dtype == np.complex128 and n.dtype == np.int64
        assert_close(z, want[0], rtol=1e-9)
        np.testing.assert_array_equal(n, want[1])
    moved = (args[0] + 0.1, *args[1:])
    np.testing.assert_array_equal(floats(*moved)[1], nk.mandelbrot(*moved)[1])
    assert floats.cache_size == 1  # the bounds are traced: one compile for both


def test_a_traced_size_says_which_argument_to_make_static_and_how(rng):
    with pytest.raises(rl.DynamicShapeError) as info:
        rl.jit(nk.mandelbrot, trace_scalars=True)(*nk._mk_mandelbrot(rng))
    text = str(info.value)
    assert "np.linspace" in text and "args[4]" in text and "trace_scalars='floats'" in text
    with pytest.raises(rl.ArgumentTypeError, match="'floats'"):
        rl.jit(nk.mandelbrot, trace_scalars="ints")


_SMALL = {
    "pair_matches": lambda r: nk._mk_matches(r, 12),
    "ndarray_fill": lambda r: (r.standard_normal((3, 2, 4)),),
    "chain_energies": lambda r: nk._mk_chains(r, (6, 5)),
    "mandelbrot": lambda r: (*nk._mk_mandelbrot(r, (9, 7))[:6], 6),
}


@pytest.mark.parametrize("preset", list(rl.PRESETS))
def test_the_four_kernels_under_every_preset(preset, rng):
    for name, make in _SMALL.items():
        assert_same_as_numpy(getattr(nk, name), _seeded(rng, make), preset, rtol=1e-9)
