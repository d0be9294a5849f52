"""The precision of each matrix product: read from the module (precision_config), shown with
the op in the explorer, and followed by verify's tolerance on a platform whose DEFAULT is
reduced (a TPU runs float32 dots at DEFAULT in one bfloat16 pass; tested on the CPU by asking
for the TPU's table)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import device_support
from reactant_lab.analysis.graph_model import graph_model
from reactant_lab.analysis.precision import dots, precision_of, precision_text
from reactant_lab.verify import precision_floors

HIGHEST = jax.lax.Precision.HIGHEST


def _product(a, b, precision=None):
    return jnp_tanh(jax.lax.dot(a, b, precision=precision))


def jnp_tanh(x):
    return jax.numpy.tanh(x)


@pytest.fixture
def ab(rng):
    return (rng.standard_normal((4, 8)).astype(np.float32),
            rng.standard_normal((8, 3)).astype(np.float32))


def test_both_printed_forms_parse():
    assert precision_of("%0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], "
                        "precision = [HIGHEST, DEFAULT] : (tensor<2x2xf32>, tensor<2x2xf32>) "
                        "-> tensor<2x2xf32>") == ("HIGHEST", "DEFAULT")
    assert precision_of('%0 = "stablehlo.dot_general"(%a, %b) <{precision_config = '
                        '[#stablehlo<precision HIGH>, #stablehlo<precision HIGHEST>]}> : '
                        "(tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>") == (
                            "HIGH", "HIGHEST")
    assert precision_of("%0 = stablehlo.dot %a, %b : (tensor<2xf32>, tensor<2xf32>) -> "
                        "tensor<f32>") == ()


def test_a_traced_dot_says_the_precision_it_asked_for(ab):
    for precision, want in ((HIGHEST, ("HIGHEST", "HIGHEST")), (None, ("DEFAULT", "DEFAULT"))):
        found = dots(rl.trace(_product, *ab, precision).ir)
        assert [(d.op, d.precision, d.at_default) for d in found] == [
            ("stablehlo.dot_general", want, precision is None)]
        assert found[0].element_types == {"f32"}


def test_the_text_shown_says_what_a_tpu_computes_at_default(ab):
    default = next(line for line in rl.trace(_product, *ab).ir.splitlines() if "dot_general" in line)
    highest = next(line for line in rl.trace(_product, *ab, HIGHEST).ir.splitlines()
                   if "dot_general" in line)
    assert precision_text(default, "cpu") == "DEFAULT, DEFAULT"
    assert "bfloat16" in precision_text(default, "tpu")
    assert precision_text(highest, "tpu") == "HIGHEST, HIGHEST"
    assert precision_text("%0 = stablehlo.tanh %x : tensor<2xf32>", "tpu") is None


def test_the_graph_and_the_explorer_payload_show_each_dots_precision(ab):
    ir = rl.trace(_product, *ab, HIGHEST).ir
    model = graph_model(ir, platform="tpu")
    shown = {n["op"]: n.get("precision") for n in model["nodes"] if n["kind"] == "op"}
    assert shown["stablehlo.dot_general"] == "HIGHEST, HIGHEST"
    assert shown["stablehlo.tanh"] is None
    payload = rl.exploration_payload(rl.explore(_product, *ab, HIGHEST, optimize="none"))
    nodes = [n for g in payload["graphs"] for n in (g.get("model") or {}).get("nodes", ())]
    assert [n["precision"] for n in nodes if n.get("op") == "stablehlo.dot_general"] == [
        "HIGHEST, HIGHEST"]


def test_verify_widens_float32_to_bfloat16_level_for_default_dots_on_a_tpu(ab, monkeypatch):
    default_ir = rl.trace(_product, *ab).ir
    assert precision_floors(default_ir, "cpu") == ({}, None)
    floors, why = precision_floors(default_ir, "tpu")
    assert floors == {"float32": 1e-2} and "bfloat16" in why and "HIGHEST" in why
    assert precision_floors(rl.trace(_product, *ab, HIGHEST).ir, "tpu") == ({}, None)

    monkeypatch.setattr(device_support, "platform_of", lambda device: "tpu")
    v = rl.trace(_product, *ab).stages("none").verify(*ab, repeat=1)
    assert v.ok and "widened to rtol 0.01 for float32" in v.tolerance
    assert "widened" in str(v)
    strict = rl.trace(_product, *ab, HIGHEST).stages("none").verify(*ab, HIGHEST, repeat=1)
    assert "widened" not in strict.tolerance
