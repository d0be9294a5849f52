"""Control flow conversion, continued: ``break`` / ``continue`` as flags, ``and`` / ``or`` /
``not`` and ``a if c else b`` on traced values, names swapped among arrays in a rolled loop.
Differential against NumPy eager / JAX run as Python on fresh random inputs."""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.errors import ControlFlowError
from reactant_lab.trace import trace
from tests.conftest import assert_close, float_rtol


def _copies(args: tuple[Any, ...]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def check(fn: Any, *args: Any, loops: str = "auto", rolled: int | None = None) -> rl.Traced:
    """Trace, compile and run ``fn``; its results and updated arguments must equal eager
    Python's on copies of the same arguments. ``rolled``: how many ``stablehlo.while`` the
    module must hold (and no loop may have been unrolled)."""
    expected_args = _copies(args)
    expected = fn(*expected_args)
    got_args = _copies(args)
    traced = trace(fn, *got_args, loops=loops)
    got = traced.stages("none").compile()(*got_args)
    for e, g in zip(jax.tree_util.tree_leaves(expected), jax.tree_util.tree_leaves(got),
                    strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6, atol=1e-9)
    for e, g in zip(expected_args, got_args, strict=True):
        if isinstance(e, np.ndarray):
            np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
    if rolled is not None:
        assert whiles(traced) == rolled, traced.loop_notes
        assert not traced.loop_notes
    return traced


def whiles(traced: rl.Traced) -> int:
    return len(re.findall(r"= stablehlo\.while\(", traced.ir))


def cases(traced: rl.Traced) -> int:
    return len(re.findall(r"= \"?stablehlo\.case\"?\(", traced.ir))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


# break / continue ------------------------------------------------------------------------------

def break_for(x: np.ndarray, limit: float) -> Any:
    for i in range(x.shape[0]):
        if x[i] > limit:
            break
        x[i] = x[i] * 2 + i
    return x, i


def continue_for(x: np.ndarray) -> Any:
    total = x[0] * 0
    for i in range(x.shape[0]):
        if x[i] < 0.5:
            continue
        total = total + x[i] * i
        x[i] = -x[i]
    return total


def both_for(x: np.ndarray) -> Any:
    count = x[0] * 0
    for i in range(1, x.shape[0]):
        if x[i] < x[i - 1]:
            continue
        count = count + 1
        if count > 4:
            break
        x[i] = x[i - 1]
    return count, x


@pytest.mark.parametrize("limit", [0.8, 0.97, 2.0])
def test_break_in_a_rolled_for_numpy(rng: Any, limit: float) -> None:
    check(break_for, rng.random(16), limit, rolled=1)


def test_continue_and_break_in_a_rolled_for_numpy(rng: Any) -> None:
    for _ in range(3):
        check(continue_for, rng.random(12), rolled=1)
        check(both_for, rng.random(12), rolled=1)


def jax_break_continue(x: Any) -> Any:
    acc = jnp.zeros((), x.dtype)
    for i in range(x.shape[0]):
        if x[i] < 0.3:
            continue
        acc = acc + x[i]
        if acc > 2.0:
            break
    return acc, i


def test_break_and_continue_in_a_rolled_for_jax(rng: Any) -> None:
    for _ in range(3):
        traced = check(jax_break_continue, jnp.asarray(rng.random(12)), rolled=1)
        assert traced.mode == "jax"


def while_break(x: np.ndarray) -> Any:
    n = 0
    while x.sum() < 100:
        x = x * 2
        n += 1
        if x.max() > 50:
            break
    return x, n


def jax_while_break(x: Any) -> Any:
    while jnp.sum(x) < 100:
        x = x * 1.5
        if jnp.max(x) > 20:
            break
        x = x + 0.1
    return x


def test_break_in_a_traced_while(rng: Any) -> None:
    for scale in (0.1, 1.0, 5.0):
        check(while_break, scale * rng.random(3) + 0.01, rolled=1)
        check(jax_while_break, jnp.asarray(scale * rng.random(3) + 0.01), rolled=1)


def while_continue(x: np.ndarray) -> Any:
    i = np.int64(0)
    total = x[0] * 0
    while total < 3.0:
        i = (i + 1) % x.shape[0]
        if x[i] < 0.5:
            continue
        total = total + x[i]
    return total, i


def while_else(x: np.ndarray) -> Any:
    while x.sum() < 10:
        x = x * 2
        if x.max() > 6:
            break
    else:
        x = x + 100
    return x


def test_continue_and_else_in_a_traced_while(rng: Any) -> None:
    for _ in range(3):
        x = rng.random(6)
        x[2] = 0.9
        check(while_continue, x, rolled=1)
        check(while_else, rng.random(4) + 0.05, rolled=1)


def jax_traced_range(x: Any) -> Any:
    n = jnp.sum(x > 0.3)
    acc = jnp.zeros((), x.dtype)
    for i in range(n):
        if x[i] > 0.9:
            break
        acc = acc + x[i]
    return acc


def test_break_in_a_for_over_a_traced_range(rng: Any) -> None:
    for _ in range(3):
        check(jax_traced_range, jnp.asarray(rng.random(10)), rolled=1)


def index_break(x: np.ndarray, stop: int) -> Any:
    for i in range(x.shape[0]):
        if i == stop:
            break
        x[i] = x[i] + i
    return x, i


def test_break_rolls_under_loops_roll(rng: Any) -> None:
    check(break_for, rng.random(16), 0.9, loops="roll", rolled=1)
    for stop in (5, 20):
        check(index_break, rng.random(10), stop, loops="roll", rolled=1)


def nested_break(a: np.ndarray) -> Any:
    out = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if a[i, j] > 0.8:
                break
            out[i] = out[i] + a[i, j] * (j + 1)
    return out


def first_clean_row(a: np.ndarray, limit: float) -> Any:
    out = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if a[i, j] > limit:
                break
        else:
            out[i] = a[i, 0] + 1.0
            break  # the outer loop's
        out[i] = 2.0 + j
    return out


def test_nested_loops_with_break_in_the_inner_one(rng: Any) -> None:
    for _ in range(3):
        check(nested_break, rng.random((9, 10)), rolled=2)  # `j`: local to the outer body
    for limit in (0.9, 0.999):
        check(first_clean_row, rng.random((9, 10)), limit, rolled=3)
        # 3 rows: short, but around a loop, so it rolls (NESTED_ROLL_MIN); its 4-long inner
        # loop stays Python inside it. 2 rows stay Python.
        check(first_clean_row, rng.random((3, 4)), limit, rolled=1)
        check(first_clean_row, rng.random((2, 4)), limit, rolled=0)


def for_else(x: np.ndarray, limit: float) -> Any:
    found = -1
    for i in range(x.shape[0]):
        if x[i] > limit:
            found = i
            break
    else:
        x[0] = 100.0
    return x, found


def test_for_else_runs_unless_the_loop_broke(rng: Any) -> None:
    for limit in (0.9, 2.0):
        check(for_else, rng.random(10), limit, rolled=1)
        check(for_else, rng.random(4), limit)  # short: stays Python


def short_python(x: np.ndarray, skip: int, stop: int) -> Any:
    seen = 0
    for i in range(6):
        if i == skip:
            continue
        if i == stop:
            break
        x[i] = x[i] + i
        seen += 1
    else:
        seen = -seen
    k = 0
    while True:
        k += 1
        if k < 3:
            continue
        if k > 5:
            break
        x[0] = x[0] * 2
    for item in [3, 1, 4, 1, 5]:
        if item == 1:
            continue
        if item == 5:
            break
        x[1] = x[1] + item
    return x, seen, i, k


@pytest.mark.parametrize("skip,stop", [(1, 4), (2, 9), (0, 0)])
def test_static_break_and_continue_keep_python_semantics(rng: Any, skip: int, stop: int) -> None:
    traced = check(short_python, rng.random(6), skip, stop, rolled=0)
    assert traced.mode == "numpy"


def iterator_break(x: np.ndarray) -> Any:
    items = iter(range(6))
    for k in items:
        if k == 2:
            break
        x[k] = -x[k]
    x[5] = len(list(items))  # break takes no further item from the iterator
    return x


def test_break_takes_no_further_item(rng: Any) -> None:
    check(iterator_break, rng.random(6), rolled=0)


def short_traced_break(x: np.ndarray) -> Any:
    for i in range(5):
        if x[i] > 0.6:
            break
        x[i] = -x[i]
    return x


def test_a_traced_break_in_a_short_loop_unrolls_under_conditions(rng: Any) -> None:
    for _ in range(4):
        traced = check(short_traced_break, rng.random(5), rolled=0)
        assert "stablehlo.case" in traced.ir


def skip_then_assign(x: np.ndarray) -> Any:
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i] < 0.5:
            continue
        y = x[i] * 3
        out[i] = y + 1
    return out


def test_a_variable_first_assigned_after_continue_does_not_peel(rng: Any) -> None:
    # 300 elements: `out` is too large for the ifs to run as selects (SELECT_WORK)
    traced = check(skip_then_assign, rng.random(300), rolled=1)
    # `if not continued:` (writes `out`); `if ...: continue` only sets the flag, a select;
    # not peeled (a peeled iteration would hold a second case)
    assert cases(traced) == 1


# and / or / not / conditional expressions -----------------------------------------------------

def logic(x: Any, flag: bool) -> Any:
    y = x * 1.0
    if x.sum() > 1 and x.max() < 0.95:
        y = y + 1
    if not (x.min() > 0.2) or flag:
        y = y * 2
    if flag is None and x[100] > 0:  # never evaluated: Python's short-circuit
        y = y - 1
    z = flag and x.sum() > 1.5
    w = (x[0] > 0.5) or (x[1] > 0.5) or flag
    v = not x[2] > 0.5
    return y, z, w, v


@pytest.mark.parametrize("as_jax", [False, True])
def test_and_or_not_on_traced_and_static_values(rng: Any, as_jax: bool) -> None:
    for flag in (False, True):
        for _ in range(3):
            x = rng.random(4)
            traced = check(logic, jnp.asarray(x) if as_jax else x, flag)
            assert traced.mode == ("jax" if as_jax else "numpy")
            assert "stablehlo.case" in traced.ir


def while_and(x: np.ndarray, tol: float) -> Any:
    it = 0
    err = 1.0
    while err > tol and it < 50:
        x = 0.5 * (x + 2.0 / x)
        err = np.abs(x * x - 2.0).max()
        it += 1
    return x, it


def test_and_in_a_while_condition(rng: Any) -> None:
    for tol in (1e-3, 1e-12):
        check(while_and, rng.random(4) + 1.0, tol, rolled=1)


def ternary(x: Any, n: int) -> Any:
    y = x * 2 if x.sum() > 1.5 else x - 1
    s = 1.0 if x[0] > 0.5 else 0.0
    t = x[5] if n > 5 else x[0]  # static: x[5] is never evaluated for a short x
    u = 0.0 if x[1] > 0.5 else x[2]
    return y, s, t, u


@pytest.mark.parametrize("as_jax", [False, True])
def test_conditional_expression_on_a_traced_condition(rng: Any, as_jax: bool) -> None:
    for _ in range(4):
        x = rng.random(3)
        traced = check(ternary, jnp.asarray(x) if as_jax else x, 2)
        assert "stablehlo.case" in traced.ir


def ternary_in_loop(x: np.ndarray) -> Any:
    acc = x[0] * 0
    for i in range(x.shape[0]):
        acc = acc + (x[i] if x[i] > 0.5 and i % 2 == 0 else -x[i])
    return acc


def test_conditional_expression_and_boolean_ops_in_a_rolled_loop(rng: Any) -> None:
    check(ternary_in_loop, rng.random(12), loops="roll", rolled=1)
    # under "auto" the loop only accumulates (acc + a term of x[i]): summed, no loop left
    traced = check(ternary_in_loop, rng.random(12))
    assert whiles(traced) == 0 and " summed (" in traced.loop_notes[0]


def ambiguous(x: np.ndarray) -> Any:
    return (x > 0.5) and (x < 0.9)


def ternary_disagree(x: np.ndarray) -> Any:
    return x if x.sum() > 1 else x[0]


def test_boolean_ops_and_ternaries_that_cannot_convert_name_the_line(rng: Any) -> None:
    with pytest.raises(ControlFlowError,
                       match=r"test_control_flow_more.py:\d+ in ambiguous(.|\n)*a.any\(\)"):
        trace(ambiguous, rng.random(3), loops="auto")
    with pytest.raises(ControlFlowError, match=r"test_control_flow_more.py:\d+ in "
                                               r"ternary_disagree\(\).*same shape"):
        trace(ternary_disagree, rng.random(3), loops="auto")


# names swapped among arrays (double buffering) ------------------------------------------------

def jacobi(u: np.ndarray, v: np.ndarray, steps: int) -> Any:
    for _ in range(steps):
        v[1:-1] = 0.5 * (u[:-2] + u[2:])
        v[0] = u[0]
        v[-1] = u[-1]
        u, v = v, u
    return u.sum() - 2 * v.sum()


def rotate(a: np.ndarray, b: np.ndarray, c: np.ndarray, steps: int) -> Any:
    for i in range(steps):
        c[...] = a * 0.5 + b + i
        a, b, c = b, c, a
    return a.sum(), b.sum()


@pytest.mark.parametrize("steps", [9, 10, 13])
def test_swapped_buffers_roll_and_the_callers_arrays_are_numpys(rng: Any, steps: int) -> None:
    traced = check(jacobi, rng.random(12), rng.random(12), steps, rolled=1)
    assert set(traced.mutated) == {"args[0]", "args[1]"}
    check(rotate, rng.random(4), rng.random(4), rng.random(4), steps, rolled=1)


def jax_swap(u: Any, v: Any, steps: int) -> Any:
    for _ in range(steps):
        v = 0.5 * (u + jnp.roll(u, 1))
        u, v = v, u
    return u, v


@pytest.mark.parametrize("steps", [9, 10])
def test_swapped_names_roll_in_jax_mode(rng: Any, steps: int) -> None:
    check(jax_swap, jnp.asarray(rng.random(6)), jnp.asarray(rng.random(6)), steps, rolled=1)


def while_swap(u: np.ndarray, v: np.ndarray) -> Any:
    while u.sum() < 100:
        v[...] = u * 2
        u, v = v, u
    return u


def swap_and_break(u: np.ndarray, v: np.ndarray) -> Any:
    for _ in range(10):
        v[...] = u * 2
        u, v = v, u
        if u.sum() > 50:
            break
    return u


def test_swaps_that_cannot_roll(rng: Any) -> None:
    with pytest.raises(ControlFlowError, match=r"test_control_flow_more.py:\d+(.|\n)*copy "
                                               r"instead"):
        trace(while_swap, rng.random(3) + 0.1, rng.random(3), loops="auto")
    for loops in ("auto", "roll"):  # nor can it unroll: the break depends on a traced value
        with pytest.raises(ControlFlowError, match=r"test_control_flow_more.py:\d+(.|\n)*copy"):
            trace(swap_and_break, rng.random(3), rng.random(3), loops=loops)


# what still cannot be converted ---------------------------------------------------------------

def return_in_loop(x: np.ndarray) -> Any:
    while x.sum() < 10:
        x = x * 2
        if x.max() > 5:
            return x
    return x


def test_return_in_a_traced_loop_names_the_line_and_the_rewrite(rng: Any) -> None:
    with pytest.raises(ControlFlowError,
                       match=r"test_control_flow_more.py:\d+ in return_in_loop(.|\n)*`return` "
                             r"at line \d+(.|\n)*result variable"):
        trace(return_in_loop, rng.random(3) + 0.1, loops="auto")


_BODY_TRACES: list[int] = []


def _count_trace() -> None:
    _BODY_TRACES.append(1)


def test_nested_rolled_loops_trace_each_body_once(rng: np.random.Generator) -> None:
    """A rolled loop whose source writes the arrays it updates (``a[i, j] += ...``) carries
    them on its first trace, which is then the loop: two nested loops trace the inner body
    once (2 x 2 times when the arrays had to be found by an abstract trace first, 3 x 3
    before that), the module holds both loops, and the result is NumPy's."""
    def kernel(a, n):
        for i in range(n):
            for j in range(1, n):
                _count_trace()
                a[i, j] += a[i, j - 1] * 0.5
        return a

    _BODY_TRACES.clear()
    traced = rl.trace(kernel, np.zeros((12, 12)), 12, loops="roll")  # 'auto' batches the rows
    assert traced.ir.count("stablehlo.while") == 2 and len(_BODY_TRACES) == 1, len(_BODY_TRACES)
    a = rng.random((12, 12))
    assert_close(rl.jit(kernel)(a.copy(), 12), kernel(a.copy(), 12), rtol=1e-12)


def _halve(a: np.ndarray, i: Any) -> None:
    a[i] *= 0.5


def written_elsewhere(a: np.ndarray, b: np.ndarray) -> None:
    for i in range(10):  # a is written by a call: not in the source's guess
        _count_trace()
        _halve(a, i)
        b[i] = b[i] + a[i]


def guessed_too_much(a: np.ndarray, b: np.ndarray, flag: bool) -> None:
    for i in range(10):  # a[i] = ... is in the source, but a static False skips it
        _count_trace()
        if flag:
            a[i] = 0.0
        b[i] = b[i] * 2.0 + a[i]


def test_a_wrong_guess_of_the_written_arrays_is_corrected(rng: np.random.Generator) -> None:
    """When the arrays the source writes in place are not the ones the body writes (one
    written by a called function, one behind a static branch), the loop is traced again with
    the right ones: results are NumPy's, and an array the body did not write is not reported
    as updated nor written back."""
    a, b = rng.random(10) + 0.5, rng.random(10) + 0.5
    for fn, args, mutated in ((written_elsewhere, (a, b), {"args[0]", "args[1]"}),
                              (guessed_too_much, (a, b, False), {"args[1]"})):
        _BODY_TRACES.clear()
        traced = rl.trace(fn, *_copies(args))
        assert len(_BODY_TRACES) > 1 and set(traced.mutated) == mutated, traced.mutated
        check(fn, *args, loops="roll", rolled=1)
    fn = rl.jit(guessed_too_much)
    a2, b2 = a.copy(), b.copy()
    fn(a2, b2, False)
    np.testing.assert_array_equal(a2, a)
    assert_close(b2, b * 2.0 + a, rtol=float_rtol(np.float64, 1e-15))


def test_written_in_place_reads_the_loop_source() -> None:
    """The guess of the arrays a loop writes: subscript targets (through .real / .T and
    tuples), augmented names, out= and in-place methods, nested loops included; nested
    functions not, nor a name the body rebinds (it may hold a new array)."""
    import ast
    import textwrap

    from reactant_lab.trace.control_flow.transform import written_in_place

    body = ast.parse(textwrap.dedent("""
        C[i, :i + 1] *= beta
        x, (y[0], z) = 1, (2, 3)
        w.real[i] = 0
        t += 1
        np.add(p, q, out=r)
        s.fill(0)
        u = v[i]
        for k in range(3):
            D[k] = C[i]
        def f():
            E[0] = 1
        g = lambda: F.sort()
        obj.attr[0] = 1
        x2 = A @ x2
        x2 /= 2.0
    """)).body
    assert written_in_place(body) == ["C", "y", "w", "t", "r", "s", "D"]


def sweeps(u: np.ndarray, steps: int) -> None:
    for _ in range(steps):  # a few time steps around a loop: rolls from NESTED_ROLL_MIN on
        for i in range(1, u.shape[0]):
            u[i] = u[i] * 0.5 + u[i - 1] * 0.25


def growing(x: np.ndarray) -> Any:
    y = x[:1]
    for _ in range(3):  # short, around a loop, but its carried y grows: it stays Python
        for i in range(1, x.shape[0]):
            x[i] = x[i] * 0.5 + x[i - 1]
        y = np.concatenate([y, x[:1]])
    return y


def test_a_short_loop_around_a_loop_rolls_when_it_can(rng: Any) -> None:
    n = int(rng.integers(10, 30))
    for steps, rolled in ((2, 2), (3, 2), (5, 2), (7, 2), (8, 2)):
        # 2 steps: Python, two copies of the inner loop; from 3 on, one loop in another (5
        # steps were 5 copies)
        check(sweeps, rng.standard_normal(n), steps, rolled=rolled)
    # it cannot roll: three copies of the inner loop, as before, and no note about it
    check(growing, rng.standard_normal(int(rng.integers(10, 20))), rolled=3)


# ---------------------------------------------------------------- reading the function's source

_convert = importlib.import_module("reactant_lab.trace.control_flow.convert")
"""The module (``reactant_lab.trace.control_flow.convert`` is also the name of its function)."""

def _decorated(fn: Any) -> Any:
    return fn


@_decorated
def _scaled_rows(a: Any) -> Any:
    for i in range(a.shape[0]):
        a[i] *= i + 1.0
    return a


class _Smoother:
    def run(self, x: Any, steps: int) -> Any:
        for _ in range(steps):
            x = 0.5 * (x + np.roll(x, 1))
        return x


def test_source_lines_match_inspect_for_every_kind_of_function() -> None:
    def nested(x: Any) -> Any:
        while x.sum() > 1:
            x = x / 2
        return x

    for fn in (_scaled_rows, _Smoother.run, nested, check, whiles):
        assert _convert.source_lines(fn.__code__) == inspect.getsourcelines(fn.__code__)


def test_a_first_rewrite_does_not_scan_every_loaded_module(rng: Any, monkeypatch: Any) -> None:
    """inspect.getsourcelines of a code object asks inspect.getmodule, which resolves the file of
    every module loaded (0.07-0.1 s on a process's first call): the rewrite reads the line cache
    instead. Differential: the rewritten loop still gives NumPy's result."""
    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("inspect.getmodule was asked")

    _convert.rewritten_code.cache_clear()
    monkeypatch.setattr(inspect, "getmodule", refuse)
    try:
        check(_scaled_rows, rng.random((6, 5)) + 0.5)
        code, why = _convert.rewritten_code(_scaled_rows.__code__)
        assert code is not None and why is None  # its loop was rewritten, from its source
    finally:
        _convert.rewritten_code.cache_clear()


# a retried trace puts back what NumPy wrote in place ------------------------------------------

def _set_second(a: np.ndarray, value: float) -> None:
    a[1] = value


def written_behind_a_call(x: np.ndarray) -> Any:
    acc = np.zeros(4)
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = acc[1] + x[i]
        _set_second(acc, 2.0)  # NumPy writes acc in place: the first trace did not carry it
    return out, acc


def _bump(a: np.ndarray) -> None:
    np.add(a, 1.0, out=a)


def filled_behind_a_call(x: np.ndarray) -> Any:
    acc = np.zeros(3)
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = acc.sum() + x[i]
        _bump(acc)  # a ufunc writing acc in place through out=
    return out, acc


@pytest.mark.parametrize("fn", [written_behind_a_call, filled_behind_a_call])
def test_a_retried_loop_trace_starts_from_the_arrays_as_they_were(rng: Any, fn: Any) -> None:
    """The first trace of the loop writes a kernel-made array that holds concrete data, in
    place through NumPy (a called function's write, a ufunc's out=), without carrying it; the
    loop is traced again carrying it, from its data as it was before the first trace: the
    journal copied the data just before NumPy wrote it. Iteration 0 reads the zeros."""
    x = rng.standard_normal(int(rng.integers(9, 16)))
    check(fn, x, rolled=1)


def _bit_steps(data):
    """An `if` on integer numbers in a loop (one branch the other's value with a constant
    mixed in, as crc32's): picked branch-free, by a select or a mask."""
    acc = data[0]
    for i in range(data.shape[0]):
        acc = acc ^ data[i]
        if acc & 1:  # noqa: SIM108  (a statement: the branches the test is about)
            acc = (acc >> 1) ^ data[0]
        else:
            acc = acc >> 1
        if acc > data[i]:
            acc = acc ^ data[-1]
    return acc


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64])
def test_an_if_on_integer_numbers_in_a_loop_picks_numpys_values(rng: Any, dtype: Any) -> None:
    info = np.iinfo(dtype)
    data = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    data[:2] = info.min, info.max
    want = _bit_steps(data.copy())
    jf = rl.jit(_bit_steps)
    got = jf(data)
    assert got.dtype == want.dtype and got == want
    assert "stablehlo.case" not in jf.last.traced.ir  # the branches ran as selects or a mask


def _matches(a, b, out):
    for i in range(a.shape[0]):
        out[i] = 1 if a[i] + b[i] == 3 else 0  # constant sides: nothing for a mask to fold


def test_an_if_between_constants_in_a_loop_is_one_select(rng: Any) -> None:
    n = int(rng.integers(20, 60))
    a, b = rng.integers(0, 4, n), rng.integers(0, 4, n)
    want = np.zeros(n, np.int64)
    _matches(a, b, want)
    out = np.zeros(n, np.int64)
    jf = rl.jit(_matches)
    jf(a, b, out)
    np.testing.assert_array_equal(out, want)
    ir = jf.last.traced.ir
    assert "stablehlo.select" in ir and "stablehlo.xor" not in ir and "stablehlo.and" not in ir
