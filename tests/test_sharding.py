"""Sharded arguments (issue 16): JAX arrays with a NamedSharding over a mesh, ``in_shardings=``
for NumPy arguments, the module's Shardy annotations, sharded runs equal to unsharded ones, and
the errors. Every test needing several devices runs in a subprocess whose XLA_FLAGS simulate 8
CPU devices (set before JAX starts), so the rest of the suite keeps one device."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.errors import ShardingError
from tests.conftest import child_env

DEVICES = 8

PRELUDE = """
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import reactant_lab as rl
from reactant_lab.errors import ShardingError
assert len(jax.devices()) == 8, jax.devices()
rng = np.random.default_rng()
"""


def run_on_devices(code: str, timeout: float = 300) -> str:
    """Run ``code`` (after PRELUDE) in a fresh Python with 8 simulated CPU devices; it must exit
    0 and print OK last. Returns its stdout."""
    flags = (os.environ.get("XLA_FLAGS", "") +
             f" --xla_force_host_platform_device_count={DEVICES}").strip()
    env = child_env(XLA_FLAGS=flags, JAX_PLATFORMS="cpu", REACTANT_LAB_DEVICE="cpu")
    script = PRELUDE + textwrap.dedent(code) + "\nprint('OK')\n"
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    assert proc.stdout.rstrip().endswith("OK"), proc.stdout
    return proc.stdout


def test_jax_sharded_inputs_run_over_the_mesh() -> None:
    """MLP forward with the batch on 'data', a matmul with weights on 'model', a 2-D stencil by
    rows: the module carries sdy.mesh / sdy.sharding (after preset 'all' too), linear_args show
    the shardings, and results equal NumPy's, jax.jit's, with jax.jit's output shardings; for
    an Auto mesh (jax.sharding.Mesh) and an Explicit one (jax.make_mesh)."""
    run_on_devices("""
    def mlp(params, x):
        h = jnp.tanh(x @ params["w1"] + params["b1"])
        return h @ params["w2"] + params["b2"]

    def matmul(x, w):
        return jnp.sin(x @ w)

    def stencil(u):
        inner = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        return u.at[1:-1, 1:-1].set(inner)

    def put(a, mesh, spec):
        return jax.device_put(a, NamedSharding(mesh, spec))

    meshes = [Mesh(np.array(jax.devices()).reshape(4, 2), ("data", "model")),
              jax.make_mesh((4, 2), ("data", "model"))]
    for mesh in meshes:
        f32 = np.float32
        p = {"w1": rng.standard_normal((16, 32)).astype(f32), "b1": rng.standard_normal(32).astype(f32),
             "w2": rng.standard_normal((32, 4)).astype(f32), "b2": rng.standard_normal(4).astype(f32)}
        x = rng.standard_normal((64, 16)).astype(f32)
        ps = {k: put(v, mesh, P()) for k, v in p.items()}
        xs = put(x, mesh, P("data", None))
        ex = rl.explore(mlp, ps, xs)
        t = ex.traced_call
        text = t.as_text()
        assert "sdy.mesh @mesh" in text and '#sdy.sharding<@mesh, [{"data"}, {}]>' in text, text
        final = ex.stages.final.as_text()
        assert "sdy.mesh" in final and "sdy.sharding" in final, final
        by_path = {a.path: a.sharding for a in t.linear_args}
        assert by_path["args[1]"] == "mesh['data'=4, 'model'=2] P('data', None)", by_path
        assert by_path["args[0]['w1']"] == "mesh['data'=4, 'model'=2] P()", by_path
        want = np.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
        ref = jax.jit(mlp)(ps, xs)
        np.testing.assert_allclose(np.asarray(ex.outputs), want, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(np.asarray(ex.outputs), np.asarray(ref), rtol=1e-6, atol=1e-6)
        assert isinstance(ex.outputs.sharding, NamedSharding)
        assert ex.outputs.sharding.mesh == mesh
        assert ex.outputs.sharding.is_equivalent_to(ref.sharding, 2), (ex.outputs.sharding, ref.sharding)
        assert "num_partitions=8" in ex.compiled.hlo_text()
        ex.compiled.device_runner(ps, xs)()  # what timing runs: inputs laid out over the mesh

        xm = put(rng.standard_normal((8, 16)).astype(f32), mesh, P("data", None))
        wm = put(rng.standard_normal((16, 6)).astype(f32), mesh, P(None, "model"))
        jf = rl.jit(matmul)
        out, ref = jf(xm, wm), jax.jit(matmul)(xm, wm)
        np.testing.assert_allclose(np.asarray(out), np.sin(np.asarray(xm) @ np.asarray(wm)),
                                   rtol=2e-5, atol=2e-5)
        assert out.sharding.is_equivalent_to(ref.sharding, 2), (out.sharding, ref.sharding)
        again = jf(put(rng.standard_normal((8, 16)).astype(f32), mesh, P("data", None)), wm)
        assert jf.cache_size == 1 and again.sharding.mesh == mesh
        # The same shapes unsharded: another signature, compiled again for one device.
        single = jf(np.asarray(xm), np.asarray(wm))
        assert jf.cache_size == 2
        # float32 products blocked otherwise on one device than on eight: a few ulps of the sum
        np.testing.assert_allclose(np.asarray(single), np.asarray(out), rtol=2e-5, atol=2e-5)

        u = rng.standard_normal((32, 24)).astype(f32)
        us = put(u, mesh, P("data", None))
        if mesh is meshes[1]:
            # An Explicit axis is part of JAX's types: slicing 32 rows over 4 shards to 30 is
            # refused by JAX's own rule, for jax.jit and reactant_lab alike (ours a
            # ShardingError naming the line, with JAX's as its cause).
            errors = []
            for run in (jax.jit(stencil), rl.jit(stencil)):
                try:
                    run(us)
                except Exception as exc:
                    errors.append(exc)
            assert [type(e).__name__ for e in errors] == ["ShardingTypeError", "ShardingError"]
            assert type(errors[1].__cause__) is type(errors[0]), errors
            continue
        out, ref = rl.jit(stencil)(us), jax.jit(stencil)(us)
        np.testing.assert_allclose(np.asarray(out), np.asarray(stencil(jnp.asarray(u))),
                                   rtol=1e-6, atol=1e-6)
        assert out.sharding.is_equivalent_to(ref.sharding, 2), (out.sharding, ref.sharding)
    """)


def test_numpy_in_shardings_gather_numpy_results() -> None:
    """NumPy arguments sharded by in_shardings over a mesh of axis sizes: annotated module,
    NumPy results equal to NumPy's (trace + compile, explore, jit)."""
    run_on_devices("""
    def kernel(x, w):
        y = np.tanh(x @ w)
        return y.sum(axis=1), y

    x = rng.standard_normal((16, 8))
    w = rng.standard_normal((8, 6))
    shardings = {"args[0]": P("data", None), "args[1]": P(None, "model")}
    mesh = {"data": 4, "model": 2}
    t = rl.trace(kernel, x, w, in_shardings=shardings, mesh=mesh)
    assert t.mode == "numpy"
    assert [a.sharding for a in t.linear_args] == [
        "mesh['data'=4, 'model'=2] P('data', None)", "mesh['data'=4, 'model'=2] P(None, 'model')"]
    assert '#sdy.sharding<@mesh, [{}, {"model"}]>' in t.as_text()
    want = kernel(x, w)
    staged = t.stages("all")
    assert "sdy.mesh" in staged.final.as_text() and "sdy.sharding" in staged.final.as_text()
    compiled = staged.compile()
    compiled.device_runner(x, w)()
    for got in (compiled(x, w),
                rl.explore(kernel, x, w, in_shardings=shardings, mesh=mesh).outputs,
                rl.jit(kernel, in_shardings=shardings, mesh=mesh)(x, w)):
        assert all(isinstance(g, np.ndarray) for g in got), got
        for g, r in zip(got, want):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)
    # A jax Mesh and a NamedSharding work as well.
    jmesh = Mesh(np.array(jax.devices()).reshape(8), ("rows",))
    got = rl.jit(kernel, in_shardings={"args[0]": NamedSharding(jmesh, P("rows"))})(x, w)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)
    """)


def test_sharding_errors_name_the_argument_before_anything_runs() -> None:
    run_on_devices("""
    calls = []

    def f(x, w):
        calls.append(1)
        return x @ w

    x, w = np.ones((6, 8), np.float32), np.ones((8, 4), np.float32)
    mesh = {"data": 4, "model": 2}

    def error(**kw):
        try:
            rl.trace(f, x, w, **kw)
        except ShardingError as exc:
            return exc
        raise AssertionError(f"no ShardingError for {kw}")

    e = error(in_shardings={"args[0]": P("data", None)}, mesh=mesh)
    assert e.path == "args[0]" and "does not divide" in str(e) and "size 6" in str(e), e
    e = error(in_shardings={"args[1]": P(None, "modle")}, mesh=mesh)
    assert e.path == "args[1]" and "'modle'" in str(e) and "'model'" in str(e), e
    e = error(in_shardings={"args[1]": P(None, None, "model")}, mesh=mesh)
    assert e.path == "args[1]", e
    e = error(in_shardings={"args[1]": P(None, "data")}, mesh={"data": 16})
    assert "16 devices" in str(e) and "8" in str(e), e
    e = error(in_shardings={"args[2]": P("data")}, mesh=mesh)
    assert e.path == "args[2]" and "args[0], args[1]" in str(e), e
    e = error(in_shardings={"args[0]": P("data")})
    assert "mesh=" in str(e), e
    e = error(in_shardings={"args[0]": "data"}, mesh=mesh)
    assert "PartitionSpec" in str(e), e
    # Arguments over two different meshes.
    m1 = Mesh(np.array(jax.devices()[:4]), ("a",))
    m2 = Mesh(np.array(jax.devices()[4:]), ("a",))
    xa = jax.device_put(np.ones((8, 8), np.float32), NamedSharding(m1, P("a")))
    wa = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(m2, P("a")))
    try:
        rl.trace(f, xa, wa)
        raise AssertionError("no error for two meshes")
    except ShardingError as exc:
        assert "args[0]" in str(exc) and "args[1]" in str(exc), exc
    # jit and explore check the mesh when they are made / called, before anything runs.
    try:
        rl.jit(f, in_shardings={"args[0]": P("data")}, mesh={"data": 32})
        raise AssertionError("no error for a mesh of 32")
    except ShardingError:
        pass
    assert not calls, calls

    # A compiled sharded call given the same shapes unsharded says why it does not match.
    xs = jax.device_put(np.ones((8, 8), np.float32), NamedSharding(m1, P("a")))
    c = rl.trace(f, xs, jax.device_put(np.ones((8, 4), np.float32), NamedSharding(m1, P()))
                 ).stages("none").compile()
    from reactant_lab.errors import SignatureMismatchError
    try:
        c(jax.device_put(np.ones((8, 8), np.float32), jax.devices()[0]),
          jax.device_put(np.ones((8, 4), np.float32), jax.devices()[0]))
        raise AssertionError("no error for unsharded arguments")
    except SignatureMismatchError as exc:
        assert "args[0]" in str(exc), exc
    """)


def test_unsharded_calls_carry_no_sharding(rng: np.random.Generator) -> None:
    """One device (this process): nothing about the trace changes."""
    x = rng.standard_normal((4, 3))
    t = rl.trace(lambda a: a * 2, x)
    assert all(a.sharding is None for a in t.linear_args)
    assert t.layout.shardings == () and t.layout.in_shardings == ()
    assert "sdy." not in t.as_text()
    import jax
    import jax.numpy as jnp

    j = rl.trace(lambda a: a + 1, jnp.asarray(x, jnp.float32))
    assert j.linear_args[0].sharding is None and "sdy." not in j.as_text()
    assert len(jax.devices()) == 1 or os.environ.get("XLA_FLAGS")


def test_mesh_larger_than_the_devices_present(rng: np.random.Generator) -> None:
    x = rng.standard_normal((8, 4))
    with pytest.raises(ShardingError, match="needs 64 devices"):
        rl.trace(lambda a: a * 2, x, in_shardings={"args[0]": None}, mesh={"data": 64})


def test_out_shardings_lay_results_over_the_mesh() -> None:
    """out_shardings= annotates the results it names (the module's result carries the
    sdy.sharding, the JAX result comes back with it), leaves the others to the partitioner,
    gathers NumPy results, and refuses an unknown result path, a spec that does not fit, and an
    unsharded call, naming the result; rl.bench(meshes=, in_shardings=) sweeps the meshes."""
    run_on_devices("""
    mesh = Mesh(np.array(jax.devices()), ("d",))
    def f(x, y):
        return x @ y, jnp.sin(x)

    x_np = rng.standard_normal((16, 8)).astype(np.float32)
    y_np = rng.standard_normal((8, 32)).astype(np.float32)
    x = jax.device_put(x_np, NamedSharding(mesh, P("d")))
    y = jax.device_put(y_np, NamedSharding(mesh, P()))
    g = rl.jit(f, out_shardings={"result[0]": P(None, "d")})
    a, b = g(x, y)
    assert a.sharding.spec == P(None, "d"), a.sharding
    np.testing.assert_allclose(np.asarray(a), x_np @ y_np, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(b), np.sin(x_np), rtol=1e-6, atol=1e-6)
    t = rl.trace(f, x, y, out_shardings={"result[0]": P(None, "d")})
    main = next(line for line in t.ir.splitlines() if "@main" in line)
    results = main.split("->", 1)[1]
    assert 'result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {"d"}]>' in \\
        results, results

    def k(x, y):
        return x @ y
    out = rl.jit(k, in_shardings={"args[0]": P("d")}, mesh={"d": 8},
                 out_shardings={"result": P(None, "d")})(x_np, y_np)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, x_np @ y_np, rtol=1e-4, atol=1e-4)

    def refused(kw, args, match):
        try:
            rl.jit(f, **kw)(*args)
        except ShardingError as exc:
            assert match in str(exc), str(exc)
            return exc
        raise AssertionError(f"no ShardingError for {kw}")
    e = refused({"out_shardings": {"result[5]": P("d")}}, (x, y), "computed results: result[0]")
    assert e.path == "result[5]"
    e = refused({"out_shardings": {"result[0]": P(None, ("d",))}}, (x, jax.device_put(
        rng.standard_normal((8, 4)).astype(np.float32), NamedSharding(mesh, P()))),
        "does not divide")
    refused({"out_shardings": {"result[0]": P(None, "model")}}, (x, y), "axis 'model'")
    refused({"out_shardings": {"result[0]": "d"}}, (x, y), "must be a jax.sharding.PartitionSpec")
    refused({"out_shardings": {"result[0]": P("d")}}, (x_np, y_np), "needs a sharded call")

    res = rl.bench(k, x_np, y_np, meshes=[(1,), (2,)], in_shardings={"args[0]": P("data")},
                   repeats=3)
    assert [r.devices for r in res.rows] == [1, 2] and "ours/jax" in res.table()
    try:
        rl.bench(k, x_np, y_np, meshes=[(2,)])
        raise AssertionError("bench(meshes=) without in_shardings ran")
    except ShardingError as exc:
        assert "needs both" in str(exc)
    """)


def test_explicit_sharding_type_errors_name_the_line() -> None:
    """Under a mesh of Explicit axes JAX type-checks shardings while tracing: a matmul whose
    contracting dimensions are split over different axes is a ShardingError naming the user's
    line and what to do, not JAX's internal exception."""
    run_on_devices("""
    from jax.sharding import AxisType
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    x = jax.device_put(rng.standard_normal((8, 16)).astype(np.float32),
                       NamedSharding(mesh, P("a", "b")))
    y = jax.device_put(rng.standard_normal((16, 8)).astype(np.float32),
                       NamedSharding(mesh, P("a", None)))

    def f(x, y):
        return x @ y

    try:
        rl.jit(f)(x, y)
        raise AssertionError("traced")
    except ShardingError as exc:
        text = str(exc)
    assert "contracting dimensions" in text and " in f()" in text, text
    assert "jax.sharding.reshard" in text, text
    """)
