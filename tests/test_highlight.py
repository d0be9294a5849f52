"""MLIR highlighting: the lexer covers every line exactly, classifies tokens, and escapes."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reactant_lab as rl
from reactant_lab.analysis.lexer import tokenize
from reactant_lab.render.highlight import highlight, highlight_line
from tests.conftest import child_env
from tests.corpus import CASES

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def corpus_ir() -> list[str]:
    """The traced module of every corpus function, on fresh random inputs."""
    rng = np.random.default_rng()
    out = []
    for case in CASES:
        args, kwargs = case.make(rng)
        out.append(rl.trace(case.fn, *args, **kwargs).ir)
    return out


def test_golden_highlight():
    """Regenerate with REACTANT_LAB_REGEN_GOLDEN=1 after a deliberate change, then review it."""
    html = highlight((GOLDEN / "highlight_input.mlir").read_text())
    expected = GOLDEN / "highlight_expected.html"
    if os.environ.get("REACTANT_LAB_REGEN_GOLDEN"):
        expected.write_text(html)
    assert html == expected.read_text()


def kinds(line: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for kind, text in tokenize(line):
        out.setdefault(kind, []).append(text)
    return out


def test_token_kinds_of_an_op_line():
    k = kinds('    %0:2 = "stablehlo.sort"(%arg0) <{dimension = 1 : i64}> ({ // why')
    assert k["ssa"] == ["%0", "%arg0"]
    assert k["dialect"] == ["stablehlo."] and k["op"] == ["sort"]
    assert k["key"] == ["dimension"] and k["type"] == ["i64"] and k["comment"] == ["// why"]
    k = kinds('  func.func public @main(%arg0: tensor<4x?xcomplex<f32>> loc("args[0]")) -> '
              "(tensor<4xf32> {jax.result_info = \"r\"}) {")
    assert k["symbol"] == ["@main"] and k["loc"] == ['loc("args[0]")']
    assert k["type"] == ["tensor<4x?xcomplex<f32>>", "tensor<4xf32>"]
    assert k["key"] == ["jax.result_info"] and k["str"] == ['"r"']
    k = kinds("^bb0(%a: tensor<f32>): %1 = stablehlo.add %a, %c {m = #map, g = "
              "#stablehlo.gather<offset_dims = [1]>} : tensor<f32> loc(#loc3)")
    assert k["block"] == ["^bb0"] and k["attr"] == ["#map", "#stablehlo.gather<offset_dims = [1]>"]
    assert k["loc"] == ["loc(#loc3)"]
    assert kinds("%c = stablehlo.constant dense<-1.5e+03> : tensor<2xf32>")["attr"] == [
        "dense<-1.5e+03>"]


def test_every_line_of_real_ir_round_trips(corpus_ir):
    for text in corpus_ir:
        for line in text.splitlines():
            assert "".join(t for _, t in tokenize(line)) == line


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(list('%^@#!<>(){}[]"\\:=,.-/ aZ09_\nxé')), max_size=80))
def test_any_text_round_trips_and_is_escaped(line):
    assert "".join(t for _, t in tokenize(line)) == line
    html = highlight_line(line)
    assert "<" not in html.replace("<span", "").replace("</span>", "")
    assert '"' not in html.replace('class="', "").replace('">', "")


def test_string_attributes_are_escaped():
    html = highlight_line('%0 = stablehlo.custom_call @f() {cfg = "<script>alert(1)</script>"}')
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_changed_spans_are_marked():
    line = "%1 = stablehlo.add %a, %b : tensor<f32>"
    html = highlight_line(line, ((19, 21),))
    assert '<span class="v x">%a</span>' in html and '<span class="v">%b</span>' in html


def test_a_line_cut_inside_an_attribute_tokenizes_at_once():
    """A display cut inside '#a<...' or 'loc(...' leaves a bracket unclosed: the lexer must not
    try every split of the words before it (it used to take seconds per few words, exponentially)."""
    import subprocess
    import sys
    code = ("from reactant_lab.analysis.lexer import tokenize\n"
            "for text in ('#enzyme.activity<' + 'enzyme_active ' * 40,\n"
            "             'loc(' + 'callsite at ' * 40, 'tensor<4x' + 'f32, ' * 40):\n"
            "    assert ''.join(t for _, t in tokenize(text)) == text\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, env=child_env())
