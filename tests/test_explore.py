"""Reactant-style conveniences: jit caching per signature, explore, code_hlo, code_xla."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend
from reactant_lab.examples import EXAMPLES, heat_loop, mlp
from tests.conftest import assert_close


def test_jit_compiles_once_per_signature(rng):
    calls = []

    def f(x, n):
        calls.append(1)  # counts traces, not runs
        return x * n + 1

    jf = rl.jit(f, optimize="all")
    x = rng.standard_normal(5).astype(np.float32)
    assert_close(jf(x, 2), x * 2 + 1, rtol=1e-6)
    assert_close(jf(x + 1, 2), (x + 1) * 2 + 1, rtol=1e-6)
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


@pytest.mark.skipif(not backend.enzyme_available(), reason="the one-shot run needs enzyme-ad")
def test_jit_compiles_one_run_of_all_passes_and_runs_the_stages_when_looked_at(rng):
    """rl.jit's first call runs the preset's passes once and compiles that module; the stages
    run one by one only when ``last.stages`` is read, and end in that module, as explore's do
    (same names, same final text)."""
    args = EXAMPLES[0].make_args(rng)
    jf = rl.jit(mlp)
    np.testing.assert_allclose(jf(*args), jax.jit(mlp)(*args), rtol=2e-5, atol=2e-5)
    stages = jf.last.stages
    assert stages.is_deferred and stages.one_shot is not None
    assert "enzyme-hlo patterns" in repr(jf.last)  # the summary runs them
    assert not stages.is_deferred
    ex = rl.explore(mlp, *args, run=False)
    assert ex.stages.one_shot is None and not ex.stages.is_deferred
    assert [s.name for s in stages.stages] == [s.name for s in ex.stages.stages]
    assert stages.final.ir == stages.one_shot  # text for text, locations included
    assert stages.final.as_text() == ex.stages.final.as_text()  # traced from another line


@pytest.mark.skipif(not backend.enzyme_available(), reason="the one-shot run needs enzyme-ad")
def test_the_one_shot_run_leaves_out_passes_for_ops_the_module_lacks(monkeypatch, rng):
    """Passes that rewrite only LLVM functions and custom-kernel calls do nothing to a traced
    module: the one run of all the passes leaves them out, the stages (run when looked at) run
    them, and both end in the same module."""
    from reactant_lab.stages import runner
    from reactant_lab.stages.pipeline import pass_name, split_passes
    from reactant_lab.stages.presets import ONLY_ON

    seen: list[str] = []
    real = runner.backend.run_pipeline

    def spy(text, pipeline, **kwargs):
        seen.append(pipeline)
        return real(text, pipeline, **kwargs)

    monkeypatch.setattr(runner.backend, "run_pipeline", spy)
    args = EXAMPLES[0].make_args(rng)
    jf = rl.jit(mlp)
    np.testing.assert_allclose(jf(*args), jax.jit(mlp)(*args), rtol=2e-5, atol=2e-5)
    assert len(seen) == 1  # the one-shot run: the stages have not run yet
    ran = [pass_name(p) for p in split_passes(seen[0])]
    assert not set(ran) & set(ONLY_ON) and "transform-interpreter" in ran
    stages = jf.last.stages
    staged = {pass_name(p) for s in stages.stages for p in split_passes(s.pipeline)}
    assert set(ONLY_ON) <= staged
    assert stages.final.ir == stages.one_shot


def test_passes_for_llvm_functions_or_kernel_calls_stay_where_the_module_has_them():
    from reactant_lab.stages.runner import without_idle_passes

    passes = ["canonicalize", "sroa-wrappers{instcombine=false instsimplify=true}",
              "libdevice-funcs-raise", "lower-kernel{backend=cpu}",
              "lower-jit{openmp=true backend=cpu}", "symbol-dce"]
    plain = "module {\n  func.func @main() {\n    return\n  }\n}"
    assert without_idle_passes(passes, plain) == ["canonicalize", "symbol-dce"]
    jit_call = plain.replace("return", "enzymexla.jit_call @k () : () -> ()\n    return")
    assert without_idle_passes(passes, jit_call) == [
        "canonicalize", "lower-jit{openmp=true backend=cpu}", "symbol-dce"]
    llvm = plain + "\nllvm.func @k() {\n  llvm.return\n}"
    assert without_idle_passes(passes, llvm) == passes


def test_jit_with_a_custom_pipeline_or_no_passes_runs_stages_as_before(rng):
    x = rng.standard_normal(6).astype(np.float32)
    for jf in (rl.jit(lambda x: x * 2 + 1, pipeline="canonicalize,cse"),
               rl.jit(lambda x: x * 2 + 1, optimize="none")):
        assert_close(jf(x), x * 2 + 1, rtol=1e-6)
        assert jf.last.stages.one_shot is None and not jf.last.stages.is_deferred


def _failing_one_shot(real, fail):
    """backend.run_pipeline, except that the one run of all the passes (the only pipeline with
    the three optimize stages' pattern runs) raises ``fail()``."""
    def run(text, pipeline, **kwargs):
        if pipeline.count("transform-interpreter") >= 3:
            raise fail()
        return real(text, pipeline, **kwargs)
    return run


@pytest.mark.skipif(not backend.enzyme_available(), reason="the one-shot run needs enzyme-ad")
def test_a_failing_one_shot_run_falls_back_to_the_stages(monkeypatch, rng):
    """A one-shot run that fails is run stage by stage (which names a failing stage); here the
    stages succeed, so rl.jit gives the right result from them."""
    from reactant_lab.stages import runner

    monkeypatch.setattr(runner.backend, "run_pipeline", _failing_one_shot(
        backend.run_pipeline, lambda: backend.PassRunFailure("a pass failed", "")))
    x = rng.standard_normal(6).astype(np.float32)
    f = lambda x: jax.numpy.tanh(x) * 2  # noqa: E731
    jf = rl.jit(f)
    # against jax.jit: a TPU's float32 tanh is 6e-5 off NumPy's (measured on a v5e)
    assert_close(jf(x), np.asarray(jax.jit(f)(x)), rtol=1e-6)
    assert jf.last.stages.one_shot is None and len(jf.last.stages) > 5


@pytest.mark.skipif(not backend.enzyme_available(), reason="the one-shot run needs enzyme-ad")
def test_ctrl_c_during_the_one_shot_run_is_reactant_labs_interruption(monkeypatch, rng):
    from reactant_lab.stages import runner

    monkeypatch.setattr(runner.backend, "run_pipeline", _failing_one_shot(
        backend.run_pipeline, KeyboardInterrupt))
    jf = rl.jit(lambda x: x * 2)
    with pytest.raises(rl.PassInterruptedError, match=r"stage 'optimize\+sroa to jit lowering' "
                                                      r"was interrupted after"):
        jf(rng.standard_normal(4).astype(np.float32))
