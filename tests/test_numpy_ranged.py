"""Slices whose bounds depend on a loop index (``A[i, :i]``, ``cov[i:M, i]``, ``x[lo:hi]``): rolled
loops compute them over the whole axis with a mask, and the results equal NumPy eager's."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.errors import ControlFlowError
from tests.conftest import assert_close
from tests.test_numpy_kernels import assert_same
from tests.test_numpy_mode import _while_bodies


def _check(fn, *args, tol=1e-10, rolled=True):
    """fn through rl.jit(loops='auto') against NumPy eager: results and arguments after; with
    ``rolled``, its loops roll under loops='roll' (and give the same), and under 'auto' each
    either rolls or runs batched (its iterations independent), none unrolled."""
    want_args = copy.deepcopy(args)
    want = fn(*want_args)
    if rolled:
        again = copy.deepcopy(args)
        jf = rl.jit(fn, loops="roll")
        assert_same(jf(*again), want, tol, "result (loops='roll')")
        assert_same(again, want_args, tol, "arguments after the call (loops='roll')")
        assert "stablehlo.while" in jf.last.traced.ir
        assert jf.last.traced.loop_notes == (), jf.last.traced.loop_notes
    jf = rl.jit(fn, loops="auto")
    got = jf(*args)
    assert_same(got, want, tol, "result")
    assert_same(args, want_args, tol, "arguments after the call")
    traced = jf.last.traced
    if rolled:
        unrolled = [n for n in traced.loop_notes if " batched (" not in n]
        assert unrolled == [], unrolled
        assert "stablehlo.while" in traced.ir or traced.loop_notes
    return traced


def trisolv(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


def back_substitution(U, y):
    x = np.zeros_like(y)
    for i in range(y.shape[0] - 1, -1, -1):
        x[i] = (y[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i]
    return x


def covariance(data):
    M = data.shape[1]
    data -= data.mean(axis=0)
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (data.shape[0] - 1.0)
    return cov


def lu_outer(A):
    for k in range(A.shape[0]):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])


def durbin_like(r):
    y = np.zeros_like(r)
    y[0] = -r[0]
    alpha = -r[0]
    for k in range(1, r.shape[0]):
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) * 0.5
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


def prefix_reductions(x, out):
    for i in range(x.shape[0]):
        out[i, 0] = x[:i + 1].sum()
        out[i, 1] = x[:i + 1].max()
        out[i, 2] = np.mean(x[i:])
        out[i, 3] = (x[: i + 1] > 0.5).sum()


def windows(x, out):
    for i in range(out.shape[0]):
        out[i] = np.sum(x[i - 2:i + 3] * 2.0)  # negative start: NumPy's empty slice
        x[i:i + 2] *= 1.01


def csr_matvec(indptr, indices, data, x):
    y = np.zeros(indptr.shape[0] - 1)
    for i in range(indptr.shape[0] - 1):
        y[i] = data[indptr[i]:indptr[i + 1]] @ x[indices[indptr[i]:indptr[i + 1]]]
    return y


def _csr(rng, rows, cols):
    dense = rng.random((rows, cols)) * (rng.random((rows, cols)) < 0.3)
    dense[3] = 0.0  # an empty row
    indptr = np.concatenate([[0], np.cumsum((dense != 0).sum(axis=1))]).astype(np.int64)
    indices = np.nonzero(dense)[1].astype(np.int64)
    return indptr, indices, dense[dense != 0], dense


def test_triangular_solve_rolls(rng):
    n = int(rng.integers(12, 30))
    L = np.tril(rng.random((n, n))) + n * np.eye(n)
    traced = _check(trisolv, L, rng.random(n), rng.random(n))
    assert traced.mutated == ("args[1]",)


def trmm_like(A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])


def test_slices_starting_at_the_same_index_plus_constant_meet_without_moving_data(rng):
    """A[i + 1:, i] and B[i + 1:, j] start at i + 1 computed twice (in the loop over j, i
    belongs to the enclosing loop): known equal, so neither is rolled into the other's frame,
    and the bound i + 1, inside the axis for every i, is neither wrapped nor clipped."""
    n, m = int(rng.integers(12, 20)), int(rng.integers(10, 16))
    traced = _check(trmm_like, rng.random((n, n)), rng.random((n, m)))
    calls = set(re.findall(r"call @([\w.]+)", traced.ir))
    assert not calls & {"_roll_dynamic", "remainder", "clip"}, calls


def test_back_substitution_with_a_negative_step(rng):
    n = int(rng.integers(10, 25))
    _check(back_substitution, np.triu(rng.random((n, n))) + n * np.eye(n), rng.random(n))


def test_covariance_writes_a_column_and_a_row_through_traced_slices(rng):
    _check(covariance, rng.random((int(rng.integers(15, 30)), int(rng.integers(9, 16)))))


def test_outer_product_update_over_two_ranged_axes(rng):
    n = int(rng.integers(9, 20))
    _check(lu_outer, rng.random((n, n)) + n * np.eye(n), tol=1e-9)


def test_flip_and_in_place_update_of_a_prefix(rng):
    _check(durbin_like, rng.random(int(rng.integers(9, 20))) * 0.5)


def test_reductions_of_prefixes_and_suffixes(rng):
    n = int(rng.integers(9, 20))
    _check(prefix_reductions, rng.random(n), np.zeros((n, 4)))


def test_windows_follow_numpys_bounds(rng):
    n = int(rng.integers(12, 20))
    _check(windows, rng.random(n + 4), np.zeros(n))


def test_csr_matvec_with_traced_row_bounds(rng):
    indptr, indices, data, dense = _csr(rng, int(rng.integers(10, 20)), 12)
    x = rng.random(12)
    _check(csr_matvec, indptr, indices, data, x)
    assert_close(rl.jit(csr_matvec, loops="auto")(indptr, indices, data, x),
                               dense @ x, rtol=1e-12)


def test_the_ir_does_not_grow_with_the_size(rng):
    small = rl.trace(trisolv, np.eye(10) * 2, rng.random(10), rng.random(10), loops="auto")
    big = rl.trace(trisolv, np.eye(200) * 2, rng.random(200), rng.random(200), loops="auto")
    assert small.ir.count("\n") == big.ir.count("\n")


def needs_the_length(x, out):
    for i in range(1, x.shape[0]):
        out[i] = len(x[:i])


def test_what_needs_the_length_unrolls_with_a_note(rng):
    n = 10
    x = rng.random(n)
    traced = _check(needs_the_length, x, np.zeros(n), rolled=False)
    (note,) = traced.loop_notes
    assert "unrolled" in note and "len() of a slice with a traced bound" in note
    with pytest.raises(ControlFlowError, match="len\\(\\) of a slice with a traced bound"):
        rl.trace(needs_the_length, x, np.zeros(n), loops="roll")


def window_from_a_static_array(x, y):
    for i in range(x.shape[0] - 3):
        x[i:i + 3] += y  # 3 long for every i: a view of static shape


def shrinking_windows(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i:i + 3].sum() + x[i + 1:i + 2].sum()  # shorter at the end, as in NumPy


def test_a_window_of_static_length_is_a_view_of_static_shape(rng):
    traced = _check(window_from_a_static_array, rng.random(12), rng.random(3))
    assert "dynamic_update_slice" in traced.ir and "iota" not in traced.ir  # no mask
    _check(shrinking_windows, rng.random(12), np.zeros(12))


def invariant_comparison(x, out):
    for i in range(out.shape[0]):
        out[i] = (x > 0.5).sum() + (x[:i] > 0.5).sum()


def test_a_comparison_remembered_in_one_traced_body_is_not_reused_in_another(rng):
    # the body is traced twice (once to find what it writes); a mask remembered by the first
    # trace is a value of that trace only
    _check(invariant_comparison, rng.random(12), np.zeros(10, dtype=np.int64))


def column_then_row(C, v):
    n = C.shape[0]
    for i in range(n):
        C[i:n, i] = v[i:n]
        C[i, i:n] = v[i:n]


def test_a_column_then_a_row_update_the_carried_array_in_place(rng):
    """Written by masked reads of the old window, the row's read came after the column's update:
    XLA fused it with that update and copied the carried array twice per iteration. Scattered
    (the masked-off elements dropped), nothing of the array is read."""
    n = int(rng.integers(9, 20))
    _check(column_then_row, rng.random((n, n)), rng.random(n))
    hlo = rl.explore(column_then_row, rng.random((n, n)), rng.random(n)).compiled.hlo_text()
    bodies = _while_bodies(hlo)
    assert bodies and not [b for b in bodies if re.search(rf"f64\[{n},{n}\]\S* copy\(", b)]


def crossing_writes(C, v, w):
    n = C.shape[0]
    for i in range(n):
        C[i:, i] = v[i:]
        C[i, i:] = 2.0 * w[i:]  # overlaps the column at (i, i): the later write wins
        C.T[i, :i] += C[i, :i]  # a column above the diagonal, through a transposed view
        C[-1 - i, :n - i] -= v[:n - i]  # a traced negative row


def into_a_view(C, v):
    D = C[1:, 1:]  # a view of the argument: the writes land in C
    for i in range(D.shape[1]):
        D[i:, i] = v[i:D.shape[0]]
        D[i, :i] = v[:i] * 3


def into_an_int_plane(A, v):
    for i in range(A.shape[1]):
        A[1, i:, i] = v[i:] * 10.0  # cast to int64 as NumPy's assignment casts (truncated)
        A[0, i, :i] = A[1, i, :i] + i


def test_ranged_rows_and_columns_match_numpy_on_fresh_inputs(rng):
    for _ in range(3):
        n, m = int(rng.integers(9, 16)), int(rng.integers(9, 16))
        _check(crossing_writes, rng.standard_normal((n, n)), rng.standard_normal(n),
               rng.standard_normal(n))
        _check(into_a_view, rng.standard_normal((n + 1, n + 1)), rng.standard_normal(n))
        _check(into_an_int_plane, rng.integers(-9, 9, (2, m, m)), rng.standard_normal(m))
