"""A large result NumPy mode computes while tracing, from constants alone, is not a constant of the
module: each call hands back a new copy of it, with NumPy's values, dtype and memory layout, and
the signature, graph, tables and explorer payload say so. Smaller ones stay in the module."""

from __future__ import annotations

import numpy as np
import pytest

import reactant_lab as rl
from tests.conftest import assert_close

N = 20_000  # 160 KB of float64: above the 64 KiB line


def growth_and_update(x, w):
    w += np.cumsum(x)
    return np.argmax(w), np.cumprod(np.ones_like(x) * 1.01)


def fortran_table(a):
    t = np.ones((200, 100), order="F") * np.arange(100.0)
    return a.sum(), t, t[::2]


def small_table(a):
    return a * 2.0, np.arange(10.0) ** 2


def inputs(rng):
    return rng.random(N), rng.random(N)


def test_the_result_equals_numpys_and_is_a_new_array_on_every_call(rng):
    x, w = inputs(rng)
    want_w = w.copy()
    want_i, want_c = growth_and_update(x.copy(), want_w)
    jitted = rl.jit(growth_and_update)
    got_w = w.copy()
    got_i, got_c = jitted(x.copy(), got_w)
    assert got_i == want_i
    assert_close(got_w, want_w, rtol=1e-12)
    np.testing.assert_array_equal(got_c, want_c)
    assert got_c.dtype == want_c.dtype and got_c.flags.writeable
    got_c[:] = -1.0  # the caller owns it: the next call's is untouched
    _, again = jitted(x.copy(), w.copy())
    assert again is not got_c and not np.shares_memory(again, got_c)
    np.testing.assert_array_equal(again, want_c)


def test_the_module_does_not_hold_it(rng):
    x, w = inputs(rng)
    traced = rl.trace(growth_and_update, x, w)
    constant = next(r for r in traced.linear_results if r.path == "result[1]")
    assert constant.constant and constant.index is None
    assert "constant, computed while tracing" in str(constant)
    assert len(traced.as_text()) < 20_000  # 160 KB of values would print as 320 KB of hex
    assert traced.layout.n_outputs == 2  # the argmax and the updated argument


def test_its_memory_layout_and_views_are_numpys(rng):
    a = rng.random(7)
    got_sum, got_t, got_half = rl.jit(fortran_table)(a)
    want_sum, want_t, want_half = fortran_table(a)
    assert got_sum == pytest.approx(want_sum)
    np.testing.assert_array_equal(got_t, want_t)
    assert got_t.flags.f_contiguous and not got_t.flags.c_contiguous  # Fortran order, as NumPy's
    np.testing.assert_array_equal(got_half, want_half)  # a new array (NumPy's is a view of t)
    traced = rl.trace(fortran_table, a)
    assert [r.constant for r in traced.linear_results] == [False, True, True]


def test_a_small_one_stays_in_the_module(rng):
    a = rng.random(5)
    traced = rl.trace(small_table, a)
    assert not any(r.constant for r in traced.linear_results)
    got = rl.jit(small_table)(a)
    np.testing.assert_array_equal(got[1], np.arange(10.0) ** 2)


def test_the_explorer_and_the_graph_mark_it(rng):
    x, w = inputs(rng)
    ex = rl.explore(growth_and_update, x, w)
    results = rl.exploration_payload(ex)["signature"]["results"]
    marked = {r["path"]: r["constant"] for r in results}
    assert marked == {"result[0]": False, "result[1]": True, "resargs[1]": False}
    assert "constant, computed while tracing" in rl.exploration_html(ex)
    assert "constant, computed while tracing" in rl.graph_dot(ex)
