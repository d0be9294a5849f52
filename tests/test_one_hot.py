"""NumPy mode computes a product with a one-hot matrix as a sum per class, one scatter-add
(reactant_lab/trace/numpy_mode/one_hot.py): same results as NumPy, no product in the module."""

from __future__ import annotations

import numpy as np
import pytest

import reactant_lab as rl
from tests import numpy_kernels as nk
from tests.conftest import assert_close


def _dots(module: str) -> int:
    return module.count("stablehlo.dot_general")


@pytest.mark.parametrize("preset", rl.PRESETS)
def test_kmeans_sums_its_points_per_cluster_without_a_product(preset, rng):
    X, C = rng.standard_normal((3000, 5)), rng.standard_normal((12, 5))
    ours, theirs = C.copy(), C.copy()
    jf = rl.jit(nk.kmeans_step, optimize=preset)
    labels, inertia = jf(X, ours)
    want_labels, want_inertia = nk.kmeans_step(X, theirs)
    np.testing.assert_array_equal(labels, want_labels)
    assert_close(inertia, want_inertia, rtol=1e-12)
    assert_close(ours, theirs, rtol=1e-12)  # the centroids, updated in place
    traced = jf.last.traced_call.ir
    assert _dots(traced) == 0 and "stablehlo.scatter" in traced


def kmeans_iterations(X, C, iters):
    k = C.shape[0]
    for _ in range(iters):
        d = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
        labels = np.argmin(d, axis=1)
        onehot = (labels[:, None] == np.arange(k)[None, :]).astype(X.dtype)
        counts = onehot.sum(axis=0)
        C = np.where(counts[:, None] > 0, (onehot.T @ X) / np.maximum(counts, 1.0)[:, None], C)
    return C


def test_inside_a_rolled_loop_the_classes_come_in_as_the_loops_constant(rng):
    X, C = rng.standard_normal((2000, 3)), rng.standard_normal((6, 3))
    jf = rl.jit(kmeans_iterations)
    assert_close(jf(X, C, 12), kmeans_iterations(X, C, 12), rtol=1e-10)
    traced = jf.last.traced_call.ir
    assert "stablehlo.while" in traced and _dots(traced) == 0


def sums_by_label(labels, X, Y):
    k = 7
    onehot = (np.arange(k)[None, :] == labels[:, None]).astype(X.dtype)  # classes first in ==
    return onehot.T @ X, Y.T @ onehot, np.einsum("nk,nab->kab", onehot, Y.reshape(-1, 2, 3))


def test_either_side_and_any_row_shape_and_labels_outside_the_classes_count_nowhere(rng):
    labels = rng.integers(-3, 10, 500)  # 0 .. 6 are classes; the rest match no column
    X, Y = rng.standard_normal((500, 4)), rng.standard_normal((500, 6))
    got, want = rl.jit(sums_by_label)(labels, X, Y), sums_by_label(labels, X, Y)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert_close(g, w, rtol=1e-12)
    assert _dots(rl.trace(sums_by_label, labels, X, Y).ir) == 0


def test_integer_sums_and_32_bit_labels_are_exact(rng):
    def counts_and_sums(labels, X):
        onehot = (labels[:, None] == np.arange(9)[None, :]).astype(X.dtype)
        return onehot.sum(axis=0), onehot.T @ X

    labels, X = rng.integers(0, 9, 400).astype(np.int32), rng.integers(-50, 50, (400, 3))
    got, want = rl.jit(counts_and_sums)(labels, X), counts_and_sums(labels, X)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype
    assert _dots(rl.trace(counts_and_sums, labels, X).ir) == 0


def test_other_products_with_comparisons_stay_products(rng):
    def not_arange(labels, X):  # classes 0, 2, 4, ...: not arange(k)
        onehot = (labels[:, None] == 2 * np.arange(5)[None, :]).astype(X.dtype)
        return onehot.T @ X

    def lookup(labels, W):  # contracted over the classes: an embedding lookup, a gather
        onehot = (labels[:, None] == np.arange(W.shape[0])[None, :]).astype(W.dtype)
        return onehot @ W

    labels, X = rng.integers(0, 10, 300), rng.standard_normal((300, 4))
    for kernel, args in ((not_arange, (labels, X)), (lookup, (labels, X[:10]))):
        assert_close(rl.jit(kernel)(*args), kernel(*args), rtol=1e-12)
        assert _dots(rl.trace(kernel, *args).ir) == 1
