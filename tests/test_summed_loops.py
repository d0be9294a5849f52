"""Rolled loops that only add to the arrays they update terms that read none of them run as the
first values plus the terms' sum, with no loop (trace/control_flow/summed.py). Their results
equal NumPy eager's on fresh inputs (within rounding: the additions are reordered; integer sums
exactly), a loop note says so, and a loop whose terms read what it updates keeps its loop."""

from __future__ import annotations

import numpy as np
import pytest

import reactant_lab as rl
from tests.numpy_kernels import syr2k, syrk
from tests.test_batched_loops import _run, _whiles

needs_enzyme = pytest.mark.skipif(not rl.enzyme_available(), reason="needs enzyme-ad")


def _summed(traced) -> list[str]:
    return [n for n in traced.loop_notes if " summed (" in n]


def dot_into(x, y, out):
    for k in range(x.shape[0]):
        out[1] += x[k] * y[k]  # one element: an accumulator at a fixed index


def test_a_scalar_accumulation_becomes_a_sum(rng):
    n = int(rng.integers(50, 200))
    traced = _run(dot_into, rng.standard_normal(n), rng.standard_normal(n),
                  rng.standard_normal(3), tol=1e-9)
    (note,) = _summed(traced)
    assert f"for k in range(x.shape[0])` summed ({n} iterations)" in note
    assert _whiles(traced) == 0


def outer_accumulate(A, B, C):
    for k in range(A.shape[1]):
        C -= np.outer(A[:, k], B[k])  # the whole array, subtracted from


def test_a_sum_of_outer_products_subtracted_from_a_matrix(rng):
    m, k, n = (int(rng.integers(20, 40)) for _ in range(3))
    traced = _run(outer_accumulate, rng.standard_normal((m, k)), rng.standard_normal((k, n)),
                  rng.standard_normal((m, n)), tol=1e-9)
    assert len(_summed(traced)) == 1 and _whiles(traced) == 0


def counts(keys, hist, weights):
    for k in range(keys.shape[0]):
        hist[2] += 1  # a literal term: n times it
        hist[:, 0] += weights[k]  # a column, the same one each time


def test_integer_sums_are_exact_and_a_literal_term_counts_once_per_iteration(rng):
    n = int(rng.integers(20, 60))
    hist = rng.integers(-50, 50, (4, 3))
    weights = rng.integers(-(2 ** 40), 2 ** 40, (n, 4))
    traced = _run(counts, np.arange(n), hist, weights, tol=0)
    assert len(_summed(traced)) == 1


@pytest.mark.parametrize("kernel", [syrk, syr2k])
def test_a_masked_row_accumulation_nested_in_a_batched_loop(kernel, rng):
    # syrk's `for k: C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]` inside a loop over i: the
    # inner loop is summed, the outer one then batched: no loop is left
    n, m = int(rng.integers(10, 40)), int(rng.integers(8, 30))  # 8: shorter loops unroll
    args = [rng.uniform(0.5, 2.0), rng.uniform(0.5, 2.0), rng.standard_normal((n, n)),
            rng.standard_normal((n, m))]
    if kernel is syr2k:
        args.append(rng.standard_normal((n, m)))
    traced = _run(kernel, *args, tol=1e-9)
    (note,) = _summed(traced)
    assert "for k in range(A.shape[1])` summed" in note
    assert any(" batched (" in n for n in traced.loop_notes)
    assert _whiles(traced) == 0


def mirrored(A, x, out):
    for k in range(1, x.shape[0]):
        out[0] += x[k] * x[-1 - k]  # a negative index, from the end: x reversed
        out[1:] += A[2 * k] * 2.0  # every other row of A


def test_reads_at_the_counter_are_slices_of_the_input_not_gathers(rng):
    # the terms of every k at once read x[k], x[-1 - k] and A[2 * k] as slices (reversed for
    # the second, strided for the third), not as gathers of k's indices
    n = int(rng.integers(20, 60))
    traced = _run(mirrored, rng.standard_normal((2 * n, 4)), rng.standard_normal(n),
                  rng.standard_normal(5), tol=1e-9)
    assert len(_summed(traced)) == 1 and _whiles(traced) == 0
    assert "stablehlo.gather" not in traced.ir and "stablehlo.reverse" in traced.ir


@needs_enzyme
def test_the_default_preset_makes_syrks_summed_products_one_matrix_product(rng):
    # reduce_mul_to_dot_general and dot_general_remove_batch_dimensions (pattern_additions.json)
    n, m = 24, 16
    C, A = rng.standard_normal((n, n)), rng.standard_normal((n, m))
    ir = rl.code_hlo(syrk, 1.5, 1.2, C, A)
    assert "stablehlo.reduce" not in ir and "stablehlo.while" not in ir
    assert ir.count("stablehlo.dot_general") == 1 and "batching_dims" not in ir


def prefix_sums(x, out):
    for i in range(x.shape[0]):
        for j in range(i):  # a traced bound: the terms of the iterations past it are left out
            out[i] += x[j] * 2.0


def test_a_range_with_a_traced_bound_sums_only_its_own_iterations(rng):
    # range(i) spans up to n - 1 iterations: at n = 8 that is under the roll threshold (8), and
    # both loops run as Python, by design
    n = int(rng.integers(9, 30))
    traced = _run(prefix_sums, rng.standard_normal(n), rng.standard_normal(n), tol=1e-9)
    assert any("for j in range(i)` summed" in n for n in _summed(traced))


def recurrence(x, out):
    for k in range(1, x.shape[0]):
        out[0] += out[0] * x[k]  # the term reads what the loop updates


def running(x):
    for k in range(1, x.shape[0]):
        x[k] += x[k - 1]  # each slot a different one: not one accumulation


def scaled(x, y):
    for k in range(y.shape[0]):
        x *= 0.5  # not an addition
        x += y[k]


def product_terms(X, W, out):
    for k in range(X.shape[0]):
        out += X[k] @ W[k]  # a product per iteration: summed, it would run batched and held


def test_a_loop_whose_terms_are_products_keeps_its_loop(rng):
    n = int(rng.integers(10, 30))
    traced = _run(product_terms, rng.standard_normal((n, 8, 16)), rng.standard_normal((n, 16, 4)),
                  rng.standard_normal((8, 4)), tol=1e-9)
    assert _summed(traced) == []


@pytest.mark.parametrize("kernel", [recurrence, running, scaled])
def test_a_loop_that_does_more_than_accumulate_keeps_its_loop(kernel, rng):
    n = int(rng.integers(10, 40))
    args = (rng.standard_normal(n), rng.standard_normal(3)) if kernel is recurrence else (
        (rng.standard_normal(n),) if kernel is running else
        (rng.standard_normal(5), rng.standard_normal((n, 5))))
    traced = _run(kernel, *args, tol=1e-9)
    assert _summed(traced) == []
    assert _whiles(traced) == 1


def test_loops_roll_keeps_the_loop(rng):
    n = int(rng.integers(20, 50))
    traced = _run(dot_into, rng.standard_normal(n), rng.standard_normal(n),
                  rng.standard_normal(3), loops="roll", tol=1e-9)
    assert _summed(traced) == [] and _whiles(traced) == 1
