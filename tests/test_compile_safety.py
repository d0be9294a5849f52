"""XLA compiles cannot take the process down: a module XLA might crash on compiles in the compile
worker, a crash there becomes CompileCrashedError (signal, stage, XLA's output, a reproducer) or,
where compiling without XLA:CPU's fusion emitters avoids it, a working executable and a warning;
the next compile works."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import reactant_lab as rl
from reactant_lab import _compile_isolation, _worker_client, backend
from reactant_lab.errors import CompileCrashedError, CompileError, CompileFallbackWarning
from reactant_lab.stages import patterns
from tests.conftest import assert_close, child_env
from tests.test_pass_safety import alive

needs_enzyme = pytest.mark.skipif(not rl.enzyme_available(), reason="needs enzyme-ad")
pytestmark = pytest.mark.cpu_only(
    "the compile worker isolates XLA:CPU compiles only: a worker process would hold an "
    "accelerator of its own (on a TPU one process holds the chip), and the crashes tested are "
    "XLA:CPU's fusion emitter's")

# XLA:CPU fuses a chain of dynamic_update_slice ops feeding a concatenate into one fusion, and
# its fusion emitter recurses once per op: the compile thread's stack overflows (SIGSEGV) from
# ~750 ops with fusion emitters on, from ~2,090 with them off (measured with jaxlib 0.10.2).
AVOIDABLE = 1000
"""Steps that crash XLA with fusion emitters and compile without them."""
UNAVOIDABLE = 2500
"""Steps that crash XLA either way."""
FLAG_ON = "--xla_cpu_use_fusion_emitters=true"


def with_flag_on() -> str:
    """XLA_FLAGS asking for the fusion emitters, beside the suite's own flags (tests/conftest.py:
    the LLVM optimization level)."""
    return f"{os.environ.get('XLA_FLAGS', '')} {FLAG_ON}".strip()


def dus_chain(a, row, steps):
    """``steps`` row updates in a row, then a concatenate: one long fusion for XLA."""
    for i in range(steps):
        a = lax.dynamic_update_slice(a, row, (i % a.shape[0], 0))
    return jnp.concatenate([row, a])


def dus_chain_numpy(a, row, steps):
    a = a.copy()
    for i in range(steps):
        a[i % a.shape[0]] = row[0]
    return np.concatenate([row, a])


def cov(data, out, n):
    """The triangular NumPy loop whose `all` module crashed XLA at M=376 (enzyme-ad patterns)."""
    m = out.shape[0]
    for i in range(m):
        out[i:m, i] = out[i, i:m] = data[:, i] @ data[:, i:m] / (n - 1.0)


COV_M = 376
"""Smallest M (N = M + 100) whose `all` module crashes XLA with enzyme-ad's pattern list."""


def chain_args(rng):
    return rng.random((64, 64)).astype(np.float32), rng.random((1, 64)).astype(np.float32)


@pytest.fixture(autouse=True)
def _clean_env(tmp_path, monkeypatch):
    monkeypatch.setenv("REACTANT_LAB_REPRO_DIR", str(tmp_path / "repro"))
    for name in (backend.COMPILE_CHECK_VAR, "REACTANT_LAB_RAW_EXECUTE"):
        monkeypatch.delenv(name, raising=False)


def crashing_stages(rng, steps=UNAVOIDABLE):
    a, row = chain_args(rng)
    return rl.trace(dus_chain, a, row, steps, loops="unroll").stages("none")


# ---------------------------------------------------------------- the crash itself


@pytest.mark.slow("a process or kernel of its own")
def test_crash_ends_the_process_only_without_the_worker(tmp_path):
    """The module kills a process compiling it in-process (REACTANT_LAB_COMPILE_CHECK=never: what
    the other tests guard against); by default the process survives with the error."""
    script = textwrap.dedent(f"""\
        import numpy as np, reactant_lab as rl
        from tests.test_compile_safety import dus_chain, chain_args
        a, row = chain_args(np.random.default_rng(0))
        try:
            rl.trace(dus_chain, a, row, {UNAVOIDABLE}, loops="unroll").stages("none").compile()
        except rl.ReactantLabError as exc:
            print(type(exc).__name__, exc.signal)
        print("survived")
        """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for mode in ("never", "auto"):
        env = child_env(REACTANT_LAB_COMPILE_CHECK=mode, REACTANT_LAB_REPRO_DIR=str(tmp_path))
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=env, timeout=300, cwd=root)
        if mode == "never":
            assert proc.returncode == -signal.SIGSEGV and "survived" not in proc.stdout
        else:
            assert proc.returncode == 0, proc.stderr[-2000:]
            assert proc.stdout.splitlines() == ["CompileCrashedError SIGSEGV", "survived"]


def test_crash_is_an_error_naming_stage_signal_and_reproducer(rng):
    st = crashing_stages(rng)
    with pytest.raises(CompileCrashedError) as info:
        st.compile()
    err = info.value
    assert err.signal == "SIGSEGV" and err.stage == "traced"
    assert err.retried == "with xla_cpu_use_fusion_emitters=false, it crashed too (SIGSEGV)"
    message = str(err)
    assert "XLA's compiler crashed (SIGSEGV) compiling stage 'traced' (7,502 ops)" in message
    assert "this Python process is unharmed" in message and "XLA's output:" in message
    # XLA's last words from the dying worker: how far the compile got.
    assert "Compiling: reactant_dus_chain" in err.output
    assert "it died generating code, after XLA's HLO passes" in message
    assert err.reproducer and err.reproducer in message
    files = sorted(os.listdir(err.reproducer))
    assert files == ["compile_options.pb", "diagnostics.txt", "input.mlir", "rerun.py"]
    with open(os.path.join(err.reproducer, "input.mlir"), encoding="utf-8") as fh:
        assert fh.read().count("stablehlo.dynamic_update_slice") == UNAVOIDABLE
    assert backend._COMPILER.pid is None  # the dead worker is gone; the next compile starts one


def test_next_compile_works_after_a_crash(rng, monkeypatch):
    with pytest.raises(CompileCrashedError):
        crashing_stages(rng).compile()
    x = rng.random((8, 8)).astype(np.float32)
    for k, mode in enumerate(("auto", "always"), 2):  # two modules: each compiled by XLA
        monkeypatch.setenv(backend.COMPILE_CHECK_VAR, mode)
        compiled = rl.trace(lambda v: jnp.sin(v) * k, x).stages("all").compile()  # noqa: B023
        assert not compiled.reused
        assert_close(compiled(x), np.sin(x) * k, rtol=1e-6)
    assert backend._COMPILER.pid is not None


def test_rerun_script_reproduces_the_crash(rng):
    with pytest.raises(CompileCrashedError) as info:
        crashing_stages(rng).compile()
    proc = subprocess.run([sys.executable, os.path.join(info.value.reproducer, "rerun.py")],
                          capture_output=True, text=True, timeout=300, env=child_env())
    assert proc.returncode == -signal.SIGSEGV, proc.stderr[-2000:]


# ---------------------------------------------------------------- the workaround


def test_crash_avoided_without_fusion_emitters_gives_the_right_answer(rng):
    a, row = chain_args(rng)
    f = rl.jit(dus_chain, optimize="none", loops="unroll")
    with pytest.warns(CompileFallbackWarning,
                      match=r"crashed \(SIGSEGV\) on stage 'traced' .* compiled with "
                            r"xla_cpu_use_fusion_emitters=false"):
        got = f(a, row, AVOIDABLE)
    np.testing.assert_array_equal(np.asarray(got), dus_chain_numpy(a, row, AVOIDABLE))
    assert f.last.compiled._exe.note is not None and f.last.compiled._exe.fast_call is not None


def test_fusion_emitters_asked_for_are_not_turned_off(rng, monkeypatch):
    """XLA_FLAGS naming the option is the user's choice: the crash is reported, not retried."""
    monkeypatch.setenv("XLA_FLAGS", with_flag_on())
    with pytest.raises(CompileCrashedError) as info:
        crashing_stages(rng, AVOIDABLE).compile()
    assert info.value.retried is None and "Compiled again" not in str(info.value)


@pytest.mark.parametrize("route", ["probe", "raw"])
def test_other_compile_routes_are_protected_too(rng, monkeypatch, route):
    """Without JAX's compile function to wrap, the worker's compile is a probe before the
    compile here; the raw route (no JAX dispatch) loads the worker's executable directly."""
    if route == "probe":
        monkeypatch.setattr(_compile_isolation, "wrap_jax_compile", lambda: False)
    else:
        monkeypatch.setenv("REACTANT_LAB_RAW_EXECUTE", "1")
    with pytest.raises(CompileCrashedError):
        crashing_stages(rng).compile()
    a, row = chain_args(rng)
    with pytest.warns(CompileFallbackWarning):
        compiled = crashing_stages(rng, AVOIDABLE).compile()
    np.testing.assert_array_equal(np.asarray(compiled(a, row, AVOIDABLE)),
                                  dus_chain_numpy(a, row, AVOIDABLE))


@pytest.mark.slow("compiles a large module")
@needs_enzyme
def test_cov_reproducer_under_all(monkeypatch):
    """The NumPy loop of the report, at the smallest size that crashed XLA: a clear error when
    the fusion emitters are asked for, NumPy's answer through rl.jit otherwise."""
    monkeypatch.setenv("REACTANT_LAB_PATTERNS", "enzyme-ad")
    patterns.pattern_list.cache_clear()
    try:
        n, rng = COV_M + 100, np.random.default_rng(0)
        data, out = rng.random((n, COV_M)), np.zeros((COV_M, COV_M))
        st = rl.trace(cov, data, out, float(n), loops="unroll").stages("all")
        suite_flags = os.environ.get("XLA_FLAGS", "")
        monkeypatch.setenv("XLA_FLAGS", with_flag_on())
        with pytest.raises(CompileCrashedError) as info:
            st.compile()
        assert info.value.stage == st.final.name and f"({st.final.ops:,} ops)" in str(info.value)
        monkeypatch.setenv("XLA_FLAGS", suite_flags)
        with pytest.warns(CompileFallbackWarning):
            rl.jit(cov, loops="unroll")(data, out, float(n))
        assert_close(out, data.T @ data / (n - 1.0), rtol=1e-12)
    finally:
        patterns.pattern_list.cache_clear()


def test_ctrl_c_stops_a_long_compile_in_the_worker(rng, monkeypatch):
    """A compile in the worker is interruptible (one in this process is not)."""
    x = rng.random(64).astype(np.float32)

    def sines(v):
        for _ in range(6000):  # a chain: 'auto' compiles it in the worker, for seconds
            v = jnp.sin(v)
        return v

    st = rl.trace(sines, x, loops="unroll").stages("none")
    monkeypatch.setenv(backend.COMPILE_CHECK_VAR, "always")
    rl.trace(lambda v: v + 1, x).stages("none").compile()  # the compile worker is warm
    monkeypatch.delenv(backend.COMPILE_CHECK_VAR)
    pid = backend._COMPILER.pid
    timers: list[threading.Timer] = []
    await_frame = _worker_client._await_frame

    def interrupted_while_waiting(*args, **kwargs):
        # Ctrl-C once the request is with the worker, not on a clock that a loaded machine
        # can make fire before the compile starts or after it ends.
        timers.append(threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)))
        timers[-1].start()
        return await_frame(*args, **kwargs)

    monkeypatch.setattr(_worker_client, "_await_frame", interrupted_while_waiting)
    try:
        with pytest.raises(KeyboardInterrupt):
            st.compile()
    finally:
        for timer in timers:
            timer.cancel()
    assert len(timers) == 1  # the one compile, in the worker
    assert backend._COMPILER.pid is None and not alive(pid)
    assert_close(rl.trace(lambda v: v * 2, x).stages("none").compile()(x), x * 2)


# ---------------------------------------------------------------- the policy


def test_small_modules_compile_here_in_auto_mode(rng):
    backend._COMPILER.close()
    x = rng.random((8, 8)).astype(np.float32)
    st = rl.trace(lambda v: jnp.tanh(v @ v) + 1, x).stages("all")
    assert backend.isolation_reason(st.final.ir) is None
    st.compile()
    assert backend._COMPILER.pid is None


def test_auto_mode_isolates_long_chains_and_large_modules(rng):
    a, row = chain_args(rng)
    stage = rl.trace(dus_chain, a, row, 160, loops="unroll").stages("none").final
    assert backend.module_size(stage.ir) == (stage.ops, 162)  # ops as the stage table counts
    assert backend.isolation_reason(stage.ir) == "482 ops, a chain of 162"
    short = rl.trace(dus_chain, a, row, 140, loops="unroll").stages("none").final
    assert backend.isolation_reason(short.ir) is None
    wide = "\n".join(f"    %{i} = stablehlo.add %arg0, %arg0 : tensor<4xf32>" for i in range(1200))
    assert backend.isolation_reason(wide) == "1,200 ops"


def test_compile_check_mode_is_validated(monkeypatch, rng):
    monkeypatch.setenv(backend.COMPILE_CHECK_VAR, "sometimes")
    x = rng.random(4).astype(np.float32)
    with pytest.raises(CompileError, match=r"REACTANT_LAB_COMPILE_CHECK='sometimes' is not"):
        rl.trace(lambda v: v + 1, x).stages("none").compile()


def test_worker_compiled_executable_keeps_the_fast_path(monkeypatch, rng):
    monkeypatch.setenv(backend.COMPILE_CHECK_VAR, "always")
    x = rng.random((16, 16)).astype(np.float32)
    compiled = rl.trace(lambda v: jnp.tanh(v @ v) + 1, x).stages("all").compile()
    assert compiled._exe.fast_call is not None and compiled._exe.note is None
    assert_close(compiled(x), np.tanh(x @ x) + 1, rtol=1e-5)
    assert "HloModule" in compiled.hlo_text() and compiled.cost_analysis()["flops"] > 0


def test_xla_refusal_in_the_worker_is_the_usual_compile_error(monkeypatch):
    """XLA refusing a module is not a crash: the error is the one compiling here gives."""
    monkeypatch.setenv(backend.COMPILE_CHECK_VAR, "always")
    text = textwrap.dedent("""\
        module @m {
          func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
            %0 = stablehlo.custom_call @reactant_lab_no_such_target(%x) : (tensor<4xf32>) -> tensor<4xf32>
            return %0 : tensor<4xf32>
          }
        }
        """)
    aval = ((4,), np.dtype(np.float32), False)
    with pytest.raises(CompileError, match="XLA could not compile the module") as info:
        backend.compile_module(text, avals=[aval], out_avals=[aval], device=backend.resolve_device(None),
                               x64=False, donate=[False], structure=None)
    assert not isinstance(info.value, CompileCrashedError)
