"""np.median along a short axis in NumPy mode (reactant_lab/trace/numpy_mode/order.py): a
min / max selection network instead of a sort, equal to NumPy's median to the last bit, NaN
slices included."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.trace.numpy_mode.order import NETWORK_MAX, _median_network, _sorting_network


@pytest.mark.parametrize("n", range(1, 13))
def test_networks_sort_and_select_every_zero_one_input(n: int) -> None:
    """The 0-1 principle: a compare-exchange network that sorts every 0/1 input sorts every
    input; the pruned one puts the right values on the middle wires."""
    for bits in itertools.product((0, 1), repeat=n):
        want = sorted(bits)
        for network, wires in ((_sorting_network(n), range(n)),
                               (_median_network(n), {(n - 1) // 2, n // 2})):
            w = list(bits)
            for i, j in network:
                w[i], w[j] = min(w[i], w[j]), max(w[i], w[j])
            assert all(w[k] == want[k] for k in wires), (n, bits, network)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.bool_])
def test_median_on_short_axes_equals_numpys(dtype, rng: np.random.Generator) -> None:
    """Every length up to one past NETWORK_MAX, along each axis, with keepdims, a NaN in some
    slices: the same dtype, shape and values as NumPy's."""
    for n in (*range(1, 12), 16, 17, NETWORK_MAX, NETWORK_MAX + 1):
        x = (rng.standard_normal((n, 6, 5)) * 20).astype(dtype)
        if x.dtype.kind == "f":
            x[rng.integers(0, n), 3, 2] = np.nan

        def kernel(x):
            return (np.median(x, axis=0), np.median(x, axis=1, keepdims=True),
                    np.median(x, axis=-1))

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want, got = kernel(x.copy()), rl.jit(kernel)(x.copy())
        for g, w in zip(got, want, strict=True):
            assert (g.dtype, g.shape) == (w.dtype, w.shape), (n, g.dtype, w.dtype)
            np.testing.assert_array_equal(g, w, err_msg=f"length {n}")


def test_a_short_axis_median_is_no_sort_and_a_long_one_is() -> None:
    def kernel(x):
        return np.median(x, axis=0)

    short = rl.trace(kernel, np.zeros((9, 4))).ir
    assert "stablehlo.sort" not in short and short.count("stablehlo.minimum") == len(
        _median_network(9))
    assert "stablehlo.sort" in rl.trace(kernel, np.zeros((NETWORK_MAX + 1, 4))).ir

    def whole(x):  # over all axes
        return np.median(x)

    assert "stablehlo.sort" in rl.trace(whole, np.zeros((3, 4))).ir


@pytest.mark.parametrize(("shape", "axis"), [((200, 10), 0), ((7, 30), 1), ((5, 6, 7), -1),
                                             ((50,), 0)])
def test_ranks_take_one_sort_and_a_scatter(shape, axis, rng: np.random.Generator) -> None:
    """argsort(argsort(x)) along one axis (ranks) is the inverse permutation of the first: one
    sort and a scatter, equal to NumPy's (with ties, to NumPy's stable sorts: NumPy's default
    sort orders ties as it likes, and so did two sorts here before)."""
    def kernel(x):
        order = np.argsort(x, axis=axis)
        return np.argsort(order, axis=axis), order, np.argsort(order + 0, axis=axis)

    traced = rl.trace(kernel, np.zeros(shape))
    assert traced.ir.count("stablehlo.sort") == 2, "ranks sorted again"  # the last is no argsort result
    x = rng.standard_normal(shape)
    for g, w in zip(rl.jit(kernel)(x.copy()), kernel(x.copy()), strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    x.flat[::7] = 1.0
    stable = np.argsort(x, axis=axis, kind="stable")
    np.testing.assert_array_equal(rl.jit(kernel)(x.copy())[0],
                                  np.argsort(stable, axis=axis, kind="stable"))
