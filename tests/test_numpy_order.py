"""Order statistics in NumPy mode (reactant_lab/trace/numpy_mode/order.py): np.median along a
short axis by a min / max selection network instead of a sort, equal to NumPy's median to the
last bit, NaN slices included; np.sort, np.percentile, np.quantile, long medians and np.argsort by
sorts of single integer operands (keys made without an xor, which XLA's TPU compiler rejected),
equal to NumPy's with NaN, signed zeros, infinities and ties."""

from __future__ import annotations

import itertools
import re
import warnings
from typing import Any

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.trace.numpy_mode.order import NETWORK_MAX, _median_network, _sorting_network
from tests.conftest import assert_close, assert_values_equal


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
            assert_values_equal(g, w, err_msg=f"length {n}")


def test_a_short_axis_median_is_no_sort_and_a_long_one_is() -> None:
    def kernel(x):
        return np.median(x, axis=0)

    short = rl.trace(kernel, np.zeros((9, 4))).ir
    assert "stablehlo.sort" not in short
    # One minimum (to wire i) and one maximum (to wire j) per exchange (i, j) of the network,
    # less those no result needs: a wire the middle ones never read after the exchange.
    needed, mins, maxes = {4}, 0, 0
    for i, j in reversed(_median_network(9)):
        mins, maxes = mins + (i in needed), maxes + (j in needed)
        if i in needed or j in needed:
            needed |= {i, j}
    assert 0 < mins < len(_median_network(9))
    assert (short.count("stablehlo.minimum"), short.count("stablehlo.maximum")) == (mins, maxes)
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

    def without_ranks(x):
        order = np.argsort(x, axis=axis)
        return order, np.argsort(order + 0, axis=axis)

    sorts = rl.trace(kernel, np.zeros(shape)).ir.count("stablehlo.sort")
    assert sorts == rl.trace(without_ranks, np.zeros(shape)).ir.count("stablehlo.sort"), \
        "ranks sorted again"  # order + 0 is no argsort result: that one sorts
    x = rng.standard_normal(shape)
    for g, w in zip(rl.jit(kernel)(x.copy()), kernel(x.copy()), strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    x.flat[::7] = 1.0
    stable = np.argsort(x, axis=axis, kind="stable")
    np.testing.assert_array_equal(rl.jit(kernel)(x.copy())[0],
                                  np.argsort(stable, axis=axis, kind="stable"))


def _sort_operands(ir: str) -> list[list[str]]:
    """The element types each stablehlo.sort in ``ir`` compares (its comparator's arguments)."""
    return [re.findall(r"tensor<(\w+)>", args)
            for args in re.findall(r'"stablehlo\.sort".*?\^bb0\((.*?)\):', ir, re.DOTALL)]


def _awkward(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> list[np.ndarray]:
    """Fresh values of ``dtype``; then with NaN, -0.0 beside 0.0 and infinities; then with ties."""
    x = rng.standard_normal(shape).astype(dtype)
    odd = x.copy()
    odd.flat[::7] = np.nan
    odd.flat[1::5], odd.flat[2::5] = -0.0, 0.0
    odd.flat[3], odd.flat[4] = np.inf, -np.inf
    return [x, odd, np.round(x * 2).astype(dtype)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("shape", [(70,), (41, 7), (6, 40, 3)])
def test_sort_percentile_quantile_median_equal_numpys(dtype, shape,
                                                      rng: np.random.Generator) -> None:
    """Sorted by integer keys (no float comparator in the module), with NumPy's own
    interpolation: NumPy's dtype and shape, its values to rounding (NaN slices NaN)."""
    def kernel(x):
        out = []
        for axis in (None, 0, -1):
            out += [np.sort(x, axis=axis), np.median(x, axis=axis),
                    np.median(x, axis=axis, keepdims=True), np.quantile(x, 0.3, axis=axis),
                    np.percentile(x, 5.0, axis=axis), np.percentile(x, 100, axis=axis),
                    np.percentile(x, [0.0, 95.0], axis=axis, keepdims=True)]
        return out

    # the keys are XLA:CPU's (_on_cpu); other platforms sort with jax.numpy, checked below too
    ir = rl.trace(kernel, np.zeros(shape, dtype), platform="cpu").ir
    assert _sort_operands(ir) and all(t in (["i16"] * 2, ["i32"] * 2, ["i64"] * 2)
                                      for t in _sort_operands(ir))
    assert "stablehlo.xor" not in ir  # XLA's TPU compiler rejected the keys' int64 xor
    tol = {np.float64: 1e-12, np.float32: 1e-6, np.float16: 1e-3}[dtype]
    for x in _awkward(rng, shape, dtype):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want, got = kernel(x.copy()), rl.jit(kernel)(x.copy())
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert (g.dtype, g.shape) == (w.dtype, w.shape), i
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"result {i}")


def test_a_percentile_out_of_range_is_numpys_error(rng: np.random.Generator) -> None:
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        rl.jit(lambda x: np.percentile(x, 120.0))(rng.standard_normal(40))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int64, np.int32,
                                   np.uint64, np.uint32, np.int8, np.uint8, np.bool_])
@pytest.mark.parametrize("shape", [(50,), (41, 7), (6, 40, 3)])
def test_argsort_by_packed_keys_equals_numpys_stable(dtype, shape,
                                                     rng: np.random.Generator) -> None:
    """Keys packed above their indices in int64 (64-bit keys in two passes, low half first):
    NumPy's stable order, ties (and NaN, -0.0 beside 0.0) in index order, every dtype's range."""
    if np.dtype(dtype).kind == "f":
        xs = _awkward(rng, shape, dtype)
    elif dtype is np.bool_:
        xs = [rng.random(shape) < 0.5]
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
        xs = [x, (x % 5).astype(dtype)]

    def kernel(x):
        return np.argsort(x), np.argsort(x, axis=0), np.argsort(x, axis=None)

    ir = rl.trace(kernel, xs[0], platform="cpu").ir  # the keys are XLA:CPU's (_on_cpu)
    assert all(t == ["i64"] * 2 for t in _sort_operands(ir))
    assert "stablehlo.xor" not in ir  # XLA's TPU compiler rejected the keys' int64 xor
    for x in xs:
        for g, w in zip(rl.jit(kernel)(x.copy()), (np.argsort(x, kind="stable"),
                        np.argsort(x, axis=0, kind="stable"),
                        np.argsort(x, axis=None, kind="stable")), strict=True):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


def _orders(b: Any) -> tuple[Any, ...]:
    return (np.argsort(b, axis=1), np.sort(b, axis=0), np.median(b, axis=1),
            np.quantile(b, 0.3, axis=0))


def test_integer_sort_keys_are_for_the_cpu_only(rng, monkeypatch) -> None:
    """The integer sort keys speed up XLA:CPU's sorts; XLA's TPU compiler rejected their 64-bit
    integer arithmetic. Lowered for a TPU, the sorts are jax.numpy's, and they give NumPy's
    values too (here run on the CPU, with the TPU's lowering forced)."""
    from reactant_lab.trace.numpy_mode import context

    b = rng.standard_normal((40, 300))
    b[3, 7] = np.nan
    cpu = rl.trace(_orders, b, platform="cpu").as_text()
    tpu = rl.trace(_orders, b, platform="tpu").as_text()
    for keyed in ("stablehlo.shift_left", "stablehlo.bitcast_convert"):
        assert keyed in cpu and keyed not in tpu, keyed
    monkeypatch.setattr(context, "platform", lambda: "tpu")
    got = rl.jit(_orders)(b.copy())
    want = _orders(b)
    for g, w in zip(got[:2], want[:2], strict=True):  # the orders: exact (float64 as stored)
        assert_values_equal(g, w)
    for g, w in zip(got[2:], want[2:], strict=True):  # interpolated: jax.numpy's arithmetic
        assert_close(g, w, 1e-13)


def test_without_the_keys_a_list_of_percentiles_and_numpys_range_error_hold(rng, monkeypatch):
    """Lowered for a platform without the integer keys (a TPU's lowering, forced here on the
    CPU), the quantiles sort with jax.numpy and keep NumPy's interpolation: between -inf and a
    finite value NumPy's is NaN (jax.numpy's quantile gave -inf on a TPU). ``q`` given as a list
    reaches jax.numpy's quantile as an array (it refuses a list), and a ``q`` out of range is
    NumPy's ValueError (jax.numpy gives NaN)."""
    from reactant_lab.trace.numpy_mode import context

    monkeypatch.setattr(context, "platform", lambda: "tpu")
    x = rng.standard_normal((41, 7))

    def kernel(x):
        return (np.percentile(x, [0.0, 95.0], axis=0, keepdims=True), np.quantile(x, [0.25, 0.5]),
                np.percentile(x, 5.0, axis=-1))

    for g, w in zip(rl.jit(kernel)(x.copy()), kernel(x), strict=True):
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        assert_close(g, w, 1e-13)
    for dtype, tol in ((np.float64, 1e-13), (np.float16, 1e-3)):
        for odd in _awkward(rng, (6, 40, 3), dtype)[1:]:  # NaN, infinities, signed zeros; ties
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want, got = kernel(odd.copy()), rl.jit(kernel)(odd.copy())
            for g, w in zip(got, want, strict=True):
                assert (g.dtype, g.shape) == (w.dtype, w.shape)
                np.testing.assert_allclose(g, w, rtol=tol, atol=tol)  # NaN where NumPy's is
    for q, message in ((120.0, r"Percentiles must be in the range \[0, 100\]"),
                       ([5.0, -1.0], r"Percentiles must be in the range \[0, 100\]")):
        with pytest.raises(ValueError, match=message):
            rl.jit(lambda x, q=q: np.percentile(x, q))(x)
    with pytest.raises(ValueError, match=r"Quantiles must be in the range \[0, 1\]"):
        rl.jit(lambda x: np.quantile(x, 1.5, axis=0))(x)


def test_argsort_of_floats_one_ulp_apart_takes_the_exact_sort(rng) -> None:
    """A float64 argsort sorts once, by keys less the low bits the index needs (9 for 300
    values), and checks the order it got: values that differ only in those bits (here one ulp
    apart, in one column) come out of order there, and the exact two-pass sort runs instead. The
    order and the ranks are NumPy's stable ones either way."""
    ulps = 1.0 + np.arange(300) * np.finfo(np.float64).eps
    x = np.column_stack([rng.standard_normal(300), rng.permutation(ulps)])

    def kernel(v):
        order = np.argsort(v, axis=0)
        return order, np.argsort(order, axis=0), np.argsort(v[:, 1]), np.argsort(v[:, 0])

    ir = rl.trace(kernel, x, platform="cpu").as_text()
    assert ir.count("stablehlo.case") + ir.count("stablehlo.if") == 3  # the checked sorts
    want = (np.argsort(x, axis=0, kind="stable"), np.argsort(np.argsort(x, axis=0, kind="stable"),
            axis=0, kind="stable"), np.argsort(x[:, 1], kind="stable"),
            np.argsort(x[:, 0], kind="stable"))
    for g, w in zip(rl.jit(kernel)(x.copy()), want, strict=True):
        np.testing.assert_array_equal(g, w)
