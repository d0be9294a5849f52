"""The explorer's interactive graph model: every node of main with its SSA name, op, attributes,
types, IR line and Python source line; producers by index; regions by parent; a 1,000-op module
built fast; the payload carries it and validates against the schema."""

from __future__ import annotations

import json
import os
import time

import jsonschema
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.analysis.graph import signature_of
from reactant_lab.analysis.graph_model import graph_model
from reactant_lab.analysis.normalize import strip_locations
from reactant_lab.render.payload import SCHEMA_PATH, PayloadOptions, build_payload
from tests.loop_kernels import _mk_mandelbrot, mandelbrot


def laplace_2d(u, steps):
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


@pytest.fixture(scope="module")
def stencil():
    """A 2-D Jacobi stencil unrolled to ~1,000 ops (13 a sweep)."""
    return rl.trace(laplace_2d, np.ones((128, 128)), 77, loops="unroll")


def test_a_thousand_op_model_names_every_node(stencil):
    t0 = time.perf_counter()
    m = graph_model(stencil.ir, signature_of(stencil))
    seconds = time.perf_counter() - t0
    assert m is not None and m["ops"] == 1001
    assert seconds < 2.0, seconds
    nodes = m["nodes"]
    assert [n["kind"] for n in nodes[:1]] == ["arg"] and nodes[-1]["kind"] == "result"
    sig = signature_of(stencil)
    assert len(nodes) == len(sig.args) + m["ops"] + len(sig.results)
    lines = strip_locations(stencil.ir).splitlines()
    this_file = os.path.relpath(__file__)
    slices = [n for n in nodes if n.get("op") == "stablehlo.slice"]
    assert len(slices) == 4 * 77
    # slices of the same type differ by their attributes (the windows)
    assert {s["attrs"] for s in slices} == {"[0:126, 1:127]", "[2:128, 1:127]", "[1:127, 0:126]",
                                            "[1:127, 2:128]"}
    for n in nodes:
        for s in n["in"]:
            assert 0 <= s < len(nodes) and nodes[s]["kind"] != "result"
        if n["kind"] != "op":
            continue
        line = lines[n["line"] - 1]
        assert n["op"].split(" ")[0].split(".")[-1] in line
        if n["ssa"]:
            assert line.lstrip().startswith(n["ssa"] + " = ")
        assert n["type"] and " loc(" not in n["attrs"] and "%" not in n["attrs"]
    # every op of the sweep comes from the statement in laplace_2d
    src = {n["src"] for n in slices}
    assert all(s.startswith(f"{this_file}:") for s in src), src
    assert {int(s.split(":")[-2]) for s in src} == {laplace_2d.__code__.co_firstlineno + 2}
    assert not any(s.startswith("/") for n in nodes for s in [n.get("src", "")])  # no local path
    assert all(c["attrs"] == "dense<2.500000e-01>" for c in nodes
               if c.get("op") == "stablehlo.constant" and c["type"] == "tensor<f64>")


def test_regions_are_parents_and_block_args_their_op():
    t = rl.trace(mandelbrot, *_mk_mandelbrot(np.random.default_rng(0)))
    m = graph_model(t.ir, signature_of(t))
    assert m is not None
    nodes = m["nodes"]
    loops = [k for k, n in enumerate(nodes) if n.get("op") == "stablehlo.while"]
    assert loops
    w = nodes[loops[0]]
    assert w["regions"] == ["cond", "do"] and "line" in w["title"] and w["src"]
    inside = [n for n in nodes if n.get("parent") == loops[0]]
    assert {n["region"] for n in inside} == {0, 1}
    # a body op reading the loop's carried values has the while op as producer
    assert any(loops[0] in n["in"] for n in inside)
    assert any(n["op"] == "stablehlo.return" for n in inside)


def test_past_the_cap_there_is_no_model(stencil):
    assert graph_model(stencil.ir, max_ops=100) is None


def test_a_module_without_locations_has_no_sources():
    text = ("module {\n  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
            "    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>\n"
            "    return %0 : tensor<4xf32>\n  }\n}\n")
    m = graph_model(text)
    assert m is not None
    assert [n["id"] for n in m["nodes"]] == ["arg0", "op0", "res0"]
    assert m["nodes"][1] == {"id": "op0", "kind": "op", "op": "stablehlo.add", "ssa": "%0",
                             "type": "tensor<4xf32>", "attrs": "", "line": 3, "in": [0, 0]}


def test_the_payload_carries_the_model_and_validates(stencil):
    stages = stencil.stages("canonicalize")
    payload = json.loads(json.dumps(build_payload(stages, options=PayloadOptions(svg=False))))
    jsonschema.validate(payload, json.loads(SCHEMA_PATH.read_text()))
    for g in payload["graphs"]:
        assert g["kind"] == "summary" and g["model"]["ops"] == g["ops"]
        assert len(g["model"]["nodes"]) >= g["ops"]


def test_calls_carry_their_callees_body():
    t = rl.trace(mandelbrot, *_mk_mandelbrot(np.random.default_rng(0)))
    m = graph_model(t.ir, signature_of(t))
    assert m is not None
    nodes = m["nodes"]
    calls = [k for k, n in enumerate(nodes) if n.get("op", "").startswith("func.call @")]
    assert calls
    for k in calls:
        body = [n for n in nodes if n.get("parent") == k]
        callee = nodes[k]["op"].split("@")[1]
        assert nodes[k]["regions"] == [f"@{callee}"]
        assert body[-1]["op"] == "func.return" and body[-1]["id"] == f"{nodes[k]['id']}/return"
        assert all(n["id"].startswith(nodes[k]["id"] + "/") for n in body)
        # the callee's arguments are the call's values: its body reads them from the call
        assert any(k in n["in"] for n in body)
    # the main function's ops come first, in text order; bodies after the results
    results = [k for k, n in enumerate(nodes) if n["kind"] == "result"]
    assert min(c for k in calls for c, n in enumerate(nodes) if n.get("parent") == k
               and "/" in n["id"]) > max(results)
