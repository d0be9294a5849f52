"""Reads and writes at a rolled loop's index (``A[i]``, ``A[i, 1:-1]``, ``A[..., -1 - i]``) are
one dynamic slice or dynamic update of the block, in lax's own ops: the traced module carries
no jitted jax.numpy helpers for them, and results equal NumPy eager's, negative indices, an
element read back after a write and a static index out of range included."""

from __future__ import annotations

import re

import pytest

import reactant_lab as rl
from tests.test_numpy_ranged import _check


def rows_from_both_ends(A, out):
    n = A.shape[0]
    for i in range(n):
        out[i] = A[-1 - i] * 2.0 + A[i, 0]
        out[-1 - i, 1:3] += A[i, 1:3]


def last_axis_by_ellipsis(T, v):
    for k in range(T.shape[-1]):
        T[..., k] = T[..., -1 - k] + v[k]
        v[k] = T[0, ..., k].sum()


def element_written_then_read(A, s):
    n = A.shape[0]
    for i in range(n):
        A[i, i] = s[i] * 3.0
        s[i] = A[i - n, i] + A[0, i]  # the element just written, counted from the end
        s[-1 - i] += A[i, -1]


def seidel_like(A):
    n = A.shape[0]
    for i in range(1, n - 1):
        A[i, 1:-1] += A[i - 1, :-2] + A[i + 1, 2:]
        for j in range(1, n - 1):
            A[i, j] += A[i, j - 1]
            A[i, j] /= 9.0


def integer_rows(M, w):
    for i in range(M.shape[0]):
        M[i, :] = M[i - 1, :] * 3 - w[i]


@pytest.mark.parametrize("kernel, make", [
    (rows_from_both_ends, lambda r: (r.random((10, 4)), r.random((10, 4)))),
    (last_axis_by_ellipsis, lambda r: (r.random((3, 2, 9)), r.random(9))),
    (element_written_then_read, lambda r: (r.random((9, 9)), r.random(9))),
    (seidel_like, lambda r: (r.random((12, 12)),)),
    (integer_rows, lambda r: (r.integers(-50, 50, (10, 3)), r.integers(-5, 5, 10))),
])
def test_traced_index_reads_and_writes_match_numpy(kernel, make, rng):
    _check(kernel, *make(rng))


def test_the_traced_module_has_no_helper_calls_for_loop_indices(rng):
    """The traced stage shows the loop's slices inline, not as calls of jax.numpy's jitted
    helpers (less, add, where, ...) once per read or write."""
    traced = _check(seidel_like, rng.random((12, 12)))
    calls = set(re.findall(r"call @([\w.]+)", traced.ir))
    assert not calls & {"less", "add", "_where", "greater_equal", "bitwise_and", "_reduce_all"}
    assert "stablehlo.dynamic_slice" in traced.ir
    assert "stablehlo.dynamic_update_slice" in traced.ir


def test_a_static_index_out_of_range_beside_a_traced_one_is_numpys_index_error(rng):
    def out_of_range(A):
        for i in range(A.shape[0]):
            A[i, 0] = A[i, 7]

    A = rng.random((9, 4))
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 4"):
        rl.jit(out_of_range)(A)


def shifted_rows(A, out):
    for i in range(1, A.shape[0] - 1):
        out[i] = A[i - 1] + A[i + 1] * 0.5  # indices inside the axis for every i


def wrapping_rows(A, out):
    for i in range(A.shape[0]):
        out[i] = A[i - 1] - A[i]  # i - 1 is -1 at i = 0: NumPy's last row


def test_loop_indices_known_inside_their_axes_need_no_wrap(rng):
    """A loop index plus a constant that stays inside its axis over the loop's range is used as
    it is: no negative-index wrap (a compare and a select of the index per read); one that
    can be negative keeps NumPy's wrap, and both give NumPy's results."""
    n = int(rng.integers(12, 20))  # 10 or more iterations: short loops unroll
    for kernel in (shifted_rows, wrapping_rows):
        _check(kernel, rng.random((n, 5)), rng.random((n, 5)))
    inside, wraps = (rl.trace(k, rng.random((n, 5)), rng.random((n, 5)), loops="roll").ir
                     for k in (shifted_rows, wrapping_rows))
    index_select = re.compile(r"stablehlo\.select .*: tensor<i1>, tensor<i64>")
    assert not index_select.search(inside)
    assert index_select.search(wraps)  # i - 1 wraps as NumPy's -1 does
