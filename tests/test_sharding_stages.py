"""Issue 16, step 2: Reactant's ``shardy_passes`` choices as stages (propagation and export run
through jaxlib's pass manager), and the collectives of XLA's partitioned HLO with the memory per
device. Multi-device runs happen in a subprocess with 8 simulated CPU devices
(tests/test_sharding.py's ``run_on_devices``)."""

from __future__ import annotations

import pytest

from reactant_lab.analysis import collective_report
from reactant_lab.errors import PipelineError
from reactant_lab.stages.presets import PRESETS, SHARDY_PASSES, SHARDY_STAGES
from reactant_lab.stages.runner import plan, shardy_stage
from tests.test_sharding import run_on_devices

HLO = "\n".join([
    'HloModule jit_step, is_scheduled=true, '
    'entry_computation_layout={(f32[8,4]{1,0})->f32[8,4]{1,0}}, num_partitions=8',
    '',
    '%add (x: f32[], y: f32[]) -> f32[] {',
    '  %x = f32[] parameter(0)',
    '  %y = f32[] parameter(1)',
    '  ROOT %sum = f32[] add(%x, %y)',
    '}',
    '',
    '%body (p: (s32[], f32[8,4])) -> (s32[], f32[8,4]) {',
    '  %p = (s32[], f32[8,4]{1,0}) parameter(0)',
    '  %v = f32[8,4]{1,0} get-tuple-element(%p), index=1',
    '  %collective-permute.1 = f32[1,4]{1,0} collective-permute(%v), channel_id=3, '
    'source_target_pairs={{1,0},{2,1}}, metadata={op_name="halo"}',
    '  ROOT %t = (s32[], f32[8,4]{1,0}) tuple(%i, %v)',
    '}',
    '',
    'ENTRY %main.9 (Arg_0.1: f32[8,4]) -> f32[8,4] {',
    '  %Arg_0.1 = f32[8,4]{1,0} parameter(0), sharding={devices=[8,1]<=[8]}',
    '  %all-reduce = (f32[32]{0}, f32[16,32]{1,0}) all-reduce(%a, %b), channel_id=1, '
    'replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%add',
    '  %all-gather = f32[8,64]{0,1} all-gather(%c), channel_id=2, '
    "replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1'}, dimensions={1}, "
    'use_global_device_ids=true',
    '  %reduce-scatter = bf16[2,4]{1,0} reduce-scatter(%d), channel_id=4, '
    'replica_groups=[4,2]<=[2,4]T(1,0), dimensions={0}, to_apply=%add',
    '  %all-gather-start = (f32[1,4]{1,0}, f32[8,4]{1,0}) all-gather-start(%e), '
    'channel_id=5, replica_groups=[1,8]<=[8], dimensions={0}',
    '  %all-gather-done = f32[8,4]{1,0} all-gather-done(%all-gather-start)',
    '  ROOT %all-to-all = f64[8,4]{1,0} all-to-all(%f), channel_id=6, '
    'replica_groups={{0,1},{2,3},{4,5},{6,7}}, dimensions={0}',
    '}',
    '',
])


def test_collectives_of_partitioned_hlo() -> None:
    memory = {"argument_size_in_bytes": 128, "temp_size_in_bytes": 4096}
    report = collective_report(HLO, memory)
    assert report.partitions == 8 and report.replicas == 1
    assert report.counts == {"all-reduce": 1, "all-gather": 2, "reduce-scatter": 1,
                             "collective-permute": 1, "all-to-all": 1}, report.counts
    by_name = {c.name: c for c in report.collectives}
    permute = by_name["collective-permute.1"]
    assert permute.source_target_pairs == ((1, 0), (2, 1)) and permute.computation == "body"
    assert permute.bytes == 16 and "metadata" not in permute.line
    reduce = by_name["all-reduce"]
    assert reduce.bytes == 4 * (32 + 16 * 32) and reduce.replica_groups == (tuple(range(8)),)
    assert reduce.computation == "main.9"
    gather = by_name["all-gather"]
    assert gather.replica_groups == ((0, 1, 2, 3), (4, 5, 6, 7)) and gather.dimensions == (1,)
    assert gather.groups_text == "mesh['axis_0'=2,'axis_1'=4] {'axis_1'}"
    assert gather.shape == "f32[8,64]" and gather.bytes == 8 * 64 * 4
    scatter = by_name["reduce-scatter"]
    assert scatter.replica_groups == ((0, 4), (1, 5), (2, 6), (3, 7)) and scatter.bytes == 16
    started = by_name["all-gather-start"]
    assert started.asynchronous and started.op == "all-gather" and started.bytes == 8 * 4 * 4
    assert started.replica_groups == (tuple(range(8)),)
    assert by_name["all-to-all"].bytes == 8 * 4 * 8
    assert report.memory_per_device["temp_size_in_bytes"] == 4096
    text = report.table()
    assert "1 all-reduce" in text and "pairs 1->0 2->1" in text and "temp 4.0 KiB" in text, text
    single = collective_report("HloModule jit_f, num_partitions=1\nENTRY %m () -> f32[] {\n}\n")
    assert single.collectives == () and single.counts == {} and single.partitions == 1


@pytest.mark.parametrize("preset", list(PRESETS))
def test_shardy_passes_are_data_and_leave_unsharded_stages_alone(preset: str) -> None:
    kw = {"no_nan": False, "target": "cpu"}
    base = plan(preset, None, "stage", **kw)
    for choice in SHARDY_PASSES:
        assert plan(preset, None, "stage", shardy_passes=choice, **kw) == base
    assert plan(preset, None, "stage", sharded=True, **kw) == base  # 'default': no stage
    added = plan(preset, None, "stage", shardy_passes="to_mhlo_shardings", sharded=True, **kw)
    assert added[:len(base)] == base
    assert [(n, p) for n, _g, p in added[len(base):]] == [
        ("sdy propagation", "sdy-propagation-pipeline"), ("sdy export", "sdy-export-pipeline"),
        ("canonicalize+cse (after sdy)", "canonicalize,cse")]
    spec = shardy_stage("sdy propagation")
    assert spec is SHARDY_STAGES["sdy_propagate"] and spec.runner == "jaxlib"
    assert shardy_stage("optimize") is None
    with pytest.raises(PipelineError, match="to_mhlo_shardings"):
        plan(preset, None, "stage", shardy_passes="mhlo", **kw)


@pytest.mark.slow("many compiles")
def test_sharding_stages_propagate_compile_and_show_collectives() -> None:
    """Data-parallel MLP training step, tensor-parallel matmul chain, 2-D stencil by rows:
    sdy annotations on the arguments before, a sharding on every value after the propagation
    stage (run through jaxlib's pass manager, said in the notes), results equal jax.jit's, and
    the partitioned HLO's collectives: gradients all-reduced, all-gather and all-reduce around
    the sharded matmuls, halo exchange (collective-permute) for the stencil."""
    out = run_on_devices("""
    f32 = np.float32

    def put(a, mesh, spec):
        return jax.device_put(a, NamedSharding(mesh, spec))

    def train_step(params, x, y):
        def loss(p):
            h = jnp.tanh(x @ p["w1"] + p["b1"])
            return jnp.mean((h @ p["w2"] - y) ** 2)
        g = jax.grad(loss)(params)
        return jax.tree_util.tree_map(lambda p, gi: p - 0.1 * gi, params, g)

    def chain(x, w1, w2, w3):
        return jnp.tanh(jnp.tanh(x @ w1) @ w2) @ w3

    def stencil(u):
        inner = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        return u.at[1:-1, 1:-1].set(inner)

    dp = Mesh(np.array(jax.devices()), ("data",))
    tp = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
    p = {"w1": rng.standard_normal((16, 32)).astype(f32),
         "b1": rng.standard_normal(32).astype(f32), "w2": rng.standard_normal((32, 4)).astype(f32)}
    cases = {
        "mlp": (train_step, ({k: put(v, dp, P()) for k, v in p.items()},
                             put(rng.standard_normal((64, 16)).astype(f32), dp, P("data")),
                             put(rng.standard_normal((64, 4)).astype(f32), dp, P("data")))),
        "chain": (chain, (put(rng.standard_normal((16, 32)).astype(f32), tp, P("data")),
                          put(rng.standard_normal((32, 64)).astype(f32), tp, P(None, "model")),
                          put(rng.standard_normal((64, 64)).astype(f32), tp, P(None, "model")),
                          put(rng.standard_normal((64, 8)).astype(f32), tp, P("model", None)))),
        "stencil": (stencil, (put(rng.standard_normal((32, 24)).astype(f32), dp, P("data")),)),
    }
    names = ["sdy propagation", "sdy export", "canonicalize+cse (after sdy)"]
    for name, (fn, args) in cases.items():
        t = rl.trace(fn, *args)
        default = t.stages("all")
        assert all(s.name not in names for s in default.stages)
        st = t.stages("all", shardy_passes="to_mhlo_shardings")
        assert [s.name for s in st.stages[-3:]] == names and st.sharded
        before, after = st[-4].as_text(), st["sdy propagation"].as_text()
        assert "#sdy.sharding<@mesh" in before and "sharding_per_value" not in before, before
        assert after.count("sdy.sharding_per_value") >= 2, after
        assert "sharding_per_value" in st.final.as_text()
        assert "jaxlib's pass manager" in st["sdy propagation"].unavailable
        assert "xla-sdy-stablehlo-export-pipeline" in st["sdy export"].unavailable
        assert "jaxlib's pass manager" in st.table()
        compiled = st.compile()
        got, ref = compiled(*args), jax.jit(fn)(*args)
        jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(
            np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5), got, ref)
        report = compiled.collectives()
        assert report.partitions == 8, report
        assert report.counts == default.compile().collectives().counts
        mem = report.memory_per_device
        assert mem["argument_size_in_bytes"] > 0, mem
        print(name, report.counts, mem["argument_size_in_bytes"], mem["temp_size_in_bytes"])
        if name == "mlp":
            (reduce,) = report.of("all-reduce")
            # The gradients of the replicated weights, summed over the batch's shards.
            assert reduce.bytes == 4 * (16 * 32 + 32 + 32 * 4), reduce
            assert not report.of("collective-permute")
        elif name == "chain":
            assert report.of("all-gather") and report.of("all-reduce"), report
            assert all(len(g) == 4 for c in report.collectives for g in c.replica_groups)
        else:
            permutes = report.of("collective-permute")
            assert permutes and all(c.source_target_pairs for c in permutes), report
            # Data parallel over 8 devices: a device holds an eighth of the batch.
            assert mem["argument_size_in_bytes"] == 32 * 24 * 4 // 8, mem
    """)
    print(out)
