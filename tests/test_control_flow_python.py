"""Converted code keeps Python's semantics where a traced value meets a Python rule: variables a
statement leaves unassigned, the builtins min / max / abs / sum / round, 16-bit floats rounded at
every step as NumPy does, and recursion (issue 38). Differential against NumPy / Python eager on
fresh random inputs."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.errors import ControlFlowError, UnassignedVariableError
from tests.conftest import assert_close, assert_values_equal


def _copies(args: tuple[Any, ...]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def same_as_python(fn: Any, *args: Any, optimize: str = "none", mode: str = "auto") -> Any:
    """``rl.jit(fn)`` and ``fn`` eager on copies of ``args``: equal results (dtypes and NaNs
    included) and equal arguments afterwards; returns our result."""
    want_args, got_args = _copies(args), _copies(args)
    want = fn(*want_args)
    got = rl.jit(fn, optimize=optimize, mode=mode)(*got_args)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        _close(np.asarray(g), np.asarray(w))
    for g, w in zip(got_args, want_args, strict=True):
        if isinstance(w, np.ndarray):
            assert_values_equal(g, w)
    return got


def _close(got: np.ndarray, want: np.ndarray) -> None:
    """Same dtype (an int for Python's int), values within 1e-12 of the result's scale."""
    assert got.dtype == want.dtype or want.dtype.kind == got.dtype.kind == "i", (got, want)
    finite = want[np.isfinite(want)] if want.dtype.kind == "f" else np.zeros(0)
    scale = float(np.max(np.abs(finite), initial=1.0))
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-12,
                               atol=1e-12 * scale, equal_nan=True)


# ---------------------------------------------------------------------- unassigned variables

def index_after(a: np.ndarray, n: Any) -> Any:
    for i in range(n):
        a[i] += 1.0
    return i  # unassigned when the loop runs no iteration


def index_after_a_default(a: np.ndarray, n: Any) -> Any:
    i = 5
    for i in range(n):
        a[i] += 1.0
    return i, a


def written_after(a: np.ndarray, n: Any) -> None:
    for i in range(n):
        a[i] += 1.0
    a[0] = i


def test_the_index_of_an_empty_static_loop_is_unbound_as_in_python(rng: Any) -> None:
    a = rng.random(4)
    before = a.copy()
    for fn in (index_after, written_after):
        with pytest.raises(UnboundLocalError, match="'i'") as python:
            fn(a.copy(), 0)
        with pytest.raises(UnboundLocalError, match="'i'") as ours:
            rl.jit(fn)(a, 0)
        assert not isinstance(ours.value, UnassignedVariableError)  # Python's own error
        assert ours.value.args == python.value.args
        np.testing.assert_array_equal(a, before)
    assert same_as_python(index_after, a, 3) == 2


def test_the_index_of_a_loop_over_a_traced_range_must_have_a_value_before_it(rng: Any) -> None:
    a = rng.random(4)
    before = a.copy()
    with pytest.raises(UnassignedVariableError,
                       match=r"(?s)`i` may have no value at .*test_control_flow_python.py:\d+ "
                             r"in index_after.*return i.*trip count.*Give `i` an int before"):
        rl.jit(index_after)(a, np.int64(3))
    np.testing.assert_array_equal(a, before)
    for n in (0, 1, 3):  # with a value before it, the loop keeps Python's semantics
        same_as_python(index_after_a_default, a, np.int64(n))


def maybe_assigned(x: np.ndarray) -> Any:
    if x.sum() > 0:
        t = x * 2
    return t


def test_a_variable_one_traced_branch_assigns_is_never_handed_back(rng: Any) -> None:
    for mode, x in (("numpy", rng.random(3)), ("jax", jnp.asarray(rng.random(3)))):
        with pytest.raises(UnassignedVariableError, match=r"(?s)`t` may have no value.*"
                                                          r"assigned only in the if branch"):
            rl.jit(maybe_assigned, mode=mode)(x)


def assigned_after_continue(a: np.ndarray) -> Any:
    for i in range(10):
        if a[i] > 0.5:
            continue
        t = a[i] * 2
    return t


def test_a_variable_assigned_after_a_traced_continue_says_why(rng: Any) -> None:
    with pytest.raises(UnassignedVariableError,
                       match=r"(?s)`t` may have no value.*the rest of the loop body after the "
                             r"`continue` at line \d+ \(at .*\), which runs only when"):
        rl.jit(assigned_after_continue)(rng.random(10))


def assigned_if(x: np.ndarray, flag: bool) -> Any:
    if flag:
        t = x * 2
    return t


def test_a_variable_a_static_branch_leaves_unassigned_is_unbound_as_in_python(rng: Any) -> None:
    with pytest.raises(UnboundLocalError) as python:
        assigned_if(rng.random(3), False)
    with pytest.raises(UnboundLocalError) as ours:
        rl.jit(assigned_if)(rng.random(3), False)
    assert ours.value.args == python.value.args
    same_as_python(assigned_if, rng.random(3), True)


# ---------------------------------------------------------------------- builtins

def running_max(a: np.ndarray) -> Any:
    m = a[0]
    for i in range(1, a.shape[0]):
        m = max(m, a[i])
    return m


def running_min(a: np.ndarray) -> Any:
    m = a[0]
    for i in range(1, a.shape[0]):
        m = min(a[i], m)  # the argument order matters for NaN: Python keeps the first
    return m


@pytest.mark.parametrize("optimize", ["none", "all"])
@pytest.mark.parametrize("nan_at", [None, 0, 1, -1])
def test_builtin_max_and_min_in_a_loop_keep_pythons_semantics(rng: Any, optimize: str,
                                                              nan_at: int | None) -> None:
    a = rng.uniform(-4, 4, 12)
    if nan_at is not None:
        a[nan_at] = np.nan
    for fn in (running_max, running_min):
        same_as_python(fn, a, optimize=optimize)


def builtins_outside_loops(a: np.ndarray) -> Any:
    return (max(a[0], a[1], a[2]), min(a[3], a[0]), max(a), min(a[2:]), max([a[1], a[4]]),
            max(a[0], 2.5), abs(a[1]), abs(a[2:4]), sum(a[1:5]), sum(a[1:4], a[0]),
            sum([a[2], a[3]], 10))


@pytest.mark.parametrize("optimize", ["none", "all"])
def test_builtins_on_traced_values_outside_loops(rng: Any, optimize: str) -> None:
    a = rng.uniform(-4, 4, 6)
    a[1] = a[3] = np.nan
    same_as_python(builtins_outside_loops, a, optimize=optimize)
    same_as_python(builtins_outside_loops, rng.uniform(-4, 4, 6), optimize=optimize)


def test_builtin_max_and_min_in_jax_mode_keep_pythons_semantics(rng: Any) -> None:
    def fn(x: Any) -> Any:
        return max(x[0], x[1]), max(x[1], x[0]), min(x[1], x[2]), max(x)

    x = rng.uniform(-4, 4, 4).astype(np.float32)
    x[1] = np.nan
    got = rl.jit(fn, mode="jax")(jnp.asarray(x))
    want = fn(jnp.asarray(x))  # JAX eager: concrete values, Python's own max
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def rounded(a: np.ndarray) -> Any:
    return round(a[0]), round(a[1]), round(a[2]) * 3, round(a[3], 2), round(a[4], 0)


def test_builtin_round_of_a_traced_scalar(rng: Any) -> None:
    a = np.concatenate([[2.5, -0.5], rng.uniform(-4, 4, 3)])  # ties round to even
    got = same_as_python(rounded, a)
    assert all(np.asarray(g).dtype.kind == "i" for g in got[:3])  # an int, as in Python
    with pytest.raises(TypeError, match="doesn't define __round__"):  # NumPy arrays have none
        rl.jit(lambda x: round(x[1:]))(a)
    with pytest.raises(TypeError, match="bfloat16 doesn't define __round__"):
        rl.jit(lambda x: round(x[0]))(a.astype(ml_dtypes.bfloat16))


# ---------------------------------------------------------------------- 16-bit floats

def accumulate_scalar(a: np.ndarray) -> Any:
    s = a.dtype.type(0)
    for _ in range(3000):
        s = s + a[0]
    return s


def accumulate_array(a: np.ndarray) -> Any:
    s = np.zeros(3, a.dtype)
    for i in range(600):
        s = s + a[i % 2]
    return s


def accumulate_element(a: np.ndarray) -> Any:
    acc = np.zeros(2, a.dtype)
    for i in range(500):
        acc[i % 2] += a[i % 3]
    return acc


@pytest.mark.parametrize("optimize", ["none", "all"])
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_16_bit_floats_round_at_every_step_as_numpy(rng: Any, dtype: Any, optimize: str) -> None:
    """NumPy rounds a 16-bit float after every addition: 3,000 x 0.1 in float16 stops at 256.
    A loop that only accumulates used to be summed in one go (300)."""
    a = rng.uniform(0.05, 0.2, 3).astype(dtype)
    for fn in (accumulate_scalar, accumulate_array, accumulate_element):
        got, want = rl.jit(fn, optimize=optimize)(a.copy()), fn(a.copy())
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# ---------------------------------------------------------------------- recursion

def doubled(a: np.ndarray, n: int) -> Any:
    if n == 0:
        return a
    return doubled(a * 2, n - 1)


def even(a: np.ndarray, n: int) -> Any:
    return a if n == 0 else odd(a + 1, n - 1)


def odd(a: np.ndarray, n: int) -> Any:
    return a * 2 if n == 0 else even(a * 3, n - 1)


def fib(x: np.ndarray, n: int) -> Any:
    if n <= 1:
        return x
    return fib(x, n - 1) + fib(x * 0.5, n - 2)


def writes_fib(a: np.ndarray) -> None:
    for i in range(a.shape[0]):
        a[i] = fib(a[i], 4)


def nested_recursion(a: np.ndarray) -> Any:
    def steps(x: Any, n: int) -> Any:
        return x if n == 0 else steps(x + 1, n - 1)
    return steps(a, 4)


def test_static_recursion_traces_as_python_does(rng: Any) -> None:
    a = rng.random(3)
    same_as_python(doubled, a, 3)
    same_as_python(even, a, 5)
    same_as_python(even, a, 4)
    same_as_python(writes_fib, rng.random(9))
    same_as_python(nested_recursion, a)
    x = jnp.asarray(rng.random(3))
    assert_close(np.asarray(rl.jit(even, mode="jax")(x, 5)),
                               np.asarray(even(x, 5)), rtol=1e-6)


def halve_until_small(a: np.ndarray) -> Any:
    return a if a[0] < 1 else halve_until_small(a * 0.5)


def test_recursion_on_a_traced_condition_says_it_cannot_end(rng: Any) -> None:
    a = rng.uniform(4, 8, 3)
    before = a.copy()
    with pytest.raises(ControlFlowError, match=r"halve_until_small\(\) calls itself without "
                                               r"end while tracing.*static"):
        rl.jit(halve_until_small)(a)
    np.testing.assert_array_equal(a, before)
