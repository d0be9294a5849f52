"""Rolled loops left with only writes of rows and columns of a matrix after their products are
hoisted (trace/control_flow/scattered.py): when each write covers a triangle of the matrix over
the loop, and no two writes put different values in one place, the loop is gone, each write one
select. Results equal NumPy eager's on fresh inputs; anything else keeps its loop, with NumPy's
results still."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_kernels import correlation, covariance
from tests.test_batched_loops import _run, _whiles


def _gone(traced) -> list[str]:
    return [n for n in traced.loop_notes if "with no loop" in n and "` gone (" in n]


@pytest.mark.parametrize("kernel", [covariance, correlation])
def test_a_symmetric_fill_runs_without_a_loop(kernel, rng):
    m, n = int(rng.integers(30, 60)), int(rng.integers(160, 250))
    data = rng.standard_normal((n, m)) + rng.standard_normal(m)
    traced = _run(kernel, m, float(n), data, tol=1e-9)
    (note,) = _gone(traced)
    assert "a triangle of the matrix each" in note
    assert _whiles(traced) == 0
    assert "stablehlo.scatter" not in traced.ir


def upper_from(data, out):
    """Rows from column i + 2 on, and the same values down column i from row i + 2: a strict
    triangle each, one step off the diagonal, meeting nowhere."""
    m = out.shape[0]
    for i in range(m - 2):
        out[i + 2:, i] = out[i, i + 2:] = data[:, i] @ data[:, i + 2:]


def test_triangles_off_the_diagonal_keep_what_the_loop_never_writes(rng):
    m, n = int(rng.integers(30, 50)), int(rng.integers(160, 250))
    data = rng.standard_normal((n, m))
    out = rng.standard_normal((m, m))  # the band the loop never writes keeps these
    traced = _run(upper_from, data, out, tol=1e-9)
    assert _gone(traced) and _whiles(traced) == 0


def crossing(data, out):
    """The row write and the column write put different values on the diagonal (the column's,
    written last, wins in NumPy): two writes of one place that disagree."""
    m = out.shape[0]
    for i in range(m):
        out[i, i:] = data[:, i] @ data[:, i:]
        out[i:, i] = 2.0 * (data[:, i] @ data[:, i:])


def test_writes_that_disagree_on_a_place_keep_the_loop(rng):
    m, n = int(rng.integers(30, 50)), int(rng.integers(160, 250))
    data = rng.standard_normal((n, m))
    traced = _run(crossing, data, np.zeros((m, m)), tol=1e-9)
    assert not _gone(traced) and _whiles(traced) == 1


def from_row_three(data, out):
    """A loop that starts at 3: the first three rows and columns keep what ``out`` held."""
    for i in range(3, out.shape[0]):
        out[i:, i] = out[i, i:] = data[:, i] @ data[:, i:]


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_loop_that_starts_later_keeps_the_rows_and_columns_before(order, rng):
    m, n = int(rng.integers(30, 50)), int(rng.integers(160, 250))
    data = rng.standard_normal((n, m))
    out = np.asarray(rng.standard_normal((m, m)), order=order)
    traced = _run(from_row_three, data, out, tol=1e-9)
    assert _gone(traced) and _whiles(traced) == 0


def test_a_failing_check_of_the_places_keeps_the_loop_rolled(monkeypatch, rng):
    """The places' evaluator meeting a shape NumPy refuses is no reason to unroll: the loop stays
    the hoisted loop, with NumPy's results."""
    from reactant_lab.trace.control_flow import scattered

    def refuse(self, ks):
        raise ValueError("operands could not be broadcast together")

    monkeypatch.setattr(scattered._Places, "over", refuse)
    m, n = int(rng.integers(30, 50)), int(rng.integers(160, 250))
    traced = _run(covariance, m, float(n), rng.standard_normal((n, m)), tol=1e-9)
    assert not _gone(traced) and _whiles(traced) == 1
    assert any("hoisted ahead of it" in note for note in traced.loop_notes)
