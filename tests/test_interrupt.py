"""Compiled calls that may not end (reactant_lab/_backend_run.py): Ctrl-C, SIGALRM and
``timeout=`` stop them, the caller's arrays stay as they were, and the process, the jit object
and JAX itself go on working. A loop that never ends runs in a subprocess with a hard time
limit, so a regression fails instead of hanging; a loop that ends after seconds runs here."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import _backend_run, _native, backend
from tests import numpy_kernels as nk
from tests.conftest import (
    assert_close,
    child_env,
    earlier_overruns_ended,
    float_rtol,
    steps_over_in_seconds,
    target_platform,
)

ROOT = Path(__file__).resolve().parent.parent
HARD_LIMIT_S = 240
"""A child still running after this long has hung: the test fails (the child is killed)."""

# A NumPy kernel whose loop ends only when a[0] turns negative: with positive steps, never.
RUNAWAY = '''
import json, signal, threading, time
import numpy as np
import reactant_lab as rl

def kernel(a, step):
    while a[0] >= 0:
        a += step
    return a.sum()

def eager(a, step):
    a, step = a.copy(), step.copy()
    while a[0] >= 0:
        a += step
    return a.sum(), a

def frame(a):
    return [a.dtype.str, a.shape, a.strides, a.tobytes().hex()]

def report(**fields):
    print("REPORT " + json.dumps(fields), flush=True)

rng = np.random.default_rng(SEED)
'''


def run_child(body: str, seed: int, where: Path) -> dict:
    """Run ``RUNAWAY`` + ``body`` as a script (the loops' source must be readable) in a fresh
    interpreter; its REPORT line, parsed."""
    script = where / "child.py"
    script.write_text(RUNAWAY.replace("SEED", str(seed)) + textwrap.dedent(body))
    try:
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=HARD_LIMIT_S, cwd=ROOT, env=child_env())
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the child hung: the compiled call could not be stopped\n"
                    f"{(exc.stderr or b'')[-3000:]!r}")
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("REPORT ")]
    assert lines, f"no report\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1].removeprefix("REPORT "))


def seed_of(rng: np.random.Generator) -> int:
    return int(rng.integers(2**31))


def test_sigalrm_interrupts_a_loop_that_never_ends(rng, tmp_path):
    out = run_child('''
        f = rl.jit(kernel)
        good = -rng.random(5) - 0.5, rng.random(5) + 0.1  # a[0] < 0: the loop ends at once
        f(*good)  # compiled and run once
        a, step = rng.random(5), rng.random(5) + 0.1
        before = [frame(a), frame(step)]
        def alarm(*_):
            raise KeyboardInterrupt
        signal.signal(signal.SIGALRM, alarm)
        signal.alarm(2)
        try:
            f(a, step)
            caught = None
        except KeyboardInterrupt as exc:
            caught = exc
        right_after = [frame(a), frame(step)]
        time.sleep(0.5)  # the computation goes on meanwhile, in buffers of its own
        later = [frame(a), frame(step)]
        b = -rng.random(5) - 0.5
        want, want_b = eager(b, good[1])
        got = f(b, good[1])
        report(mro=[c.__name__ for c in type(caught).__mro__], message=str(caught),
               left=getattr(caught, "left_running", None), same=before == right_after == later,
               next_ok=bool(np.allclose(got, want) and np.array_equal(b, want_b)),
               guarded=f.last.compiled.guarded, loop=f.last.compiled.long_loop)
    ''', seed_of(rng), tmp_path)
    assert out["mro"][:2] == ["CallInterruptedError", "KeyboardInterrupt"], out
    assert out["left"] is True
    assert "kernel was interrupted" in out["message"]
    assert "`while a[0] >= 0`" in out["message"]
    assert "restart the process" in out["message"]
    assert out["same"], "the caller's arrays changed"
    assert out["next_ok"], "the next call on the jit object gave another answer than NumPy"
    assert out["guarded"] and out["loop"] == "the loop `while a[0] >= 0`"


def test_timeout_stops_runaways_and_leaves_jax_working(rng, tmp_path):
    out = run_child('''
        import jax, jax.numpy as jnp
        f = rl.jit(kernel, timeout=1.0)
        a, step = rng.random(5), rng.random(5) + 0.1
        before = frame(a)
        try:
            f(a, step)
            timed_out = None
        except rl.CallTimeoutError as exc:
            timed_out = exc
        same = before == frame(a)
        b, s = -rng.random(5) - 0.5, rng.random(5) + 0.1
        want, want_b = eager(b, s)
        next_ok = bool(np.allclose(f(b, s), want) and np.array_equal(b, want_b))

        # JAX code whose loop body is past XLA's cheap-computation cost (it would run on the
        # client's threads, holding up every later computation), then JAX's own jit.
        def spin(x):
            return jax.lax.while_loop(lambda v: v[0] >= 0, lambda v: v * 1.0 + 1.0, x)
        x = jnp.asarray(rng.random(4096))
        try:
            rl.jit(spin, timeout=0.5)(x)
            jax_timed_out = False
        except rl.CallTimeoutError:
            jax_timed_out = True
        m = rng.random((64, 64))
        after = np.asarray(jax.jit(lambda m: m @ m)(m))
        report(mro=[c.__name__ for c in type(timed_out).__mro__], message=str(timed_out),
               limit=timed_out.limit, name=timed_out.fn_name, same=same, next_ok=next_ok,
               jax_timed_out=jax_timed_out, jax_ok=bool(np.allclose(after, m @ m)))
    ''', seed_of(rng), tmp_path)
    assert out["mro"][:3] == ["CallTimeoutError", "ExecutionError", "ReactantLabError"], out
    assert "TimeoutError" in out["mro"]
    assert out["name"] == "kernel" and out["limit"] == 1.0
    for part in ("kernel ran past its time limit of 1 s", "`while a[0] >= 0`", "timeout="):
        assert part in out["message"], out["message"]
    assert out["same"], "the caller's array changed"
    assert out["next_ok"]
    assert out["jax_timed_out"]
    assert out["jax_ok"], "JAX's own computation after the runaway gave a wrong answer"


def test_left_running_computations_are_bounded(rng, tmp_path):
    out = run_child('''
        from reactant_lab import _backend_run
        f = rl.jit(kernel, timeout=0.2)
        errors = []
        for _ in range(_backend_run.MAX_LEFT_RUNNING + 1):
            try:
                f(rng.random(3), rng.random(3) + 0.1)
            except rl.ReactantLabError as exc:
                errors.append((type(exc).__name__, str(exc)))
        x = rng.random(3)
        plain = rl.jit(lambda v: v * 2)(x)  # no loop, no limit: not guarded, still runs
        report(errors=errors, left=_backend_run.left_running(),
               plain_ok=bool(np.allclose(plain, x * 2)))
    ''', seed_of(rng), tmp_path)
    names = [n for n, _ in out["errors"]]
    assert names == ["CallTimeoutError"] * _backend_run.MAX_LEFT_RUNNING + ["LeftRunningError"]
    assert "Restart the process" in out["errors"][-1][1]
    assert out["left"] == _backend_run.MAX_LEFT_RUNNING
    assert out["plain_ok"]


@pytest.mark.slow("a process or kernel of its own")
def test_ctrl_c_stops_a_notebook_cell_and_the_kernel_lives(rng, tmp_path):
    out = run_child('''
        import os
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "reactant_lab")
        a, step = rng.random(5), rng.random(5) + 0.1
        ip.user_ns.update(a=a, step=step, np=np)
        before = frame(a)

        def interrupt_once_running():  # Ctrl-C, once the compiled run (not the compile) runs
            while not any(t.name == "reactant_lab-runner" for t in threading.enumerate()):
                time.sleep(0.05)
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=interrupt_once_running, daemon=True).start()
        cell = ("%%reactant_jit --no-display\\n"
                "def spin(a, step):\\n"
                "    while a[0] >= 0:\\n"
                "        a += step\\n"
                "    return a.sum()\\n"
                "spin(a, step)\\n")
        first = ip.run_cell(cell)
        then = ip.run_cell("b = np.array([2.5, 0.0, 1.0])\\n"  # three steps, then b[0] < 0
                           "%reactant_jit --no-display spin(b, -np.ones(3))")
        report(error=type(first.error_in_exec).__name__,
               keyboard=isinstance(first.error_in_exec, KeyboardInterrupt),
               same=before == frame(a), then_ok=then.success,
               b=ip.user_ns["b"].tolist())
    ''', seed_of(rng), tmp_path)
    assert out["error"] == "CallInterruptedError" and out["keyboard"], out
    assert out["same"], "the cell's array changed"
    assert out["then_ok"], "the kernel could not run the next cell"
    assert out["b"] == [-0.5, -3.0, -2.0]


# ---------------------------------------------------------------------------------- in process

def count_up(a, n):
    while a[0] < n:
        a[0] += 1.0
    return a.sum()


def test_a_loop_of_unknown_length_runs_guarded_and_agrees_with_numpy(rng):
    a = rng.random(6)
    n = float(rng.integers(5, 50))
    want = a.copy()
    want_sum = count_up(want, n)
    f = rl.jit(count_up)
    got = f(a, n)
    assert f.last.compiled.guarded
    # On a TPU v5e the optimized HLO's loop named no source line (seen once, not explained):
    # the description is the generic one there.
    assert f.last.compiled.long_loop in (
        ("the loop `while a[0] < n`",) if target_platform() == "cpu"
        else ("the loop `while a[0] < n`", "a while loop"))
    assert_close(a, want, float_rtol(a.dtype))
    assert got == pytest.approx(want_sum, rel=float_rtol(a.dtype))
    assert type(got) is type(want_sum)


def test_jax_code_with_keywords_runs_guarded_and_agrees_with_jax_jit(rng):
    def scale(x, *, n, rate):
        return jax.lax.while_loop(lambda c: c[0] < n,
                                  lambda c: (c[0] + 1, c[1] * rate), (0, x))[1]

    x = jnp.asarray(rng.random(7), dtype=jnp.float32)
    n, rate = jnp.int32(rng.integers(1, 6)), jnp.float32(1 + rng.random())
    f = rl.jit(scale)
    got = f(x, n=n, rate=rate)
    assert f.last.compiled.guarded
    want = jax.jit(scale)(x, n=n, rate=rate)
    assert isinstance(got, jax.Array) and got.dtype == want.dtype
    assert_close(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert float(jnp.sum(got)) == pytest.approx(float(jnp.sum(want)), rel=1e-5)


def test_a_call_without_loops_is_not_guarded_unless_limited(rng):
    def kernel(a, b):
        a += 2 * b
        return b.max()

    a, b = rng.random(8), rng.random(8)
    want_a = a + 2 * b
    f = rl.jit(kernel)
    f(a.copy(), b)
    compiled = f.last.compiled
    assert not compiled.guarded and compiled.long_loop is None and compiled.timeout is None
    limited = compiled.with_timeout(30)
    assert limited.guarded and limited.timeout == 30.0
    got = limited(a, b)
    assert_close(a, want_a, float_rtol(a.dtype))
    assert got == pytest.approx(b.max(), rel=float_rtol(b.dtype))
    assert not limited.unguarded().guarded


@pytest.mark.parametrize("handoff", ["spinning", "locks alone"])
def test_short_guarded_calls_are_handed_back_spinning_and_agree_with_numpy(
        rng, monkeypatch, handoff):
    """After its first call, a short guarded call's caller spins for the result, the runner
    for the next call (``_handoff.c``); without the library (no C compiler) the locks alone
    hand it over. Either way each call agrees with NumPy."""
    if handoff == "spinning" and _native.compiler() is None:
        pytest.skip("no C compiler: the spinning handoff is not built here")
    if handoff == "locks alone":
        monkeypatch.setattr(_backend_run, "_handoff", lambda: None)
    else:
        assert _backend_run._handoff() is not None, "the handoff library did not build or load"
    earlier_overruns_ended()
    posts, spins = [], []
    post = _backend_run._post

    def spy(runner, job):
        spins.append(job.spin)
        posts.append(post(runner, job))
        return posts[-1]

    monkeypatch.setattr(_backend_run, "_post", spy)
    f = rl.jit(count_up)
    n = float(rng.integers(5, 50))  # a Python number is static: one executable for all
    for _ in range(40):
        a = rng.random(6) * 4
        want = a.copy()
        want_sum = count_up(want, n)
        got = f(a, n)
        assert_close(a, want, float_rtol(a.dtype))
        assert got == pytest.approx(want_sum, rel=float_rtol(a.dtype))
    assert f.last.compiled.guarded and len(posts) == 40
    assert spins[0] == 0 and not posts[0], "the first call has no earlier one to tell it short"
    # after a short call (each is, on an idle machine; the suite's other workers may stretch
    # some past 1 ms) the next spins, for at most twice that; one preempted past its spin falls
    # back to the lock
    assert any(spins) and all(spin < 2 * _backend_run.SPIN_UNDER + 1e-4 for spin in spins), spins
    assert any(posts) if handoff == "spinning" else not any(posts), posts


def test_a_runaway_after_short_calls_still_stops_at_its_time_limit(rng):
    """Its caller spins first (the calls before were short), then waits where the limit
    reaches it."""
    earlier_overruns_ended()  # this test leaves one running: under --seeds, one per repeat
    f = rl.jit(count_up, timeout=0.3)
    runaway = steps_over_in_seconds()
    for _ in range(5):
        ahead = rng.random() * runaway  # a[0] > runaway: the loop ends at once
        a = np.array([runaway + ahead, ahead, -ahead])
        want = a.copy()
        count_up(want, runaway)
        f(a, runaway)
        assert_close(a, want, float_rtol(a.dtype))
    a = rng.random(3)
    before = a.tobytes()
    start = time.perf_counter()
    with pytest.raises(rl.CallTimeoutError, match="count_up ran past its time limit"):
        f(a, runaway)
    assert time.perf_counter() - start < 0.3 + 0.7
    assert a.tobytes() == before
    if target_platform() != "cpu":  # the device runs it: later tests' calls would be refused
        earlier_overruns_ended()


def test_a_guarded_executable_refuses_another_signature(rng):
    f = rl.jit(count_up)
    f(rng.random(4), 3.0)
    compiled = f.last.compiled
    with pytest.raises(rl.SignatureMismatchError, match=r"args\[0\]"):
        compiled(rng.random(5), 3.0)
    with pytest.raises(rl.SignatureMismatchError, match=r"args\[0\]"):
        compiled(rng.random(4).astype(np.float32), 3.0)
    b = rng.random(5)  # the jit object traces again for it
    want = b.copy()
    count_up(want, 3.0)
    f(b, 3.0)
    assert_close(b, want, float_rtol(b.dtype))


def test_bench_stops_a_preset_past_its_time_limit(rng):
    earlier_overruns_ended()  # this test leaves one running: under --seeds, one per repeat
    a = rng.random(3)
    before = a.tobytes()
    with pytest.raises(rl.CallTimeoutError, match="count_up ran past its time limit"):
        rl.bench(count_up, a, steps_over_in_seconds(), presets=("none",),
                 baselines=("numpy",), timeout=0.05)
    assert a.tobytes() == before
    if target_platform() != "cpu":  # the device runs it: later tests' calls would be refused
        earlier_overruns_ended()


def double_in_place(x):
    x *= 2.0


def test_a_device_still_running_a_stopped_computation_refuses_calls_until_it_ends(
        rng, monkeypatch):
    """Where a stopped computation goes on on the device itself (an accelerator; on the CPU,
    JAX's client when there is no twin), every later computation there waits for it, inside
    XLA, out of Ctrl-C's reach: a call there is refused, naming the device and what runs."""
    earlier_overruns_ended()
    monkeypatch.setattr(backend.Executable, "_guarded_twin", lambda self: None)
    g, h = rl.jit(double_in_place), rl.jit(double_in_place)
    g(rng.random(5))  # compiled: g's refused call below takes the lean path of NumPy kernels,
    h(x=rng.random(5))  # h's (a keyword) jit's flattened path
    assert g._arrays is not None and h._arrays is None
    f = rl.jit(count_up, timeout=0.05)
    a = rng.random(3)
    with pytest.raises(rl.CallTimeoutError, match="count_up ran past its time limit") as info:
        f(a, steps_over_in_seconds())
    assert info.value.left_running
    device = str(f.last.compiled.device)
    assert device in str(info.value)  # "it goes on on TFRT_CPU_0, and later computations ..."
    b = rng.random(5)
    before = b.tobytes()
    with pytest.raises(rl.LeftRunningError) as refused:
        g(b)
    message = str(refused.value)
    assert f"{device} still runs the computation of count_up" in message
    assert "Restart the process" in message
    with pytest.raises(rl.LeftRunningError, match="still runs the computation of count_up"):
        h(x=b)
    with pytest.raises(rl.LeftRunningError, match="still runs the computation of count_up"):
        g.last.compiled.device_runner(b)  # what bench times
    assert b.tobytes() == before
    earlier_overruns_ended()  # it ends (seconds on), and the device takes calls again
    assert _backend_run.left_running() == 0
    want = b * 2.0
    g(b)
    assert_close(b, want, float_rtol(b.dtype))


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "3", True])
def test_a_bad_timeout_is_refused(bad):
    with pytest.raises(rl.ExecutionError, match="timeout must be a positive number"):
        rl.jit(count_up, timeout=bad)


def test_long_loop_reads_xla_trip_counts():
    unknown = ('  ROOT %while.0 = (s32[], f32[4]{0}) while(%tuple.4), condition=%c, body=%b, '
               'metadata={op_name="jit(f)/while a[0] >= 0 "}')
    known = ('  %while.5 = (s64[], f64[3]{0}) while(%tuple), condition=%c, body=%b, '
             'backend_config={"known_trip_count":{"n":"50"}}')
    huge = known.replace('"50"', f'"{_backend_run.LONG_TRIPS}"')
    assert _backend_run.long_loop(unknown) == "the loop `while a[0] >= 0`"
    assert _backend_run.long_loop(known) is None
    unnamed = unknown.replace('metadata={op_name="jit(f)/while a[0] >= 0 "}', "")
    assert _backend_run.long_loop(unnamed) == "a while loop"
    assert _backend_run.long_loop(f"{unnamed}\n{unknown}") == "the loop `while a[0] >= 0`"
    assert _backend_run.long_loop(huge) == f"a while loop ({_backend_run.LONG_TRIPS:,} iterations)"
    assert _backend_run.long_loop('%x = f32[] add(%a, %b), metadata={op_name="while(x)"}') is None


def lower_sums(A, counts):
    for i in range(A.shape[0]):
        for j in range(i):  # bounded by the loop around it: at most A.shape[0] - 1 trips
            A[i, j] += A[j, i]
    for i in range(counts.shape[0]):
        for _ in range(counts[i]):  # bounded by data only
            A[i, i] += 1.0


def test_a_loop_bounded_by_the_loops_around_it_runs_unguarded(rng):
    """XLA cannot tell the trip count of `for j in range(i)` inside `for i in range(n)`, but it
    is at most n: such calls take the usual path (no runner thread); a loop whose bound comes
    from the data stays guarded. NumPy's results either way."""
    n = int(rng.integers(6, 12))
    A, counts = rng.standard_normal((n, n)), rng.integers(0, 4, n)
    want = A.copy()
    lower_sums(want, counts)
    f = rl.jit(lower_sums)
    f(A, counts)
    assert_close(A, want, float_rtol(A.dtype))
    assert f.last.compiled.guarded and "range(counts[i])" in f.last.compiled.long_loop
    B = rng.standard_normal((n, n))
    f = rl.jit(nk.cholesky)
    B_spd = B @ B.T + n * np.eye(n)
    want = B_spd.copy()
    nk.cholesky(want)
    f(B_spd)
    assert_close(np.tril(B_spd), np.tril(want), 1e-12)
    assert not f.last.compiled.guarded and f.last.compiled.long_loop is None


_LOOPS = """
func.func public @main(%n: tensor<i64>) -> tensor<i64> {{
  %c0 = stablehlo.constant dense<{start}> : tensor<{t}>
  %c1 = stablehlo.constant dense<1> : tensor<{t}>
  %top = stablehlo.constant dense<{top}> : tensor<{t}>
  %r:2 = stablehlo.while(%i = %c0, %s = %c0) : tensor<{t}>, tensor<{t}>
  cond {{
    %p = stablehlo.compare {cmp}, %i, %top, {kind} : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %i1 = stablehlo.add %i, %c1 : tensor<{t}>
    %bound = stablehlo.maximum %i1, {inner} : tensor<{t}>
    %q:2 = stablehlo.while(%j = %c0, %b = %bound) : tensor<{t}>, tensor<{t}>
    cond {{
      %p = stablehlo.compare LT, %j, %b, SIGNED : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %j1 = stablehlo.add %j, %c1 : tensor<{t}>
      stablehlo.return %j1, %b : tensor<{t}>, tensor<{t}>
    }}
    %s1 = stablehlo.add %s, %q#0 : tensor<{t}>
    stablehlo.return %i1, %s1 : tensor<{t}>, tensor<{t}>
  }}
  %out = stablehlo.convert %r#1 : (tensor<{t}>) -> tensor<i64>
  return %out : tensor<i64>
}}
"""


@pytest.mark.parametrize(("fields", "bounded"), [
    ({}, True),                                        # j < max(i + 1, 0), i < 80
    ({"cmp": "LE"}, True),
    ({"top": 2_000_000}, False),                       # the inner loop's bound reaches 2M
    ({"inner": "%n"}, False),                          # ... or comes from an argument
    ({"kind": "UNSIGNED"}, False),
    ({"cmp": "GT"}, False),                            # not a counter below a bound
    ({"t": "i32", "start": 2**31 - 90, "top": 2**31 - 1, "cmp": "LE"}, False),  # it wraps
])
def test_loop_bounds_follow_counters_and_the_bounds_around_them(fields, bounded):
    from jax.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    from reactant_lab import _backend_ir

    values = {"start": 0, "t": "i64", "top": 80, "cmp": "LT", "kind": "SIGNED",
              "inner": "%c0", **fields}
    text = _LOOPS.format(**values)
    with jax_mlir.make_ir_context():
        module = ir.Module.parse(text)
        shown, other = _backend_ir.loop_bounds(module, _backend_run.LONG_TRIPS)
        assert (not other) is bounded, (shown, other)


def test_a_guarded_call_gives_up_donated_jax_arrays_as_jax_does(rng):
    earlier_overruns_ended()
    f = rl.jit(lambda a: a * 2, donate=True, timeout=30)
    x = jnp.asarray(rng.random(4), jnp.float32)
    want = np.asarray(x) * 2
    assert_close(np.asarray(f(x)), want, rtol=1e-6)
    assert f.last.compiled.guarded
    with pytest.raises(rl.DonatedArgumentError, match=r"args\[0\]"):
        f(x)


def test_a_guarded_kernel_whose_twin_lacks_a_kernel_runs_the_executable_itself(rng):
    """jaxlib 0.10.2's XLA:CPU did not serialize every kernel of adi's executable: its twin
    failed with "NOT_FOUND: Function dynamic-update-slice_slice_fusion.36 not found", so adi
    with a time limit raised instead of running. The guarded call now runs the executable."""
    kernel = next(k for k in nk.KERNELS if k.name == "adi")
    jf = rl.jit(kernel.fn, timeout=60.0)
    for _ in range(2):
        args = kernel.make(rng)
        ref = [np.array(x) if isinstance(x, np.ndarray) else x for x in args]
        want = kernel.fn(*ref)
        got = jf(*args)
        if want is not None:
            assert_close(got, want, kernel.tol)
        for x, y in zip(args, ref, strict=True):
            assert_close(x, y, max(kernel.tol, float_rtol(np.float64)))
    assert jf.last.compiled.guarded

