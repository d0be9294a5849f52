"""Reactant-style conveniences: jit caching per signature, explore, code_hlo, code_xla."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.examples import EXAMPLES, heat_loop, mlp


def test_jit_compiles_once_per_signature(rng):
    calls = []

    def f(x, n):
        calls.append(1)  # counts traces, not runs
        return x * n + 1

    jf = rl.jit(f, optimize="all")
    x = rng.standard_normal(5).astype(np.float32)
    np.testing.assert_allclose(jf(x, 2), x * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(jf(x + 1, 2), (x + 1) * 2 + 1, rtol=1e-6)
    assert jf.cache_size == 1 and len(calls) == 1
    jf(x, 3)  # new static value
    jf(np.ones(7, np.float32), 3)  # new shape
    jf(x.astype(np.float64), 3)  # new dtype
    assert jf.cache_size == 4 and len(calls) == 4
    assert jf.last.traced.linear_args[0].dtype == np.float64
    assert isinstance(jf.last, rl.Exploration) and jf.last.compiled is not None
    assert jf.__name__ == "f"


def test_jit_as_decorator_and_bad_preset():
    @rl.jit(optimize="before_jit")
    def g(x):
        return x.sum()

    assert float(g(np.ones(4, np.float32))) == 4.0
    assert g.last.stages.optimize == "before_jit"
    with pytest.raises(rl.UnknownPresetError, match="all"):
        rl.jit(g.fn, optimize="O3")


def test_jit_returns_numpy_for_numpy_and_jax_for_jax(rng):
    jf = rl.jit(heat_loop)
    u = rng.random((12, 12)).astype(np.float32)
    assert isinstance(jf(u), np.ndarray)
    assert isinstance(jf(jax.numpy.asarray(u)), jax.Array)
    assert jf.cache_size == 2


def test_explore_holds_everything(rng):
    args = EXAMPLES[0].make_args(rng)
    ex = rl.explore(mlp, *args, optimize="all", granularity="pass")
    assert ex.stages.granularity == "pass" and len(ex.stages) > 20
    np.testing.assert_allclose(ex.outputs, jax.jit(mlp)(*args), rtol=2e-5, atol=2e-5)
    assert ex.run_seconds is not None and ex.run_seconds > 0
    text = repr(ex)
    assert "args[0]['w1']" in text and "enzyme-hlo patterns" in text and "XLA compile" in text
    assert rl.explore(mlp, *args, run=False).outputs is None


def test_code_hlo_and_code_xla(rng):
    args = EXAMPLES[0].make_args(rng)
    hlo = rl.code_hlo(mlp, *args)
    assert hlo.startswith("module @reactant_mlp") and "stablehlo.transpose" not in hlo
    assert "stablehlo.transpose" in rl.code_hlo(mlp, *args, optimize="none")
    xla = rl.code_xla(mlp, *args)
    assert "HloModule" in xla and "ENTRY" in xla
    with pytest.raises(rl.TraceError, match="original function"):
        rl.code_hlo(rl.jit(mlp), *args)
