"""NumPy mode's errors: each says what failed, names the user's line, and says what to do."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from tests.conftest import assert_close, assert_values_equal

HERE = __file__


def line_of(fn, needle: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if needle in line)


def test_unsupported_function_names_it_and_the_line(rng):
    def kernel(x):
        y = x * 2
        return np.unique(y)

    with pytest.raises(rl.UnsupportedNumpyFunctionError) as info:
        rl.trace(kernel, rng.random(4))
    err = info.value
    assert err.function == "np.unique"
    assert (err.filename, err.lineno) == (HERE, line_of(kernel, "np.unique(y)"))
    text = str(err)
    assert "np.unique has no traced equivalent" in text
    assert "depends on the values" in text and f"{HERE}:{err.lineno}" in text
    assert "np.where" in text and isinstance(err, rl.TraceError)


def test_unsupported_ufunc_method_and_namespaced_function(rng):
    with pytest.raises(rl.UnsupportedNumpyFunctionError, match=r"np\.add\.reduceat"):
        rl.trace(lambda x: np.add.reduceat(x, [0, 2]), rng.random(4))
    with pytest.raises(rl.DynamicShapeError, match="bins='auto'"):
        rl.trace(lambda x: np.histogram(x, bins="auto")[0], rng.random(4))


def test_random_inside_the_kernel_says_to_pass_values_in(rng):
    def kernel(x):
        noise = np.random.rand(*x.shape)
        return x + noise

    with pytest.raises(rl.UnsupportedNumpyFunctionError) as info:
        rl.trace(kernel, rng.random(4))
    assert info.value.function == "np.random.rand"
    assert info.value.lineno == line_of(kernel, "np.random.rand")
    assert "pass them in as an argument" in str(info.value)
    with pytest.raises(rl.UnsupportedNumpyFunctionError, match="default_rng"):
        rl.trace(lambda x: x + np.random.default_rng(0).random(), rng.random(4))
    assert np.random.rand(2).shape == (2,)  # the real np.random is back


def test_a_generator_argument_is_refused(rng):
    with pytest.raises(rl.UnsupportedArgumentError, match=r"args\[1\] is a Generator.*pass"):
        rl.trace(lambda x, g: x + g.random(), rng.random(3), rng)


def test_python_control_flow_on_a_traced_value(rng):
    def kernel(x):
        if x.sum() > 0:
            return x
        return -x

    x = rng.random(3) - 0.5
    np.testing.assert_allclose(rl.jit(kernel)(x), kernel(x))  # its returns lifted: one select
    with pytest.raises(rl.ControlFlowError) as info:
        rl.trace(kernel, x, loops="unroll")
    err = info.value
    assert (err.filename, err.lineno) == (HERE, line_of(kernel, "if x.sum() > 0"))
    assert "np.where(cond, a, b)" in str(err) and "static ranges" in str(err)


def test_loop_bound_from_a_traced_value(rng):
    def kernel(x, n):
        for _ in range(n[0]):
            x = x * 2
        return x

    x, n = rng.random(3), np.array([int(rng.integers(2, 6))])
    assert "stablehlo.while" in rl.trace(kernel, x, n).ir  # rolled by default
    assert_close(rl.jit(kernel)(x, n), kernel(x, n))
    with pytest.raises(rl.ControlFlowError, match="range"):
        rl.trace(kernel, x, n, loops="unroll")


def test_item_and_tolist_need_a_value(rng):
    def kernel(x):
        return x * x.max().item()

    with pytest.raises(rl.ControlFlowError, match=r"x\.item\(\) needs the value") as info:
        rl.trace(kernel, rng.random(3))
    assert info.value.lineno == line_of(kernel, ".item()")
    with pytest.raises(rl.ControlFlowError, match=r"x\.tolist\(\)"):
        rl.trace(lambda x: x.tolist(), rng.random(3))


def test_numpy_constant_indexed_by_a_traced_array(rng):
    tables = {"t": np.arange(10.0)}  # an array inside a container is not captured

    def kernel(idx):
        return tables["t"][idx] * 2

    with pytest.raises(rl.TraceError, match="converted to a NumPy array") as info:
        rl.trace(kernel, np.array([1, 2, 3]))
    assert "pass them in as arguments" in str(info.value)


def test_captured_numpy_array_indexed_by_a_traced_array(rng):
    table = rng.random(10)

    def kernel(idx):
        return table[idx] * 2

    idx = rng.integers(0, 10, 4)
    assert_values_equal(rl.jit(kernel)(idx), kernel(idx))


def test_jax_array_in_numpy_mode_cannot_be_updated():
    def kernel(x):
        x[0] = 1.0
        return x

    with pytest.raises(rl.TraceError, match=r"args\[0\] is a JAX array \(immutable\)"):
        rl.trace(kernel, jnp.ones(3), mode="numpy")


def test_numpy_scalar_argument_cannot_be_updated_but_rebinds():
    def writes(s):
        s[...] = 2.0
        return s

    def rebinds(s):
        s += 1.0
        return s

    with pytest.raises(rl.TraceError, match="NumPy scalar"):
        rl.trace(writes, np.float64(1.0))
    t = rl.trace(rebinds, np.float64(1.0))
    assert t.mutated == ()
    assert t.stages("none").compile()(np.float64(1.0)) == 2.0


def test_read_only_argument_raises_numpys_error(rng):
    a = rng.random(3)
    a.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        rl.trace(lambda x: x.__setitem__(0, 1.0), a)


def test_data_dependent_shapes(rng):
    with pytest.raises(rl.DynamicShapeError, match=r"shape of a\[mask\]") as info:
        rl.trace(lambda x: x[x > 0.5].shape, rng.random(4))
    assert "np.where(mask, a, other)" in str(info.value)
    with pytest.raises(rl.DynamicShapeError, match=r"np\.cumsum of a\[mask\]"):
        rl.trace(lambda x: np.cumsum(x[x > 0.5]), rng.random(4))
    with pytest.raises(rl.DynamicShapeError, match="result"):
        rl.trace(lambda x: x[x > 0.5], rng.random(4))


def test_unknown_mode():
    with pytest.raises(rl.TraceError, match=r"unknown trace mode 'cupy'.*auto, numpy, jax"):
        rl.trace(lambda x: x, np.ones(2), mode="cupy")


def test_jax_code_in_forced_numpy_mode(rng):
    def kernel(x):
        return jnp.tanh(x)

    x = rng.random(3)
    traced = rl.trace(kernel, x, mode="numpy")  # JAX functions get the traced values
    assert traced.mode == "numpy"
    assert_close(traced.stages("none").compile()(x), np.tanh(x), rtol=1e-12)

    def fails_in_jax(x):
        return jax.tree.map(lambda v: v.aval.ndim, x)

    with pytest.raises(rl.TraceError, match="hands a NumPy-mode array to JAX, which fails on "
                                            "it") as info:
        rl.trace(fails_in_jax, x, mode="numpy")
    assert "mode='jax'" in str(info.value) and f"{HERE}:" in str(info.value)
    assert "has no attribute 'aval'" in str(info.value)


def test_updated_argument_overlapping_another(rng):
    def kernel(a, b):
        a += 1
        return b.sum()

    base = rng.random(6)
    with pytest.raises(rl.UnsupportedArgumentError,
                       match=r"args\[0\] .*shares memory with args\[1\]"):
        rl.trace(kernel, base, base[2:])


def test_updated_argument_must_be_writable_at_call_time(rng):
    def kernel(a):
        a *= 2

    compiled = rl.trace(kernel, rng.random(3)).stages("none").compile()
    frozen = rng.random(3)
    frozen.flags.writeable = False
    with pytest.raises(rl.UnsupportedArgumentError, match=r"args\[0\] must be a writable"):
        compiled(frozen)


def test_numpys_own_errors_come_through(rng):
    ints = rng.integers(0, 9, 3)
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output"):
        rl.trace(lambda a: a.__iadd__(0.5), ints)  # int array += float
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        rl.trace(lambda a: a + 1000, ints.astype(np.int8))
    with pytest.raises(ValueError, match="could not broadcast"):
        rl.trace(lambda a: a[:2].__setitem__(Ellipsis, np.ones((2, 3))), rng.random(3))
    with pytest.raises(ValueError, match="cannot reshape array of size 3"):
        rl.trace(lambda a: a.reshape(2, 2), rng.random(3))
