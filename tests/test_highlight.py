"""MLIR highlighting: the lexer covers every line exactly, classifies tokens, and escapes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
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
@example('"Z.00')  # an unclosed string where a generic op name goes: it was given a closing quote
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


HEAD_LINES = (
    "    %0:4 = stablehlo.while(%iterArg = %c, %iterArg_0 = %c_1, %iterArg_1 = %arg0)",
    "  %cst = stablehlo.constant dense<2.000000e-01> : tensor<18x18xf64>",
    '    %3 = "stablehlo.add"(%1, %2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>',
    "    %a, %b = stablehlo.custom_call @k(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<f32>)",
    "    stablehlo.return %1 : tensor<i1>",
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {",
    "module @reactant_f attributes {mhlo.num_partitions = 1 : i64} {",
    "    } do {",
    "    return %2 : tensor<4xf32>",
    "  %add.3 = f32[4]{0} add(f32[4]{0} %x, f32[4]{0} %y)",
    "  ROOT %tuple.7 = (f32[4]{0}, f32[]) tuple(f32[4]{0} %add.3, f32[] %c)",
    "  fusion.2 = f32[20,20]{1,0} fusion(p0, p1), kind=kLoop, calls=%fused_computation",
    "#map = affine_map<(d0) -> (d0)>",
    "",
)
HEAD_FIXTURE = (Path(__file__).parents[1] / "labextension" / "test" / "fixtures"
                / "line_heads.json")


def test_line_head_names_results_and_op():
    from reactant_lab.render.highlight import line_head

    def parts(line: str) -> list[str]:
        h = line_head(line)
        return [line[h[k]:h[k + 1]] for k in range(0, len(h), 2)]

    assert parts(HEAD_LINES[0]) == ["%0:4 = stablehlo.while"]
    assert parts(HEAD_LINES[2]) == ['%3 = "stablehlo.add"']
    assert parts(HEAD_LINES[3]) == ["%a, %b = stablehlo.custom_call"]
    assert parts(HEAD_LINES[4]) == ["stablehlo.return"]
    assert parts(HEAD_LINES[5]) == ["func.func"]
    assert parts(HEAD_LINES[6]) == parts(HEAD_LINES[7]) == parts(HEAD_LINES[12]) == []
    assert parts(HEAD_LINES[9]) == ["%add.3 =", "add"]
    assert parts(HEAD_LINES[10]) == ["ROOT %tuple.7 =", "tuple"]
    assert parts(HEAD_LINES[11]) == ["fusion.2 =", "fusion"]


def test_front_end_line_head_fixture_matches_python():
    """labextension/test/linefit.test.ts checks the front end's lineHead against this fixture;
    regenerate it with REACTANT_LAB_REGEN_GOLDEN=1 after a deliberate change of the rule."""
    import json

    from reactant_lab.render.highlight import line_head

    want = [{"line": line, "head": list(line_head(line))} for line in HEAD_LINES]
    if os.environ.get("REACTANT_LAB_REGEN_GOLDEN"):
        HEAD_FIXTURE.write_text(json.dumps(want, indent=1) + "\n")
    assert json.loads(HEAD_FIXTURE.read_text()) == want


def test_a_long_line_elided_keeps_its_results_op_and_change():
    """A 5,000-character while line changed near its end: the script-free diff shows the result
    names and the op name, then the text around the change; the unchanged middle is elided."""
    operands = ", ".join(f"%iterArg_{k} = %c_{k}" for k in range(300))
    line = f"    %0:300 = stablehlo.while({operands}, %last = %arg0) : tensor<i64>"
    assert len(line) > 5_000
    at = line.index("%arg0")
    html = highlight_line(line, ((at, at + 5),), elide=True)
    text = re.sub(r"<[^>]+>", "", html)
    assert text.startswith("    %0:300 = stablehlo.while")
    assert "%arg0" in text and '<span class="v x">%arg0</span>' in html
    assert "characters]" in text and len(text) < 1_000
    assert "%iterArg_150 " not in text  # the middle is elided
