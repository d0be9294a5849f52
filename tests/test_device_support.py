"""The device support pre-check: ops a device's compiler aborts on are refused before XLA sees
them, and what the device emulates becomes a compile note (tested on the CPU by asking for the
TPU's tables); an accelerator another process holds is said in our terms, with what to do; and
complex arguments a TPU's copy gets wrong are copied into C order first."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import numpy as np
import pytest
from jax._src import xla_bridge

import reactant_lab as rl
from reactant_lab import _backend_devices, _backend_text, backend, device_support
from reactant_lab.analysis.device_limits import emulation_notes, unsupported_ops
from tests.conftest import child_env

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


def test_a_conversion_to_complex128_is_found_from_complex64_and_integers_only():
    """Measured on a TPU v5e: converting complex64 or int64 to complex128 aborts XLA's compile;
    complex128 arithmetic, and what converts nothing into complex128, compile."""
    line = "    %1 = stablehlo.convert %0 : (tensor<4x5x{}>) -> tensor<4x5x{}>\n"
    for source in ("complex<f32>", "i64", "i32"):
        found = unsupported_ops(line.format(source, "complex<f64>"), "tpu")
        assert [(f.limit.op, f.limit.result_type) for f in found] == [
            ("stablehlo.convert", "complex<f64>")], source
    for source, target in (("complex<f64>", "complex<f32>"), ("i64", "complex<f32>"),
                           ("f32", "f64")):
        assert unsupported_ops(line.format(source, target), "tpu") == (), (source, target)
    assert unsupported_ops(line.format("complex<f32>", "complex<f64>"), "cpu") == ()


def _widened(z, n):
    return z * 2 + np.arange(n)  # complex64 + int64 is complex128 under NumPy's promotion


def test_a_conversion_to_complex128_is_refused_before_xla_compiles_it(as_tpu, rng):
    z = (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64)
    kept = z.copy()
    with pytest.raises(rl.UnsupportedOnDeviceError) as info:
        rl.jit(_widened)(z, 5)
    err = info.value
    assert (err.op, err.dtype) == ("stablehlo.convert", "complex64")
    for said in ("to complex128", "tpu", "complex64", "device='cpu'", "unharmed"):
        assert said in str(err), (said, str(err))
    np.testing.assert_array_equal(z, kept)
    # what the message says to do compiles, and equals NumPy
    fixed = rl.jit(lambda z, n: z * 2 + np.arange(n).astype(np.complex64))  # n: static
    got = fixed(z, 5)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, z * 2 + np.arange(5).astype(np.complex64), rtol=1e-6)


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
    compiled = rl.trace(lambda a: np.sin(a) * 3.0, x).stages("none").compile(device="cpu")
    assert compiled.notes == ()


@pytest.mark.skipif(jax.default_backend() != "tpu", reason="needs a TPU")
def test_on_a_tpu_the_abort_is_an_error_and_the_process_lives(rng):
    z = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    with pytest.raises(rl.UnsupportedOnDeviceError, match="complex128"):
        rl.jit(_magnitude, optimize="none")(z)
    with pytest.raises(rl.UnsupportedOnDeviceError, match="to complex128"):
        rl.jit(_widened)(z.astype(np.complex64), 4)
    x = rng.standard_normal(4)
    compiled = rl.trace(lambda a: np.sin(a) * 2.0, x).stages("none").compile()
    assert any("emulated" in n for n in compiled.notes)


# ------------------------------------------------- an accelerator another process holds

HELD = ("Unable to initialize backend 'tpu': ABORTED: Internal error when accessing libtpu "
        "multi-process lockfile. Run \"$ sudo rm /tmp/libtpu_lockfile\". (set JAX_PLATFORMS='' "
        "to automatically choose an available backend)")
"""What JAX raised in a second process while the test run held a TPU v5e (jax 0.10.2)."""


@pytest.fixture
def tpu_held(monkeypatch):
    """JAX's backends fail to open as they did in a second process on the TPU machine (the
    function JAX opens them with raises JAX's RuntimeError there); its cache of the opened
    backends is emptied before and after."""
    def backends():
        raise RuntimeError(HELD)

    monkeypatch.setattr(xla_bridge, "backends", backends)
    xla_bridge.get_backend.cache_clear()
    yield
    monkeypatch.undo()
    xla_bridge.get_backend.cache_clear()


def test_an_accelerator_another_process_holds_is_said_with_what_to_do(tpu_held):
    for device in (None, "cpu", "tpu"):
        with pytest.raises(rl.DeviceBusyError) as info:
            backend.resolve_device(device)
        err = info.value
        assert isinstance(err, RuntimeError) and (err.platform, err.cause) == ("tpu", HELD)
        message = str(err)
        for said in ("could not open the TPU: another process holds it", "notebook kernel",
                     "JAX_PLATFORMS=cpu", "REACTANT_LAB_DEVICE=cpu", "device='cpu'",
                     "libtpu multi-process lockfile"):
            assert said in message, (said, message)


def test_other_backend_errors_stay_jaxs():
    assert backend.held_device_error(RuntimeError("Unknown backend tpux")) is None
    assert backend.held_device_error(ValueError(HELD)) is None
    assert backend.held_device_error(RuntimeError(HELD)) is not None
    busy = HELD.replace("ABORTED: Internal error when accessing libtpu multi-process lockfile",
                        "TPU initialization failed: open(/dev/accel0): Device or resource busy")
    assert backend.held_device_error(RuntimeError(busy)).platform == "tpu"
    with pytest.raises(RuntimeError, match="Unknown backend"), backend.device_errors():
        raise RuntimeError("Unknown backend tpux")


HELD_IN_A_NEW_PROCESS = f"""
import sys
import numpy as np
from jax._src import xla_bridge

def backends():
    raise RuntimeError({HELD!r})

xla_bridge.backends = backends  # before anything opens JAX's backends
import reactant_lab as rl
from reactant_lab.cli import main
try:
    rl.trace(lambda a: a * 2.0, np.ones(3))
except rl.DeviceBusyError as exc:
    print("trace:", str(exc).splitlines()[0])
sys.exit(main(["demo", "--example", "mlp"]))
"""


def test_a_new_process_that_finds_the_accelerator_held_says_so():
    """What a second notebook kernel or ``python -m reactant_lab`` meets while a test run holds
    the TPU: the first trace, and the command line, say what to do (no JAX traceback)."""
    proc = subprocess.run([sys.executable, "-c", HELD_IN_A_NEW_PROCESS], capture_output=True,
                          text=True, timeout=300, env=child_env())
    assert "trace: JAX could not open the TPU: another process holds it" in proc.stdout, \
        proc.stderr[-3000:]
    assert proc.returncode == 2, proc.stderr[-3000:]  # the command line's failure
    # JAX's own warnings (a TPU machine's "Transparent hugepages are not enabled") may come first
    said = proc.stderr[proc.stderr.find("error: "):]
    assert said.startswith("error: JAX could not open the TPU"), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "JAX_PLATFORMS=cpu" in said


# --------------------------------- complex arguments a TPU's copy to the device gets wrong


def test_complex_arguments_not_in_c_order_are_copied_into_c_order_for_a_tpu():
    f = np.asfortranarray(np.arange(20).reshape(4, 5) * (1 + 2j))
    assert _backend_devices.in_c_order(f).flags.c_contiguous
    np.testing.assert_array_equal(_backend_devices.in_c_order(f), f)
    for kept in (np.ascontiguousarray(f), np.asfortranarray(f.real), f[0, 0], 3.0):
        assert _backend_devices.in_c_order(kept) is kept
    params = [((4, 5), np.dtype(np.complex128), False), ((4,), np.dtype(np.float64), False),
              ((2,), np.dtype(np.complex64), False)]
    assert _backend_devices.strided_complex_params("tpu", params) == (0, 2)
    assert _backend_devices.strided_complex_params("cpu", params) == ()


@pytest.mark.parametrize("order", ["C", "F"])
def test_the_copy_into_c_order_keeps_numpy_modes_write_back(order, rng, monkeypatch):
    """The rewrite a TPU gets, on whatever device the suite targets: the caller's Fortran-order
    array is still updated in place, in its own order, with NumPy's values."""
    monkeypatch.setattr(_backend_devices, "STRIDED_COMPLEX_PLATFORMS",
                        frozenset({"cpu", "gpu", "tpu"}))

    def kernel(a, b):
        a *= 3
        a[0, :] = b[1]
        a.T[1] -= 1
        return a.sum()

    a = np.asarray(rng.integers(-9, 9, (4, 5)) + 1j * rng.integers(-9, 9, (4, 5)), order=order)
    b = rng.integers(-9, 9, (4, 5)) + 0j
    want = a.copy(order="K")
    want_sum = kernel(want, b)
    address = a.__array_interface__["data"][0]
    jf = rl.jit(kernel)
    got_sum = jf(a, b)
    assert jf.last.compiled._exe._c_order == (0, 1)
    assert a.__array_interface__["data"][0] == address and a.flags.f_contiguous == (order == "F")
    np.testing.assert_array_equal(a, want)
    assert got_sum == want_sum


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_fortran_order_arguments_arrive_right_on_every_path(dtype, rng):
    """A JAX-mode call and bench's copies of the inputs both copy a complex Fortran-order array
    onto the device: it must arrive with NumPy's values (a TPU's own copy read it in C order)."""
    import importlib

    from tests.conftest import assert_close, float_rtol

    a = np.asfortranarray((rng.normal(size=(4, 5)) + 1j * rng.normal(size=(4, 5))).astype(dtype))
    want = a * 2 + a[0]  # no conversion to complex128 on the device: a TPU refuses that one
    got = rl.jit(lambda x: x * 2 + x[0])(a)
    assert_close(np.asarray(got), want, float_rtol(dtype))
    dev = backend.resolve_device(None)
    with backend.x64_scope(dtype == np.complex128):
        on_device = importlib.import_module("reactant_lab.bench")._to_device(dev)(a)
    # Equal on a CPU; on a TPU within its float64 emulation (a scrambled copy is off by O(1)).
    assert_close(np.asarray(on_device), a, float_rtol(dtype))


@pytest.mark.parametrize("said", [
    "UNIMPLEMENTED: While rewriting computation to not contain X{64|128} element types, XLA "
    "encountered an HLO for which this rewriting is not implemented: %dot.3 = s64[5]{0} dot(...)",
    "UNIMPLEMENTED: Only F32 and C64 types are implemented in LuDecomposition; got shape "
    "f64[6,6]:     @     0x7eca9b8f2ea2  xla::XlaBuilder::ReportError()\n"
    "    @     0x7eca90bde114  xla::LuDecompositionExpander::ExpandInstruction()\n",
    "INVALID_ARGUMENT: during context [pre-optimization]: Unexpected operand type for FFT: "
    "c128[7,19]{1,0}",
])
def test_a_tpus_missing_64_bit_op_is_said_with_what_to_do(said):
    """XLA's TPU compiler's words for an op it has no 64-bit version of (as a TPU v5e printed
    them): the error says what to do, without the native stack frames XLA appended."""
    msg = _backend_text.compile_message("module {}", RuntimeError(said))
    assert msg.startswith("XLA could not compile the module: ")
    assert "float32" in msg and "device='cpu'" in msg
    assert "0x7eca" not in msg and "ExpandInstruction" not in msg
    assert said.split(":")[1].strip()[:20] in msg  # XLA's own words stay


def test_other_compile_errors_keep_xlas_words_without_the_native_frames():
    said = "INTERNAL: RET_CHECK failure (x.cc:78) Layout::Equal()\n    @     0x7ec6  xla::Foo()\n"
    msg = _backend_text.compile_message("module {}", RuntimeError(said))
    assert msg == ("XLA could not compile the module: INTERNAL: RET_CHECK failure (x.cc:78) "
                   "Layout::Equal()")
