"""Compiled: any stage compiles, signature checks, donation, XLA's views, the fallback path."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.analysis.mlir_func import parse_function, returned_names
from reactant_lab.analysis.normalize import strip_locations
from reactant_lab.errors import AnalysisError
from reactant_lab.examples import EXAMPLES, mlp
from tests.conftest import assert_close, float_rtol, target_platform, unattached_platform


@pytest.fixture
def mlp_stages(rng):
    args = EXAMPLES[0].make_args(rng)
    return rl.trace(mlp, *args).stages("all"), args


def test_every_stage_compiles_and_agrees(mlp_stages, rng):
    st, _ = mlp_stages
    args = EXAMPLES[0].make_args(rng)
    want = np.asarray(jax.jit(mlp)(*args))
    for stage in st.stages:
        got = st.compile(stage.index)(*args)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=stage.name)
    assert st.compile("optimize+sroa").stage == "optimize+sroa"


def test_xla_views(mlp_stages):
    st, _ = mlp_stages
    c = st.compile()
    hlo = c.hlo_text()
    # the MLP's matrix products: XLA:CPU's dots; a TPU's HLO has none, its fusions run them as
    # convolutions on the matrix unit (measured on a TPU v5e: "convolution_algorithm_config")
    assert "HloModule" in hlo and ("dot" in hlo if target_platform() == "cpu"
                                   else "convolution" in hlo or "dot" in hlo)
    cost = c.cost_analysis()
    assert cost["flops"] >= 2 * 128 * (64 * 256 + 256 * 256 + 256 * 10)
    mem = c.memory_analysis()
    args, out = (4 * (128 * 64 + 64 * 256 + 256 * 256 + 256 * 10 + 256 + 256 + 10),
                 4 * 128 * 10)
    if target_platform() == "cpu":
        assert (mem["argument_size_in_bytes"], mem["output_size_in_bytes"]) == (args, out)
    else:  # an accelerator pads buffers to its tiles
        assert mem["argument_size_in_bytes"] >= args and mem["output_size_in_bytes"] >= out
    assert c.compile_seconds > 0 and "func.func public @main" in c.as_text()


@pytest.mark.parametrize(("change", "message"), [
    (lambda p, x: (p, x[:64]), r"args\[1\]: compiled for float32\[128, 64\], called with "
                               r"float32\[64, 64\]"),
    (lambda p, x: (p, x.astype(np.float64)), r"args\[1\]: compiled for float32.*float64"),
    (lambda p, x: ({**p, "extra": x}, x), "structure"),
    (lambda p, x: (p,), "structure"),
])
def test_signature_mismatch_is_explained(mlp_stages, change, message):
    st, args = mlp_stages
    compiled = st.compile()
    with pytest.raises(rl.SignatureMismatchError, match=message):
        compiled(*change(*args))
    with pytest.raises(TypeError):  # also a TypeError, as JAX's is
        compiled(*change(*args))


def test_static_value_mismatch():
    c = rl.trace(lambda x, n: x * n, np.ones(3, np.float32), 2).stages("none").compile()
    assert_close(c(np.ones(3, np.float32), 2), [2, 2, 2])
    with pytest.raises(rl.SignatureMismatchError, match=r"static args\[1\]: compiled with 2, "
                                                        r"called with 3"):
        c(np.ones(3, np.float32), 3)
    with pytest.raises(rl.SignatureMismatchError):
        c(np.ones(3, np.float32), 2.0)  # 2 == 2.0 in Python, but it traces differently


def test_jax_array_fast_path_checks_shapes(rng):
    x = jnp.asarray(rng.standard_normal((4, 4)).astype(np.float32))
    c = rl.trace(lambda a, b: a @ b, x, x).stages().compile()
    assert_close(c(x, x), x @ x, rtol=1e-5)
    with pytest.raises(rl.SignatureMismatchError, match=r"args\[1\]"):
        c(x, jnp.ones((4, 5), np.float32))


def test_donation_deletes_inputs_and_reuse_is_explained(rng):
    x = jnp.asarray(rng.standard_normal(8).astype(np.float32))
    traced = rl.trace(lambda v: v * 2 + 1, x)
    c = traced.stages().compile(donate=True)
    assert "tf.aliasing_output = 0" in c.as_text()
    expected = np.asarray(x) * 2 + 1
    out = c(x)
    assert_close(out, expected, rtol=1e-6)
    assert x.is_deleted()
    with pytest.raises(rl.DonatedArgumentError, match=r"args\[0\].*donated"):
        c(x)
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)


def test_preserved_arguments_are_not_donated(rng):
    x = jnp.asarray(rng.standard_normal(4).astype(np.float32))
    y = jnp.asarray(rng.standard_normal(4).astype(np.float32))
    c = rl.trace(lambda a, b: (a, b * 3), x, y).stages().compile(donate=True)
    a, b = c(x, y)
    assert a is x and not x.is_deleted() and y.is_deleted()
    assert_close(b, np.asarray(a) * 0 + b)


def test_raw_execute_fallback_path(monkeypatch, rng):
    monkeypatch.setenv("REACTANT_LAB_RAW_EXECUTE", "1")
    for example in EXAMPLES:
        args = example.make_args(rng)
        c = rl.trace(example.fn, *args).stages().compile()
        got, want = c(*args), jax.jit(example.fn)(*args)
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want),
                        strict=True):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
        assert "HloModule" in c.hlo_text() and c.cost_analysis()["flops"] >= 0
        with pytest.raises(rl.SignatureMismatchError):
            c(*[np.zeros((1, 1), np.float32) for _ in args])


def test_compile_error_is_clear():
    traced = rl.trace(lambda x: x + 1, np.ones(2, np.float32))
    broken = traced.ir.replace("stablehlo.add", "stablehlo.not_an_op")
    from reactant_lab.compile import compile_traced

    with pytest.raises(rl.CompileError, match="not_an_op"):
        compile_traced(traced, broken)


def test_unknown_device():
    traced = rl.trace(lambda x: x + 1, np.ones(2, np.float32))
    missing = unattached_platform()
    with pytest.raises(rl.PipelineError, match=f"no '{missing}' device"):
        traced.stages().compile(device=missing)


def _scale_in_place(a, b):
    a *= 1.5
    a += b
    return b.sum()


def test_rl_jit_donates_only_the_arguments_a_numpy_kernel_updates(rng):
    a0, b = rng.random((64, 32)), rng.random((64, 32))
    jf = rl.jit(_scale_in_place)
    for _ in range(3):  # each call computes in its own donated copy, then writes back
        a, b_before = a0.copy(), b.copy()
        total = jf(a, b)
        assert_close(a, a0 * 1.5 + b, rtol=float_rtol(np.float64, 1e-15))
        np.testing.assert_array_equal(b, b_before)
        assert_close(total, b.sum(), rtol=1e-12)
    compiled = jf.last.compiled
    assert compiled.donate == "auto" and compiled.donated_args == (True, False)
    kept = rl.jit(_scale_in_place, donate=False)
    a = a0.copy()
    kept(a, b)
    assert kept.last.compiled.donated_args == (False, False)
    assert_close(a, a0 * 1.5 + b, rtol=float_rtol(np.float64, 1e-15))


def _aligned(a, past=0):
    """A copy of ``a`` whose data starts ``past`` bytes after a 64-byte boundary, whatever
    NumPy's allocator."""
    room = np.empty(a.nbytes + 128, np.uint8)
    skip = -room.ctypes.data % 64 + past
    out = room[skip:skip + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


@pytest.mark.cpu_only("XLA reads a NumPy array in place only on the host (the CPU); an "
                     "accelerator copies every argument to its own memory")
@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
def test_the_default_donation_keeps_a_large_array_xla_reads_in_place(aligned, rng):
    # 4 MiB or more: XLA reads the caller's array where it lies (64-byte aligned) and computes
    # its new value into a buffer of its own kept between calls, so donating the array would
    # only make JAX copy it first; the update still lands in the caller's array.
    a0, b = rng.random((1024, 640)), rng.random((1024, 640))
    first = _aligned(a0, 0 if aligned else 16)  # 16: the C library's malloc guarantees no more
    assert rl.is_aligned(first) == aligned
    jf = rl.jit(_scale_in_place)
    total = jf(first, b)
    assert_close(first, a0 * 1.5 + b, rtol=1e-15)
    assert_close(total, b.sum(), rtol=1e-12)
    assert jf.last.compiled.donated_args == (False, False)
    assert jf.last.compiled.kept == ("args[0]",)
    for again in (_aligned(a0), _aligned(a0, 16), _aligned(a0)):  # whatever the first call had
        jf(again, b)
        assert_close(again, a0 * 1.5 + b, rtol=1e-15)
    strict = rl.jit(_scale_in_place, donate="updated")
    strict(_aligned(a0), b)
    assert strict.last.compiled.donated_args == (True, False)
    assert strict.last.compiled.kept == ()


def test_jax_arrays_are_not_consumed_by_the_default_donation(rng):
    x = jax.numpy.asarray(rng.random(16))
    jf = rl.jit(lambda v: v * 2.0)
    jf(x)
    assert_close(np.asarray(jf(x)), np.asarray(x) * 2.0)  # x still usable
    assert not any(jf.last.compiled.donated_args)


def test_an_unknown_donate_value_is_refused(rng):
    with pytest.raises(rl.CompileError, match="donate must be True, False, 'updated' or 'auto'"):
        rl.jit(_scale_in_place, donate="all")(rng.random(4), rng.random(4))


def _fill_out(x, out):
    out[:] = x * 2.0 + 1.0  # out's old values are never read
    return x.sum()


def test_an_output_array_overwritten_whole_is_not_passed_to_the_executable(rng):
    x, out = rng.random(50), rng.random(50)
    jf = rl.jit(_fill_out)
    total = jf(x, out)
    assert_close(out, x * 2.0 + 1.0, rtol=float_rtol(np.float64, 1e-15))
    assert_close(total, x.sum(), rtol=1e-12)
    compiled = jf.last.compiled
    assert compiled.used_args == (0,) and "%arg1" not in compiled.as_text()
    assert compiled.donated_args == (False, False)
    x2, out2 = rng.random(50), np.full(50, np.nan)
    jf(x2, out2)
    assert_close(out2, x2 * 2.0 + 1.0, rtol=float_rtol(np.float64, 1e-15))
    stages = rl.trace(_fill_out, x, out).stages()
    run = stages.compile().device_runner(x, out)  # timing a stage passes the used ones only
    run()


def _product_in_float32(a, b):
    return (a * b).astype(np.float32)


@pytest.mark.parametrize("path", ["jax", "raw", "worker"])
def test_a_numpy_kernel_rounds_16_bit_intermediates_as_numpy(rng, monkeypatch, path):
    """NumPy rounds a bfloat16 product to bfloat16 before the cast; XLA's excess precision kept
    it in float32 (0.4% off). NumPy-mode compiles turn that option off, on every compile path
    (JAX's, XLA's client, the compile worker); JAX mode keeps jax.jit's."""
    if path == "raw":
        monkeypatch.setenv("REACTANT_LAB_RAW_EXECUTE", "1")
    elif path == "worker":
        monkeypatch.setenv("REACTANT_LAB_COMPILE_CHECK", "always")
    bf16 = np.dtype("bfloat16")
    a, b = (rng.uniform(0.1, 2, (16, 16)).astype(bf16) for _ in range(2))
    got = rl.jit(_product_in_float32)(a, b)
    np.testing.assert_array_equal(np.asarray(got), _product_in_float32(a, b))
    ja, jb = jnp.asarray(a), jnp.asarray(b)
    np.testing.assert_array_equal(np.asarray(rl.jit(_product_in_float32, mode="jax")(ja, jb)),
                                  np.asarray(jax.jit(_product_in_float32)(ja, jb)))


def test_returned_names_read_the_return_line_as_the_parser_reads_the_results(rng):
    """What compile reads after every compile (which results are arguments given back) from the
    return line alone agrees with the whole function's parse, with locations and without."""
    def kernel(a, b, c):
        b *= 1.0  # the optimizer gives b back unchanged, and a and c
        return a * 1.0, c * 2, c + 0.0, b.sum()

    shape = (int(rng.integers(2, 9)),)
    st = rl.trace(kernel, *(rng.random(shape) for _ in range(3))).stages("all")
    for text in (st[0].ir, st.final.ir, strip_locations(st.final.ir)):
        names = returned_names(text)
        parsed = [r.source for r in parse_function(text).results]
        assert [n[1:] if n.startswith("%arg") else None for n in names] == \
            [s if s and s.startswith("arg") else None for s in parsed]
    assert sorted(n for n in returned_names(st.final.ir) if n.startswith("%arg")) == \
        ["%arg0", "%arg1", "%arg2"]
    empty = "module {\n  func.func @main() {\n    return loc(#loc3)\n  } loc(#loc)\n}\n"
    assert returned_names(empty) == []
    with pytest.raises(AnalysisError, match="no return of a function @main"):
        returned_names("module {\n}\n")
