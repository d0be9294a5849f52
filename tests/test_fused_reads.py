"""A write through a reshaped view whose value reduces the same array: XLA:CPU (jaxlib 0.10.2)
fuses the reduction into the in-place update and reads an element it already wrote. NumPy mode
writes such a window as a scatter (reactant_lab.trace.numpy_mode.fused_reads); results equal
NumPy's on every preset, in a loop and at a traced index, and ordinary writes stay
dynamic_update_slice.

The same holds for a window that reads other elements of itself (a slice at another offset, a
gather or a broadcast of one element) after a write through a flat view."""

from __future__ import annotations

import numpy as np
import pytest

import reactant_lab as rl

PRESETS = ["none", "canonicalize", "all"] if rl.enzyme_available() else ["none"]
ALL_PRESETS = list(rl.PRESETS) if rl.enzyme_available() else ["none"]


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


def gather_of_one_element(a, b, c):
    """The program a fuzz run found: row 0 times its element 2, taken by a gather."""
    a.ravel()[3:4] = 2
    b[np.array([0])] += 1
    t0 = a[0:-2, :]
    v1 = t0.T[2:1:-1, ...].reshape(-1)
    np.multiply(np.max(t0, axis=0), v1[np.array([-1])], out=t0)
    return (c,)


def slice_of_one_element(a, b, c):
    """The same factor read by a slice."""
    a.ravel()[3:4] = 2
    t0 = a[0:-2, :]
    v1 = t0.T[2:1:-1, ...].reshape(-1)
    np.multiply(np.max(t0, axis=0), v1[-1:], out=t0)
    return (c,)


def broadcast_of_one_element(a, b, c):
    """The factor as a scalar, broadcast across the row."""
    a.ravel()[3:4] = 2
    t0 = a[0:-2, :]
    np.multiply(t0, t0[0, 2], out=t0)
    return (c,)


def earlier_write_through_reshape(a, b, c):
    """The earlier write through ``reshape`` instead of ``ravel``."""
    a.reshape(-1)[3:4] = 2
    t0 = a[0:-2, :]
    v1 = t0.T[2:1:-1, ...].reshape(-1)
    np.multiply(np.max(t0, axis=0), v1[np.array([-1])], out=t0)
    return (c,)


def shifted_rows(a, b, c):
    """Rows 1.. from the rows above them (a slice at another offset, overlapping the window)."""
    a.ravel()[3:4] = 2
    a[1:] = a[:-1] * 2
    return (c,)


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


@pytest.mark.parametrize("preset", ALL_PRESETS)
@pytest.mark.parametrize("kernel", [gather_of_one_element, slice_of_one_element,
                                    broadcast_of_one_element, earlier_write_through_reshape,
                                    shifted_rows])
def test_a_window_reading_other_elements_of_itself_equals_numpys(rng, preset, kernel):
    """After a write through a flat view, ``out=t0`` writes row 0 from its element 2 (or rows
    from the rows above): each element must read the value before the write, as NumPy's does."""
    a = rng.integers(-9, 10, (3, 4)).astype(np.int32)
    a[0, 2] = rng.integers(3, 9)  # a factor that changes when written (not 0 or 1)
    b, c = rng.integers(-9, 9, 3), rng.random(4)
    want_a, want_b = a.copy(), b.copy()
    want = kernel(want_a, want_b, c.copy())
    got_a, got_b = a.copy(), b.copy()
    got = rl.jit(kernel, optimize=preset, donate=False)(got_a, got_b, c)
    np.testing.assert_array_equal(got_a, want_a)
    np.testing.assert_array_equal(got_b, want_b)
    np.testing.assert_array_equal(np.asarray(got[0]), want[0])


def test_a_window_reading_only_itself_at_each_position_stays_in_place(rng):
    def same_window(a):
        a.ravel()[3:4] = 2
        a[1:] = a[1:] * 2 + 1
        a[0:1] = a[2:3]  # reads rows outside the window

    a = rng.integers(-9, 10, (3, 4)).astype(np.int32)
    text = rl.trace(same_window, a).as_text()
    assert "stablehlo.scatter" not in text and "dynamic_update_slice" in text
    got = a.copy()
    rl.jit(same_window, optimize="none")(got)
    np.testing.assert_array_equal(got, numpy_result(same_window, a))


def empty_window_from_its_last_row(a):
    a.T[-2, -4:5] = a[3:1:-2, ::2]
    a[:, 2:0:1, ...] = a[-1:, -1]  # an empty window at the end of a's 2 columns
    return a + 1


def test_an_empty_window_reads_and_writes_nothing(rng):
    """The fuzzer's `a[:, 2:0:1, ...] = a[-1:, -1]` after a write into `a` raised "invalid entry
    in coordinates array" while tracing: the empty window, past a's last column, was placed as
    if it held an element there."""
    for preset in ("none", "before_raise", "all"):
        a = rng.integers(-9, 9, (5, 2))
        want_a = a.copy()
        want = empty_window_from_its_last_row(want_a)
        got = rl.jit(empty_window_from_its_last_row, optimize=preset)(a)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(a, want_a)
