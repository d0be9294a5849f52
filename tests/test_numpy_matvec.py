"""Matrix-vector products of a transposed matrix (``A.T @ y``, ``y @ A.T``, ``np.dot``) trace to
one dot_general over the matrix as it is stored, under every preset, and equal NumPy's."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import reactant_lab as rl
from tests.conftest import assert_close, target_platform


def t_matvec(A, y):
    return A.T @ y


def vec_t(A, y):
    return y @ A.T


def dot_t(A, y):
    return np.dot(A.T, y)


def method_t(A, y):
    return A.T.dot(y)


def view_t(A, y):
    return A[1:, ::2].T @ y[1:]


def mvt_t(x, A, y):
    x += A.T @ y


def written_before(A, y):
    A[0, :] = 7.0
    return A.T @ y


def written_after(A, y):
    q = A.T @ y
    A[:, 0] = 0.5
    return q, A.T @ y


def _args(kernel, rng, dtype=np.float64):
    """``kernel``'s inputs: a 7x5 matrix and the vectors it multiplies."""
    A = rng.standard_normal((7, 5)).astype(dtype)
    if dtype in (np.complex64, np.complex128):
        A = A + 1j * rng.standard_normal((7, 5)).astype(dtype)
    rows = rng.standard_normal(7).astype(dtype)
    if kernel is vec_t:
        return A, rng.standard_normal(5).astype(dtype)
    if kernel is mvt_t:
        return rng.standard_normal(5).astype(dtype), A, rows
    return A, rows


FOLDED = [t_matvec, vec_t, dot_t, method_t, view_t, mvt_t]


@pytest.mark.parametrize("preset", ["none", "all"])
@pytest.mark.parametrize("kernel", FOLDED, ids=lambda k: k.__name__)
def test_transposed_matvec_equals_numpy_and_reads_the_matrix_as_stored(kernel, preset, rng):
    args = _args(kernel, rng)
    want_args = copy.deepcopy(args)
    want = kernel(*want_args)
    got = rl.jit(kernel, optimize=preset)(*args)
    if want is not None:
        assert_close(got, want, rtol=1e-12)
    for g, w in zip(args, want_args, strict=True):
        assert_close(g, w, rtol=1e-12)
    ir = rl.trace(kernel, *_args(kernel, rng)).stages(preset).final.ir
    assert "stablehlo.transpose" not in ir
    assert "stablehlo.dot_general" in ir


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.complex128])
def test_other_float_and_complex_dtypes_fold_too(dtype, rng):
    args = _args(t_matvec, rng, dtype)
    got = rl.jit(t_matvec, optimize="none")(*args)
    assert got.dtype == t_matvec(*args).dtype
    single = dtype in (np.float32, np.complex64)
    assert_close(got, t_matvec(*args), rtol=1e-5 if single else 1e-12)
    assert "stablehlo.transpose" not in rl.trace(t_matvec, *args).stages("none").final.ir


def test_integer_and_matrix_matrix_products_still_equal_numpy(rng):
    A, y = rng.integers(-5, 5, (7, 5)), rng.integers(-5, 5, 7)
    if target_platform() == "tpu":  # XLA's TPU compiler has no int64 matrix product
        with pytest.raises(rl.CompileError, match=r"int32 .*device='cpu'"):
            rl.jit(t_matvec)(A, y)
    else:
        np.testing.assert_array_equal(rl.jit(t_matvec)(A, y), t_matvec(A, y))

    def mm(A, B):
        return A.T @ B

    A, B = rng.standard_normal((7, 5)), rng.standard_normal((7, 3))
    assert_close(rl.jit(mm, optimize="none")(A, B), mm(A, B), rtol=1e-12)


@pytest.mark.parametrize("preset", ["none", "all"])
def test_the_product_reads_the_matrix_when_it_is_computed(preset, rng):
    """A write to A before the product is in it; one after it is not (only in the second)."""
    for kernel in (written_before, written_after):
        args = _args(t_matvec, rng)
        want_args = copy.deepcopy(args)
        want = kernel(*want_args)
        got = rl.jit(kernel, optimize=preset)(*args)
        for g, w in zip(got if isinstance(want, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,), strict=True):
            assert_close(g, w, rtol=1e-12)
        assert_close(args[0], want_args[0], rtol=1e-12)
