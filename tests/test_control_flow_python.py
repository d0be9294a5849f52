"""Converted code keeps Python's semantics where a traced value meets a Python rule: variables a
statement leaves unassigned, the builtins min / max / abs / sum / round, 16-bit floats rounded at
every step as NumPy does, and recursion (issue 38). Differential against NumPy / Python eager on
fresh random inputs."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.errors import ControlFlowError


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
            np.testing.assert_array_equal(g, w)
    return got


def _close(got: np.ndarray, want: np.ndarray) -> None:
    """Same dtype (an int for Python's int), values within 1e-12 of the result's scale."""
    assert got.dtype == want.dtype or want.dtype.kind == got.dtype.kind == "i", (got, want)
    finite = want[np.isfinite(want)] if want.dtype.kind == "f" else np.zeros(0)
    scale = float(np.max(np.abs(finite), initial=1.0))
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-12,
                               atol=1e-12 * scale, equal_nan=True)


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
    np.testing.assert_allclose(np.asarray(rl.jit(even, mode="jax")(x, 5)),
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
