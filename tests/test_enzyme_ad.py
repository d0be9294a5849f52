"""reactant_lab.enzyme: AD by Enzyme-JAX's passes, differential against JAX's own AD.

Each function is traced with rl.explore under preset 'all': the traced module holds the Enzyme
op calling the differentiated function's own private func, the 'enzyme (AD)' stage changes the
module, the final module holds no Enzyme op, and the compiled result equals JAX's on fresh random
inputs.
"""

from __future__ import annotations

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend
from reactant_lab import enzyme as rle
from reactant_lab.errors import CompileError, EnzymeUnavailableWarning
from tests.conftest import assert_close_to_scale

needs_enzyme = pytest.mark.skipif(not backend.enzyme_available(),
                                  reason=f"enzyme-ad: {backend.enzyme_unavailable_reason()}")


def _rng() -> np.random.Generator:
    return np.random.default_rng()  # fresh inputs each run: a differential test


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.normal(size=shape).astype(np.float32)


def _close(got, want, tol=2e-5):
    jax.tree_util.tree_map(
        lambda g, w: np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol,
                                                atol=tol), got, want)
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)


def _explore_checked(fn, *args, op="enzyme.autodiff"):
    ex = rl.explore(fn, *args, mode="jax")
    stages = {s.name: s for s in ex.stages.stages}
    traced = ex.stages.stages[0].ir
    assert f'"{op}"' in traced or f"{op} @" in traced
    callee = re.search(rf'{re.escape(op)}"?\(?[^\n]*?fn = @(\w+)|{re.escape(op)} @(\w+)', traced)
    assert callee is not None
    name = callee.group(1) or callee.group(2)
    assert re.search(rf"func\.func private @{name}\(", traced)
    assert stages["enzyme (AD)"].changed
    assert not re.search(r"\benzyme\.(autodiff|fwddiff)\b", ex.stages.stages[-1].ir)
    return ex


# ---------------------------------------------------------------- functions


def mlp_loss(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


def softmax_xent(w, x, labels):
    logits = x @ w
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.sum(labels * logp, axis=-1))


def sincos(x):
    return jnp.sum(jnp.cos(jnp.sin(x) * x) + jnp.sin(jnp.cos(x)) ** 2)


def fori(x):
    return jnp.sum(jax.lax.fori_loop(0, 5, lambda i, v: jnp.sin(v) * 1.5 + v * 0.5, x))


def fori_invariant(x, a):
    return jnp.sum(jax.lax.fori_loop(0, 5, lambda i, v: jnp.sin(v) * a + v * 0.5, x))


def _mlp_params(rng):
    return {"w1": _f32(rng, 3, 6), "b1": _f32(rng, 6), "w2": _f32(rng, 6, 2), "b2": _f32(rng, 2)}


# ---------------------------------------------------------------- reverse mode in the trace


@needs_enzyme
def test_gradient_mlp_pytree():
    rng = _rng()
    params, x, y = _mlp_params(rng), _f32(rng, 8, 3), _f32(rng, 8, 2)
    ex = _explore_checked(rle.gradient(mlp_loss), params, x, y)
    _close(ex.outputs, jax.grad(mlp_loss)(params, x, y))


@needs_enzyme
def test_gradient_softmax_cross_entropy_argnums_tuple():
    rng = _rng()
    w, x = _f32(rng, 4, 5), _f32(rng, 7, 4)
    labels = np.eye(5, dtype=np.float32)[rng.integers(0, 5, 7)]
    grad = rle.gradient(softmax_xent, argnums=(0, 1))
    ex = _explore_checked(grad, w, x, labels)
    _close(ex.outputs, jax.grad(softmax_xent, argnums=(0, 1))(w, x, labels))


@needs_enzyme
def test_gradient_sin_cos_chain_and_value():
    rng = _rng()
    x = _f32(rng, 16)
    ex = _explore_checked(rle.value_and_gradient(sincos), x)
    _close(ex.outputs, jax.value_and_grad(sincos)(x))
    assert "enzyme_active>" in ex.stages.stages[0].ir  # the primal is kept: ret enzyme_active


@needs_enzyme
def test_gradient_fori_loop():
    x = _rng().normal(size=6)  # float64: the loop counter is i64
    ex = _explore_checked(rle.gradient(fori), x)
    with jax.enable_x64(True):
        _close(ex.outputs, jax.grad(fori)(x), tol=1e-10)


@needs_enzyme
@pytest.mark.xfail(strict=True, raises=rl.PassFailedError,
                   reason="enzyme-ad 0.0.16's reverse mode of stablehlo.while fails on an i32 "
                          "loop counter (a float32 trace) and on a loop invariant operand")
@pytest.mark.parametrize("case", ["i32 counter", "loop invariant"])
def test_gradient_fori_loop_enzyme_limits(case):
    rng = _rng()
    if case == "i32 counter":
        rl.explore(rle.gradient(fori), _f32(rng, 6), mode="jax")
    else:
        rl.explore(rle.gradient(fori_invariant), rng.normal(size=6),
                   rng.normal(size=6), mode="jax")


@needs_enzyme
def test_gradient_has_aux_and_activities():
    rng = _rng()
    params, x, y = _mlp_params(rng), _f32(rng, 5, 3), _f32(rng, 5, 2)

    def loss_aux(p, x, y):
        h = x @ p["w1"]
        return mlp_loss(p, x, y), {"h": h, "n": jnp.sum(h > 0)}

    ex = _explore_checked(rle.gradient(loss_aux, has_aux=True),
                          params, x, y)
    _close(ex.outputs, jax.grad(loss_aux, has_aux=True)(params, x, y))
    traced = ex.stages.stages[0].ir
    # params' 4 leaves active, x and y const; the loss result active (no primal), aux const.
    assert traced.count("#enzyme.activity<enzyme_active>") == 4
    assert "enzyme_activenoneed" in traced and "#enzyme.activity<enzyme_const>" in traced


@needs_enzyme
def test_integer_leaf_is_const_and_closure_is_captured():
    rng = _rng()
    x, scale = _f32(rng, 4), _f32(rng, 4)

    def f(state):
        return jnp.sum(jnp.sin(state["x"]) * state["k"] * scale)  # scale: closed over

    def g(x, k, s):
        return rle.gradient(lambda st: jnp.sum(jnp.sin(st["x"]) * st["k"] * s),
                            allow_int=True)({"x": x, "k": k})

    k = np.int32(3)
    ex = _explore_checked(g, x, k, scale)
    ref = jax.grad(f, allow_int=True)({"x": x, "k": k})
    _close(ex.outputs["x"], ref["x"])
    assert ex.outputs["k"] == 0 and np.asarray(ex.outputs["k"]).dtype == np.int32


@needs_enzyme
def test_expert_activity():
    rng = _rng()
    w, x = _f32(rng, 4, 5), _f32(rng, 7, 4)
    labels = np.eye(5, dtype=np.float32)[rng.integers(0, 5, 7)]
    grad = rle.gradient(softmax_xent, activity=("const", "active", "const"))
    ex = _explore_checked(grad, w, x, labels)
    none_w, gx, none_l = ex.outputs
    assert none_w is None and none_l is None
    _close(gx, jax.grad(softmax_xent, argnums=1)(w, x, labels))
    with pytest.raises(ValueError, match="reverse mode takes"):
        rle.gradient(softmax_xent, activity=("dup", "const", "const"))(w, x, labels)


# ---------------------------------------------------------------- vjp / jvp


@needs_enzyme
def test_vjp_in_trace():
    rng = _rng()
    x, w, ct = _f32(rng, 3, 4), _f32(rng, 4, 2), _f32(rng, 3, 2)

    def f(x, w):
        return jnp.tanh(x @ w)

    def g(x, w, ct):
        out, pull = rle.vjp(f, x, w)
        return out, pull(ct)

    ex = _explore_checked(g, x, w, ct)
    out, pull = jax.vjp(f, x, w)
    _close(ex.outputs, (out, pull(ct)))


@needs_enzyme
def test_jvp_in_trace():
    rng = _rng()
    x, t = _f32(rng, 5), _f32(rng, 5)

    def f(x):
        return {"a": jnp.sin(x) * jnp.cos(x), "b": jnp.sum(x ** 3)}

    ex = _explore_checked(lambda x, t: rle.jvp(f, (x,), (t,)), x, t, op="enzyme.fwddiff")
    _close(ex.outputs, jax.jvp(f, (x,), (t,)))


# ---------------------------------------------------------------- complex numbers
# Enzyme's reverse mode returns the conjugate of JAX's gradient of a real function of complex
# inputs (2z for |z|**2, where jax.grad gives 2 conj(z)); reactant_lab follows JAX everywhere.


def _c64(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(np.complex64)


def abs_squared(z):
    return jnp.sum(jnp.abs(z) ** 2)


def real_of_product(z, w):
    return jnp.sum(jnp.real(z * w))


def sum_of_moduli(z):
    return jnp.sum(jnp.abs(z))


def complex_matmul_energy(a, b):
    return jnp.sum(jnp.abs(jnp.tanh(a @ b)) ** 2)


def _complex_case(name, rng):
    return {"abs_squared": (abs_squared, (_c64(rng, 5),), 0),
            "real_of_product": (real_of_product, (_c64(rng, 4), _c64(rng, 4)), (0, 1)),
            "sum_of_moduli": (sum_of_moduli, (_c64(rng, 6),), 0),
            "complex_matmul": (complex_matmul_energy, (_c64(rng, 3, 4) * 0.5,
                                                       _c64(rng, 4, 2) * 0.5), (0, 1))}[name]


COMPLEX_CASES = ("abs_squared", "real_of_product", "sum_of_moduli", "complex_matmul")


@needs_enzyme
@pytest.mark.parametrize("name", COMPLEX_CASES)
def test_gradient_of_a_real_function_of_complex_inputs_is_jaxs(name, rng):
    fn, args, argnums = _complex_case(name, rng)
    ex = _explore_checked(rle.value_and_gradient(fn, argnums=argnums), *args)
    assert_close_to_scale(ex.outputs, jax.value_and_grad(fn, argnums=argnums)(*args), 2e-5,
                          name)
    # Called outside any trace (compiled through the pipeline): the same convention.
    assert_close_to_scale(rle.gradient(fn, argnums=argnums)(*args),
                          jax.grad(fn, argnums=argnums)(*args), 2e-5, f"{name} eager")


def holomorphic_sum(z, w):
    return jnp.sum(jnp.sin(z) * z * w)


def conj_weighted(z, w):
    return jnp.conj(z) * z * w + jnp.real(z) * 1j


@needs_enzyme
@pytest.mark.parametrize("fn", [holomorphic_sum, conj_weighted, lambda z, w: z @ w.T],
                         ids=["holomorphic", "not holomorphic", "matmul"])
def test_vjp_and_jvp_of_complex_functions_are_jaxs(fn, rng):
    z, w = _c64(rng, 3, 4), _c64(rng, 3, 4)
    out = jax.eval_shape(fn, z, w)
    ct = (rng.normal(size=out.shape) + 1j * rng.normal(size=out.shape)).astype(out.dtype)
    tz, tw = _c64(rng, 3, 4), _c64(rng, 3, 4)

    def ours(z, w, ct, tz, tw):
        out, pull = rle.vjp(fn, z, w)
        return out, pull(ct), rle.jvp(fn, (z, w), (tz, tw))

    ex = _explore_checked(ours, z, w, ct, tz, tw)
    out, pull = jax.vjp(fn, z, w)
    assert_close_to_scale(ex.outputs, (out, pull(ct), jax.jvp(fn, (z, w), (tz, tw))), 2e-5)
    assert_close_to_scale(rle.vjp(fn, z, w)[1](ct), pull(ct), 2e-5, "eager vjp")


@needs_enzyme
def test_vjp_of_a_real_to_complex_function_is_jaxs(rng):
    x, ct = _f32(rng, 6), _c64(rng, 6)

    def rotate(x):
        return x * (1.0 + 2.0j) + jnp.sin(x) * 1j

    ex = _explore_checked(lambda x, ct: rle.vjp(rotate, x)[1](ct), x, ct)
    assert_close_to_scale(ex.outputs, jax.vjp(rotate, x)[1](ct), 2e-5)


@needs_enzyme
def test_holomorphic_gradient_is_jaxs(rng):
    z, w = _c64(rng, 5), _c64(rng, 5)
    grad = rle.value_and_gradient(holomorphic_sum, holomorphic=True)
    ex = _explore_checked(grad, z, w)
    assert_close_to_scale(ex.outputs,
                          jax.value_and_grad(holomorphic_sum, holomorphic=True)(z, w), 2e-5)


@needs_enzyme
def test_complex_gradients_in_numpy_kernels_and_batches_are_jaxs(rng):
    z, zs = _c64(rng, 5), _c64(rng, 3, 5)

    def kernel(z):
        z[0] *= 2  # an in-place update: NumPy mode
        return np.sum(np.abs(z) ** 2)

    def kernel_ref(z):
        return jnp.sum(jnp.abs(z.at[0].multiply(2)) ** 2)

    want = jax.grad(kernel_ref)(z)
    assert_close_to_scale(rle.gradient(kernel)(z.copy()), want, 2e-5, "NumPy mode")
    stepped = rl.jit(lambda z: z - 0.1 * rle.gradient(kernel)(z.copy()))(z)
    assert_close_to_scale(stepped, z - 0.1 * want, 2e-5, "inside rl.jit")
    per_example = rl.explore(rle.batch(rle.gradient(abs_squared)), zs, mode="jax")
    assert_close_to_scale(per_example.outputs, jax.vmap(jax.grad(abs_squared))(zs), 2e-5,
                          "batch of gradient")


def test_complex_refusals_mirror_jax(rng):
    z, x = _c64(rng, 3), _f32(rng, 3)
    for call, jax_call, says in [
        (lambda: rle.gradient(lambda v: jnp.sum(v * v))(z),
         lambda: jax.grad(lambda v: jnp.sum(v * v))(z), "holomorphic=True"),
        (lambda: rle.gradient(lambda v: jnp.sum(v * v), holomorphic=True)(x),
         lambda: jax.grad(lambda v: jnp.sum(v * v), holomorphic=True)(x), "args[0]"),
        (lambda: rle.gradient(abs_squared, holomorphic=True)(z),
         lambda: jax.grad(abs_squared, holomorphic=True)(z), "complex output"),
    ]:
        with pytest.raises(TypeError) as theirs:
            jax_call()
        with pytest.raises(rl.EnzymeArgumentError, match=re.escape(says)) as info:
            call()
        assert isinstance(info.value, type(theirs.value))


# ---------------------------------------------------------------- outside any trace


@needs_enzyme
def test_eager_calls_compile_through_the_pipeline():
    rng = _rng()
    params, x, y = _mlp_params(rng), _f32(rng, 8, 3), _f32(rng, 8, 2)
    grad = rle.gradient(mlp_loss)
    _close(grad(params, x, y), jax.grad(mlp_loss)(params, x, y))
    _close(rle.value_and_gradient(sincos)(x[0]), jax.value_and_grad(sincos)(x[0]))
    _close(rle.jvp(sincos, (x,), (y[:, :1] + x,)), jax.jvp(sincos, (x,), (y[:, :1] + x,)))
    out, pull = rle.vjp(jnp.sin, x)
    _close(pull(x), jax.vjp(jnp.sin, x)[1](x))
    _close(out, jnp.sin(x))


# ---------------------------------------------------------------- presets


@needs_enzyme
@pytest.mark.parametrize("preset", ["only_enzyme", "after_enzyme", "before_enzyme"])
def test_presets_that_differentiate(preset):
    rng = _rng()
    x = _f32(rng, 8)
    ex = rl.explore(rle.gradient(sincos), x, mode="jax", optimize=preset)
    assert {s.name: s for s in ex.stages.stages}["enzyme (AD)"].changed
    _close(ex.outputs, jax.grad(sincos)(x))


@needs_enzyme
@pytest.mark.parametrize("preset", ["no_enzyme", "none"])
def test_presets_without_ad_leave_the_op_and_say_so(preset):
    x = _f32(_rng(), 8)
    traced = rl.trace(rle.gradient(sincos), x, mode="jax")
    stages = traced.stages(preset)
    assert "enzyme.autodiff" in stages.final.as_text()
    with pytest.raises(CompileError, match=r"still holds enzyme\.autodiff.*enzyme \(AD\)"):
        stages.compile()


# ---------------------------------------------------------------- without enzyme-ad


def test_fallback_to_jax_without_enzyme(monkeypatch):
    monkeypatch.setattr(backend, "enzyme_available", lambda: False)
    monkeypatch.setattr(backend, "enzyme_unavailable_reason", lambda: "disabled for the test")
    rng = _rng()
    params, x, y = _mlp_params(rng), _f32(rng, 8, 3), _f32(rng, 8, 2)
    with pytest.warns(EnzymeUnavailableWarning, match="disabled for the test"):
        _close(rle.gradient(mlp_loss)(params, x, y), jax.grad(mlp_loss)(params, x, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EnzymeUnavailableWarning)
        _close(rle.value_and_gradient(sincos)(x[0]), jax.value_and_grad(sincos)(x[0]))
        _close(rle.jvp(sincos, (x,), (x,)), jax.jvp(sincos, (x,), (x,)))
        _close(rle.vjp(jnp.sin, x)[1](x), jax.vjp(jnp.sin, x)[1](x))
        w, labels = _f32(rng, 3, 2), np.eye(2, dtype=np.float32)[rng.integers(0, 2, 8)]
        none_w, gx, none_l = rle.gradient(softmax_xent, activity=("const", "active", "const"))(
            w, x, labels)
        assert none_w is None and none_l is None
        _close(gx, jax.grad(softmax_xent, argnums=1)(w, x, labels))
        # Inside a trace the module then holds no Enzyme op.
        ex = rl.explore(rle.gradient(sincos), x[0], mode="jax")
    assert "enzyme.autodiff" not in ex.stages.stages[0].ir
    _close(ex.outputs, jax.grad(sincos)(x[0]))
