"""The arrays a compiled NumPy kernel returns are the caller's own: writable, sharing memory
with nothing else (not the arguments, not another result, not another call's), alive as long as
the caller keeps them, and, from ``compile.VIEW_MIN_BYTES`` up, made without copying the
executable's output (a writable view of XLA's 64-byte-aligned buffer, which no one else holds);
smaller ones are copies that own their memory, as NumPy's results do."""

from __future__ import annotations

import gc

import jax
import ml_dtypes
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import compile as compile_module
from tests.conftest import assert_close, float_rtol


def several(x, y, *, scale=2.0):
    return x * scale + y, x > y, (x - y).sum(), {"cum": np.cumsum(y), "rows": x[::-1] * 1}


def fresh(rng, shape=(64, 32)):
    return rng.standard_normal(shape), rng.standard_normal(shape)


def arrays(result):
    a, mask, _, d = result
    return [a, mask, d["cum"], d["rows"]]


def assert_same(got, want):
    a, mask, cum, rows = arrays(got)
    want_a, want_mask, want_cum, want_rows = arrays(want)
    np.testing.assert_allclose(a, want_a, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(mask, want_mask)
    assert_close(rows, want_rows, float_rtol(rows.dtype))  # exact on the CPU
    # A running sum of 32,768 normals is summed in another order by XLA's blocked scan: its
    # rounding error grows with the partial sums (a few hundred here), not with each element.
    np.testing.assert_allclose(cum, want_cum, rtol=1e-12, atol=1e-12 * np.abs(want_cum).max())
    assert type(got[2]) is np.float64 and got[2] == pytest.approx(want[2], rel=1e-12)


@pytest.mark.parametrize("shape", [(64, 32), (256, 128)], ids=["copied", "viewed"])
@pytest.mark.parametrize("keyword", [False, True], ids=["positional", "keyword"])
def test_results_are_writable_and_apart_from_everything(keyword, shape, rng):
    jf = rl.jit(several)
    calls = []
    for _ in range(3):
        x, y = fresh(rng, shape)
        kept = x.copy(), y.copy()
        got = jf(x, y, scale=2.0) if keyword else jf(x, y)
        assert_same(got, several(*kept))
        np.testing.assert_array_equal(x, kept[0])  # the arguments are untouched
        calls.append((x, y, got))
    everything = [a for x, y, got in calls for a in (x, y, *arrays(got))]
    for i, a in enumerate(everything):
        for b in everything[i + 1:]:
            assert not np.shares_memory(a, b)
    for _, _, got in calls:
        for a in arrays(got):
            assert a.flags.writeable and a.flags.c_contiguous
    # Writing into one call's results changes nothing else, and the next call starts afresh.
    x, y, got = calls[0]
    before = [a.copy() for a in arrays(calls[1][2])]
    got[0][...] = -7.0
    got[3]["rows"] += 1.0
    for a, b in zip(arrays(calls[1][2]), before, strict=True):
        np.testing.assert_array_equal(a, b)
    assert_same(jf(x, y), several(x.copy(), y.copy()))


@pytest.mark.cpu_only("results are views of XLA's buffers on the CPU only (an accelerator's are "
                     "copied to the host)")
def test_large_results_are_the_executables_buffers_small_ones_copies(rng):
    x, y = fresh(rng, (256, 128))  # 256 KB results (the mask: 32 KB)
    a, mask, _, d = rl.jit(several)(x, y)
    for out in (a, d["cum"], d["rows"]):
        assert out.nbytes >= compile_module.VIEW_MIN_BYTES
        assert not out.flags.owndata  # a view of the output buffer, not a NumPy copy of it
        assert out.ctypes.data % 64 == 0  # XLA's alignment: it goes back in without a copy
    assert mask.nbytes < compile_module.VIEW_MIN_BYTES and mask.flags.owndata
    mask.resize(mask.size + 1, refcheck=False)  # NumPy's own kind of array: it can grow


def test_results_outlive_the_call_the_function_and_later_allocations(rng):
    x, y = fresh(rng, (256, 128))
    jf = rl.jit(several)
    got = jf(x, y)
    want = [a.copy() for a in arrays(got)]
    del jf
    gc.collect()
    churn = rl.jit(lambda v: v * 3.0 + 1.0)
    for _ in range(20):  # new output buffers of the same size, freed again
        churn(rng.standard_normal((256, 128)))
    gc.collect()
    for a, w in zip(arrays(got), want, strict=True):
        np.testing.assert_array_equal(a, w)


def test_a_single_result_and_an_update_in_place(rng):
    def step(state, dt):
        state += dt * np.tanh(state)
        return state * 2.0

    state = rng.standard_normal(40_000)  # a 320 KB result: a view
    mine = state.copy()
    want = step(mine, 0.1)
    jf = rl.jit(step)
    got = jf(state, 0.1)
    assert_close(state, mine, rtol=1e-12)
    assert_close(got, want, rtol=1e-12)
    assert got.flags.writeable and not np.shares_memory(got, state)
    got += 1.0  # the result is free to change: the caller's updated array is not touched
    assert_close(state, mine, rtol=1e-12)


def test_a_dtype_numpy_cannot_describe_alone_is_copied_whole(rng):
    x = rng.random(100_003)  # above VIEW_MIN_BYTES in bfloat16 too

    def half(v):
        return v.astype(ml_dtypes.bfloat16) * 2

    got = rl.jit(half)(x)
    assert got.dtype == ml_dtypes.bfloat16 and got.flags.writeable
    # within one bfloat16 step: ml_dtypes rounds float64 to bfloat16 through float32 (twice),
    # XLA once, and the two differ on a few of 100,000 values
    assert_close(got.astype(np.float32), half(x).astype(np.float32), rtol=2**-7)


def test_an_empty_result(rng):
    x = rng.random(8)
    got = rl.jit(lambda v: v[5:2] * 2.0)(x)
    assert got.shape == (0,) and got.dtype == np.float64 and got.flags.writeable


@pytest.mark.parametrize("shape", [(64, 32), (256, 128)], ids=["copied", "viewed"])
def test_a_result_in_another_layout_is_handed_over_in_c_order(shape, rng):
    """A TPU's float64 results came back from the device in Fortran order; NumPy's are in C
    order. Made here with a column-major result layout on the CPU: the caller's array is C
    ordered, writable, with the values (above and below the size results are viewed from)."""
    from jax.experimental.layout import Format, Layout

    from reactant_lab.compile import VIEW_MIN_BYTES, _owned

    x = rng.standard_normal(shape).astype(np.float32)  # 8 KB and 128 KB
    device = jax.devices("cpu")[0]
    column_major = Format(Layout(major_to_minor=(1, 0)), jax.sharding.SingleDeviceSharding(device))
    out = jax.jit(lambda a: a * 2.0, out_shardings=column_major)(jax.device_put(x, device))
    assert np.asarray(out).flags.f_contiguous and not np.asarray(out).flags.c_contiguous
    got = _owned(out)
    assert got.flags.c_contiguous and got.flags.writeable
    assert (got.nbytes >= VIEW_MIN_BYTES) == (shape == (256, 128))
    np.testing.assert_array_equal(got, x * np.float32(2.0))
