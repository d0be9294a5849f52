"""Small NumPy-mode calls on the CPU run on XLA's client that keeps them on the calling thread
(``backend.Executable.call_small``, ``_backend_run.small_client``): the same answers as NumPy,
in-place updates written back, the same checks of the arguments, and a fallback to JAX's
client where the executable cannot be moved there."""

from __future__ import annotations

import time

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import _backend_run, backend
from reactant_lab._backend_jax import SMALL_TRIALS
from tests import numpy_kernels as nk
from tests.conftest import assert_close, float_rtol

pytestmark = pytest.mark.cpu_only("the small client is XLA:CPU's")

KERNELS = {k.name: k for k in nk.KERNELS}


def relax(u, out):
    for i in range(1, u.shape[0] - 1):
        out[i] = 0.5 * out[i] + 0.25 * (u[i - 1] + u[i + 1])
    return out.sum()


def _unaligned(a):
    """A copy of ``a`` whose data starts 16 bytes past a 64-byte boundary (a client copies it)."""
    raw = np.empty(a.nbytes + 80, np.uint8)
    start = -raw.ctypes.data % 64 + 16
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    assert not rl.is_aligned(out)
    return out


@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
def test_a_small_kernel_equals_numpy_on_either_client_and_one_is_chosen(rng, aligned):
    jf = rl.jit(relax)
    for _ in range(SMALL_TRIALS + 3):  # both clients timed, then the faster one's calls
        u, out = rng.random(300), rng.random(300)
        if not aligned:
            u, out = _unaligned(u), _unaligned(out)
        want_out = out.copy()
        want = relax(u.copy(), want_out)
        got = jf(u, out)
        assert_close(got, want, rtol=1e-12)
        assert_close(out, want_out, float_rtol(out.dtype))
    compiled = jf.last.compiled
    assert compiled.small and not compiled.guarded and jf.cache_size == 1
    assert compiled.small_chosen in (True, False)


def _slowed(fn):
    def slow(*args, **kwargs):
        time.sleep(0.003)
        return fn(*args, **kwargs)
    return slow


@pytest.mark.parametrize("slower", ["small client", "jax client"])
def test_the_faster_client_of_the_first_calls_is_kept(rng, monkeypatch, slower):
    if slower == "small client":
        monkeypatch.setattr(backend.Executable, "_run_twin",
                            _slowed(backend.Executable._run_twin))
    else:
        monkeypatch.setattr(backend.Executable, "call_flat", _slowed(backend.Executable.call_flat))
    jf = rl.jit(relax)
    for k in range(SMALL_TRIALS + 2):
        u, out = rng.random(64), rng.random(64)
        want_out = out.copy()
        want = relax(u.copy(), want_out)
        assert_close(jf(u, out), want, rtol=1e-12)
        assert_close(out, want_out, float_rtol(out.dtype))
        if k < SMALL_TRIALS - 1:
            assert jf.last.compiled.small_chosen is None
    assert jf.last.compiled.small_chosen is (slower == "jax client")


def test_another_dtype_on_the_small_path_is_traced_anew_not_converted(rng):
    """JAX's dispatch does not check these calls: the call does (a float32 array is a new
    signature, as it is through JAX's client, never a silent conversion to float64)."""
    jf = rl.jit(relax)
    u, out = rng.random(50), rng.random(50)
    jf(u, out)
    assert jf.last.compiled.small
    u32, out32 = rng.random(50).astype(np.float32), rng.random(50).astype(np.float32)
    want_out = out32.copy()
    want = relax(u32.copy(), want_out)
    got = jf(u32, out32)
    assert jf.cache_size == 2 and jf.last.compiled._exe.params[0][1] == np.float32
    assert_close(out32, want_out, rtol=1e-6)
    assert_close(got, want, rtol=1e-5)


def test_large_or_heavy_kernels_and_jax_callers_stay_on_jaxs_client(rng):
    big = rl.jit(lambda a, b: a @ b)  # 2 * 300**3 flops, past SMALL_CALL_FLOPS
    a, b = rng.random((300, 300)), rng.random((300, 300))
    assert_close(big(a, b), a @ b, rtol=1e-12)
    assert not big.last.compiled.small
    import jax.numpy as jnp

    jx = rl.jit(lambda x: x * 2.0)
    x = jnp.asarray(rng.random(8), jnp.float32)
    got = jx(x)
    assert not jx.last.compiled.small  # its results are JAX arrays on JAX's device
    assert_close(np.asarray(got), np.asarray(x) * 2.0, rtol=1e-6)


def test_a_twin_without_every_kernel_falls_back_to_jaxs_client(rng):
    """jaxlib 0.10.2's XLA:CPU did not serialize every kernel of adi's executable ("NOT_FOUND:
    Function dynamic-update-slice_slice_fusion.36 not found" from its copy on another client):
    small calls and guarded calls (``timeout=``) then run the executable itself."""
    kernel = KERNELS["adi"]
    for timeout in (None, 60.0):
        jf = rl.jit(kernel.fn, timeout=timeout)
        for _ in range(2):
            args = kernel.make(rng)
            ref = [np.array(x) if isinstance(x, np.ndarray) else x for x in args]
            want = kernel.fn(*ref)
            got = jf(*args)
            if want is not None:
                assert_close(got, want, kernel.tol)
            for x, y in zip(args, ref, strict=True):
                assert_close(x, y, kernel.tol)
        compiled = jf.last.compiled
        assert compiled.guarded == (timeout is not None)
        if timeout is None:
            assert compiled.small and compiled.small_chosen is False


def test_small_calls_can_be_turned_off(rng, monkeypatch):
    monkeypatch.setenv(_backend_run.SMALL_CALLS_VAR, "0")
    _backend_run.small_client.cache_clear()
    try:
        jf = rl.jit(relax)
        u, out = rng.random(40), rng.random(40)
        want_out = out.copy()
        want = relax(u.copy(), want_out)
        assert_close(jf(u, out), want, rtol=1e-12)
        assert_close(out, want_out, float_rtol(out.dtype))
        assert not jf.last.compiled.small and not backend.Executable.small.func(
            jf.last.compiled._exe)
    finally:
        monkeypatch.delenv(_backend_run.SMALL_CALLS_VAR)
        _backend_run.small_client.cache_clear()
