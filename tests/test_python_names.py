"""The names the user wrote, everywhere the explorer shows a call's leaves: a JAX function's
``p['w1']`` (not ``args[0]['w1']``), a NumPy kernel's ``A``, ``B`` and the ``t`` its converted
loop carries, in the trace, the payload's signature, the graph model's boxes and region headers,
the Graphviz drawing and the report; and how parameters and ``return`` statements name paths."""

from __future__ import annotations

import functools
import json
import re

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.analysis.graph import dataflow, signature_of
from reactant_lab.render.graph_dot import to_dot
from reactant_lab.render.payload import SCHEMA_PATH, build_payload, notebook_payload
from reactant_lab.render.report import report_html
from reactant_lab.trace.python_names import python_names
from tests.conftest import assert_close

SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def mlp(p, x):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    y = h @ p["w2"]
    return y  # noqa: RET504  (the name the explorer shows for the result)


def heat(A, B, steps):
    t = A.copy()
    for _ in range(steps):
        t[1:-1] = t[1:-1] + 0.1 * (t[2:] - 2 * t[1:-1] + t[:-2]) + 0.01 * B[1:-1]
    return t


def heat_numpy(A, B, steps):
    t = A.copy()
    for _ in range(steps):
        t[1:-1] = t[1:-1] + 0.1 * (t[2:] - 2 * t[1:-1] + t[:-2]) + 0.01 * B[1:-1]
    return t


def _model(payload: dict, stage: int) -> dict:
    return next(g for g in payload["graphs"] if stage in g["stages"])["model"]


@pytest.fixture(scope="module")
def jax_exploration():
    rng = np.random.default_rng()
    params = {"w1": jnp.asarray(rng.standard_normal((3, 4)), jnp.float32),
              "b1": jnp.asarray(rng.standard_normal(4), jnp.float32),
              "w2": jnp.asarray(rng.standard_normal((4, 2)), jnp.float32)}
    x = jnp.asarray(rng.standard_normal((5, 3)), jnp.float32)
    ex = rl.explore(mlp, params, x)
    return ex, params, x


def test_a_jax_functions_params_dict_shows_as_p_w1(jax_exploration):
    ex, params, x = jax_exploration
    assert_close(np.asarray(ex.outputs), np.asarray(jax.jit(mlp)(params, x)), 1e-5)
    assert dict(ex.traced.names) == {"args[0]['b1']": "p['b1']", "args[0]['w1']": "p['w1']",
                                     "args[0]['w2']": "p['w2']", "args[1]": "x",
                                     "result": "y"}
    payload = json.loads(json.dumps(rl.exploration_payload(ex)))
    assert payload["signature"]["names"] == dict(ex.traced.names)
    for stage in (0, len(ex.stages) - 1):  # the MLIR stages (XLA's HLO stages follow)
        nodes = _model(payload, stage)["nodes"]
        args = [(n["name"], n["path"]) for n in nodes if n["kind"] == "arg"]
        assert args == [("p['b1']", "args[0]['b1']"), ("p['w1']", "args[0]['w1']"),
                        ("p['w2']", "args[0]['w2']"), ("x", "args[1]")]
        assert [(n["name"], n["path"]) for n in nodes if n["kind"] == "result"] == [
            ("y", "result")]
    dot = payload["graphs"][0]["dot"]
    assert re.search(r'arg\d \[label="p\[\'w1\'\]\\nfloat32\[3,4\]\\nargs\[0\]\[\'w1\'\]"', dot)
    assert not list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(payload))


def test_the_report_shows_names_beside_paths(jax_exploration):
    ex, _, _ = jax_exploration
    html = report_html(rl.exploration_payload(ex))
    row = re.search(r"<tr><td>%arg1</td><td><code>(.*?)</code></td><td><code>(.*?)</code>", html)
    assert row is not None and row.groups() == ("p[&#x27;w1&#x27;]", "args[0][&#x27;w1&#x27;]")


@pytest.fixture(scope="module")
def kernel_exploration():
    rng = np.random.default_rng()
    A, B = rng.random(32), rng.random(32)
    ex = rl.explore(heat, A.copy(), B, 12)
    return ex, A, B


def test_a_numpy_kernel_names_its_arguments_result_and_the_loops_t(kernel_exploration):
    ex, A, B = kernel_exploration
    assert_close(np.asarray(ex.outputs), heat_numpy(A, B, 12), 1e-12)
    assert "stablehlo.while" in ex.traced.ir, "the loop is rolled: its carried values are named"
    assert dict(ex.traced.names) == {"args[0]": "A", "args[1]": "B", "args[2]": "steps",
                                     "result": "t"}
    payload = build_payload(ex.stages, traced=ex.traced, compiled=ex.compiled)
    line = heat.__code__.co_firstlineno + 2
    for g in [g for g in payload["graphs"] if g["stage"] < len(ex.stages)]:  # MLIR's graphs
        loop = next(n for n in g["model"]["nodes"] if n.get("op") == "stablehlo.while")
        assert loop["title"] == f"for _ in range(steps) — line {line}"
        # B is handed through the loop unchanged; t is what it computes
        assert "t" in loop["carried"] and "B" in loop["carried"]
        assert len(loop["carried"]) == len(loop["iter_args"]) == loop["type"].count("tensor<")
        assert all(a.startswith("%iterArg") for a in loop["iter_args"])
        assert [n["name"] for n in g["model"]["nodes"] if n["kind"] != "op"] == ["A", "B", "t"]
        assert "block args\\nB" in g["dot"] and "\\nt\"" in g["dot"]
    sig = payload["signature"]
    assert sig["skipped"] == [["args[2]", "12"]] and sig["names"]["args[2]"] == "steps"
    saved = notebook_payload(json.loads(json.dumps(payload)))
    assert not list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(saved))


def test_the_static_argument_shows_by_its_name_in_the_drawing(kernel_exploration):
    ex, _, _ = kernel_exploration
    g = dataflow(ex.stages.final.ir, signature_of(ex.traced))
    assert g.skipped == ("steps = 12",)
    assert "steps = 12" in to_dot(g)


def test_a_mutated_argument_names_its_written_back_result(rng):
    def relax(u, w, *, out):
        u[1:-1] = 0.5 * (u[:-2] + u[2:]) * w[1:-1]
        out += u.sum()

    u, w, out = rng.random(16), rng.random(16), rng.random(3)
    t = rl.trace(relax, u, w, out=out)
    assert dict(t.names) == {"args[0]": "u", "args[1]": "w", "kwargs['out']": "out",
                             "resargs[0]": "u", "reskwargs['out']": "out"}
    g = dataflow(t.ir, signature_of(t))
    results = {n.label[0]: n.label for n in g.nodes if n.kind == "result"}
    assert "written back to u" in results["u"] and "resargs[0]" in results["u"]


@pytest.mark.parametrize(("fn", "args", "kwargs", "results", "want"), [
    (lambda a, b: a, ("args[0]", "args[1]"), (), ("result",), {"args[0]": "a", "args[1]": "b"}),
    (lambda x, *rest, **opts: x, ("args[0]", "args[2][0]", "kwargs['k']"), (), (),
     {"args[0]": "x", "args[2][0]": "rest[1][0]", "kwargs['k']": "opts['k']"}),
    (lambda x, *, scale: x, ("args[0]", "kwargs['scale']"), (), (),
     {"args[0]": "x", "kwargs['scale']": "scale"}),
    (functools.partial(lambda a, b, c: a, 1.0), ("args[0]", "args[1]"), (), (),
     {"args[0]": "b", "args[1]": "c"}),
])
def test_parameters_name_argument_paths(fn, args, kwargs, results, want):
    assert python_names(fn, args, results) == want


def two(x, y):
    if x is None:
        return y, x
    return y, x


def differs(x, y):
    if x is None:
        return y
    return x


def nested(x):
    def inner(z):
        return z

    out = inner(x)
    return out  # noqa: RET504  (a named result)


def star(x, y):
    return (*x, y)


@pytest.mark.parametrize(("fn", "results", "want"), [
    (two, ("result[0]", "result[1]['k']"), {"result[0]": "y", "result[1]['k']": "x['k']"}),
    (differs, ("result",), {}),
    (nested, ("result",), {"result": "out"}),
    (star, ("result[0]", "result[1]"), {}),
    (print, ("result",), {}),
])
def test_return_statements_name_result_paths(fn, results, want):
    named = python_names(fn, (), results)
    assert named == want
