"""The graph diff between two stages of real modules: which boxes the optimized graph shares with
the traced one, and which the passes added, removed or changed (a folded transpose pair is
removed, its user changed; an inlined call's body moves into the loop, the call is removed);
every box classified once; the payload's graph_diffs as the explorer reads them."""

from __future__ import annotations

import itertools
import json
from collections import Counter

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.analysis.graph import signature_of
from reactant_lab.analysis.graph_diff import GraphDiff, graph_diff
from reactant_lab.analysis.graph_model import graph_model
from reactant_lab.render.payload import SCHEMA_PATH, build_payload, graph_diffs, notebook_payload
from tests.conftest import assert_close

SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def folded(x, w):
    y = jnp.transpose(jnp.transpose(x))
    z = jnp.sin(y) * 2.0 + 0.0
    return z @ w


def heat(A, B, steps):
    t = A.copy()
    for _ in range(steps):
        t[1:-1] = t[1:-1] + 0.1 * (t[2:] - 2 * t[1:-1] + t[:-2]) + 0.01 * B[1:-1]
    return t


def ops(nodes: list[dict], indices) -> Counter:
    return Counter(nodes[i].get("op", nodes[i]["kind"]) for i in indices)


def check_partition(d: GraphDiff, before: list[dict], after: list[dict]) -> None:
    """Every box of either graph is shared, added or removed, exactly once."""
    matched = [a for a in d.match if a >= 0]
    assert len(d.match) == len(after) and len(set(matched)) == len(matched)
    assert sorted(matched + list(d.removed)) == list(range(len(before)))
    assert set(d.changed) <= {b for b, a in enumerate(d.match) if a >= 0}
    for b, a in enumerate(d.match):  # a match is of the same kind of box
        if a >= 0:
            assert after[b]["kind"] == before[a]["kind"]


@pytest.fixture(scope="module")
def models_of():
    """The graph models of the traced and the optimized (``all``) module of ``fn(*args)``."""
    def build(fn, *args):
        t = rl.trace(fn, *args)
        # the CPU's stages, whose passes the counts below are of (a TPU's raise stage runs the
        # pattern list once more)
        st = t.stages("all", device="cpu")
        sig = signature_of(t)
        return graph_model(st.stages[0].ir, sig)["nodes"], graph_model(st.final.ir, sig)["nodes"]
    return build


def test_a_folded_transpose_pair_is_removed_and_its_user_changed(models_of, rng):
    x = jnp.asarray(rng.standard_normal((4, 4)), jnp.float32)
    w = jnp.asarray(rng.standard_normal((4, 3)), jnp.float32)
    before, after = models_of(folded, x, w)
    assert_close(np.asarray(rl.jit(folded)(x, w)), np.asarray(jax.jit(folded)(x, w)), 1e-5)
    d = graph_diff(before, after)
    check_partition(d, before, after)
    removed, added = ops(before, d.removed), ops(after, d.added)
    assert removed["stablehlo.transpose"] == 2, removed
    assert removed["stablehlo.add"] == 1, "x + 0.0 is folded away"
    assert "stablehlo.transpose" not in ops(after, range(len(after)))
    changed = ops(after, d.changed)
    assert changed["stablehlo.sine"] == 1, "its operand is x now, not the transpose"
    # the arguments are the same boxes, unchanged
    for b, n in enumerate(after):
        if n["kind"] == "arg":
            assert before[d.match[b]]["path"] == n["path"] and b not in d.changed
    assert not added["stablehlo.sine"] and not added["stablehlo.dot_general"]
    assert d.summary() == ", ".join(f"{n} {w}" for n, w in ((len(d.added), "added"),
                                                             (len(d.removed), "removed"),
                                                             (len(d.changed), "changed")) if n)


def test_an_inlined_call_moves_into_the_loop(models_of, rng):
    A, B = rng.random(32), rng.random(32)
    before, after = models_of(heat, A, B, 12)
    assert any(n.get("op", "").startswith("func.call") for n in before)
    assert not any(n.get("op", "").startswith("func.call") for n in after)
    d = graph_diff(before, after)
    check_partition(d, before, after)
    assert ops(before, d.removed)["func.call @closed_call"] == 1
    assert ops(before, d.removed)["func.return"] == 1
    # the body's slices are the call's slices, now inside the while: matched, not added
    assert not ops(after, d.added)["stablehlo.slice"]
    loop = next(b for b, n in enumerate(after) if n.get("op") == "stablehlo.while")
    assert d.match[loop] >= 0 and before[d.match[loop]]["op"] == "stablehlo.while"
    body = [b for b, n in enumerate(after) if n.get("parent") == loop and n["op"] != "stablehlo.return"]
    assert body and all(d.match[b] >= 0 or after[b]["op"] == "stablehlo.add" for b in body)
    out = [b for b, n in enumerate(after) if n["kind"] == "result"]
    assert [after[b]["name"] for b in out] == ["t"] and d.match[out[0]] >= 0


def test_a_graph_against_itself_has_no_change(models_of, rng):
    before, after = models_of(heat, rng.random(16), rng.random(16), 12)
    for nodes in (before, after):
        d = graph_diff(nodes, nodes)
        assert d.match == tuple(range(len(nodes))) and not d.changed and not d.removed
        assert d.summary() == "no box changed"


def test_the_payload_carries_the_diffs_the_explorer_reads(rng):
    A, B = rng.random(32), rng.random(32)
    ex = rl.explore(heat, A.copy(), B, 12, optimize="all")
    payload = json.loads(json.dumps(build_payload(ex.stages, traced=ex.traced,
                                                  compiled=ex.compiled)))
    graphs = {g["stage"]: g for g in payload["graphs"]
              if g.get("model") and g["stage"] < len(ex.stages)}  # MLIR's (not XLA's HLO graph)
    assert len(graphs) >= 2
    diffs = payload["graph_diffs"]
    stages = sorted(graphs)
    assert [(d["before"], d["after"]) for d in diffs][:len(stages) - 1] == list(
        itertools.pairwise(stages))
    for d in diffs:
        before, after = graphs[d["before"]]["model"]["nodes"], graphs[d["after"]]["model"]["nodes"]
        want = graph_diff(before, after)
        assert d["match"] == list(want.match) and d["changed"] == list(want.changed)
        assert (d["added"], d["removed"]) == (len(want.added), len(want.removed))
        assert d["summary"] == want.summary()
    assert not list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(notebook_payload(payload)))
    # a budget smaller than one graph keeps none
    assert graph_diffs(payload["graphs"], budget=3) == []
