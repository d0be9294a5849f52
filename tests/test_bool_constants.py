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
    np.testing.assert_allclose(ex.compiled(x), kernel(x), rtol=1e-12)
