"""Issue 16, "see it": the graph model labels each value with its Shardy sharding and marks
collectives (written in the module, or inserted by XLA's partitioner and traced back to their
op by source location), and the payload's ``xla.sharding`` lists the partitioned executable's
collectives and memory per device; the script-free report shows them too."""

from __future__ import annotations

import json

import jsonschema

from reactant_lab.analysis.collectives import CollectiveReport, collective_report, collectives
from reactant_lab.analysis.graph_model import graph_model, mark_collectives, mesh_of, sharding_of
from reactant_lab.render.payload import SCHEMA_PATH, sharding_entry
from tests.test_sharding import run_on_devices

MODULE = """\
module @m attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["data"=2, "model"=4]>
  func.func public @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg1: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}) -> (tensor<8x4xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"model"}]>}, tensor<8x16xf32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"data", ?}, {"model"}]>]>} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32> loc("f.py":3:8)
    %1 = sdy.reshard %0 <@mesh, [{}, {"model"}]> : tensor<8x4xf32>
    %2:2 = stablehlo.sort %1, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"model"}]>, <@mesh, [{}, {}]>]>} ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %d: tensor<f32>):
      %3 = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %3 : tensor<i1>
    }) : (tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>)
    %4 = stablehlo.add %2#0, %0 {mhlo.sharding = "{devices=[2,4]<=[8]}"} : tensor<8x4xf32>
    return %4, %arg0 : tensor<8x4xf32>, tensor<8x16xf32>
  }
}
"""


def test_graph_model_labels_values_with_their_shardings() -> None:
    model = graph_model(MODULE)
    assert model is not None and model["mesh"] == "data=2, model=4"
    by = {n["id"]: n for n in model["nodes"]}
    assert by["arg0"]["sharding"] == "[{data}, {}]"
    assert by["arg1"]["sharding"] == "[{}, {model}]"
    ops = {n["op"]: n for n in model["nodes"] if n["kind"] == "op" and "parent" not in n}
    assert ops["stablehlo.dot_general"]["sharding"] == "[{data, ?}, {model}]"
    assert ops["sdy.reshard"]["sharding"] == "[{}, {model}]"
    assert ops["sdy.reshard"]["marks"] == ["collective"]
    assert "marks" not in ops["stablehlo.dot_general"]
    # The sharding is given apart, not again among the attributes.
    assert ops["stablehlo.dot_general"]["attrs"] == "contracting_dims = [1] x [0]"
    assert "sdy" not in ops["stablehlo.sort"]["attrs"]
    assert ops["stablehlo.sort"]["sharding"] == "[{}, {model}]; [{}, {}]"
    assert ops["stablehlo.add"]["sharding"] == "{devices=[2,4]<=[8]}"
    results = [n for n in model["nodes"] if n["kind"] == "result"]
    assert results[0]["sharding"] == "[{data}, {model}]" and "sharding" not in results[1]
    assert mesh_of(MODULE) == "data=2, model=4"


def test_shardings_name_the_mesh_only_when_there_are_several() -> None:
    two = MODULE.replace('  sdy.mesh @mesh = <["data"=2, "model"=4]>\n',
                         '  sdy.mesh @mesh = <["data"=2, "model"=4]>\n'
                         '  sdy.mesh @pipe = <["stage"=8]>\n')
    assert mesh_of(two) == "mesh: data=2, model=4; pipe: stage=8"
    assert sharding_of('{sdy.sharding = #sdy.sharding<@pipe, [{"stage"}]>}', 2) == \
        "@pipe: [{stage}]"
    assert sharding_of('{sdy.sharding = #sdy.sharding<mesh<["x"=2]>, [{"x"}, {}]>}') == \
        "[{x}, {}]"
    assert sharding_of("{jax.result_info = \"r\"}") == ""
    unsharded = graph_model(MODULE.replace("sdy.", "xdy."))
    assert unsharded is not None and "mesh" not in unsharded
    assert not any("sharding" in n for n in unsharded["nodes"])


HLO = """\
HloModule jit_f, is_scheduled=true, num_partitions=8

FileNames
1 "/src/project/f.py"
2 "/usr/lib/python3/site-packages/jax/_src/numpy/lax_numpy.py"

FunctionNames
1 "<module>"
2 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=9 end_line=9 column=0 end_column=4}
2 {file_name_id=1 function_name_id=2 line=3 end_line=3 column=8 end_column=20}
3 {file_name_id=2 function_name_id=2 line=700 end_line=700 column=4 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}
3 {file_location_id=3 parent_frame_id=3}


ENTRY %main (p: f32[4,4]) -> f32[4,4] {
  %p = f32[4,4]{1,0} parameter(0)
  %all-reduce = f32[4,4]{1,0} all-reduce(%p), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=%add, metadata={op_name="jit(f)/dot_general" stack_frame_id=2}
  %all-gather = f32[4,16]{1,0} all-gather(%all-reduce), channel_id=2, replica_groups=[2,4]<=[8], dimensions={1}, metadata={op_name="jit(f)/concatenate" stack_frame_id=3}
  %collective-permute = f32[4,4]{1,0} collective-permute(%p), channel_id=3, source_target_pairs={{0,1}}, metadata={op_name="jit(f)/pad" source_file="/src/project/g.py" source_line=12}
  ROOT %all-to-all = f32[4,4]{1,0} all-to-all(%p), channel_id=4, dimensions={0}
}
"""


def test_collectives_are_traced_back_to_their_op() -> None:
    """Metadata stack frames resolve to the user's file:line:col (library frames skipped); the
    model's op at that place and of that name gets the collective; one from no known place is
    returned unmatched."""
    found = {c.name: c for c in collectives(HLO)}
    reduce = found["all-reduce"]
    assert reduce.op_name == "jit(f)/dot_general"
    assert reduce.frames == (("/src/project/f.py", 3, 8), ("/src/project/f.py", 9, 0))
    # The gather's innermost frame is in JAX; its caller's is the user's.
    assert found["all-gather"].frames[0][0].endswith("lax_numpy.py")
    assert found["collective-permute"].frames == (("/src/project/g.py", 12, 0),)
    assert found["all-to-all"].frames == () and found["all-to-all"].op_name == ""
    model = graph_model(MODULE)
    assert model is not None
    # The module's ops say f.py:3:8 (the dot) and nothing else.
    unmatched = mark_collectives(model, list(found.values()))
    marked = {n["op"]: n.get("collectives") for n in model["nodes"] if n.get("collectives")}
    assert list(marked) == ["stablehlo.dot_general"], marked
    # The gather's user frame is the dot's line too: no op there is named concatenate, so the
    # ops of that place get it.
    reduce_line, gather_line = marked["stablehlo.dot_general"]
    assert reduce_line.startswith("all-reduce f32[4,4]"), reduce_line
    assert "groups {0,1,2,3}{4,5,6,7}" in reduce_line
    assert gather_line.startswith("all-gather f32[4,16] dims [1]"), gather_line
    assert {c.name for c in unmatched} == {"collective-permute", "all-to-all"}
    entry = sharding_entry(collective_report_of(HLO), "data=2, model=4", [f"cpu:{i}"
                                                                            for i in range(8)])
    assert entry["counts"] == {"all-reduce": 1, "all-gather": 1, "collective-permute": 1,
                               "all-to-all": 1}
    by = {c["name"]: c for c in entry["collectives"]}
    assert by["all-reduce"]["src"] == by["all-gather"]["src"] == "f.py:3:8"
    assert "src" not in by["all-to-all"] and by["collective-permute"]["devices"] == "pairs 0->1"
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validate(entry, {**schema["$defs"]["XlaSharding"], "$defs": schema["$defs"]})


def collective_report_of(hlo: str) -> CollectiveReport:
    return collective_report(hlo, {"temp_size_in_bytes": 64})


CHAIN = """
    import json
    from reactant_lab.render.payload import build_payload

    def chain(x, w1, w2):
        h = jnp.tanh(x @ w1)
        return jnp.sin(h @ w2)

    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
    put = lambda a, spec: jax.device_put(a, NamedSharding(mesh, spec))
    f32 = np.float32
    args = (put(rng.standard_normal((16, 32)).astype(f32), P("data")),
            put(rng.standard_normal((32, 64)).astype(f32), P(None, "model")),
            put(rng.standard_normal((64, 8)).astype(f32), P("model", None)))
    e = rl.explore(chain, *args, shardy_passes="to_mhlo_shardings")
    p = build_payload(e.stages, traced=e.traced, compiled=e.compiled)
"""
"""A tensor-parallel chain over a 2x4 mesh explored with the sharding stages (code for
``run_on_devices``, indented as the code added after it): its exploration ``e`` and payload
``p``."""


def test_explorer_payload_of_a_sharded_call() -> None:
    """Tensor-parallel matmul chain over a 2x4 mesh, sharding stages run: the last graph labels
    every value of main with a sharding over data=2, model=4 and marks the ops XLA put
    collectives after; xla.sharding counts the same collectives as Compiled.collectives(); the
    payload validates; the script-free report lists them; an unsharded call has none of it."""
    run_on_devices(CHAIN + """
    import jsonschema
    from reactant_lab.render.payload import SCHEMA_PATH
    from reactant_lab.render.report import report_html

    report = e.compiled.collectives()
    jsonschema.validate(p, json.loads(SCHEMA_PATH.read_text()))
    sh = p["xla"]["sharding"]
    assert sh["partitions"] == 8 and sh["mesh"] == "data=2, model=4", sh
    assert sh["counts"] == report.counts and sh["counts"].get("all-reduce"), sh["counts"]
    assert len(sh["devices"]) == 8 and sh["memory_per_device"]["argument_size_in_bytes"] > 0
    assert all(c.get("src", "").startswith("<string>:") for c in sh["collectives"]), sh
    last_mlir = p["xla"]["passes"]["first"] - 1  # XLA's own stages (and HLO graph) follow
    last = next(g for g in p["graphs"] if last_mlir in g["stages"])
    nodes = last["model"]["nodes"]
    assert last["model"]["mesh"] == "data=2, model=4"
    ops = [n for n in nodes if n["kind"] == "op" and n["op"].startswith("stablehlo.")
           and n["op"] != "stablehlo.constant"]
    assert ops and all(n.get("sharding", "").startswith("[{") for n in ops), ops
    args_ = [n["sharding"] for n in nodes if n["kind"] == "arg"]
    assert args_ == ["[{data}, {}]", "[{}, {model}]", "[{model}, {}]"], args_
    marked = [n for n in nodes if n.get("collectives")]
    assert any(n["op"] == "stablehlo.dot_general" and "all-reduce" in " ".join(n["collectives"])
               for n in marked), marked
    assert p["xla"]["device"] == "8 devices (cpu:0 to cpu:7)", p["xla"]["device"]
    summary = e.summary()
    assert "on 8 devices (cpu:0 to cpu:7)" in summary and "8 partition(s)" in summary, summary
    assert "all-reduce" in summary and "memory per device" in summary, summary
    html = report_html(p, script=False)
    assert "Partitioned over 8 devices" in html and "all-reduce" in html
    assert "memory per device" in html

    plain = rl.explore(chain, *(np.asarray(a) for a in args))
    q = build_payload(plain.stages, traced=plain.traced, compiled=plain.compiled)
    q_last = next(g for g in q["graphs"] if q["xla"]["passes"]["first"] - 1 in g["stages"])
    assert "sharding" not in q["xla"] and "mesh" not in q_last["model"]
    assert q["xla"]["device"] == "cpu:0" and "partition" not in plain.summary()
    assert not any("sharding" in n or "collectives" in n for n in q_last["model"]["nodes"])
    """)
