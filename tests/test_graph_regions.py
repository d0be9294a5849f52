"""Converted loops and branches in the dataflow graph: clusters labelled with the Python
statement and its line, carried values with their Python names (only where the op's types
prove them), op counts that include region bodies, diffs without the labels."""

from __future__ import annotations

import inspect
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from reactant_lab.analysis.graph import Dataflow, Node, dataflow, signature_of
from reactant_lab.analysis.metrics import op_table
from reactant_lab.analysis.mlir_func import parse_function
from reactant_lab.analysis.normalize import normalize, strip_locations
from reactant_lab.analysis.ops import op_counts, total_ops
from reactant_lab.render.graph_dot import to_dot
from reactant_lab.trace import trace


def stencil(u: np.ndarray, steps: int) -> None:
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u[0] = u[1]
        u[-1] = u[-2]


def branchy(x: np.ndarray) -> Any:
    if x.sum() > 1:  # noqa: SIM108  (a statement: converted to a stablehlo.case)
        y = x * 2
    else:
        y = x + 1
    return y


def accumulate(x: Any, n: Any) -> Any:
    s = x[0] * 0
    for i in range(n):
        s = s + x[i % 4] * i
    return s


def hand_written(x: Any) -> Any:
    return lax.fori_loop(0, 10, lambda i, c: c * 2 + i, x)


def line_of(fn: Any, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def region_ops(g: Dataflow) -> list[Node]:
    owners = {c.id[len("cluster_"):] for c in g.clusters if c.parent is None}
    return [n for n in g.nodes if n.id in owners]


def cluster_labels(g: Dataflow) -> list[str]:
    return [c.label for c in g.clusters]


@pytest.fixture(scope="module")
def rolled() -> Any:
    t = trace(stencil, np.random.default_rng().random(16), 12, loops="auto")
    return t, t.stages("all")


def test_a_rolled_loop_is_a_cluster_named_by_its_statement_and_line(rolled: Any) -> None:
    t, stages = rolled
    line = line_of(stencil, "for _ in range(steps)")
    assert "stablehlo.while" in t.ir and not t.loop_notes
    for ir in (t.ir, stages.final.ir):
        g = dataflow(ir, signature_of(t))
        assert f"for _ in range(steps) — line {line}" in cluster_labels(g)
        args = [n for n in g.nodes if n.kind == "region-args"]
        assert len(args) == 1 and args[0].label[0] == "block args"
        assert "u" in args[0].label and "(index)" in args[0].label
        (op,) = region_ops(g)
        assert op.label[0] == "stablehlo.while" and op.label[-1] == "→ u"
        assert f"line {line}" in to_dot(g) and "→ u" in to_dot(g)


def test_branches_are_clusters_with_their_line_and_result_names() -> None:
    x = np.random.default_rng().random(4)
    t = trace(branchy, x, loops="auto")
    g = dataflow(t.ir, signature_of(t))
    line = line_of(branchy, "if x.sum() > 1")
    assert cluster_labels(g) == [f"if x.sum() > 1 — line {line}", "else", "then"]
    (op,) = region_ops(g)
    assert op.label[0] == "stablehlo.case" and op.label[-1] == "→ y"
    inside = {n.cluster for n in g.nodes if n.cluster}
    assert {c.id for c in g.clusters if c.label in ("else", "then")} <= inside


def test_jax_mode_loops_name_the_index_and_the_carry() -> None:
    t = trace(accumulate, jnp.arange(4.0), 10, loops="auto")
    g = dataflow(t.ir, signature_of(t))
    assert f"for i in range(n) — line {line_of(accumulate, 'for i in range(n)')}" in \
        cluster_labels(g)
    (args,) = [n for n in g.nodes if n.kind == "region-args"]
    assert args.label[-2:] == ("i (index)", "s")


def test_hand_written_lax_loops_keep_the_plain_labels() -> None:
    t = trace(hand_written, jnp.ones(3))
    g = dataflow(t.ir, signature_of(t))
    assert cluster_labels(g) == ["stablehlo.while", "cond", "do"]
    (op,) = region_ops(g)
    assert len(op.label) == 2
    assert [n.label for n in g.nodes if n.kind == "region-args"] == [("block args",)]


_WHILE = """module {
  func.func public @main(%arg0: tensor<4xf64>) -> tensor<4xf64> {
    %c = stablehlo.constant dense<0> : tensor<i64>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_1 = %arg0) : tensor<i64>, tensor<4xf64>
    cond {
      %c_2 = stablehlo.constant dense<3> : tensor<i64>
      %1 = stablehlo.compare LT, %iterArg, %c_2 : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = stablehlo.add %iterArg_1, %iterArg_1 : tensor<4xf64>
      stablehlo.return %iterArg, %1 : tensor<i64>, tensor<4xf64>
    } loc(#loc3)
    return %0#1 : tensor<4xf64>
  }
}
#loc1 = loc("f.py":3:4)
#loc2 = loc("jit(f)/while x > 0 @ f.py:3 [ENTRIES]/while"(#loc1))
#loc3 = loc(callsite(#loc2 at #loc1))
"""


@pytest.mark.parametrize(("entries", "names"), [
    ("(index):int; a:f64[4]", ("(index)", "a")),
    ("a:f64[4]", ("+1 other", "a")),
    ("a:f64[4]; b:f64[4]", ()),  # more carried values than operands
    ("(index):int; a:f32[4]", ()),  # a pass changed the types
    ("?", ()),
])
def test_names_only_where_the_types_prove_them(entries: str, names: tuple[str, ...]) -> None:
    g = dataflow(_WHILE.replace("ENTRIES", entries))
    assert cluster_labels(g) == ["while x > 0 — line 3", "cond", "do"]
    (args,) = [n for n in g.nodes if n.kind == "region-args"]
    assert args.label == ("block args", *names)


def test_a_scope_that_is_not_the_ops_own_is_ignored() -> None:
    text = _WHILE.replace("[ENTRIES]/while", "[a:f64[4]]/while/body/while")
    assert cluster_labels(dataflow(text)) == ["stablehlo.while", "cond", "do"]


def test_stage_op_counts_include_region_bodies(rolled: Any) -> None:
    t, stages = rolled
    for ir in (t.ir, stages.final.ir):
        counts = op_counts(ir)
        assert counts["stablehlo.while"] == 1 and counts["stablehlo.compare"] >= 1
    final = stages.final.ir
    func = parse_function(final)
    assert any(op.parent for op in func.ops)
    if final.count("func.func") == 1:  # main only: every op of it, and its return
        assert total_ops(op_counts(final)) == len(func.ops) + 1
    table = op_table(stages)
    assert table.totals[-1] == total_ops(op_counts(final))
    assert "stablehlo.compare" in table.ops


def test_the_labels_stay_out_of_the_text_and_diffs(rolled: Any) -> None:
    t, stages = rolled
    assert "range(steps) @" in t.ir  # in the locations only
    for ir in (t.ir, stages.final.ir):
        assert "range(steps)" not in strip_locations(ir)
        assert "range(steps)" not in normalize(ir)


def nested(a: np.ndarray, n: int) -> np.ndarray:
    for i in range(n):
        for j in range(10):
            a[j] = a[j] + i * j
    return a


def test_nested_loops_are_labelled_each_with_its_own_statement() -> None:
    t = trace(nested, np.random.default_rng().random(12), 9, loops="roll")  # not batched
    g = dataflow(t.stages("all").final.ir, signature_of(t))
    outer = line_of(nested, "for i in range(n)")
    by_label = {c.label: c for c in g.clusters}
    inner = [c for c in g.clusters if c.label == f"for j in range(10) — line {outer + 1}"]
    assert f"for i in range(n) — line {outer}" in by_label
    assert any(c.parent == f"{by_label[f'for i in range(n) — line {outer}'].id}_r1"
               for c in inner)  # the inner loop, inlined into the outer one's body
    labels = {n.label for n in g.nodes if n.kind == "region-args"}
    assert any(lab[-2:] == ("i (index)", "a") for lab in labels)
    assert any(lab[-2:] == ("j (index)", "a") for lab in labels)
