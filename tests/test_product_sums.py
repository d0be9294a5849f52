"""NumPy mode joins a sum of agreeing matrix products into one product over the joined operands
(reactant_lab/trace/numpy_mode/product_sums.py): same results as NumPy, one dot in the module."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.trace.numpy_mode import product_sums
from tests import numpy_kernels as nk
from tests.conftest import assert_close


def _dots(module: str) -> int:
    return module.count("stablehlo.dot_general")


@pytest.mark.parametrize("preset", rl.PRESETS)
@pytest.mark.parametrize("k", [2, 3])
def test_shifted_window_products_are_one_product_over_the_joined_windows(k, preset, rng):
    # conv2d. Its loop over the kernel's rows, of 3, rolls, the 3 products of a row joined
    # (the rows' products, 36 MB, too large to compute ahead of the loop); of 2, it runs as
    # Python, its 4 products joined.
    x = rng.standard_normal((4, 64, 64, 8) if k == 3 else (2, 20, 21, 16))
    w, b = rng.standard_normal((k, k, x.shape[3], 32)), rng.standard_normal(32)
    jf = rl.jit(nk.conv2d, optimize=preset)
    assert_close(jf(x, w, b), nk.conv2d(x, w, b), rtol=1e-12)
    traced = jf.last.traced_call.ir
    assert _dots(traced) == 1 and ("stablehlo.while" in traced) == (k == 3)
    joined = x.shape[3] * (k if k == 3 else k * k)
    assert f"x{joined}xf64>" in traced.split("stablehlo.concatenate")[1].splitlines()[0]


def recurrent(x, h, wx, wh, b):
    # a recurrent cell's two products (contractions of 24 and 32) and its bias
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ wx + h @ wh + b)
    return h


def test_products_of_different_contractions_are_joined_and_the_other_terms_added(rng):
    x, h = rng.standard_normal((3, 20, 24)), rng.standard_normal((20, 32))
    wx, wh, b = rng.standard_normal((24, 32)) / 5, rng.standard_normal((32, 32)) / 6, \
        rng.standard_normal(32)
    got = rl.jit(recurrent)(x, h, wx, wh, b)
    assert_close(got, recurrent(x, h, wx, wh, b), rtol=1e-12)
    traced = rl.trace(recurrent, x, h, wx, wh, b).ir
    assert _dots(traced) == 3 and traced.count("stablehlo.concatenate") == 6


def test_integer_products_are_joined_exactly(rng):
    def kernel(a, b, c, d):
        out = np.zeros((a.shape[0], b.shape[1]), dtype=a.dtype)
        out += a @ b
        out += c @ d
        return out

    args = [rng.integers(-9, 9, s) for s in ((20, 5), (5, 17), (20, 7), (7, 17))]
    np.testing.assert_array_equal(rl.jit(kernel)(*args), kernel(*args))
    assert _dots(rl.trace(kernel, *args).ir) == 1


def test_matrix_vector_products_and_products_read_elsewhere_are_not_joined(rng):
    def matvecs(a1, v1, a2, v2):
        return a1 @ v1 + a2 @ v2  # one column: joining would copy the matrices

    def kept(a, b, c, d):
        p = a @ b
        return p + c @ d, p  # p is a result of its own

    a1, a2 = rng.standard_normal((40, 30)), rng.standard_normal((40, 20))
    v1, v2 = rng.standard_normal(30), rng.standard_normal(20)
    assert_close(rl.jit(matvecs)(a1, v1, a2, v2), matvecs(a1, v1, a2, v2), rtol=1e-12)
    assert _dots(rl.trace(matvecs, a1, v1, a2, v2).ir) == 2
    args = [rng.standard_normal(s) for s in ((20, 30), (30, 20), (20, 10), (10, 20))]
    got, want = rl.jit(kept)(*args), kept(*args)
    for g, w in zip(got, want, strict=True):
        assert_close(g, w, rtol=1e-12)
    assert _dots(rl.trace(kept, *args).ir) == 2


def test_a_long_sum_is_walked_once_without_recursion():
    def chain(x):
        total = x[0]
        for i in range(1, 5000):
            total = total + x[i]
        return total

    closed = jax.make_jaxpr(chain)(jnp.ones((5000, 3)))
    assert product_sums.join(closed) is closed  # no products: unchanged


def test_a_product_left_out_of_the_join_stays_a_term(rng):
    def mixed(a, b, c, d, x, w):
        return a @ b + c @ d + x @ w  # two batched products agree; x @ w has no batch axis

    args = [rng.standard_normal(s) for s in ((2, 20, 17), (2, 17, 18), (2, 20, 7), (2, 7, 18),
                                             (2, 20, 5), (5, 18))]
    assert_close(rl.jit(mixed)(*args), mixed(*args), rtol=1e-12)
    assert _dots(rl.trace(mixed, *args).ir) == 2
