"""Pallas kernels and custom calls: a kernel in interpret mode traces, stages, compiles and runs
as jax.jit does; traced for TPU (on any machine) it is one ``tpu_custom_call`` whose Mosaic
kernel the explorer decodes to MLIR, every preset's stages pass it through untouched, and
compiling it for the CPU says which call and which device."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pytest
from jax.experimental import pallas as pl

import reactant_lab as rl
from reactant_lab import backend
from reactant_lab.analysis.custom_calls import custom_call_changes, custom_calls, mlir_string
from reactant_lab.compile import compile_traced
from reactant_lab.explore import ExploreOptions, build_from_text
from reactant_lab.render.explorer import exploration_html, exploration_payload
from reactant_lab.render.payload import SCHEMA_PATH
from reactant_lab.render.texts import decode_text
from reactant_lab.stages.presets import PRESETS
from reactant_lab.stages.runner import run_on_text
from tests.conftest import assert_close_to_scale


def scaled_sine(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0 + jnp.sin(y_ref[...])


def kernel_call(x, y, interpret):
    return pl.pallas_call(scaled_sine, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          interpret=interpret)(x, y)


def interpreted(x, y):
    return kernel_call(x, y, True)


def around_kernel(x, y):
    """The kernel (compiled for TPU) between ordinary ops."""
    return jnp.cos(kernel_call(x, y, False)) + x


@pytest.fixture
def xy(rng):
    return (rng.standard_normal((8, 128)).astype(np.float32),
            rng.standard_normal((8, 128)).astype(np.float32))


@pytest.fixture(scope="module")
def tpu_traced():
    x = jnp.ones((8, 128), np.float32)  # only traced: nothing runs
    return rl.trace(around_kernel, x, x, platform="tpu")


@pytest.fixture(scope="module")
def tpu_text():
    """The module JAX itself lowers for TPU (no reactant_lab in between)."""
    spec = jax.ShapeDtypeStruct((8, 128), np.float32)
    return jax.jit(around_kernel).trace(spec, spec).lower(lowering_platforms=("tpu",)).as_text()


def test_pallas_interpret_mode_traces_and_runs_as_jax_jit(xy):
    x, y = xy
    want = jax.jit(interpreted)(x, y)
    ex = rl.explore(interpreted, jnp.asarray(x), jnp.asarray(y), optimize="none")
    assert_close_to_scale(ex.outputs, want, 1e-6, "explore")
    assert "stablehlo.sine" in ex.traced_call.as_text()  # the kernel's body, as StableHLO
    assert not ex.traced_call.custom_calls
    assert_close_to_scale(rl.jit(interpreted)(x, y), want, 1e-6, "jit")


def test_tpu_kernel_traced_on_cpu_says_interpret_mode_or_platform(xy):
    with pytest.raises(rl.TraceError, match=r"interpret=True.*platform='tpu'"):
        rl.trace(around_kernel, jnp.asarray(xy[0]), jnp.asarray(xy[1]), platform="cpu")
    with pytest.raises(rl.TraceError, match="unknown platform 'tpux'"):
        rl.trace(around_kernel, *xy, platform="tpux")


def test_traced_for_tpu_the_kernel_is_one_custom_call(tpu_traced, tpu_text):
    (call,) = tpu_traced.custom_calls
    assert (call.target, call.platform) == ("tpu_custom_call", "tpu")
    assert call.kernel is not None and call.kernel.name == "scaled_sine"
    assert dict(call.kernel.fields)["serialization_format"] == "1"
    assert "stablehlo.cosine" in tpu_traced.as_text()
    assert "custom_call tpu_custom_call (kernel scaled_sine)" in tpu_traced.summary()
    assert "for tpu" in tpu_traced.summary()
    (jax_call,) = custom_calls(tpu_text)  # the same op as JAX's own lowering
    assert jax_call.identity == call.identity


def test_custom_call_parsing_of_other_forms():
    generic = ('%0 = "stablehlo.custom_call"(%arg0) <{backend_config = "a\\22b\\5C\\\\c", '
               'call_target_name = "my\\22target", has_side_effect = true}> : '
               '(tensor<2xf32>) -> tensor<2xf32> loc(#loc3)')
    ffi = ('%1 = stablehlo.custom_call @lapack_sgetrf_ffi(%arg0) {api_version = 4 : i32, '
           'backend_config = {mode = "a}b", n = 3 : i64}} : (tensor<2x2xf32>) -> tensor<2x2xf32>')
    a, b = custom_calls(f"  {generic}\n  {ffi}\n")
    assert (a.target, a.backend_config, a.has_side_effect, a.line) == ('my"target', 'a"b\\\\c',
                                                                      True, 1)
    assert "loc(" not in a.op and a.kernel is None
    assert (b.target, b.api_version, b.platform) == ("lapack_sgetrf_ffi", "4", None)
    assert b.backend_config == '{mode = "a}b", n = 3 : i64}'
    assert mlir_string("caf\\C3\\A9") == "café"


def test_kernel_mlir_is_decoded_from_the_config(tpu_traced):
    (call,) = tpu_traced.custom_calls
    text, note = backend.mosaic_kernel_text(call.kernel.body)
    assert note is None
    for op in ("func.func @scaled_sine", "math.sin", "arith.mulf", "tpu.vector_store"):
        assert op in text
    assert "stable_mosaic.vector" not in text  # the dialects' own op names, as Mosaic reads it
    bad, why = backend.mosaic_kernel_text("not base64!")
    assert bad is None and "base64" in why
    junk, why = backend.mosaic_kernel_text("aGVsbG8=")
    assert junk is None and "bytecode" in why


@pytest.mark.parametrize("optimize", PRESETS)
def test_every_preset_passes_the_custom_call_through(tpu_text, optimize):
    st = run_on_text(tpu_text, optimize=optimize)
    for stage in st.stages:
        assert custom_call_changes(tpu_text, stage.ir) == (), stage.name
    (view,) = st.custom_calls()
    assert view.stages == tuple(range(len(st.stages)))


def test_custom_call_changes_says_what_a_pass_did(tpu_text):
    (call,) = custom_calls(tpu_text)
    dropped = tpu_text.replace(call.op.split(" = ", 1)[0] + " = ", "%0 = ", 1).replace(
        "tpu_custom_call", "other_call")
    assert custom_call_changes(tpu_text, dropped) == (
        f"tpu_custom_call {call.type} dropped", f"other_call {call.type} added or changed")


def test_compiling_a_tpu_kernel_for_the_cpu_names_call_and_device(tpu_traced):
    st = tpu_traced.stages("canonicalize")
    with pytest.raises(rl.UnsupportedCustomCallError) as info:
        st.compile(device="cpu")
    err = info.value
    assert (err.target, err.platform) == ("tpu_custom_call", "tpu")
    assert "scaled_sine" in str(err) and "interpret=True" in str(err)
    assert err.device in str(err) and isinstance(err, rl.CompileError)


def test_xla_refusing_an_unknown_target_names_it(tpu_traced):
    ir = tpu_traced.ir.replace("tpu_custom_call", "no_such_target")
    with pytest.raises(rl.UnsupportedCustomCallError, match="no_such_target") as info:
        compile_traced(tpu_traced, ir, device="cpu")
    assert info.value.platform is None and "cpu" in str(info.value)


def test_explorer_shows_the_call_and_its_kernel(tpu_text):
    ex = build_from_text(tpu_text, ExploreOptions(optimize="canonicalize"))
    payload = exploration_payload(ex)
    jsonschema.validate(payload, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    (entry,) = payload["custom_calls"]
    assert (entry["target"], entry["stages"], entry["config"]) == ("tpu_custom_call", [0, 1],
                                                                     None)
    kernel = entry["kernel"]
    assert kernel["name"] == "scaled_sine" and kernel["note"] is None
    assert "tpu.vector_store" in decode_text(payload["texts"], kernel["text"])
    html = exploration_html(ex)
    assert 'id="custom-calls"' in html and "vector_store" in html
    assert "every stage keeps it unchanged" in html


def test_a_kernel_that_cannot_be_decoded_says_why(tpu_text):
    (call,) = custom_calls(tpu_text)
    broken = tpu_text.replace(call.kernel.body[:40], "A" * 40, 1)
    ex = build_from_text(broken, ExploreOptions(optimize="none"))
    (entry,) = exploration_payload(ex)["custom_calls"]
    assert entry["kernel"]["text"] is None and entry["kernel"]["note"]
    assert "is not shown" in exploration_html(ex)


@pytest.mark.skipif(jax.default_backend() != "tpu", reason="needs a TPU")
def test_on_a_tpu_the_kernel_compiles_and_runs_as_jax_jit(xy):
    x, y = (jnp.asarray(a) for a in xy)
    ex = rl.explore(around_kernel, x, y)
    (view,) = ex.stages.custom_calls()
    assert view.stages == tuple(range(len(ex.stages.stages)))
    assert_close_to_scale(ex.outputs, jax.jit(around_kernel)(x, y), 1e-5, "tpu")
