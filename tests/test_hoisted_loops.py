"""Rolled loops whose heavy work reads none of the arrays they update get that work hoisted ahead
of them, done for every iteration at once (trace/control_flow/hoisted.py): the loop that remains
only does what depends on earlier iterations. Their results equal NumPy eager's on fresh inputs,
the module's loop has no product left in it, and a loop note says so; a loop whose work depends
on what it updates keeps it."""

from __future__ import annotations

import re

import numpy as np
import pytest

import reactant_lab as rl
from tests.numpy_kernels import correlation, covariance
from tests.test_batched_loops import _run, _whiles


def _hoisted(traced) -> list[str]:
    return [n for n in traced.loop_notes if "hoisted ahead of it" in n]


def _matrix_products(ir: str) -> int:
    """How many dot_generals of the module give a matrix: the loops here compute one vector
    product per iteration, so a matrix product is theirs done for all iterations at once."""
    return len(re.findall(r"stablehlo\.dot_general [^\n]*-> tensor<\d+x\d+x", ir))


@pytest.mark.parametrize("kernel", [correlation, covariance])
def test_a_loop_writing_a_row_and_a_column_computes_its_products_ahead(kernel, rng):
    # corr[i + 1:, i] = corr[i, i + 1:] = data[:, i] @ data[:, i + 1:]: the writes depend on
    # earlier iterations (a row and a column each, masked), the products only on data. The
    # products are hoisted; the writes, triangles of the matrix, then need no loop either
    # (trace/control_flow/scattered.py, tests/test_triangle_writes.py).
    m, n = int(rng.integers(30, 50)), int(rng.integers(150, 250))
    data = rng.standard_normal((n, m))
    traced = _run(kernel, m, float(n), data, tol=1e-9)
    (note,) = [n for n in traced.loop_notes if "its work that reads none of the arrays" in n]
    assert "done for all iterations at once" in note and "with no loop" in note
    assert _whiles(traced) == 0
    assert _matrix_products(traced.ir) == 1
    # No index arrays: the writes' places are selects of iotas, not (m, m, 2) coordinates
    assert not re.search(rf"tensor<{m}x{m}x2xi(32|64)>", traced.ir)


def smoothed(X, W, out):
    s = np.zeros(W.shape[1])
    for i in range(X.shape[0]):
        s = s * 0.5 + np.tanh(X[i] @ W)  # an accumulator: the loop cannot be batched
        out[i] = s


def test_an_accumulating_loop_computes_its_independent_products_ahead(rng):
    n = int(rng.integers(20, 40))
    traced = _run(smoothed, rng.standard_normal((n, 64)), rng.standard_normal((64, 96)),
                  np.zeros((n, 96)))
    (note,) = _hoisted(traced)
    assert "for i in range(X.shape[0])` rolled" in note and "iterations at once)" in note
    assert _whiles(traced) == 1 and _matrix_products(traced.ir) == 1


def smoothed_backwards(X, W, out):
    s = np.zeros(W.shape[1])
    for i in range(X.shape[0]):
        s = s * 0.5 + np.tanh(X[-1 - i] @ W)  # rows from the last
        out[i] = s


def test_work_ahead_reads_the_rows_of_the_counter_as_one_slice(rng):
    n = int(rng.integers(20, 40))
    traced = _run(smoothed_backwards, rng.standard_normal((n, 64)),
                  rng.standard_normal((64, 96)), np.zeros((n, 96)))
    assert len(_hoisted(traced)) == 1 and _matrix_products(traced.ir) == 1
    assert "stablehlo.gather" not in traced.ir and "stablehlo.reverse" in traced.ir


def suffix_smoothed(X, W, out):
    n = X.shape[0]
    for k in range(n):
        s = np.zeros(W.shape[1])
        for i in range(k, n):  # a traced start: hoisted over every value i can take
            s = s * 0.5 + np.tanh(X[i] @ W)
        out[k] = s


def test_a_loop_with_a_traced_start_computes_its_products_over_the_values_it_can_take(rng):
    n = int(rng.integers(16, 30))
    traced = _run(suffix_smoothed, rng.standard_normal((n, 64)), rng.standard_normal((64, 80)),
                  np.zeros((n, 80)))
    assert any("for i in range(k, n)` rolled" in note and f"(up to {n} iterations at once)"
               in note for note in _hoisted(traced))
    assert _matrix_products(traced.ir) >= 1


def power_steps(A, x):
    for _ in range(A.shape[0]):
        x[:] = np.tanh(A @ x)  # each product reads the previous iteration's x


def light_work(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] * 2.0  # too little work to be worth storing for every iteration
        out[i] = s


def test_loops_whose_work_depends_on_what_they_update_keep_it(rng):
    for fn, args in ((power_steps, (rng.standard_normal((40, 40)) / 8, rng.standard_normal(40))),
                     (light_work, (rng.standard_normal(30), np.zeros(30)))):
        traced = _run(fn, *args)
        assert _hoisted(traced) == [] and _whiles(traced) == 1, fn.__name__
        assert _matrix_products(traced.ir) == 0, fn.__name__


def test_products_too_large_to_hold_for_every_iteration_stay_in_the_loop(rng, monkeypatch):
    """The hoisted products of all iterations are alive at once: past MAX_HOISTED_BYTES the loop
    keeps them (conv2d's taps ran 3x slower hoisted, its 68 MiB temporary page-faulted on every
    call)."""
    from reactant_lab.trace.control_flow import hoisted

    n, m = int(rng.integers(20, 40)), int(rng.integers(64, 128))
    X, W = rng.standard_normal((n, 64)), rng.standard_normal((64, m))
    for limit, expect in ((8 * n * m * 8, True), (n * m * 8 - 1, False)):  # products: n x m f64
        monkeypatch.setattr(hoisted, "MAX_HOISTED_BYTES", limit)
        traced = _run(smoothed, X, W, np.zeros((n, m)))
        assert bool(_hoisted(traced)) == expect, limit
        assert _whiles(traced) == 1 and _matrix_products(traced.ir) == int(expect)


def test_loops_roll_hoists_nothing(rng):
    traced = _run(smoothed, rng.standard_normal((12, 64)), rng.standard_normal((64, 96)),
                  np.zeros((12, 96)), loops="roll")
    assert traced.loop_notes == () and _matrix_products(traced.ir) == 0


@pytest.mark.parametrize("preset", list(rl.PRESETS))
def test_hoisted_loops_give_numpys_results_under_every_preset(preset, rng):
    n, m = int(rng.integers(150, 200)), int(rng.integers(30, 40))
    data = np.asfortranarray(rng.standard_normal((n, m)))  # a column-major caller array
    want = covariance(m, float(n), data.copy(order="A"))
    got = rl.jit(covariance, optimize=preset)(m, float(n), data)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    X, W = rng.standard_normal((20, 64)), rng.standard_normal((64, 72))
    out, mine = np.zeros((20, 72)), np.zeros((20, 72))
    smoothed(X, W, mine)
    jf = rl.jit(smoothed, optimize=preset)
    jf(X, W, out)
    np.testing.assert_allclose(out, mine, rtol=1e-10, atol=1e-12)
    assert _hoisted(jf.last.traced)


def test_the_work_of_a_jitted_helper_counts_its_equations():
    """JAX names its call primitive ``jit`` (``pjit`` before): a helper traced as a call (as
    jax.numpy's own are) is seen through, its work the work of its equations (a 64^3 product),
    not the elements of its result."""
    import jax

    from reactant_lab.trace.control_flow import hoisted

    helper = jax.jit(lambda a: a @ a)
    jaxpr = jax.make_jaxpr(lambda a: helper(a) + 1.0)(np.ones((64, 64))).jaxpr
    (call,) = [e for e in jaxpr.eqns if hoisted.called(e) is not None]
    assert hoisted.work(call) >= 64 ** 3
