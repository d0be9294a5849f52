"""Python loops and branches on traced values, converted to stablehlo.while / case (loops=):
differential against NumPy eager / JAX eager on fresh random inputs."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.analysis.ops import op_counts, total_ops
from reactant_lab.errors import ControlFlowError, UnassignedVariableError
from reactant_lab.trace import trace


def _copies(args: tuple[Any, ...]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def check(fn: Any, *args: Any, loops: str = "auto", optimize: str = "none") -> rl.Traced:
    """Trace, compile and run ``fn``; its results and updated arguments must equal eager
    Python's on copies of the same arguments."""
    expected_args = _copies(args)
    expected = fn(*expected_args)
    got_args = _copies(args)
    traced = trace(fn, *got_args, loops=loops)
    got = traced.stages(optimize).compile()(*got_args)
    for e, g in zip(jax.tree_util.tree_leaves(expected), jax.tree_util.tree_leaves(got),
                    strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-9, atol=1e-12)
    for e, g in zip(expected_args, got_args, strict=True):
        if isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
    return traced


def ops(traced: rl.Traced) -> int:
    return total_ops(op_counts(traced.ir))


def stencil(u: np.ndarray, steps: int) -> None:
    for _ in range(steps):
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * (u[2:, 1:-1] - 2 * u[1:-1, 1:-1] + u[:-2, 1:-1]
                                                + u[1:-1, 2:] - 2 * u[1:-1, 1:-1] + u[1:-1, :-2])
        u[0, :] = u[1, :]
        u[-1, :] = u[-2, :]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


@pytest.mark.parametrize("optimize", ["none", "all"])
def test_stencil_rolls_and_its_size_does_not_grow_with_the_steps(rng: Any, optimize: str) -> None:
    u = rng.random((24, 24))
    short = check(stencil, u, 10, optimize=optimize)
    long = trace(stencil, u.copy(), 1000, loops="auto")
    assert "stablehlo.while" in short.ir and not short.loop_notes
    assert abs(ops(long) - ops(short)) <= 0.1 * ops(short)
    assert short.mutated == ("args[0]",)


def test_loops_unroll_is_todays_behaviour(rng: Any) -> None:
    traced = check(stencil, rng.random((8, 8)), 10, loops="unroll")
    assert "stablehlo.while" not in traced.ir
    assert ops(traced) > 2 * ops(trace(stencil, rng.random((8, 8)), 10, loops="auto"))


def test_small_static_loops_stay_python(rng: Any) -> None:
    traced = check(stencil, rng.random((8, 8)), 3)
    assert "stablehlo.while" not in traced.ir and not traced.loop_notes


def views_in_loop(a: np.ndarray) -> Any:
    inner = a[1:-1]
    for i in range(12):
        inner[...] = inner * 0.5 + a[:-2]
        a[i % 3] += i
    return a.sum()


def rebinding(x: np.ndarray) -> Any:
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i] * i
    total = np.zeros(3)
    for i in range(10):
        total = total + x[i] * np.arange(3)
    return acc, total


def nested(a: np.ndarray) -> Any:
    s = np.zeros(a.shape[1])
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            s[j] = s[j] + a[i, j] * (i - j)
    return s


def loop_in_branch(a: np.ndarray) -> Any:
    if a.sum() > 0:
        for _ in range(10):
            a = a * 0.9 + 1
    else:
        a = a - 1
    return a


@pytest.mark.parametrize("fn,shape", [(views_in_loop, (14,)), (rebinding, (16,)),
                                      (nested, (9, 10)), (loop_in_branch, (4,))])
def test_numpy_kernels_roll(rng: Any, fn: Any, shape: tuple[int, ...]) -> None:
    for sign in (1, -1):
        traced = check(fn, sign * rng.random(shape), loops="roll")
        assert "stablehlo.while" in traced.ir or "stablehlo.case" in traced.ir
        assert not traced.loop_notes
        if fn is nested:  # its inner loop's iterations are independent: batched under 'auto'
            auto = check(fn, sign * rng.random(shape), loops="auto")
            assert auto.ir.count("stablehlo.while") == 1
            assert [" batched (" in n for n in auto.loop_notes] == [True]


def branch(x: Any) -> Any:
    if (x * x).sum() > 1.0:
        y = x * 2
        z = 1
    elif x.sum() > 0:
        y = x - 1
        z = 2.5
    else:
        y = x
        z = 0
    return y, z


@pytest.mark.parametrize("as_jax", [False, True])
def test_if_on_a_traced_condition_becomes_a_case(rng: Any, as_jax: bool) -> None:
    for scale in (1.0, 0.1, -0.1):
        x = scale * rng.random(4)
        traced = check(branch, jnp.asarray(x) if as_jax else x)
        assert traced.mode == ("jax" if as_jax else "numpy")
        assert "stablehlo.case" in traced.ir


def one_sided(x: np.ndarray) -> Any:
    if x.sum() > 0:
        t = x * 2
    return t + 1  # assigned in one branch only


def test_a_variable_assigned_in_one_branch_only_is_undefined_after(rng: Any) -> None:
    with pytest.raises(UnassignedVariableError,
                       match=r"`t` may have no value at .*test_control_flow.py:\d+ in one_sided"
                             r"(?s:.*)assigned only in the if branch"):
        rl.jit(one_sided, loops="auto")(rng.random(3))


def disagree(x: np.ndarray) -> Any:
    y = x[:2] if x.sum() > 0 else x  # a conditional expression: NumPy picks one
    if x.sum() > 0:
        y = x[:2]
    return y


def test_branches_that_disagree_name_the_line(rng: Any) -> None:
    with pytest.raises(ControlFlowError, match=r"test_control_flow.py:\d+.*disagree"):
        trace(disagree, rng.random(3), loops="auto")


def newton(x: np.ndarray, tol: float) -> Any:
    err = np.inf
    it = 0
    while err > tol:
        x = 0.5 * (x + 2.0 / x)
        err = np.abs(x * x - 2.0).max()
        it += 1
    return x, it


def test_while_on_a_traced_condition(rng: Any) -> None:
    traced = check(newton, rng.random(5) + 1.0, 1e-12)
    assert "stablehlo.while" in traced.ir


def jax_loop(x: Any, n: int) -> Any:
    for i in range(n):
        x = _jax_helper(x, i) + 1.0
    while jnp.max(jnp.abs(x)) > 1.0:
        x = x * 0.5
    return x


def _jax_helper(x: Any, i: Any) -> Any:
    if i > 3:
        x = x * 1.01
    return x


def test_jax_mode_loops_and_user_helpers_convert(rng: Any) -> None:
    traced = check(jax_loop, jnp.asarray(rng.random(3), jnp.float32), 20, optimize="all")
    assert traced.mode == "jax" and "stablehlo.while" in traced.ir and not traced.loop_notes


def with_break(x: np.ndarray) -> Any:
    for i in range(10):
        if i == 5:
            break
        x[i] = i
    return x


def test_break_rolls_in_auto_and_in_roll(rng: Any) -> None:
    for loops in ("auto", "roll"):
        traced = check(with_break, rng.random(10), loops=loops)
        assert "stablehlo.while" in traced.ir and traced.loop_notes == ()


def break_on_traced(x: np.ndarray) -> Any:
    while x.sum() < 100:
        x = x * 2
        if x.max() > 50:
            break
    return x


def test_break_under_a_traced_condition_rolls(rng: Any) -> None:
    traced = check(break_on_traced, rng.random(3) + 0.1)
    assert "stablehlo.while" in traced.ir and traced.loop_notes == ()


def return_on_traced(x: np.ndarray) -> Any:
    while x.sum() < 100:
        x = x * 2
        if x.max() > 50:
            return x
    return x


def test_return_under_a_traced_condition_is_refused_with_the_line(rng: Any) -> None:
    with pytest.raises(ControlFlowError, match=r"test_control_flow.py:\d+.*\n.*while x.sum"):
        trace(return_on_traced, rng.random(3) + 0.1, loops="auto")


def growing(x: np.ndarray) -> Any:
    y = x
    for _ in range(10):
        y = np.concatenate([y, x[:1]])
    return y


def triangular(a: np.ndarray) -> Any:
    for i in range(a.shape[0]):
        a[i, :i] = a[i, :i] * 0.5
    return a


def test_a_carry_that_changes_shape_unrolls_in_auto_and_fails_in_roll(rng: Any) -> None:
    traced = check(growing, rng.random(3))
    assert "changes from float64[4] to float64[5]" in traced.loop_notes[0]
    with pytest.raises(ControlFlowError, match=r"test_control_flow.py:\d+.*float64\[5\]"):
        trace(growing, rng.random(3), loops="roll")


def test_a_slice_whose_bound_is_the_index_rolls_with_a_mask(rng: Any) -> None:
    """Rolled (loops='roll'), the masked row write is a scatter; under 'auto' the iterations,
    each writing only its own row's masked prefix, run batched (no loop left)."""
    traced = check(triangular, rng.random((9, 9)), loops="roll")
    assert "stablehlo.while" in traced.ir and "stablehlo.scatter" in traced.ir
    assert traced.loop_notes == ()
    traced = check(triangular, rng.random((9, 9)))
    assert "stablehlo.while" not in traced.ir and "scatter" not in traced.ir
    assert "batched (9 iterations)" in traced.loop_notes[0], traced.loop_notes


def python_counter(x: np.ndarray) -> Any:
    t = 0.0
    for _ in range(10):
        x = x + t
        t += 0.5
    return x, t


def test_a_python_number_the_loop_changes(rng: Any) -> None:
    assert check(python_counter, rng.random(3)).loop_notes  # auto: stays a Python number
    traced = check(python_counter, rng.random(3), loops="roll")
    assert "stablehlo.while" in traced.ir


def test_loops_option_reaches_jit_and_explore(rng: Any) -> None:
    u = rng.random((8, 8))
    f = rl.jit(stencil, optimize="none", loops="unroll")
    f(u, 10)
    assert f.last is not None and "stablehlo.while" not in f.last.traced_call.ir
    ex = rl.explore(stencil, u, 10, optimize="none", loops="roll")
    assert "stablehlo.while" in ex.traced_call.ir
    with pytest.raises(rl.TraceError, match="loops"):
        trace(stencil, u, 10, loops="sometimes")


def side_effects(x: np.ndarray) -> Any:
    seen = []
    for i in range(10):
        x = x + i
        seen.append(i)
    return x, len(seen)


def test_python_side_effects_keep_the_loop_python(rng: Any) -> None:
    traced = check(side_effects, rng.random(3))
    assert ".append(...) at line" in traced.loop_notes[0]


WEIGHTS = np.linspace(0.5, 1.5, 12)


class Smoother:
    def __init__(self, factor: float):
        self.factor = factor

    def run(self, x: np.ndarray) -> Any:
        for i in range(12):
            x[i % 4] = x[i % 4] * self.factor + WEIGHTS[i]
        return x


def test_methods_closures_and_globals_convert(rng: Any) -> None:
    traced = check(Smoother(0.9).run, rng.random(4))
    assert "stablehlo.while" in traced.ir and "fn.WEIGHTS" in [a.path for a in
                                                              traced.linear_args]
    scale = rng.random(4)

    def closure(x: np.ndarray) -> Any:
        for _ in range(9):
            x = x * scale
        return x

    assert "stablehlo.while" in check(closure, rng.random(4)).ir


def lu_inner_indices(a: np.ndarray) -> None:
    for i in range(a.shape[0]):
        for j in range(i):  # j: a temporary of each outer iteration, read nowhere after
            a[i, j] -= a[i, :j] @ a[:j, j]
            a[i, j] /= a[j, j]
        for j in range(i, a.shape[0]):
            a[i, j] -= a[i, :i] @ a[:i, j]


def halve_until_small(x: np.ndarray) -> Any:
    while x.max() > 1.0:
        half = x * 0.5  # first assigned inside a while whose condition is traced on entry
        x = half
    return x


def index_read_after(x: np.ndarray) -> Any:
    for i in range(10):
        for j in range(i):
            x[j] += 1.0
        x[0] += j if i > 1 else 0  # j read after the inner loop: carried
    return x


def test_temporaries_and_inner_indices_are_not_carried(rng: Any) -> None:
    n = 10
    a = rng.random((n, n)) + n * np.eye(n)
    traced = check(lu_inner_indices, a)
    assert traced.ir.count("stablehlo.while") == 3 and traced.loop_notes == ()
    traced = check(halve_until_small, rng.random(6) * 9 + 1)
    assert "stablehlo.while" in traced.ir and traced.loop_notes == ()
    check(index_read_after, rng.random(10))
