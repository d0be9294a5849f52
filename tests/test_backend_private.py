"""The private JAX interfaces backend uses (docs/architecture.md, "Private interfaces"): on the
pinned versions the fast routes are taken, and without an interface its fallback gives the same
answers."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import compiler as jax_compiler
from jax._src.interpreters import pxla

import reactant_lab as rl
from reactant_lab import _backend_buffers, _backend_jax, _backend_run, _compile_isolation, backend
from tests.conftest import assert_close, float_rtol, matmul_rtol


def layer(params, x, *, bias):
    return jnp.tanh(x @ params["w"]) + bias


def layer_args(rng):
    params = {"w": jnp.asarray(rng.standard_normal((4, 3)).astype(np.float32))}
    x = jnp.asarray(rng.standard_normal((2, 4)).astype(np.float32))
    return (params, x), {"bias": jnp.asarray(rng.standard_normal(3).astype(np.float32))}


def layer_numpy(params, x, *, bias):
    return np.tanh(np.asarray(x) @ np.asarray(params["w"])) + np.asarray(bias)


def relax(u, out):
    """A NumPy-mode kernel that writes into ``out`` (the flat call path, with write-back)."""
    out[1:-1] = 0.5 * (u[:-2] + u[2:])
    return out.sum()


def relax_numpy(u, out):
    out = out.copy()
    out[1:-1] = 0.5 * (u[:-2] + u[2:])
    return out, out.sum()


def count_jax_dispatch(monkeypatch):
    """Count calls that go through JAX's Compiled (the executable behind ``fast_call``)."""
    calls = []
    dispatch = jax.stages.Compiled.__call__

    def counted(self, *args, **kwargs):
        calls.append(self)
        return dispatch(self, *args, **kwargs)

    monkeypatch.setattr(jax.stages.Compiled, "__call__", counted)
    return calls


def refuse_flat_calls(monkeypatch):
    def refused(_self, _values):
        pytest.fail("the call left JAX's dispatch for Executable.call_flat")

    monkeypatch.setattr(backend.Executable, "call_flat", refused)


def hide_lowered_module(monkeypatch):
    """Make JAX's lowering lack ``_hlo``, as a JAX version that renamed it would."""
    def missing(_self):
        raise AttributeError("_hlo")

    monkeypatch.setattr(pxla.MeshComputation, "_hlo", property(missing, lambda _self, _v: None),
                        raising=False)


# ---------------------------------------------------------------- Lowered._lowering._hlo


def test_pinned_jax_runs_compiled_calls_through_its_fast_call(rng, monkeypatch):
    args, kwargs = layer_args(rng)
    compiled = rl.trace(layer, *args, **kwargs).stages("none").compile()
    exe = compiled._exe
    assert exe.fast_call is not None and exe.structured
    calls = count_jax_dispatch(monkeypatch)
    refuse_flat_calls(monkeypatch)
    np.testing.assert_allclose(compiled(*args, **kwargs), layer_numpy(*args, **kwargs),
                               rtol=matmul_rtol(1e-5), atol=matmul_rtol(1e-6))
    host_args = jax.tree_util.tree_map(np.asarray, args)
    host_kwargs = jax.tree_util.tree_map(np.asarray, kwargs)
    np.testing.assert_allclose(compiled(*host_args, **host_kwargs),
                               layer_numpy(*args, **kwargs), rtol=matmul_rtol(1e-5),
                               atol=matmul_rtol(1e-6))
    assert calls == [exe.fast_call, exe.fast_call]


def test_pinned_jax_runs_a_write_back_kernel_through_its_executable(rng, monkeypatch):
    u, out = rng.random(16), rng.random(16)
    compiled = rl.trace(relax, u, out.copy()).stages("none").compile()
    exe = compiled._exe
    assert exe.fast_call is not None and not exe.structured  # flat values, JAX's executable
    calls = count_jax_dispatch(monkeypatch)
    want_out, want_sum = relax_numpy(u, out)
    got = compiled(u, out)
    assert_close(got, want_sum)
    assert_close(out, want_out)
    assert calls == [exe.fast_call]


def test_without_the_lowered_module_attribute_the_raw_path_gives_the_same_answers(
        rng, monkeypatch):
    args, kwargs = layer_args(rng)
    stages = rl.trace(layer, *args, **kwargs).stages("none")
    u, out = rng.random(16), rng.random(16)
    relax_stages = rl.trace(relax, u, out.copy()).stages("none")
    hide_lowered_module(monkeypatch)  # from here on, JAX itself compiles nothing
    calls = count_jax_dispatch(monkeypatch)

    compiled = stages.compile()
    assert compiled._exe.fast_call is None
    np.testing.assert_allclose(compiled(*args, **kwargs), layer_numpy(*args, **kwargs),
                               rtol=matmul_rtol(1e-5), atol=matmul_rtol(1e-6))
    assert "HloModule" in compiled.hlo_text() and compiled.cost_analysis()["flops"] > 0
    with pytest.raises(rl.SignatureMismatchError, match=r"args\[1\]"):
        compiled(args[0], np.ones((2, 5), np.float32), **kwargs)

    relaxed = relax_stages.compile(donate=True)
    assert relaxed._exe.fast_call is None
    want_out, want_sum = relax_numpy(u, out)
    assert_close(relaxed(u, out), want_sum)
    assert_close(out, want_out)
    assert calls == []


# ---------------------------------------------------------------- backend_compile_and_load


@pytest.mark.cpu_only("compiles are checked in a worker process on the CPU only")
def test_pinned_jax_loads_the_compile_workers_executable_behind_its_fast_call(
        rng, monkeypatch):
    assert _compile_isolation.wrap_jax_compile()
    wrapper = jax_compiler.backend_compile_and_load.__code__
    assert wrapper.co_filename == _compile_isolation.__file__
    args, kwargs = layer_args(rng)
    stages = rl.trace(layer, *args, **kwargs).stages("none")
    backend._COMPILER.close()
    monkeypatch.setenv(backend.COMPILE_CHECK_VAR, "always")
    compiled = stages.compile()
    assert backend._COMPILER.pid is not None  # the worker compiled it
    assert compiled._exe.fast_call is not None
    refuse_flat_calls(monkeypatch)
    np.testing.assert_allclose(compiled(*args, **kwargs), layer_numpy(*args, **kwargs),
                               rtol=matmul_rtol(1e-5), atol=matmul_rtol(1e-6))


@pytest.mark.cpu_only("compiles are checked in a worker process on the CPU only")
def test_without_jaxs_compile_function_the_worker_compile_is_a_probe(rng, monkeypatch):
    with monkeypatch.context() as patch:
        patch.delattr(jax_compiler, "backend_compile_and_load")
        assert _compile_isolation.wrap_jax_compile.__wrapped__() is False
    args, kwargs = layer_args(rng)
    stages = rl.trace(layer, *args, **kwargs).stages("none")
    monkeypatch.setattr(_compile_isolation, "wrap_jax_compile", lambda: False)
    monkeypatch.setenv(backend.COMPILE_CHECK_VAR, "always")
    backend._COMPILER.close()
    compiled = stages.compile()
    assert backend._COMPILER.pid is not None  # the probe ran in the worker
    assert compiled._exe.fast_call is not None  # then JAX compiled it here, as without a guard
    np.testing.assert_allclose(compiled(*args, **kwargs), layer_numpy(*args, **kwargs),
                               rtol=matmul_rtol(1e-5), atol=matmul_rtol(1e-6))


def _template_threads(monkeypatch):
    """The names of the threads that lower a compile's JAX template, in order."""
    names: list[str] = []
    lower = _backend_jax._template_lowering

    def spy(*args, **kwargs):
        names.append(threading.current_thread().name)
        return lower(*args, **kwargs)

    monkeypatch.setattr(_backend_jax, "_template_lowering", spy)
    return names


def scaled_update(a, b):
    a += 2.0 * b
    return a.sum()


def test_a_first_call_lowers_its_template_while_the_passes_run(monkeypatch, rng):
    names = _template_threads(monkeypatch)
    a, b = rng.random(6), rng.random(6)
    got_a, want_a = a.copy(), a.copy()
    total = rl.jit(scaled_update)(got_a, b)
    assert names == ["reactant_lab-prelower"]  # one lowering, on the prelowering thread
    want = scaled_update(want_a, b)
    assert_close(got_a, want_a)
    assert total == pytest.approx(want)


def identity_and_double(a):
    return a * 1.0 + 0.0, a * 2.0


@pytest.mark.skipif(not rl.enzyme_available(), reason="the passes that forward it need enzyme-ad")
def test_a_module_the_passes_changed_the_signature_of_lowers_its_own(monkeypatch, rng):
    names = _template_threads(monkeypatch)
    x = rng.random(5)
    jitted = rl.jit(identity_and_double)
    same, doubled = jitted(x)
    assert jitted.last.compiled.forwarded == (("result[0]", "args[0]"),)
    # the template lowered ahead had two results; the compile lowered one of the module's own
    # (the two run on their own threads at once: on a loaded machine either may start first)
    assert sorted(names) == sorted(["reactant_lab-prelower", threading.main_thread().name])
    np.testing.assert_array_equal(same, x)
    assert_close(doubled, 2.0 * x)


def test_a_template_that_fails_to_lower_ahead_is_lowered_again(monkeypatch, rng):
    lower = _backend_jax._template_lowering
    calls = []

    def fails_ahead(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("lowering failed on the prelowering thread")
        return lower(*args, **kwargs)

    monkeypatch.setattr(_backend_jax, "_template_lowering", fails_ahead)
    a, b = rng.random(6), rng.random(6)
    got_a, want_a = a.copy(), a.copy()
    rl.jit(scaled_update)(got_a, b)
    scaled_update(want_a, b)
    assert len(calls) == 2
    assert_close(got_a, want_a)


def test_without_the_batching_table_batched_loops_give_the_same_answers(rng, monkeypatch):
    """A JAX without ``fancy_primitive_batchers``: the batched loop over trmm's columns goes
    through JAX's own batching rules (a gather for ``B[i, j]``, transposes around the masked
    slab), with the same results as with ours, and NumPy's."""
    import contextlib

    from tests.numpy_kernels import trmm

    n, m = int(rng.integers(10, 18)), int(rng.integers(8, 14))  # both loops roll (>= 8)
    A, B = rng.standard_normal((n, n)), rng.standard_normal((n, m))
    want = B.copy()
    trmm(1.5, A, want)
    ours = B.copy()
    rl.jit(trmm)(1.5, A, ours)
    monkeypatch.setattr(backend, "batch_rules_in_place", contextlib.nullcontext)
    monkeypatch.setattr(backend, "batch_axis_kept_by_unit_reshapes", contextlib.nullcontext)
    jaxs = B.copy()
    jf = rl.jit(trmm)
    jf(1.5, A, jaxs)
    assert "gather" in jf.last.traced.ir  # JAX's rule for a slice at an unbatched index
    np.testing.assert_allclose(ours, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jaxs, want, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- guarded calls: the twin client


def halve(a):
    """A NumPy kernel whose loop's length depends on the data: its calls run guarded."""
    while a.max() > 1.0:
        a *= 0.5
    return a.sum()


def halve_numpy(a):
    a = a.copy()
    while a.max() > 1.0:
        a *= 0.5
    return a, a.sum()


def check_halve(rng):
    a = rng.random(9) * 8
    want, want_sum = halve_numpy(a)
    f = rl.jit(halve)
    got = f(a)
    assert f.last.compiled.guarded
    assert_close(a, want, float_rtol(a.dtype))
    assert_close(got, want_sum, rtol=1e-13)  # XLA's sum adds in another order than NumPy's


def test_pinned_jaxlib_places_a_guarded_calls_inputs_through_batched_device_put(
        rng, monkeypatch):
    from jaxlib import xla_client

    calls = []
    real = xla_client.batched_device_put
    monkeypatch.setattr(xla_client, "batched_device_put",
                        lambda *a, **k: calls.append(a) or real(*a, **k))
    device = _backend_run.twin_client().devices()[0]
    x = rng.random((3, 4))
    placed = _backend_run.placer(device)(x, (x.shape, x.dtype, False))
    assert len(calls) == 1 and np.array_equal(np.asarray(placed), x)


def test_without_jaxs_shaped_array_a_guarded_call_gives_the_same_answers(rng, monkeypatch):
    # (JAX's own device_put needs batched_device_put: only its other half can go missing here)
    # jaxlib looks jax.core.ShapedArray up once per process, on its first split of a result
    # into arrays: done first here, or the test fails when it is its worker's first guarded call
    check_halve(rng)
    monkeypatch.delattr(jax.core, "ShapedArray")
    _backend_jax._twin_placer.cache_clear()
    try:
        check_halve(rng)
    finally:
        _backend_jax._twin_placer.cache_clear()


def test_without_a_twin_a_guarded_call_runs_the_executable_itself(rng, monkeypatch):
    def refused(*_):
        raise RuntimeError("no twin here")

    monkeypatch.setattr(_backend_jax, "twin", refused)
    calls = count_jax_dispatch(monkeypatch)
    check_halve(rng)
    assert calls, "the guarded call did not run JAX's executable"


def _descend(u):
    u[...] -= 0.1 * jax.grad(lambda v: jnp.sum(v ** 2))(u)


def _descend_by_name(u):
    step = 0.1 * jax.grad(lambda v: jnp.sum(v ** 2))(u)
    u -= step


def test_pinned_jax_takes_numpy_modes_arrays_and_without_its_tables_nothing_is_lost(
        rng, monkeypatch):
    """``register_array_like``: JAX's functions take NumPy mode's arrays as their traced
    values, so a NumPy kernel updates its argument with a JAX gradient. Without the table of
    abstract values (another JAX) JAX refuses them as before: JAX code still traces in JAX mode,
    and a kernel that would update an argument is refused, never traced with the update lost."""
    from jax._src import core

    from reactant_lab.trace.numpy_mode import proxy

    assert proxy.JAX_TAKES_PROXIES
    u = rng.random(4) + 0.5
    want = u - 0.2 * u
    rl.jit(_descend, optimize="none")(u)
    assert_close(u, want, rtol=1e-12)

    monkeypatch.delitem(core.pytype_aval_mappings, proxy.ProxyArray)
    x = rng.random(3)
    traced = rl.trace(lambda v: jnp.sin(v) * 2, x)
    assert traced.mode == "jax"
    assert_close(traced.stages("none").compile()(x), np.sin(x) * 2, rtol=1e-12)
    before = u.copy()
    with pytest.raises(rl.TraceError, match="u may be updated at"):
        rl.jit(_descend_by_name, optimize="none")(u)
    np.testing.assert_array_equal(u, before)


# ---------------------------------------------------------------- kept result buffers


def _kept_pointer(exe):
    """Where the buffer kept for the next call lies (one kept result, the device's: the one
    its kind's pool got last)."""
    return _backend_buffers._Pool.free[("device", *exe._buffers._kinds[0])][-1][
        0].unsafe_buffer_pointer()


@pytest.mark.cpu_only("result buffers are kept on the CPU only")
def test_a_large_updated_array_is_computed_into_the_last_calls_buffer(monkeypatch, rng):
    names = _template_threads(monkeypatch)
    big = (1024, 640)  # 5 MiB of float64
    jf = rl.jit(scaled_update)
    a, b = rng.random(big), rng.random(big)
    want_a = a.copy()
    jf(a, b)
    assert names == ["reactant_lab-prelower"]  # the template lowered ahead had the donor
    exe = jf.last.compiled._exe
    assert exe.kept == (1,) and "tf.aliasing_output = 1" in exe.text
    first = _kept_pointer(exe)
    for _ in range(3):
        a2 = a.copy()
        total = jf(a2, b)
        assert _kept_pointer(exe) == first  # written into the buffer the call before left
        assert_close(a2, a + 2.0 * b, rtol=1e-15)
        assert total == pytest.approx((a + 2.0 * b).sum())
    scaled_update(want_a, b)
    assert_close(a, want_a, rtol=1e-15)


@pytest.mark.cpu_only("result buffers are kept on the CPU only")
def test_without_the_lowered_module_attribute_kept_buffers_give_the_same_answers(
        rng, monkeypatch):
    big = (1024, 640)
    a, b = rng.random(big), rng.random(big)
    stages = rl.trace(scaled_update, a.copy(), b).stages("none")
    hide_lowered_module(monkeypatch)
    compiled = stages.compile(donate="auto")
    assert compiled._exe.fast_call is None and compiled.kept == ("args[0]",)
    for _ in range(3):
        got = a.copy()
        compiled(got, b)
        assert_close(got, a + 2.0 * b, rtol=1e-15)


@pytest.mark.cpu_only("result buffers are kept on the CPU only")
def test_kept_buffers_stay_within_the_process_limit_and_go_with_their_executable(
        monkeypatch, rng):
    import gc

    big = (1024, 640)
    a, b = rng.random(big), rng.random(big)
    gc.collect()  # earlier tests' executables gone first
    before = _backend_buffers.held_bytes()
    gc.disable()
    try:
        jf = rl.jit(scaled_update)
        jf(a.copy(), b)
        exe = jf.last.compiled._exe
        assert _backend_buffers.held_bytes() == before + a.nbytes
        del jf, exe
    finally:
        gc.enable()
    gc.collect()
    assert _backend_buffers.held_bytes() == before
    monkeypatch.setattr(_backend_buffers, "KEPT_BYTES_LIMIT", before + a.nbytes - 1)
    tight = rl.jit(scaled_update)
    for _ in range(3):  # over the limit: nothing kept, each call allocates, the same answers
        got = a.copy()
        tight(got, b)
        assert_close(got, a + 2.0 * b, rtol=1e-15)
    assert _backend_buffers.held_bytes() == before


_COLLECTED_UNDER_THE_LOCK = """
import gc, numpy as np, reactant_lab as rl
from reactant_lab import _backend_buffers

def scaled_update(a, b):
    a += 2.0 * b

rng = np.random.default_rng({seed})
a, b = rng.random((1024, 640)), rng.random((1024, 640))
gone = rl.jit(scaled_update)
gone(a.copy(), b)  # an executable with a kept buffer, in a reference cycle, then let go
cycle = [gone]
cycle.append(cycle)
del gone, cycle
with _backend_buffers._Pool.lock:  # where an allocation in a call may trigger a collection
    gc.collect()
kept = rl.jit(scaled_update)
for _ in range(3):
    got = a.copy()
    kept(got, b)
    assert np.allclose(got, a + 2.0 * b, rtol=1e-15, atol=0)
del kept
gc.collect()
assert _backend_buffers.held_bytes() == 0, _backend_buffers.held_bytes()
print("done")
"""


@pytest.mark.cpu_only("result buffers are kept on the CPU only")
def test_an_executable_collected_inside_the_pools_lock_does_not_hang_later_calls(rng):
    """The garbage collector runs a collected executable's finalizer wherever an allocation
    triggers a collection, inside the kept-buffer pool's critical sections too: taking the
    pool's lock there waited on itself for ever (calls to one kernel hung while other kernels'
    jitted functions were being collected). It is noted there and settled at the next use:
    the calls after it run, and the pool gives the buffers back once their executables go.
    In a subprocess, so that a hang fails the test instead of the suite."""
    script = _COLLECTED_UNDER_THE_LOCK.format(seed=int(rng.integers(1 << 30)))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=240, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0 and "done" in done.stdout, done.stderr[-3000:]


def test_a_twins_inputs_are_read_in_place_when_aligned_else_copied_to_a_boundary(rng):
    """A guarded call's twin reads a 64-byte-aligned C-ordered input where it lies; any other
    (and a donated one) is copied here to such a boundary (the client's own copy waited for a
    thread on the idle core: ~60 us for 160 KB)."""
    aval = ((100, 200), np.dtype(np.float64), False)
    aligned = _backend_buffers.aligned_empty(aval)
    aligned[...] = rng.random((100, 200))
    assert _backend_jax._host_value(aligned, aval, False) is aligned
    raw = np.empty(20008)
    skip = (8 - raw.ctypes.data % 64) % 64 // 8  # elements to a start 8 bytes past a boundary
    off = raw[skip:skip + 20000].reshape(100, 200)
    off[...] = aligned
    assert off.ctypes.data % 64 == 8
    for value, copy in ((aligned, True), (np.asfortranarray(aligned), False), (off, False)):
        host = _backend_jax._host_value(value, aval, copy)
        assert host is not value and host.ctypes.data % 64 == 0 and host.flags.c_contiguous
        np.testing.assert_array_equal(host, value)
