"""reactant_lab.enzyme beyond JAX-mode AD: ``batch`` (an enzyme.batch op the 'batch' stage
expands, against jax.vmap), NumPy-mode kernels (in-place updates included) differentiated and
batched (against finite differences and plain loops), ``Traced.enzyme_ops``, the graph's view of
the differentiated function, and the magic.

Inputs are drawn fresh for each run (differential tests), never all zeros.
"""

from __future__ import annotations

import sys
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend
from reactant_lab import enzyme as rle
from reactant_lab.analysis.graph_model import graph_model
from reactant_lab.errors import CompileError, EnzymeUnavailableWarning
from tests.conftest import assert_close, matmul_rtol

needs_enzyme = pytest.mark.skipif(not backend.enzyme_available(),
                                  reason=f"enzyme-ad: {backend.enzyme_unavailable_reason()}")


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.normal(size=shape).astype(np.float32)


def _close(got, want, tol=2e-5):
    tol = matmul_rtol(tol)  # the layers' dots
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    jax.tree_util.tree_map(
        lambda g, w: np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol,
                                                atol=tol), got, want)


def _stage(ex, name):
    return {s.name: s for s in ex.stages.stages}[name]


# ---------------------------------------------------------------- batch (JAX mode)


def layer(x, w):
    return jnp.tanh(x @ w).sum() + x.max()


def pair(p, scale):
    return p["a"] * scale + jnp.sum(p["b"]), jnp.cumsum(p["a"])


def pick(i, table):
    return table[i] * 2.0


def stats(p, scale):
    return {"sum": p["a"].sum() * scale, "max": p["b"].max()}, scale * 2.0


def _batch_cases(rng):
    w = _f32(rng, 4, 3)
    p = {"a": _f32(rng, 5, 3), "b": _f32(rng, 5, 2)}
    table = jnp.asarray(_f32(rng, 7, 3))
    idx = rng.integers(0, 7, 6).astype(np.int32)
    return {
        "in_axes (0, None)": (layer, (0, None), 0, (_f32(rng, 5, 4), w)),
        "in_axes (1, None)": (layer, (1, None), 0, (_f32(rng, 4, 6), w)),
        "pytree, out_axes 1": (pair, (0, None), 1, (p, np.float32(1.5))),
        "integer gather": (pick, (0, None), 0, (idx, table)),
        # Axes as pytree prefixes (one axis for a subtree), out_axes None for a result that
        # does not vary along the batch: as jax.vmap.
        "prefixes, out_axes None": (stats, ({"a": 1, "b": 0}, None), (0, None),
                                    ({"a": _f32(rng, 3, 5), "b": _f32(rng, 5, 2)},
                                     np.float32(1.5))),
    }


@needs_enzyme
@pytest.mark.parametrize("case", ["in_axes (0, None)", "in_axes (1, None)",
                                  "pytree, out_axes 1", "integer gather",
                                  "prefixes, out_axes None"])
def test_batch_is_an_enzyme_batch_op_the_batch_stage_expands_and_equals_vmap(case, rng):
    f, in_axes, out_axes, args = _batch_cases(rng)[case]
    ex = rl.explore(rle.batch(f, in_axes, out_axes), *args, mode="jax")
    [call] = ex.traced.enzyme_ops
    assert call.op == "enzyme.batch" and call.fn == f.__name__
    assert call.batch_shape == (6 if case in ("in_axes (1, None)", "integer gather") else 5,)
    assert f"func.func private @{f.__name__}(" in ex.stages.stages[0].ir
    batch = _stage(ex, "batch")
    assert batch.changed and "enzyme.batch" not in batch.ir
    assert "enzyme.batch" not in ex.stages.stages[-1].ir
    _close(ex.outputs, jax.vmap(f, in_axes, out_axes)(*args))


@needs_enzyme
@pytest.mark.parametrize("preset", ["only_enzyme", "after_enzyme", "before_enzyme",
                                    "no_enzyme", "just_batch"])
def test_batch_under_every_preset_that_runs_the_batch_stage(preset, rng):
    xs, w = _f32(rng, 5, 4), _f32(rng, 4, 3)
    traced = rl.trace(rle.batch(layer, (0, None)), xs, w, mode="jax")
    stages = traced.stages(preset)
    assert {s.name: s for s in stages.stages}["batch"].changed
    _close(stages.compile()(xs, w), jax.vmap(layer, (0, None))(xs, w))


@needs_enzyme
def test_a_module_that_kept_its_enzyme_batch_does_not_compile_and_says_why(rng):
    xs, w = _f32(rng, 5, 4), _f32(rng, 4, 3)
    stages = rl.trace(rle.batch(layer, (0, None)), xs, w,
                      mode="jax").stages("none")
    with pytest.raises(CompileError, match=r"still holds enzyme\.batch.*'batch' stage"):
        stages.compile()


@needs_enzyme
def test_per_example_gradients_batch_of_gradient_and_gradient_of_batch(rng):
    w, xs = _f32(rng, 4, 3), _f32(rng, 5, 4)

    def loss(w, x):
        return jnp.sum(jnp.tanh(x @ w) ** 2)

    per_example = jax.vmap(jax.grad(loss), (None, 0))(w, xs)
    ex = rl.explore(rle.batch(rle.gradient(loss), (None, 0)), w, xs,
                    mode="jax")
    assert [c.op for c in ex.traced.enzyme_ops] == ["enzyme.batch", "enzyme.autodiff"]
    assert _stage(ex, "batch").changed and _stage(ex, "enzyme (AD)").changed
    _close(ex.outputs, per_example)
    total = rl.jit(lambda w, xs: rle.gradient(
        lambda w: rle.batch(loss, (None, 0))(w, xs).sum())(w))(w, xs)
    _close(total, per_example.sum(axis=0), tol=1e-4)


def test_batch_called_outside_a_trace_compiles_and_runs(rng):
    xs, w = _f32(rng, 5, 4), _f32(rng, 4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EnzymeUnavailableWarning)
        got = rle.batch(layer, (0, None))(jnp.asarray(xs), jnp.asarray(w))
    _close(got, jax.vmap(layer, (0, None))(xs, w))


@pytest.mark.parametrize(("in_axes", "args", "message"), [
    ((0, 0), ("x5", "x6"), r"different sizes \(args\[0\]: 5, args\[1\]: 6\)"),
    ((2, None), ("x5", "w"), r"args\[0\] \(float32\[5, 4\]\) the batch axis 2.*\[-2, 1\]"),
    (None, ("x5", "w"), "no argument has a batch axis"),
    ((0,), ("x5", "w"), "one entry per positional argument"),
])
def test_batch_errors_say_what_is_wrong(in_axes, args, message, rng):
    values = {"x5": jnp.asarray(_f32(rng, 5, 4)), "x6": jnp.asarray(_f32(rng, 6, 4)),
              "w": jnp.asarray(_f32(rng, 4, 3))}
    with pytest.raises(rl.EnzymeArgumentError, match=message):
        rl.trace(rle.batch(lambda x, y: x.sum() + y.sum(), in_axes),
                 *(values[a] for a in args), mode="jax")


# ---------------------------------------------------------------- NumPy mode


def energy(u, c):
    """A NumPy kernel: three in-place diffusion steps, then the energy."""
    for _ in range(3):
        u[1:-1] = u[1:-1] + c * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


@needs_enzyme
@pytest.mark.xfail(strict=True, raises=rl.PassFailedError,
                   reason="enzyme-ad 0.0.16 has no forward-mode rule for stablehlo.reduce_window "
                          "(what np.cumsum of float32 lowers to, and of float64 on the CPU): "
                          "'could not compute the adjoint'")
def test_forward_mode_through_cumsum(rng):
    u = rng.standard_normal(12).astype(np.float32)
    rle.jvp(np.cumsum, (u,), (u,))


@needs_enzyme
def test_forward_mode_through_a_float64_cumsum_off_the_cpu(rng, monkeypatch):
    """Off the CPU a float64 cumsum is an associative scan (XLA's TPU compiler took minutes on
    the reduce window), which Enzyme's forward mode goes through: the tangent is the running
    sum of the tangent (run here on the CPU with a TPU's lowering forced)."""
    from reactant_lab.trace.numpy_mode import context

    monkeypatch.setattr(context, "platform", lambda: "tpu")
    u, du = rng.standard_normal(12), rng.standard_normal(12)
    value, tangent = rle.jvp(np.cumsum, (u,), (du,))
    assert_close(value, np.cumsum(u), 1e-12)
    assert_close(tangent, np.cumsum(du), 1e-12)


def _finite_differences(f, u, *rest, eps=1e-6):
    return np.array([(f(u + eps * e, *rest) - f(u - eps * e, *rest)) / (2 * eps)
                     for e in np.eye(u.size)]).reshape(u.shape)


@needs_enzyme
def test_gradient_of_an_in_place_numpy_kernel_equals_finite_differences(rng):
    u = rng.standard_normal(16)
    before = u.copy()
    got = rle.gradient(energy)(u, 0.1)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    np.testing.assert_array_equal(u, before)  # the caller's array is not updated
    np.testing.assert_allclose(got, _finite_differences(energy, before.copy(), 0.1), rtol=1e-6,
                               atol=1e-8)


@needs_enzyme
def test_a_numpy_kernel_takes_a_gradient_step_in_place(rng):
    def step(u, c, lr):
        g = rle.gradient(energy)(u, c)
        u -= lr * g
        return np.abs(g).max()

    u0 = rng.standard_normal(16)
    ex = rl.explore(step, u0.copy(), 0.1, 0.01)
    assert ex.traced.mode == "numpy" and ex.traced.mutated == ("args[0]",)
    assert [c.op for c in ex.traced.enzyme_ops] == ["enzyme.autodiff"]
    ad = _stage(ex, "enzyme (AD)")
    before = ex.stages.stages[ad.index - 1]
    assert ad.changed and ad.ops > before.ops
    u = u0.copy()
    biggest = rl.jit(step)(u, 0.1, 0.01)
    fd = _finite_differences(energy, u0.copy(), 0.1)
    np.testing.assert_allclose(u, u0 - 0.01 * fd, rtol=1e-7, atol=1e-9)
    assert_close(biggest, np.abs(fd).max(), rtol=1e-6)


@needs_enzyme
def test_numpy_vjp_jvp_and_batch(rng):
    u = rng.standard_normal(12)
    ct = rng.standard_normal(12)
    out, pull = rle.vjp(lambda u: np.sin(u) * u, u)
    assert_close(out, np.sin(u) * u)
    assert_close(pull(ct)[0], ct * (np.cos(u) * u + np.sin(u)), rtol=1e-10)

    def shifted(u):
        v = u ** 2
        v[1:] += v[:-1]
        return v

    primal, tangent = rle.jvp(shifted, (u,), (ct,))
    dv = 2 * u * ct
    dv[1:] += dv[:-1]
    assert_close(primal, shifted(u.copy()), rtol=1e-12)
    assert_close(tangent, dv, rtol=1e-10)
    xs = rng.standard_normal((4, 12))

    def running(v):
        out = np.cumsum(v)
        out[::2] *= v.max()
        return out

    got = rle.batch(running)(xs)
    assert_close(got, np.stack([running(x.copy()) for x in xs]), rtol=1e-12)


@needs_enzyme
def test_numpy_batch_inside_a_kernel_shows_the_batch_stage(rng):
    def rows(m):
        m[:] = rle.batch(lambda r: r / np.linalg.norm(r))(m)
        return m.sum()

    m0 = rng.standard_normal((6, 5))
    ex = rl.explore(rows, m0.copy())
    assert ex.traced.mode == "numpy" and [c.op for c in ex.traced.enzyme_ops] == ["enzyme.batch"]
    assert _stage(ex, "batch").changed
    m = m0.copy()
    rl.jit(rows)(m)
    assert_close(m, m0 / np.linalg.norm(m0, axis=1, keepdims=True), rtol=1e-12)


def test_without_enzyme_numpy_kernels_fall_back_to_jax(monkeypatch, rng):
    class WithoutEnzyme(types.ModuleType):  # the rest of the package keeps its enzyme-ad
        def __getattr__(self, name):
            return getattr(backend, name)

    fake = WithoutEnzyme("backend")
    fake.enzyme_available = lambda: False
    fake.enzyme_unavailable_reason = lambda: "disabled for the test"
    for name, module in list(sys.modules.items()):  # each module of reactant_lab.enzyme
        if name.startswith(rle.__name__) and getattr(module, "backend", None) is backend:
            monkeypatch.setattr(module, "backend", fake)
    u = rng.standard_normal(10)
    with pytest.warns(EnzymeUnavailableWarning, match="disabled for the test"):
        got = rle.gradient(energy)(u.copy(), 0.2)
    np.testing.assert_allclose(got, _finite_differences(energy, u.copy(), 0.2), rtol=1e-6,
                               atol=1e-8)
    xs = rng.standard_normal((3, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EnzymeUnavailableWarning)
        ex = rl.explore(rle.batch(np.cumsum), xs)
    assert ex.traced.enzyme_ops == () and "enzyme.batch" not in ex.stages.stages[0].ir
    assert_close(ex.outputs, np.cumsum(xs, axis=1))


# ---------------------------------------------------------------- what the explorer shows


@needs_enzyme
def test_the_graph_shows_the_differentiated_function_inside_the_enzyme_op(rng):
    w, x = _f32(rng, 4, 3), _f32(rng, 5, 4)

    def loss(w, x):
        return jnp.sum(jnp.tanh(x @ w) ** 2)

    traced = rl.trace(lambda w, x: w - 0.1 * rle.gradient(loss)(w, x), w, x, mode="jax")
    assert "enzyme.autodiff @loss (active, const) -> (activenoneed)" in traced.summary()
    model = graph_model(traced.ir)
    [op] = [n for n in model["nodes"] if n.get("op") == "enzyme.autodiff"]
    assert op["regions"] == ["@loss"]
    k = model["nodes"].index(op)
    inside = [n["op"] for n in model["nodes"] if n.get("parent") == k]
    assert "stablehlo.dot_general" in inside and "stablehlo.tanh" in inside
    assert inside[-1] == "func.return"


@needs_enzyme
def test_the_magic_explores_a_cell_that_takes_an_enzyme_gradient(rng):
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    from reactant_lab.notebook import last_explorations

    shell = start_ipython() or get_ipython()
    shell.run_cell("%load_ext reactant_lab", store_history=False)
    w, x = _f32(rng, 4, 3), _f32(rng, 6, 4)
    shell.push({"w_in": jnp.asarray(w), "x_in": jnp.asarray(x)})
    cell = """%%reactant_jit
import jax.numpy as jnp
from reactant_lab import enzyme as rle

def loss(w, x):
    return jnp.mean(jnp.tanh(x @ w) ** 2)

def train_step(w, x):
    return w - 0.5 * rle.gradient(loss)(w, x)

stepped = train_step(w_in, x_in)
"""
    with capture_output():
        result = shell.run_cell(cell, store_history=True)
    assert result.success, result.error_in_exec
    [ex] = last_explorations()
    assert ex.traced.fn_name == "train_step"
    assert [c.op for c in ex.traced.enzyme_ops] == ["enzyme.autodiff"]
    assert _stage(ex, "enzyme (AD)").changed

    def loss(w, x):
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    _close(shell.user_ns["stepped"], w - 0.5 * jax.grad(loss)(w, x))
