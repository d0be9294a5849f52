"""The device support pre-check: ops a device's compiler aborts on are refused before XLA sees
them, and what the device emulates becomes a compile note (tested on the CPU by asking for the
TPU's tables)."""

from __future__ import annotations

import os

import jax
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import device_support
from reactant_lab.analysis.device_limits import emulation_notes, unsupported_ops

ABS_C128 = """module {
  func.func public @main(%arg0: tensor<4xcomplex<f64>> loc("args[0]")) -> tensor<4xf64> {
    %0 = stablehlo.abs %arg0 : (tensor<4xcomplex<f64>>) -> tensor<4xf64> loc(#loc3)
    return %0 : tensor<4xf64>
  }
}
"""


def test_complex128_abs_is_found_for_a_tpu_only():
    found = unsupported_ops(ABS_C128, "tpu")
    assert [(f.limit.op, f.limit.element_type, f.line) for f in found] == [
        ("stablehlo.abs", "complex<f64>", 3)]
    assert "loc(" not in found[0].text and "sqrt" in found[0].limit.todo
    assert unsupported_ops(ABS_C128, "cpu") == ()


@pytest.mark.parametrize("text", [
    ABS_C128.replace("complex<f64>", "complex<f32>").replace("xf64", "xf32"),  # complex64
    ABS_C128.replace("tensor<4xcomplex<f64>>", "tensor<4xf64>"),  # float64 abs
    ABS_C128.replace("stablehlo.abs", "stablehlo.real"),  # another op on complex128
])
def test_other_ops_and_types_pass(text):
    assert unsupported_ops(text, "tpu") == ()


def test_the_generic_form_and_a_scalar_are_found_too():
    generic = ('    %0 = "stablehlo.abs"(%arg0) : (tensor<complex<f64>>) -> tensor<f64>\n')
    assert len(unsupported_ops(generic, "tpu")) == 1


def test_float64_is_noted_as_emulated_on_a_tpu():
    f64 = ABS_C128.replace("tensor<4xcomplex<f64>>", "tensor<4xf64>")
    assert [n.split(" is ")[0] for n in emulation_notes(f64, "tpu")] == ["float64"]
    assert [n.split(" is ")[0] for n in emulation_notes(ABS_C128, "tpu")] == [
        "float64", "complex128"]
    assert emulation_notes(f64, "cpu") == ()
    assert emulation_notes(f64.replace("f64", "f32"), "tpu") == ()


def _magnitude(z):
    return np.abs(z) * 2.0


@pytest.fixture
def as_tpu(monkeypatch):
    """The check reads the TPU's tables; XLA still compiles for the CPU."""
    monkeypatch.setattr(device_support, "platform_of", lambda device: "tpu")


def test_a_complex128_abs_is_refused_before_xla_compiles_it(as_tpu, rng, monkeypatch, tmp_path):
    monkeypatch.setenv("REACTANT_LAB_REPRO_DIR", str(tmp_path))
    z = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    with pytest.raises(rl.UnsupportedOnDeviceError) as info:
        rl.jit(_magnitude, optimize="none")(z)
    err = info.value
    assert isinstance(err, rl.CompileError) and (err.op, err.dtype) == ("stablehlo.abs",
                                                                       "complex128")
    message = str(err)
    for said in ("stablehlo.abs", "complex128", "tpu", "sqrt", "complex64", "device='cpu'",
                 "test_device_support.py"):
        assert said in message, (said, message)
    assert err.reproducer is not None and err.reproducer.startswith(str(tmp_path))
    assert sorted(os.listdir(err.reproducer)) == ["input.mlir", "rerun.py", "why.txt"]
    with open(os.path.join(err.reproducer, "input.mlir"), encoding="utf-8") as fh:
        assert "stablehlo.abs" in fh.read()
    # the magnitude written out compiles, and runs right
    fixed = rl.jit(lambda z: np.sqrt(z.real ** 2 + z.imag ** 2) * 2.0, optimize="none")
    np.testing.assert_allclose(fixed(z), _magnitude(z), rtol=1e-12)


def test_float64_compiles_with_a_note(as_tpu, rng):
    x = rng.standard_normal(5)
    compiled = rl.trace(lambda a: np.sin(a) * 3.0, x).stages("none").compile()
    assert any(n.startswith("float64 is emulated") for n in compiled.notes), compiled.notes
    np.testing.assert_allclose(compiled(x), np.sin(x) * 3.0, rtol=1e-12)


def test_on_the_cpu_nothing_is_noted(rng):
    x = rng.standard_normal(5)
    assert rl.trace(lambda a: np.sin(a) * 3.0, x).stages("none").compile().notes == ()


@pytest.mark.skipif(jax.default_backend() != "tpu", reason="needs a TPU")
def test_on_a_tpu_the_abort_is_an_error_and_the_process_lives(rng):
    z = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    with pytest.raises(rl.UnsupportedOnDeviceError, match="complex128"):
        rl.jit(_magnitude, optimize="none")(z)
    x = rng.standard_normal(4)
    compiled = rl.trace(lambda a: np.sin(a) * 2.0, x).stages("none").compile()
    assert any("emulated" in n for n in compiled.notes)
