"""A write through a reshaped view whose value reduces the same array: XLA:CPU (jaxlib 0.10.2)
fuses the reduction into the in-place update and reads an element it already wrote. NumPy mode
writes such a window as a scatter (reactant_lab.trace.numpy_mode.fused_reads); results equal
NumPy's on every preset, in a loop and at a traced index, and ordinary writes stay
dynamic_update_slice."""

from __future__ import annotations

import numpy as np
import pytest

import reactant_lab as rl

PRESETS = ["none", "canonicalize", "all"] if rl.enzyme_available() else ["none"]


def max_of_rows_into_last_row(a):
    """The program the fuzz tests found: its second statement makes XLA update in place."""
    a.ravel()[-4:-2] = np.max(a[[1, 4]], axis=-1)
    a.T[1:2] += 1


def sum_in_a_loop(a):
    """The same write in a rolled loop (a while loop's body)."""
    for k in range(8):
        a.reshape(15, 2)[13 - k] = a[1:5:3].sum(axis=-1) + k
        a.T[1:2] += 1


def at_a_traced_index(a, n):
    """A window at a traced index, counted down from the end (wrapped as NumPy wraps it)."""
    for i in range(n):
        a.reshape(15, 2)[-1 - i] = a[[1, 4]].max(axis=-1) - i
        a.T[0:1] *= 2


def data(rng):
    """Row 1 above every other row: a reduction reading an element already written sees it."""
    a = rng.integers(-9, 10, (5, 6)).astype(np.int64)
    a[1] = rng.integers(20, 40, 6)
    return a


def numpy_result(kernel, a, *rest):
    want = a.copy()
    kernel(want, *rest)
    return want


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("kernel", [max_of_rows_into_last_row, sum_in_a_loop])
def test_the_update_equals_numpys_on_every_preset(rng, preset, kernel):
    a = data(rng)
    got = a.copy()
    rl.jit(kernel, optimize=preset)(got)
    np.testing.assert_array_equal(got, numpy_result(kernel, a))


def test_a_window_at_a_traced_index(rng):
    a = data(rng)
    jitted = rl.jit(at_a_traced_index, optimize="none")
    for n in (1, 3, 15):  # 15: the last window ends at the array's end
        got = a.copy()
        jitted(got, n)
        np.testing.assert_array_equal(got, numpy_result(at_a_traced_index, a, n))


def test_the_write_is_a_scatter_only_where_the_value_reduces_the_array(rng):
    a = data(rng)
    guarded = rl.trace(max_of_rows_into_last_row, a).as_text()
    assert "stablehlo.scatter" in guarded

    def from_another_array(a, b):
        a.ravel()[-4:-2] = np.max(b[[1, 4]], axis=-1)
        a.T[1:2] += 1

    def elementwise(a):
        a.ravel()[-4:-2] = a[1, :2] * 2
        a[1:] += 1

    for kernel, args in [(from_another_array, (a, a.copy())), (elementwise, (a,))]:
        text = rl.trace(kernel, *args).as_text()
        assert "stablehlo.scatter" not in text and "dynamic_update_slice" in text
        got = [x.copy() for x in args]
        rl.jit(kernel, optimize="none")(*got)
        np.testing.assert_array_equal(got[0], numpy_result(kernel, *args))
