"""Large boolean constants between stages (reactant_lab/_backend_text.py, hex_bool_constants):
enzyme-ad's MLIR prints i1 constants as lists of true / false, three times the text of the hex
literal jaxlib writes; the pass worker's output goes back to hex, and the module stays the same."""

from __future__ import annotations

import re

import numpy as np
import pytest
from jax.interpreters import mlir as jax_mlir
from jaxlib.mlir import ir

import reactant_lab as rl
from reactant_lab import _backend_text, backend
from tests.conftest import assert_close

needs_enzyme = pytest.mark.skipif(not backend.enzyme_available(), reason="needs enzyme-ad")


def _module(mask: np.ndarray) -> str:
    """A module selecting with ``mask`` written as MLIR's list literal."""
    rows = ", ".join("[" + ", ".join("true" if v else "false" for v in row) + "]" for row in mask)
    shape = "x".join(map(str, mask.shape))
    return (f"module {{\n  func.func @main(%arg0: tensor<{shape}xf32>) -> tensor<{shape}xf32> {{\n"
            f"    %c = stablehlo.constant dense<[{rows}]> : tensor<{shape}xi1>\n"
            f"    %z = stablehlo.constant dense<0.0> : tensor<{shape}xf32>\n"
            f"    %0 = stablehlo.select %c, %arg0, %z : tensor<{shape}xi1>, tensor<{shape}xf32>\n"
            f"    return %0 : tensor<{shape}xf32>\n  }}\n}}\n")


def _jaxlib_text(text: str) -> str:
    """The module as jaxlib parses and prints it (its own hex for large constants)."""
    with jax_mlir.make_ir_context():
        return str(ir.Module.parse(text))


def _payloads(text: str) -> list[str]:
    """The hex literals of ``text``, in order."""
    return re.findall(r'dense<"(0x[0-9A-F]+)">', text)


def test_a_large_list_becomes_the_hex_jaxlib_writes_and_the_same_module(rng):
    mask = rng.random((40, 30)) < 0.5
    text = _module(mask)
    out = _backend_text.hex_bool_constants(text)
    assert "true" not in out and 'dense<"0x' in out and len(out) < len(text) / 2
    assert _jaxlib_text(out) == _jaxlib_text(text)
    hexed = out.split('dense<"0x', 1)[1].split('"', 1)[0]
    np.testing.assert_array_equal(np.frombuffer(bytes.fromhex(hexed), np.uint8).reshape(40, 30),
                                  mask)


def test_small_and_malformed_lists_are_left_alone(rng):
    small = _module(rng.random((4, 5)) < 0.5)
    assert _backend_text.hex_bool_constants(small) == small
    big = _module(rng.random((40, 30)) < 0.5)
    short = big.replace("tensor<40x30xi1>", "tensor<40x31xi1>", 1)  # fewer values than the type
    assert _backend_text.hex_bool_constants(short) == short


def test_every_large_list_among_other_literals_is_rewritten_and_the_module_stays(rng):
    """Two boolean lists (2-D and 3-D) around a large float list and a small boolean one: the
    boolean lists become hex, the rest stays as written, and jaxlib reads the same module."""
    a, b = rng.random((40, 30)) < 0.5, rng.random((6, 20, 40)) < 0.2
    floats = ", ".join(f"{v:.3f}" for v in rng.random(1200))

    def lit(m: np.ndarray) -> str:
        return str(m.tolist()).replace("True", "true").replace("False", "false")

    text = ("module {\n  func.func @main() -> (tensor<40x30xi1>, tensor<1200xf32>, "
            "tensor<6x20x40xi1>, tensor<2xi1>) {\n"
            f"    %a = stablehlo.constant dense<{lit(a)}> : tensor<40x30xi1>\n"
            f"    %f = stablehlo.constant dense<[{floats}]> : tensor<1200xf32>\n"
            f"    %b = stablehlo.constant dense<{lit(b)}> : tensor<6x20x40xi1>\n"
            "    %s = stablehlo.constant dense<[true, false]> : tensor<2xi1>\n"
            "    return %a, %f, %b, %s : tensor<40x30xi1>, tensor<1200xf32>, tensor<6x20x40xi1>, "
            "tensor<2xi1>\n  }\n}\n")
    out = _backend_text.hex_bool_constants(text)
    assert _jaxlib_text(out) == _jaxlib_text(text)
    payloads = _payloads(out)
    assert len(payloads) == 2 and f"[{floats}]" in out and "dense<[true, false]>" in out
    for hexed, mask in zip(payloads, (a, b), strict=True):
        np.testing.assert_array_equal(
            np.frombuffer(bytes.fromhex(hexed[2:]), np.uint8).reshape(mask.shape), mask)
    broken = text.replace("true", "ture", 1)  # not a list of true / false: left alone
    assert _payloads(_backend_text.hex_bool_constants(broken)) == payloads[1:]


@needs_enzyme
def test_enzyme_stage_output_keeps_boolean_constants_as_hex(rng):
    """Through enzyme-ad's pass worker: the output has the hex literal, and a NumPy kernel with
    a 1024x1024 concrete mask (fft_lowpass's kind) keeps it as hex in every stage and gives
    NumPy's result."""
    mask = rng.random((40, 30)) < 0.5
    out = backend.run_pipeline(_module(mask), "canonicalize")
    assert "true" not in out and 'dense<"0x' in out
    assert _payloads(_jaxlib_text(out)) == _payloads(_jaxlib_text(_module(mask)))

    keep = rng.random((256, 256)) < 0.3

    def kernel(x):
        return np.where(keep, x * 2.0, x - 1.0).sum(axis=0)

    x = rng.standard_normal((256, 256))
    ex = rl.explore(kernel, x)
    assert all("true, false" not in st.ir and "false, true" not in st.ir for st in ex.stages)
    assert_close(ex.compiled(x), kernel(x), rtol=1e-12)
