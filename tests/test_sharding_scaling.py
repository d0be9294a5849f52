"""Issue 16, step 3: ``shardy_passes=`` as an option of explore / jit / ExploreOptions, and
``rl.bench_scaling``: a sharded call timed over meshes of 1, 2, 4, 8 devices beside jax.jit with
the same shardings. Multi-device runs happen in a subprocess with 8 simulated CPU devices
(tests/test_sharding.py's ``run_on_devices``)."""

from __future__ import annotations

import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

import reactant_lab as rl
from reactant_lab.errors import PipelineError, ShardingError
from reactant_lab.explore import ExploreOptions
from tests.conftest import assert_close
from tests.test_sharding import run_on_devices


def test_shardy_passes_is_checked_and_leaves_an_unsharded_call_alone() -> None:
    with pytest.raises(PipelineError, match="to_mhlo_shardings"):
        ExploreOptions(shardy_passes="mhlo")
    with pytest.raises(PipelineError, match="to_mhlo_shardings"):
        rl.jit(np.sin, shardy_passes="mhlo")
    x = np.linspace(0, 1, 8)
    ex = rl.explore(lambda v: np.sin(v) * 2, x, shardy_passes="to_mhlo_shardings")
    assert ex.options.shardy_passes == "to_mhlo_shardings"
    assert ex.stages.shardy_passes == "to_mhlo_shardings" and not ex.stages.sharded
    assert "sdy propagation" not in [s.name for s in ex.stages.stages]
    assert_close(ex.outputs, np.sin(x) * 2)


def test_bench_scaling_refuses_bad_meshes_before_timing() -> None:
    def f(x):
        return x * 2

    x = np.ones((8, 4), np.float32)
    with pytest.raises(ShardingError, match="devices"):  # one device in this process
        rl.bench_scaling(f, x, in_shardings={"args[0]": P("data")}, meshes=[(1,), (2,)])
    with pytest.raises(ShardingError, match="axis_names"):
        rl.bench_scaling(f, x, in_shardings={"args[0]": P("data")}, meshes=[(1, 1)])
    with pytest.raises(ShardingError, match="args\\[3\\]"):
        rl.bench_scaling(f, x, in_shardings={"args[3]": P("data")}, meshes=[(1,)])
    with pytest.raises(ShardingError, match="names a mesh axis"):
        rl.bench_scaling(f, x, in_shardings={}, meshes=[(1,)])


def test_shardy_passes_option_of_explore_and_jit_on_devices() -> None:
    """explore / rl.jit with shardy_passes='to_mhlo_shardings' on a sharded call: the three
    Shardy stages, every value's sharding, results equal jax.jit's; the default adds none."""
    run_on_devices("""
    def mlp(w, x):
        return jnp.tanh(x @ w).sum(axis=0)

    mesh = Mesh(np.array(jax.devices()), ("data",))
    w = jax.device_put(rng.standard_normal((16, 8)).astype(np.float32), NamedSharding(mesh, P()))
    x = jax.device_put(rng.standard_normal((64, 16)).astype(np.float32),
                       NamedSharding(mesh, P("data")))
    names = ["sdy propagation", "sdy export", "canonicalize+cse (after sdy)"]
    ex = rl.explore(mlp, w, x, shardy_passes="to_mhlo_shardings")
    assert [s.name for s in ex.stages.stages[-3:]] == names
    assert "sharding_per_value" in ex.stages.final.as_text()
    np.testing.assert_allclose(np.asarray(ex.outputs), np.asarray(jax.jit(mlp)(w, x)),
                               rtol=2e-5, atol=2e-5)
    assert ex.compiled.collectives().counts == {"all-reduce": 1}
    again = ex.restaged(optimize="none")
    assert [s.name for s in again.stages.stages[-3:]] == names
    f = rl.jit(mlp, shardy_passes="to_mhlo_shardings")
    np.testing.assert_allclose(np.asarray(f(w, x)), np.asarray(jax.jit(mlp)(w, x)),
                               rtol=2e-5, atol=2e-5)
    assert [s.name for s in f.last.stages.stages[-3:]] == names
    plain = rl.explore(mlp, w, x)
    assert not any(s.name in names for s in plain.stages.stages)
    # NumPy arguments sharded with in_shardings= / mesh= take the option as well
    g = rl.jit(mlp, in_shardings={"args[1]": P("data")}, mesh={"data": 4},
               shardy_passes="to_mhlo_shardings")
    got = g(np.asarray(w), np.asarray(x))
    np.testing.assert_allclose(np.asarray(got), np.asarray(jax.jit(mlp)(w, x)), rtol=2e-5,
                               atol=2e-5)
    assert g.last.stages.stages[-1].name == names[-1] and g.last.stages.sharded
    """)


def test_bench_scaling_prints_the_table_beside_jax_jit() -> None:
    """A data-parallel MLP step over meshes of 1, 2, 4, 8 devices: one row per mesh, ours and
    jax.jit timed, ours / jax.jit near 1 (simulated devices share the host's cores: parity
    is what can be checked, loosely here, as the suite runs beside other work), the gradients'
    all-reduce counted in ours and in jax.jit's HLO with the same bytes, and the per-device
    bytes of the cost analysis falling as the batch is split."""
    out = run_on_devices("""
    def step(params, x, y):
        def loss(p):
            return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)
        g = jax.grad(loss)(params)
        return jax.tree_util.tree_map(lambda p, gi: p - 0.1 * gi, params, g)

    f32 = np.float32
    params = {"w1": rng.standard_normal((32, 64)).astype(f32),
              "w2": rng.standard_normal((64, 4)).astype(f32)}
    x = rng.standard_normal((256, 32)).astype(f32)
    y = rng.standard_normal((256, 4)).astype(f32)
    res = rl.bench_scaling(step, params, x, y,
                           in_shardings={"args[1]": P("data"), "args[2]": P("data")},
                           meshes=[(1,), (2,), {"data": 4}, (8,)], repeats=15)
    assert [r.devices for r in res.rows] == [1, 2, 4, 8]
    assert res.rows[0].speedup == 1.0 and res.rows[0].collectives.counts == {}
    for r in res.rows[1:]:
        assert r.collectives.counts == {"all-reduce": 1}, r.collectives
        assert r.collective_bytes == 4 * (32 * 64 + 64 * 4) == r.jax_collectives.bytes
        assert r.collectives.partitions == r.devices
    acc = [r.bytes_accessed for r in res.rows]
    assert acc[-1] < acc[0], acc
    assert set(res.ratios) == {1, 2, 4, 8}
    assert all(0.2 < q < 3 for q in res.ratios.values()), res.ratios
    assert abs(res.rows[2].efficiency - res.rows[2].speedup / 4) < 1e-12
    text = res.table()
    assert "ours/jax" in text and "jax.jit" in text and "1 all-reduce" in text, text
    assert len(text.splitlines()) == 2 + 4 + 1
    assert str(res) == text
    # shardy_passes='to_mhlo_shardings' partitions the same way
    res2 = rl.bench_scaling(step, params, x, y, in_shardings={"args[1]": P("data")},
                            meshes=[(2,)], repeats=3, shardy_passes="to_mhlo_shardings")
    assert res2.rows[0].collectives.counts == {"all-reduce": 1}
    assert "shardy_passes=to_mhlo_shardings" in res2.table()
    print(text)
    """)
    print(out)
