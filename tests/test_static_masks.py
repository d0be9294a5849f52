"""Large boolean masks known at trace time (``(fy > keep) | (fx > keep)``, built by NumPy from
static coordinate vectors) go into the module as one vector per axis combined (their OR or
their AND), not as a dense constant of megabytes that every stage prints and parses: the module
stays small, and results equal NumPy's. A mask that is not such a combination stays dense. So
does a large diagonal matrix (``np.eye(M)``), its diagonal placed by an iota comparison."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.trace.numpy_mode.storage import FACTORED_MIN, to_jax
from tests.conftest import assert_close, assert_values_equal, target_platform


def lowpass(img, keep):
    fy = np.abs(np.fft.fftfreq(img.shape[0]))[:, None]
    fx = np.abs(np.fft.fftfreq(img.shape[1]))[None, :]
    spectrum = np.fft.fft2(img)
    spectrum[(fy > keep) | (fx > keep)] = 0.0
    return np.fft.ifft2(spectrum).real


def band(x, lo, hi):
    rows = (np.arange(x.shape[0]) >= lo)[:, None]
    cols = (np.arange(x.shape[1]) < hi)[None, :]
    inside = rows & cols
    return np.where(inside, x * 2.0, x - 1.0), x * inside


def box3(v, edge):
    i = np.arange(v.shape[0]) < edge
    return v * ((i[:, None, None] | i[None, :, None]) | i[None, None, :])


def dense_kernel(x, mask):
    return np.where(mask, x, 0.0).sum(axis=0)


def _module_bytes(fn, *args) -> int:
    return len(rl.trace(fn, *args).ir)


def test_a_lowpass_mask_is_two_vectors_in_the_module_and_gives_numpys_result(rng):
    img = rng.random((512, 256))
    on_tpu = target_platform() == "tpu"
    if on_tpu:  # XLA's TPU compiler has no complex128 FFT: said up front
        with pytest.raises(rl.CompileError, match="no implementation of this op for 64-bit"):
            rl.jit(lowpass)(img, 0.1)
    got = rl.jit(lowpass, device="cpu" if on_tpu else None)(img, 0.1)
    np.testing.assert_allclose(got, lowpass(img, 0.1), rtol=1e-12, atol=1e-12)
    assert _module_bytes(lowpass, img, 0.1) < 20_000  # the dense mask alone: 262 KB of hex


def test_an_and_mask_through_where_and_a_product(rng):
    x = rng.standard_normal((400, 300))
    got = rl.jit(band)(x, 37, 211)
    for g, w in zip(got, band(x, 37, 211), strict=True):
        assert_values_equal(g, w)
    assert _module_bytes(band, x, 37, 211) < 20_000


def test_a_three_dimensional_or_mask(rng):
    v = rng.random((48, 48, 48))
    assert_values_equal(rl.jit(box3)(v, 5), box3(v, 5))
    assert _module_bytes(box3, v, 5) < 20_000


def checkerboard(x):
    mask = (np.arange(x.shape[0])[:, None] * 7 + np.arange(x.shape[1])[None, :] * 3) % 5 < 2
    return dense_kernel(x, mask)


def or_but_one(x):
    mask = (np.arange(x.shape[0]) % 7 == 0)[:, None] | (np.arange(x.shape[1]) % 5 == 0)[None, :]
    mask[3, 4] = True  # one element off the OR of its row and column vectors
    return dense_kernel(x, mask)


@pytest.mark.parametrize("kernel", [checkerboard, or_but_one])
def test_a_mask_of_no_such_form_stays_dense_and_right(kernel, rng):
    x = rng.standard_normal((300, 256))
    # column sums of 300 signed values: XLA adds in another order than NumPy's pairwise sum
    np.testing.assert_allclose(rl.jit(kernel)(x), kernel(x), rtol=1e-10, atol=1e-12)
    assert _module_bytes(kernel, x) > x.size  # the dense constant: at least a byte each


def test_to_jax_rebuilds_factored_masks_exactly(rng):
    """Random masks that are an OR or an AND of one vector per axis (some vectors all False or
    all True), in 2 and 3 dimensions: the module's value equals the mask element for element,
    and it is no dense constant."""
    for _ in range(20):
        ndim = int(rng.integers(2, 4))
        shape = tuple(int(n) for n in rng.integers(2, 90, ndim))
        while np.prod(shape) < FACTORED_MIN:
            shape = tuple(2 * n for n in shape)
        vectors = [(rng.random(n) < rng.choice([0.0, 0.2, 0.8, 1.0])).reshape(
            [n if a == k else 1 for a in range(ndim)]) for k, n in enumerate(shape)]
        combine = np.logical_or if rng.random() < 0.5 else np.logical_and
        mask = vectors[0]
        for v in vectors[1:]:
            mask = combine(mask, v)
        mask = np.broadcast_to(mask, shape).copy()
        np.testing.assert_array_equal(np.asarray(to_jax(mask)), mask)
        text = str(rl.trace(lambda x, m=mask: x * m, np.ones(shape)).ir)
        payloads = re.findall(r'dense<"0x([0-9A-F]+)"', text)
        assert max(map(len, payloads), default=0) <= 2 * max(shape)  # a vector at most


def identity_start(data):
    corr = np.eye(data.shape[1], dtype=data.dtype)  # correlation's start
    corr += data.T @ data
    return corr


def scaled_diagonal(x, d):
    return x @ np.diag(d) + np.eye(x.shape[0], x.shape[1], dtype=np.int32) * 3


def test_a_large_diagonal_matrix_is_its_diagonal_placed_by_iota(rng):
    data = rng.standard_normal((20, 300))
    np.testing.assert_allclose(rl.jit(identity_start)(data), identity_start(data), rtol=1e-12,
                               atol=1e-12)  # sums of 20 products: XLA adds in its own order
    assert _module_bytes(identity_start, data) < 20_000  # np.eye(300) alone: 720 KB of hex
    x, d = rng.standard_normal((300, 260)), np.linspace(-1.0, 2.0, 260)
    assert_close(rl.jit(scaled_diagonal)(x, d), scaled_diagonal(x, d),
                               rtol=1e-12)


def test_to_jax_keeps_diagonal_matrices_bit_for_bit(rng):
    n, m = (int(v) for v in rng.integers(256, 320, 2))
    cases = [np.eye(n, m), np.diag(rng.standard_normal(min(n, m)))[:n, :m],
             np.eye(n, m, dtype=np.int64) * -7, np.eye(n, m, dtype=np.complex128) * (1 - 2j)]
    signed_zero = np.eye(n, m)
    signed_zero[1, 4] = -0.0  # zero off the diagonal, but not +0.0: kept as it is
    off = np.eye(n, m)
    off[2, 0] = 1e-300  # one element off the diagonal
    cpu = jax.devices("cpu")[0]  # a TPU keeps float64 to about 49 bits, 1e-300 not at all
    for a in [*cases, signed_zero, off]:
        with jax.enable_x64(True), jax.default_device(cpu):  # as in NumPy mode
            got = np.asarray(to_jax(a))
        assert got.dtype == a.dtype and got.tobytes() == np.ascontiguousarray(a).tobytes()
    assert _module_bytes(almost_identity, np.ones((n, m))) > n * m  # the dense constant
    assert _module_bytes(identity_start, np.ones((3, n))) < 20_000


def almost_identity(x):
    m = np.eye(x.shape[0], x.shape[1])
    m[2, 0] = 1e-300  # not a diagonal matrix: a dense constant
    return x + m
