"""Dataflow graphs of main: paths on the linear arguments and results, marks, regions, summaries."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.analysis.graph import (
    ArgInfo,
    ResultInfo,
    Signature,
    dataflow,
    signature_of,
)
from reactant_lab.analysis.mlir_func import parse_function
from reactant_lab.errors import GraphTooLargeError
from reactant_lab.render.graph_dot import to_dot
from reactant_lab.render.svg import render_svg
from tests.corpus import CASES

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def corpus():
    """(case, Traced, final stage IR) for every corpus function, on fresh random inputs."""
    rng = np.random.default_rng()
    out = []
    for case in CASES:
        args, kwargs = case.make(rng)
        t = rl.trace(case.fn, *args, **kwargs)
        out.append((case, t, t.stages("canonicalize").final.ir))
    return out


def labels(g) -> dict[str, tuple[str, ...]]:
    return {n.id: n.label for n in g.nodes}


def test_every_linear_arg_and_result_appears_with_its_name_and_path(corpus):
    for case, t, final_ir in corpus:
        named = dict(t.names)
        for text in (t.ir, final_ir):
            g = dataflow(text, signature_of(t))
            by_id = labels(g)
            for a in t.linear_args:
                label = by_id[f"arg{a.index}"]
                assert label[0] == named.get(a.path, a.path) and a.path in label, case.name
            res = [n for n in g.nodes if n.kind == "result"]
            assert [n.label[0] for n in res] == [named.get(r.path, r.path)
                                                 for r in t.linear_results], case.name
            for n, r in zip(res, t.linear_results, strict=True):
                assert r.path in n.label, case.name
                assert ("preserved" in n.marks) == (r.preserved_from is not None), case.name
            sources = {e.dst: e for e in g.edges}
            assert all(n.id in sources for n in res), f"{case.name}: a result has no producer"
            assert [named.get(s.path, s.path) for s in t.skipped_args] == \
                [s.split(" = ")[0] for s in g.skipped]


def test_preserved_results_are_aliases_of_their_argument(corpus):
    _, t, _ = next(c for c in corpus if c[0].name == "preserved")
    g = dataflow(t.ir, signature_of(t))
    alias = [e for e in g.edges if e.kind == "alias"]
    by_id = labels(g)
    # by the names the function gives them: ``return x, {"y": y, ...}``
    assert {(by_id[e.src][0], by_id[e.dst][0]) for e in alias} == {
        ("x", "x"), ("y", "result[1]['y']")}
    dot = to_dot(g)
    assert "alias of x" in dot and "preserved result (alias)" in dot
    assert "result[0]" in by_id[next(e.dst for e in alias if by_id[e.src][0] == "x")]


def test_without_a_signature_the_module_names_its_arguments(corpus):
    _, t, final_ir = next(c for c in corpus if c[0].name == "nested_pytree")
    g = dataflow(final_ir)
    assert [labels(g)[f"arg{a.index}"][0] for a in t.linear_args] == [a.path for a in
                                                                     t.linear_args]
    assert "result['out']" in {n.label[0] for n in g.nodes if n.kind == "result"}


def test_regions_become_clusters(corpus):
    for name, expected in (("while_loop", ["stablehlo.while", "cond", "do"]),
                           ("cond", ["stablehlo.case", "region", "region"]),
                           ("scatter", ["stablehlo.scatter", "region"] * 2)):
        _, t, _ = next(c for c in corpus if c[0].name == name)
        g = dataflow(t.ir, signature_of(t))
        assert [c.label for c in g.clusters] == expected, name
        inner = [n for n in g.nodes if n.cluster and n.cluster.endswith("_r0")]
        assert inner and all(n.kind in ("op", "return") for n in inner)


def test_golden_module_parses_nested_regions_and_calls():
    f = parse_function((GOLDEN / "highlight_input.mlir").read_text())
    assert [a.path for a in f.args] == ["args[0]['<k>']", None]
    assert "tf.aliasing_output" in f.args[0].attrs
    assert f.results[0].info == 'result["x"]'
    names = [op.name for op in f.ops]
    assert names[:2] == ["stablehlo.constant", "stablehlo.while"]
    assert "func.call @helper" in names and names.count("stablehlo.return") == 3
    sort = next(op for op in f.ops if op.name == "stablehlo.sort")
    assert sort.parent == "op1" and sort.region == 1 and sort.type == "tensor<6x8xf32>"
    compare = next(op for op in f.ops if op.parent == sort.id and op.name.endswith("compare"))
    assert compare.inputs == (f"{sort.id}.args", f"{sort.id}.args")
    g = dataflow((GOLDEN / "highlight_input.mlir").read_text())
    assert "donated" in next(n for n in g.nodes if n.id == "arg0").marks
    with pytest.raises(rl.ReactantLabError, match=r"no function @nope.*@main, @helper"):
        parse_function((GOLDEN / "highlight_input.mlir").read_text(), "nope")


def test_mutated_and_donated_marks_and_legend():
    text = rl.trace(lambda a, b: (a * b, b + 1), np.ones(3, np.float32),
                    np.ones(3, np.float32)).ir
    sig = Signature((ArgInfo(0, "args[0]", "float32[3]", mutated=True),
                     ArgInfo(1, "args[1]", "float32[3]", donated=True)),
                    (ResultInfo("resargs[0]", "float32[3]", 0, writes_back="args[0]"),
                     ResultInfo("result", "float32[3]", 1)),
                    (("args[2]", "'static'"),))
    g = dataflow(text, sig)
    marks = {n.label[0]: n.marks for n in g.nodes}
    assert "mutated" in marks["args[0]"] and "donated" in marks["args[1]"]
    assert "writes-back" in marks["resargs[0]"]
    dot = to_dot(g)
    for legend in ("mutated argument", "donated argument", "written back to an argument",
                   "static (skipped) args, 1:", "args[2] = 'static'"):
        assert legend in dot
    plain = to_dot(dataflow(text))
    assert "mutated argument" not in plain and "linear argument" in plain


def test_jax_mode_signature_has_no_mutations_and_donation_follows_compile(corpus):
    _, t, _ = next(c for c in corpus if c[0].name == "standardize")
    assert not any(a.mutated for a in signature_of(t).args)
    donated = [a.donated for a in signature_of(t, donated=True).args]
    assert donated == list(t.donation_mask) and not any(a.donated for a in signature_of(t).args)


def two_results(x, y):
    return jnp.sin(x), x * y + 1.0


def test_summary_counts_the_ops_each_result_depends_on(rng):
    t = rl.trace(two_results, rng.standard_normal(4, np.float32), rng.standard_normal(4, np.float32))
    full = dataflow(t.ir, signature_of(t))
    assert full.kind == "full"
    g = dataflow(t.ir, signature_of(t), max_ops=1)
    assert g.kind == "summary" and "more than the 1 drawn in full" in g.note
    assert "max_ops" not in g.note and "result=" not in g.note  # words for any reader
    by_id = labels(g)
    edges = {(by_id[e.src][0], by_id[e.dst][0]): e.label for e in g.edges}
    ops_on = {k: int(v.split()[0]) for k, v in edges.items()}
    assert ops_on == {("x", "result[0]"): 1, ("x", "result[1]"): 2, ("y", "result[1]"): 2}
    assert any("slice: 1 ops" in line for line in by_id["res0"])


def test_slice_of_one_result(rng):
    t = rl.trace(two_results, rng.standard_normal(4, np.float32), rng.standard_normal(4, np.float32))
    g = dataflow(t.ir, signature_of(t), result="result[0]")
    assert g.kind == "slice" and [n.label[0] for n in g.nodes if n.kind == "result"] == [
        "result[0]"]
    assert {n.label[:3] for n in g.nodes if n.kind == "arg"} == {("x", "float32[4]", "args[0]")}
    assert [n.label[0] for n in g.nodes if n.kind == "op"] == ["stablehlo.sine"]
    with pytest.raises(GraphTooLargeError, match=r"over max_ops=1; pass max_ops=\d+ to draw"):
        dataflow(t.ir, signature_of(t), result=1, max_ops=1)
    with pytest.raises(rl.ReactantLabError, match=r"results are: result\[0\], result\[1\]"):
        dataflow(t.ir, signature_of(t), result="result[7]")


def test_exploration_draws_dot_and_svg(rng):
    args = ({"w": rng.standard_normal((3, 4), np.float32)}, rng.standard_normal(4, np.float32))
    ex = rl.explore(lambda p, x: jnp.tanh(p["w"] @ x), *args, optimize="canonicalize", run=False)
    dot = rl.graph_dot(ex)
    assert "args[0]['w']" in dot and "stablehlo.dot_general" in dot
    svg = rl.graph_svg(ex, stage=0)
    root = ET.fromstring(svg)
    texts = {el.text for el in root.iter() if el.text}
    assert "args[0]['w']" in texts and "float32[3,4]" in texts and "result" in texts
    assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    # the API's picture says how to draw more, in the API's terms
    summary = rl.graph_dot(ex, max_ops=1)
    assert "summary" in summary and re.search(r"max_ops=\d+ draws it in full", summary)
    # each node and edge carries its kind as a class (the explorer colours the picture by it)
    assert 'class="node arg"' in svg and 'class="node result"' in svg


def test_large_graphs_lay_out(corpus):
    _, t, _ = next(c for c in corpus if c[0].name == "sort_argmax")
    svg = render_svg(to_dot(dataflow(t.ir, signature_of(t))))
    assert svg.lstrip().startswith("<svg") and "<!DOCTYPE" not in svg


def test_summary_groups_many_arguments_by_path(rng):
    def chain(ws, x):
        for w in ws:
            x = jnp.tanh(w * x)
        return x

    ws = [rng.standard_normal(3, np.float32) for _ in range(50)]
    t = rl.trace(chain, ws, rng.standard_normal(3, np.float32))
    g = dataflow(t.ir, signature_of(t), max_ops=10)
    by_id = labels(g)
    args = [n.label[:2] for n in g.nodes if n.kind == "arg"]
    assert args == [("ws[*]", "50 args"), ("x", "float32[3]")]
    edges = {(by_id[e.src][0], by_id[e.dst][0]): e.label for e in g.edges}
    assert edges == {("ws[*]", "x"): "100 ops", ("x", "x"): "100 ops"}  # ``return x``


def test_group_paths_keeps_weights_and_biases_apart():
    from reactant_lab.analysis.grouping import group_paths

    paths = [f"args[0][{i}][{j}]" for i in range(100) for j in range(2)] + ["args[1]"]
    assert [(label, len(m)) for label, m in group_paths(paths)] == [
        ("args[0][*][0]", 100), ("args[0][*][1]", 100), ("args[1]", 1)]
    few = ["args[0]", "args[1]"]
    assert group_paths(few) == [("args[0]", [0]), ("args[1]", [1])]
    many = [f"kwargs['p{i}']" for i in range(60)]
    assert group_paths(many, limit=10) == [("kwargs[…]", list(range(60)))]


def test_numpy_mode_mutations_are_marked(rng):
    def relax(u, *, out):
        u[1:-1] = 0.5 * (u[:-2] + u[2:])
        out += u.sum()
        return u.max()

    u, out = rng.random(16), rng.random(3)
    ex = rl.explore(relax, u, out=out)
    assert set(ex.traced.mutated) == {"args[0]", "kwargs['out']"}
    dot = rl.graph_dot(ex, 0)
    assert "written back to u" in dot and "written back to out" in dot
    assert "mutated argument" in dot  # the legend
    payload = rl.exploration_payload(ex)
    args = {a["path"]: a["mutated"] for a in payload["signature"]["args"]}
    assert args == {"args[0]": True, "kwargs['out']": True}
    backs = {r["path"]: r["writes_back"] for r in payload["signature"]["results"]}
    assert backs["resargs[0]"] == "args[0]" and backs["reskwargs['out']"] == "kwargs['out']"
