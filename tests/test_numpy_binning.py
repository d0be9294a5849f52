"""NumPy mode's binning functions (reactant_lab/trace/numpy_mode/binning.py): np.histogram,
np.histogram_bin_edges, np.bincount, np.digitize and np.searchsorted against NumPy on fresh
random data, and the refusals where the result's shape depends on the values."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest

import reactant_lab as rl
from tests.conftest import target_platform
from tests.test_fuzz_differential import assert_same_as_numpy

PRESETS = ("none", "all")


def _data(rng, n: int = 60) -> np.ndarray:
    """Values in [-1.5, 1.5) plus the awkward ones: range ends, interior edges of 4 bins over
    [-1, 1], repeats of an edge, NaN and infinities."""
    x = rng.uniform(-1.5, 1.5, n)
    x[:9] = [-1.0, 1.0, 0.0, -0.5, 0.5, 0.5, np.nan, np.inf, -np.inf]
    return rng.permutation(x)


def _same(kernel, *args, preset: str = "none", rtol: float = 1e-12) -> None:
    assert_same_as_numpy(kernel, lambda: tuple(a.copy() for a in args), preset, rtol)


_EMULATED = pytest.mark.cpu_only(
    "a TPU computes float64 in software, to about 49 bits: the values one ulp either side of an "
    "edge, and edges taken from the data (float64 for integer data too), cannot fall where "
    "NumPy's 53 bits put them (measured: counts off by a few in most bins)")
F64_EDGES = pytest.param(np.float64, marks=_EMULATED, id="float64")
I64_EDGES = pytest.param(np.int64, marks=_EMULATED, id="int64")
TPU_FLOAT32_DIVISION_ULPS = 16
"""How far float32 edges taken from the data may fall from NumPy's on a TPU, whose float32
division is not correctly rounded, in units in the last place of the data's scale (its largest
edge): NumPy's step (max - min) / n came out an ulp off, and the edges, multiples of it, up to 8
ulps of that scale (measured on a TPU v5e). An edge near zero is then hundreds of its own ulps
off (512 under preset 'all'), so the bound is absolute, not per edge."""


@pytest.mark.parametrize("preset", PRESETS)
def test_histogram_with_a_range_matches_numpy(preset, rng):
    def kernel(x, w):
        return (np.histogram(x, bins=4, range=(-1, 1)),
                np.histogram(x, bins=4, range=(-1.0, 1.0), weights=w),
                np.histogram(x, bins=4, range=(-1, 1), density=True),
                np.histogram(x, bins=3, range=(-1, 1), weights=w, density=True))

    _same(kernel, _data(rng), rng.random(60), preset=preset)


@pytest.mark.parametrize("dtype", [F64_EDGES, np.float32])
@pytest.mark.parametrize("bins", [10, 37, 64])
def test_equal_bins_are_computed_and_agree_with_the_edges_to_the_last_bit(dtype, bins, rng):
    """bins=N: each value's bin is computed from (x - first) / width (no search), and values
    on every edge and one ulp either side of it land where NumPy puts them, with a range whose
    edges are not representable and with edges taken from the data."""
    def kernel(x):
        return (np.histogram(x, bins=bins, range=(0.1, 0.7)),
                np.histogram(x, bins=bins), np.histogram(x, bins=bins, weights=x))

    traced = rl.trace(kernel, np.zeros(8, dtype))
    assert traced.ir.count("stablehlo.while") == 0, "a binary search was traced"
    for lo, hi in ((0.1, 0.7), (-3.0, 2.0)):
        edges = np.histogram_bin_edges(np.array([lo, hi], dtype), bins=bins,
                                       range=(lo, hi)).astype(dtype)
        near = np.concatenate([edges, np.nextafter(edges, np.inf, dtype=dtype),
                               np.nextafter(edges, -np.inf, dtype=dtype)])
        x = rng.permutation(np.concatenate([near, rng.uniform(lo, hi, 300).astype(dtype)]))
        _same(kernel, x.astype(dtype), rtol=1e-6 if dtype is np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", [F64_EDGES, np.float32, np.uint8])
@pytest.mark.parametrize(("bins", "hi"), [(64, 1.0), (256, 256.0), (128, 256.0), (8, 0.5)])
def test_binary_grid_bins_skip_the_correction_and_still_agree_with_the_edges(dtype, bins, hi,
                                                                             rng):
    """Edges 0, h, ..., n h with n and n h powers of two (an image's bins=256 over (0, 256)):
    x / (n h) * n is exact, so the bin is computed with no correction against the edges (no
    gather in the module), and values on every edge, one ulp either side, 0, the top and just
    past it land where NumPy puts them. Other ranges keep the correction."""
    def kernel(x, w):
        return (np.histogram(x, bins=bins, range=(0, hi)),
                np.histogram(x, bins=bins, range=(0.0, hi), weights=w))

    def corrected(x):
        return np.histogram(x, bins=bins, range=(0.0, hi * 0.75))

    probe = np.zeros(8, dtype)
    assert "stablehlo.gather" not in rl.trace(kernel, probe, np.zeros(8)).ir
    assert "stablehlo.gather" in rl.trace(corrected, probe).ir
    if dtype is np.uint8:
        x = rng.integers(0, 256, 2000).astype(dtype)
    else:
        edges = np.histogram_bin_edges(np.zeros(0, dtype), bins=bins, range=(0, hi)).astype(dtype)
        near = np.concatenate([edges, np.nextafter(edges, np.inf, dtype=dtype),
                               np.nextafter(edges[1:], -np.inf, dtype=dtype)])
        x = rng.permutation(np.concatenate([near, rng.uniform(-0.1, 1.1 * hi, 2000)
                                            .astype(dtype)]))
    _same(kernel, x, rng.random(x.size), rtol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8, np.uint8, np.bool_])
def test_histogram_dtypes_follow_numpy(dtype, rng):
    def kernel(x, w32, wi):
        return (np.histogram(x, bins=5, range=(0, 4)), np.histogram(x, bins=3, range=(0.5, 3)),
                np.histogram(x, bins=5, range=(0, 4), weights=w32),
                np.histogram(x, bins=[0, 1, 2.5, 4], weights=wi),
                np.histogram(x, bins=np.array([0, 2, 4], np.int32), density=True))

    x = rng.integers(-1, 6, 40).astype(dtype)  # ties with the edges, values out of range
    with pytest.warns(RuntimeWarning, match="bool") if dtype is np.bool_ else nullcontext():
        _same(kernel, x, rng.random(40).astype(np.float32), rng.integers(1, 9, 40), rtol=1e-6)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("dtype", [F64_EDGES, np.float32, I64_EDGES])
def test_histogram_without_range_takes_numpys_edges_from_the_data(dtype, preset, rng):
    def kernel(x):
        return np.histogram(x, bins=7), np.histogram(x, bins=13, density=True)

    x = (rng.normal(size=200) * 50).astype(dtype)
    x[:3] = x[3]  # ties
    want = kernel(x.copy())
    got = rl.jit(kernel, optimize=preset)(x)
    rounded = target_platform() == "tpu" and x.dtype == np.float32
    for (g_hist, g_edges), (w_hist, w_edges) in zip(got, want, strict=True):
        assert g_edges.dtype == w_edges.dtype and g_hist.dtype == w_hist.dtype
        if rounded:
            scale = float(np.max(np.abs(w_edges)))
            np.testing.assert_allclose(g_edges, w_edges, rtol=0, atol=TPU_FLOAT32_DIVISION_ULPS
                                       * float(np.spacing(np.float32(scale))))
        else:
            np.testing.assert_array_equal(g_edges, w_edges)  # to the last bit: the counts follow
    np.testing.assert_array_equal(got[0][0], want[0][0])
    _same(kernel, x, preset=preset,
          rtol=TPU_FLOAT32_DIVISION_ULPS * float(np.finfo(np.float32).eps) if rounded else 1e-12)


def test_histogram_of_constant_data_widens_the_range_by_half(rng):
    def kernel(x, i):
        return np.histogram(x, bins=4), np.histogram(i, bins=3), np.histogram_bin_edges(x, 2)

    value = rng.uniform(1, 9)
    _same(kernel, np.full(5, value), np.full(5, int(value * 10)))


def test_histogram_without_range_of_nan_data_gives_nan_edges_where_numpy_raises(rng):
    x = rng.random(6)
    x[2] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        np.histogram(x, bins=3)
    hist, edges = rl.jit(lambda x: np.histogram(x, bins=3))(x)
    assert hist.dtype == np.int64 and (hist == 0).all()
    assert edges.shape == (4,) and np.isnan(edges).all()


@pytest.mark.parametrize("preset", PRESETS)
def test_histogram_with_edges_static_or_traced(preset, rng):
    def kernel(x, edges, w):
        return (np.histogram(x, bins=[-1, -0.5, 0.5, 0.5, 1]),  # a repeated edge
                np.histogram(x, bins=edges, weights=w),
                np.histogram(x, bins=edges, density=True),
                np.histogram(x, np.linspace(-1, 1, 5)),
                np.histogram_bin_edges(x, bins=edges))

    edges = np.sort(np.append(rng.uniform(-1.2, 1.2, 5), 0.5))
    _same(kernel, _data(rng), edges, rng.random(60), preset=preset)


def test_histogram_of_2d_empty_and_0d_data_with_integer_or_bool_weights(rng):
    def kernel(a, w):
        return (np.histogram(a, bins=[0, 0.5, 1], weights=w.astype(np.int32), density=True),
                np.histogram(a, np.array(4), weights=w > 4.5), np.histogram(a.sum(), bins=2),
                np.histogram(a[:0], bins=3), np.histogram(a[:0], bins=2, range=(0, 1)),
                np.digitize(a[:0], [0.5]), np.searchsorted(a[0], a[:0]))

    a = rng.random((4, 5))
    _same(kernel, a, a * 9)


def test_histogram_returns_the_given_edges_array_itself(rng):
    def kernel(x, edges):
        hist, out = np.histogram(x, bins=edges)
        return out is edges, hist

    got = rl.jit(kernel)(rng.random(10), np.linspace(0, 1, 4))
    assert got[0] is True


def test_histogram_of_a_selection_counts_the_selected_elements(rng):
    def kernel(x, w):
        keep = x > 0
        return (np.histogram(x[keep], bins=4, range=(0, 1.5)), np.histogram(x[keep], bins=3),
                np.histogram(x[keep], bins=3, weights=w[keep]))

    _same(kernel, rng.uniform(-1, 1.5, 30), rng.random(30))
    _same(kernel, -rng.random(8), rng.random(8))  # nothing selected: edges of [0, 1]


@pytest.mark.parametrize("preset", PRESETS)
def test_histogram_inside_a_kernel_that_updates_its_arguments(preset, rng):
    def kernel(counts, x):
        x *= 2.0
        hist, edges = np.histogram(x, bins=counts.shape[0], range=(-2, 2))
        counts += hist
        x[x > 1] = edges[-2]
        return np.digitize(x, edges)

    _same(kernel, rng.integers(1, 5, 8), _data(rng), preset=preset)


@pytest.mark.parametrize("preset", PRESETS)
def test_digitize_matches_numpy_for_increasing_and_decreasing_bins(preset, rng):
    def kernel(x, up, i):
        down = up[::-1]
        return (np.digitize(x, up), np.digitize(x, up, right=True), np.digitize(x, down),
                np.digitize(x, down, right=True), np.digitize(x, [1.0, 0.5, 0.0, -0.5]),
                np.digitize(x, [-1, 0, 0, 1], right=True), np.digitize(i, up),
                np.digitize(x[3], up), np.digitize(0.5, down), np.digitize(x, np.zeros(0)))

    up = np.sort(np.append(rng.uniform(-1, 1, 3), [0.5, 0.5]))  # ties, and with the data
    _same(kernel, _data(rng), up, rng.integers(-2, 3, 9), preset=preset)


@pytest.mark.parametrize("preset", PRESETS)
def test_searchsorted_matches_numpy(preset, rng):
    def kernel(a, v, order, a32):
        s = np.sort(a)
        return (np.searchsorted(s, v), np.searchsorted(s, v, side="right"),
                np.searchsorted(a, v, sorter=order), np.searchsorted(a, v, "right", order),
                np.searchsorted(s, v[0]), s.searchsorted(v), np.searchsorted(a32, 0.1, "right"),
                np.searchsorted(a32, a32[1], "right"), np.searchsorted([0.0, 1.0], v))

    a = rng.uniform(-1, 1, 7)
    a[2] = a[4] = 0.25  # repeated values, and values v hits exactly
    v = np.concatenate([rng.uniform(-1.2, 1.2, 6), [0.25, np.nan, -0.0, a[0]]])
    a32 = np.array([0.0, 0.1, 0.5], np.float32)  # float32(0.1) against a Python float
    _same(kernel, a, v, np.argsort(a), a32, preset=preset)


@pytest.mark.parametrize("preset", PRESETS)
def test_bincount_with_a_provable_length(preset, rng):
    def kernel(small, flags, w):
        fixed = np.array([0, 3, 3, 1])
        return (np.bincount(small, minlength=256), np.bincount(small, w, minlength=300),
                np.bincount(flags, minlength=2), np.bincount(fixed, weights=w[:4]),
                np.bincount(fixed, minlength=6))

    _same(kernel, rng.integers(0, 256, 40).astype(np.uint8), rng.random(40) > 0.5,
          rng.random(40), preset=preset)


def test_add_at_counts_into_a_fixed_number_of_bins(rng):
    def kernel(x):
        counts = np.zeros(6, np.int64)
        np.add.at(counts, x, 1)
        return counts, np.histogram(x, bins=6, range=(-0.5, 5.5))[0]

    x = rng.integers(0, 6, 50)
    counts, hist = rl.jit(kernel)(x)
    np.testing.assert_array_equal(counts, np.bincount(x, minlength=6))
    np.testing.assert_array_equal(hist, np.bincount(x, minlength=6))


@pytest.mark.parametrize("call", [
    lambda x: np.bincount(x, None), lambda x: np.bincount(x, minlength=10),
    lambda x: np.bincount(x.astype(np.uint8), minlength=255),
    lambda x: np.bincount(x, minlength=x[0]), lambda x: np.bincount(x[x > 2], minlength=10)],
    ids=["no minlength", "signed", "minlength too small", "traced minlength", "selection"])
def test_bincount_of_traced_values_is_refused_with_what_to_do(call, rng):
    with pytest.raises(rl.DynamicShapeError) as info:
        rl.trace(call, rng.integers(0, 5, 10))
    text = str(info.value)
    assert "np.bincount" in text and "max(x.max() + 1, minlength)" in text
    assert "np.add.at(counts, x, 1)" in text and "np.histogram(x, bins=n" in text
    assert __file__ in text  # names the user's line


def test_value_dependent_shapes_are_still_refused(rng):
    x = rng.random(8)
    with pytest.raises(rl.DynamicShapeError, match=r"(?s)bins='auto'.*number of bins"):
        rl.trace(lambda x: np.histogram(x, bins="auto"), x)
    with pytest.raises(rl.DynamicShapeError, match="traced number of bins"):
        rl.trace(lambda x, n: np.histogram(x, bins=n), x, np.int64(3))
    with pytest.raises(rl.UnsupportedNumpyFunctionError, match=r"traced range.*range=\(0, 1\)"):
        rl.trace(lambda x: np.histogram(x, bins=3, range=(x.min(), 1.0)), x)
    with pytest.raises(rl.UnsupportedNumpyFunctionError, match="depends on the values"):
        rl.trace(lambda x: np.unique(x, return_counts=True), x)


@pytest.mark.parametrize("call", [
    lambda x: np.histogram(x, bins=0, range=(0, 1)),
    lambda x: np.histogram(x, bins=[0, 2, 1]),
    lambda x: np.histogram(x, bins=3, range=(1, 0)),
    lambda x: np.histogram(x, bins=3, weights=x[:3]),
    lambda x: np.bincount(x.astype(np.int64), weights=x[:3]),
    lambda x: np.bincount(x, None),
    lambda x: np.digitize(x, [0, 2, 1]),
    lambda x: np.searchsorted(x, 0.5, side="middle")],
    ids=["no bins", "bins not monotonic", "range reversed", "weights shape", "weights length",
         "float bincount", "digitize bins", "side"])
def test_static_arguments_numpy_refuses_raise_numpys_error(call, rng):
    x = rng.random(6)
    with pytest.raises((ValueError, TypeError)) as want:
        call(x.copy())
    with pytest.raises(type(want.value)) as got:
        rl.trace(call, x)
    assert str(got.value) == str(want.value)


def test_concrete_inputs_run_numpy_itself(rng):
    def kernel(w):
        data = np.array([3, 1, 1, 4])
        return (np.bincount(data), np.histogram(data, bins=3), np.digitize(data, [2, 3]),
                w * np.searchsorted(np.arange(5), 2.5))

    _same(kernel, rng.random(3))


def counts_per_bin(x, edges):
    return np.bincount(np.digitize(x, edges), minlength=len(edges) + 1)


def shifted_counts(x, edges):
    idx = np.digitize(x, edges)
    idx -= 1  # may be -1 now: NumPy raises for it, the compiled code could not
    return np.bincount(idx, minlength=len(edges) + 1)


def test_bincount_of_digitize_has_a_static_length_until_the_bin_numbers_change(rng):
    x, edges = rng.normal(size=200), np.linspace(-2, 2, 9)
    got = rl.jit(counts_per_bin)(x, edges)
    np.testing.assert_array_equal(got, counts_per_bin(x, edges))
    assert got.dtype == counts_per_bin(x, edges).dtype
    with pytest.raises(rl.errors.DynamicShapeError, match="bincount"):
        rl.trace(shifted_counts, x, edges)


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("preset", rl.PRESETS)
def test_histogram_counts_under_every_preset_and_layout(preset, layout, rng):
    # Equal bins (computed) and given edges (searched), counts and weights: values outside the
    # range, NaN and infinities are dropped by the scatter, whatever the data's memory order.
    def kernel(x, w):
        return (np.histogram(x, bins=5, range=(-1, 1)),
                np.histogram(x, bins=5, range=(-1, 1), weights=w),
                np.histogram(x, bins=np.array([-1.0, -0.2, 0.1, 0.7, 1.0]), weights=w))

    x0, w0 = _data(rng, 96).reshape(8, 12), rng.random((8, 12))

    def laid_out():  # fresh arrays in the layout for each call (a.copy() would be C order)
        if layout == "F":
            return np.asfortranarray(x0), np.asfortranarray(w0)
        if layout == "strided":
            return np.repeat(x0, 2, axis=1)[:, ::2], np.repeat(w0, 2, axis=1)[:, ::2]
        return x0.copy(), w0.copy()

    x = laid_out()[0]
    assert (x.flags.c_contiguous, x.flags.f_contiguous) == {
        "C": (True, False), "F": (False, True), "strided": (False, False)}[layout]
    assert_same_as_numpy(kernel, laid_out, preset, 1e-12)
