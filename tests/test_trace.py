"""Tracing: argument and result paths, static args, preserved results, 64-bit, bad input."""

from __future__ import annotations

import dataclasses
import gc
import inspect
import re
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from tests.conftest import assert_close, assert_values_equal


class Pair(NamedTuple):
    a: np.ndarray
    b: np.ndarray


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Net:
    layers: list
    bias: np.ndarray


def test_acceptance_first_arg_path():
    t = rl.trace(lambda p, x: (p["w"] @ x).sum(), {"w": np.ones((3, 4), np.float32)},
                 np.ones(4, np.float32))
    assert t.linear_args[0].path == "args[0]['w']"


def test_golden_argument_and_result_paths():
    def f(params, pair, net, *, bias, scale):
        return {"loss": (params["w"] @ pair.a).sum() + bias.sum(),
                "aux": [pair.b * scale, net.layers[1]["k"] + net.bias]}

    x = np.ones(3, np.float32)
    t = rl.trace(f, {"w": np.ones((2, 3), np.float32)}, Pair(x, x),
                 Net([{"k": x}, {"k": x}], x), bias=np.float32(1.0), scale=2.0)
    assert [a.path for a in t.linear_args] == [
        "args[0]['w']", "args[1].a", "args[1].b", "args[2].layers[0]['k']",
        "args[2].layers[1]['k']", "args[2].bias", "kwargs['bias']"]
    assert [a.index for a in t.linear_args] == list(range(7))
    assert [(s.path, s.value_repr) for s in t.skipped_args] == [("kwargs['scale']", "2.0")]
    assert [r.path for r in t.linear_results] == [
        "result['aux'][0]", "result['aux'][1]", "result['loss']"]
    assert t.linear_results[2].shape == () and t.linear_results[2].dtype == np.float32
    assert t.mutated == () and t.mode == "numpy"  # NumPy arrays in: NumPy mode


def test_block_arguments_carry_their_paths():
    t = rl.trace(lambda d: d["<w>"] * 2, {"<w>": np.ones(2, np.float32)})
    signature = next(ln for ln in t.as_text().splitlines() if "func.func public @main" in ln)
    assert "loc(\"args[0]['<w>']\")" in signature
    assert "jax.result_info = \"result\"" in signature
    assert "loc(#" not in t.as_text()  # op locations only with debug_info=True
    assert "loc(#" in t.as_text(debug_info=True)


def test_none_and_static_values_are_skipped_and_recorded():
    def f(x, cfg, maybe, label):
        return x * cfg["k"] if label == "scale" else x

    t = rl.trace(f, np.ones(2, np.float32), {"k": 3}, None, "scale")
    assert [(s.path, s.value_repr) for s in t.skipped_args] == [
        ("args[1]['k']", "3"), ("args[2]", "None"), ("args[3]", "'scale'")]
    assert len(t.linear_args) == 1
    assert "3.000000e+00" in t.as_text()  # the static 3 is baked in as a constant


def test_trace_scalars_makes_python_numbers_arguments():
    t = rl.trace(lambda x, s: x * s, np.ones(2, np.float32), 2.5, trace_scalars=True)
    assert [a.path for a in t.linear_args] == ["args[0]", "args[1]"]
    assert t.linear_args[1].weak_type and t.linear_args[1].shape == ()
    assert t.linear_results[0].dtype == np.float32  # weak scalar does not promote
    c = t.stages("none").compile()
    assert_close(c(np.ones(2, np.float32), 4.0), [4.0, 4.0])


def test_numpy_scalars_are_traced():
    t = rl.trace(lambda x, s: x * s, np.ones(2, np.float32), np.float32(3))
    assert t.linear_args[1].path == "args[1]" and t.linear_args[1].shape == ()


def test_64bit_inputs_stay_64bit(rng):
    x = rng.standard_normal(4)
    t = rl.trace(lambda a, i: a * 2 + i, x, np.arange(4, dtype=np.int64))
    assert "tensor<4xf64>" in t.as_text() and "tensor<4xi64>" in t.as_text()
    assert t.linear_results[0].dtype == np.float64
    out = t.stages().compile()(x, np.arange(4, dtype=np.int64))
    assert out.dtype == np.float64
    assert_close(out, x * 2 + np.arange(4), rtol=1e-15)
    assert not jax.config.jax_enable_x64  # the global flag is left as it was


def test_preserved_results_are_not_computed_by_the_module():
    t = rl.trace(lambda x, y: (x, y + 1), np.ones(3, np.float32), np.ones(3, np.float32))
    assert dict(t.preserved) == {"result[0]": "args[0]"}
    assert t.donation_mask == (False, True)
    main = next(ln for ln in t.as_text().splitlines() if "@main" in ln)
    assert main.count("jax.result_info") == 1  # only result[1] is a module result


def _line_of(fn, needle):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if needle in ln)


def branchy(x):
    y = x * 2
    if y.sum() > 0:  # data-dependent Python branch
        return y
    return -y


def loopy(x):
    n = 0
    while x[n] > 0:
        n += 1
    return x + n  # its count used: a loop no result needs is dead code, lowered to nothing


def intish(x):
    return jnp.zeros(int(x.sum()))


@pytest.mark.parametrize(("fn", "needle"), [
    (branchy, "if y.sum() > 0"), (loopy, "while x[n] > 0"), (intish, "int(x.sum())")])
def test_control_flow_on_traced_value_names_file_and_line(fn, needle):
    with pytest.raises(rl.ControlFlowError) as info:
        rl.trace(fn, np.ones(3, np.float32), loops="unroll")
    err = info.value
    assert err.filename == __file__
    assert err.lineno == _line_of(fn, needle)
    assert f"{__file__}:{err.lineno}" in str(err)
    assert "lax.cond" in str(err) and "jnp.where" in str(err)
    assert isinstance(err, rl.ReactantLabError)


def test_a_while_on_a_traced_value_rolls_by_default(rng):
    x = rng.random(12) + 0.1
    x[7] = -1.0
    t = rl.trace(loopy, x)
    assert "stablehlo.while" in t.ir and t.loop_notes == ()
    assert_values_equal(rl.jit(loopy)(x), loopy(x))


def test_numpy_call_on_traced_value_is_explained():
    with pytest.raises(rl.TraceError, match=r"converted to a NumPy array.*test_trace\.py"):
        rl.trace(lambda x: np.asarray(x) + 1, jnp.ones(3))


def test_user_errors_keep_their_type_and_gain_a_note():
    def bad(x):
        return x @ x.T.reshape(7)

    with pytest.raises(TypeError) as info:
        rl.trace(bad, np.ones((2, 3), np.float32), mode="jax")
    assert any("test_trace.py" in n for n in getattr(info.value, "__notes__", []))


class ArrayLike:
    def __array__(self, dtype=None, copy=None):
        return np.ones(3)


@pytest.mark.parametrize(("leaf", "what"), [
    (ArrayLike(), "array-like"),
    (np.array(["a", "b"]), "dtype <U1"),
    (np.array([object(), None]), "dtype object"),
    ({1, 2}, "not hashable|neither an array"),
    (bytearray(b"xy"), "neither an array"),
])
def test_unsupported_leaf_names_path_and_type(leaf, what):
    with pytest.raises(rl.UnsupportedArgumentError, match=what) as info:
        rl.trace(lambda p, x: x, {"bad": [leaf]}, np.ones(2, np.float32))
    assert info.value.path == "args[0]['bad'][0]"
    assert info.value.path in str(info.value)
    assert info.value.leaf_type is type(leaf)


def test_tracer_argument_is_rejected():
    def outer(x):
        return rl.trace(lambda y: y, x)

    with pytest.raises(rl.UnsupportedArgumentError, match="JAX tracer"):
        jax.jit(outer)(jnp.ones(2))


def test_not_a_function():
    with pytest.raises(rl.TraceError, match="pass the function itself"):
        rl.trace(np.ones(3), np.ones(3))


def test_closure_over_large_constant_works(rng):
    table = rng.standard_normal((64, 64)).astype(np.float32)
    x = rng.standard_normal(64).astype(np.float32)
    t = rl.trace(lambda v: table @ v, x)
    out = t.stages().compile()(x)
    np.testing.assert_allclose(out, table @ x, rtol=1e-4, atol=1e-4)


def test_summary_lists_everything():
    t = rl.trace(lambda x, n: (x, x * n), np.ones(2, np.float32), 3)
    text = str(t)
    assert "args[0]" in text and "static args[1] = 3" in text
    assert re.search(r"result\[0\].*alias of args\[0\]", text)


def _generator(x):
    yield x * 2


async def _coroutine(x):
    return x * 2


@pytest.mark.parametrize("fn", [_generator, _coroutine])
def test_generators_and_async_functions_are_refused_up_front(fn):
    x = np.ones(3)
    for entry in (lambda: rl.jit(fn), lambda: rl.trace(fn, x), lambda: rl.explore(fn, x)):
        with pytest.raises(rl.TraceError, match=f"{fn.__name__} is an? (generator|async)"):
            entry()
    np.testing.assert_array_equal(x, np.ones(3))


def test_the_garbage_collector_is_off_while_tracing_and_restored_after():
    seen = []

    def kernel(x):
        seen.append(gc.isenabled())
        return x * 2.0

    def failing(x):
        seen.append(gc.isenabled())
        raise ValueError("the user's own error")

    assert gc.isenabled()
    rl.trace(kernel, np.ones(3))
    assert seen == [False] and gc.isenabled()
    with pytest.raises(ValueError, match="the user's own error"):
        rl.trace(failing, np.ones(3))
    assert seen[-1] is False and gc.isenabled()
    gc.disable()  # a user who runs without it keeps it off
    try:
        rl.trace(kernel, np.ones(4))
        assert not gc.isenabled()
    finally:
        gc.enable()
