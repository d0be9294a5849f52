"""Pass pipelines cannot take the process down: crashes in the worker become errors, deep nesting
and unparsable text are refused with a clear message, long stages say so and stop on Ctrl-C."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import reactant_lab as rl
from reactant_lab import _backend_text, backend
from reactant_lab.compile import compile_traced
from reactant_lab.errors import (
    ModuleTextError,
    PassCrashedError,
    PassInterruptedError,
    UnknownStageError,
)
from reactant_lab.stages import progress, reproducer, run_on_text, runner
from reactant_lab.stages.failures import PARSER
from tests.conftest import child_env
from tests.corpus import CASES

needs_enzyme = pytest.mark.skipif(not rl.enzyme_available(), reason="needs enzyme-ad")

# lower-jit JIT-compiles the LLVM function; x86 cannot select an NVVM intrinsic, and LLVM's
# fatal error handler aborts the process (SIGABRT) after printing "LLVM ERROR: ...".
ABORTS_IN_LOWER_JIT = textwrap.dedent("""\
    module {
      llvm.func @w() {
        %0 = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
        %1 = llvm.mlir.constant(1 : i64) : i64
        %p = llvm.alloca %1 x i32 : (i64) -> !llvm.ptr
        llvm.store volatile %0, %p : i32, !llvm.ptr
        llvm.return
      }
      func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
        enzymexla.jit_call @w () : () -> ()
        return %x : tensor<4xf32>
      }
    }
    """)
LOWER_JIT = "lower-jit{openmp=true backend=cpu}"

UNPARSABLE = ("module {\n  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
              "    %0 = stablehlo.bogus %x : tensor<4xf32>\n    return %0 : tensor<4xf32>\n"
              "  }\n}\n")
SMALL = "module {\n  func.func @main() {\n    return\n  }\n}\n"


def on_the_worker() -> str:
    """Run a pipeline on a text never run before, so that it reaches the pass worker (a result
    kept from an earlier run does not): the worker runs afterwards. Returns the output."""
    on_the_worker.runs += 1
    fresh = f"module attributes {{rl.run = \"{os.getpid()}-{on_the_worker.runs}\"}} {{"
    return rl.run_pipeline(SMALL.replace("module {", fresh), "canonicalize")


on_the_worker.runs = 0


def nested_calls(depth: int) -> str:
    """A module whose inlining nests ``depth`` stablehlo.case regions (slow to inline)."""
    t = "tensor<4xf32>"
    out = ["module {"]
    for i in range(depth):
        out += [f"  func.func private @f{i}(%x: {t}, %i: tensor<i32>) -> {t} {{",
                '    %r = "stablehlo.case"(%i) ({',
                f"      %y = func.call @f{i + 1}(%x, %i) : ({t}, tensor<i32>) -> {t}",
                f"      stablehlo.return %y : {t}", f"    }}) : (tensor<i32>) -> {t}",
                f"    return %r : {t}", "  }"]
    out += [f"  func.func private @f{depth}(%x: {t}, %i: tensor<i32>) -> {t} {{",
            f"    return %x : {t}", "  }",
            f"  func.func public @main(%x: {t}, %i: tensor<i32>) -> {t} {{",
            f"    %r = func.call @f0(%x, %i) : ({t}, tensor<i32>) -> {t}",
            f"    return %r : {t}", "  }", "}"]
    return "\n".join(out)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not count)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture(autouse=True)
def _repro_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("REACTANT_LAB_REPRO_DIR", str(tmp_path / "repro"))


# ---------------------------------------------------------------- crashes


@needs_enzyme
def test_crash_script_really_crashes_in_process():
    """The module above really kills a process that runs its passes in-process; and even then
    the crash's output is not swallowed (a file named on stderr keeps LLVM's last words)."""
    script = ("import reactant_lab as rl, sys\n"
              f"rl.run_pipeline(sys.stdin.read(), {LOWER_JIT!r})\nprint('survived')\n")
    env = child_env(REACTANT_LAB_INPROCESS_PASSES="1")
    proc = subprocess.run([sys.executable, "-c", script], input=ABORTS_IN_LOWER_JIT,
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == -signal.SIGABRT and "survived" not in proc.stdout
    assert "Fatal Python error: Aborted" in proc.stderr  # faulthandler, to the real stderr
    log = re.search(r"MLIR's output of the pass running then is in (\S+)", proc.stderr).group(1)
    with open(log, encoding="utf-8") as fh:
        assert "LLVM ERROR: Cannot select" in fh.read()
    os.remove(log)


@needs_enzyme
def test_crashing_pass_is_an_error_naming_pass_and_signal():
    before = backend.worker_pid()
    with pytest.raises(PassCrashedError) as info:
        rl.run_pipeline(ABORTS_IN_LOWER_JIT, f"canonicalize,{LOWER_JIT},symbol-dce")
    err = info.value
    assert err.pass_name == LOWER_JIT and err.signal == "SIGABRT" and err.stage == "pipeline"
    assert "LLVM ERROR: Cannot select" in err.diagnostics
    assert f"pass {LOWER_JIT!r} crashed the pass worker (SIGABRT)" in str(err)
    assert "LLVM ERROR" in str(err) and err.reproducer in str(err)
    assert os.path.exists(os.path.join(err.reproducer, "input.mlir"))
    assert isinstance(err, rl.PassFailedError)
    # this process is fine and the next run starts a new worker
    assert "func.func public @main" in on_the_worker()
    assert backend.worker_pid() not in (None, before)


@needs_enzyme
def test_crash_in_a_stage_names_the_stage_and_keeps_the_module_before_it():
    with pytest.raises(PassCrashedError) as info:
        run_on_text(ABORTS_IN_LOWER_JIT, pipeline=f"canonicalize,{LOWER_JIT}",
                    granularity="pass")
    assert info.value.stage == "lower-jit" and info.value.pass_name == LOWER_JIT
    assert "enzymexla.jit_call @w" in info.value.last_good_ir
    rerun = subprocess.run([sys.executable, os.path.join(info.value.reproducer, "rerun.py")],
                           capture_output=True, text=True, timeout=300, env=child_env())
    assert rerun.returncode == 1 and "PassCrashedError" in rerun.stderr


@needs_enzyme
def test_parser_crash_is_blamed_on_the_parser(monkeypatch):
    monkeypatch.setattr(_backend_text, "MAX_NESTING", 10**6)  # let the text reach MLIR's parser
    with pytest.raises(PassCrashedError) as info:
        rl.run_pipeline("module {" * 5000 + "}" * 5000, "canonicalize")
    assert info.value.pass_name == PARSER and info.value.signal == "SIGSEGV"
    assert str(info.value).startswith("MLIR's parser crashed the pass worker (SIGSEGV)")
    assert on_the_worker()


def test_worker_killed_while_idle_is_replaced_silently():
    on_the_worker()
    pid = backend.worker_pid()
    os.kill(pid, signal.SIGKILL)
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # dead, not yet reaped
    assert on_the_worker()
    assert backend.worker_pid() != pid


def test_a_pipeline_run_again_on_the_same_text_is_not_sent_to_the_worker_again(monkeypatch):
    """The passes are deterministic: a second run of a pipeline on the same text gives the text
    the first gave, without the worker; another pipeline, another text, a run that failed and
    the other pass mode do go to it."""
    backend._PIPELINE_RESULTS.clear()
    sent = []
    real = backend._WORKER.run
    monkeypatch.setattr(backend._WORKER, "run",
                        lambda mode, text, pipeline, **kw: sent.append(pipeline) or real(
                            mode, text, pipeline, **kw))
    other = SMALL.replace("@main", "@other")
    first = backend.run_pipeline(SMALL, "canonicalize")
    assert backend.run_pipeline(SMALL, "canonicalize") == first and len(sent) == 1
    backend.run_pipeline(SMALL, "canonicalize,cse")
    backend.run_pipeline(other, "canonicalize")
    assert len(sent) == 3
    for _ in range(2):
        with pytest.raises(rl.UnknownPassError):
            backend.run_pipeline(SMALL, "canonicalize,no-such-pass")
    assert len(sent) == 5
    if rl.enzyme_available():
        backend.run_pipeline(SMALL, "canonicalize", use_enzyme=False)
        assert len(sent) == 6
    before = len(sent)
    with backend.fresh_compiles():  # what rl.bench times runs anew
        assert backend.run_pipeline(SMALL, "canonicalize") == first
    assert len(sent) == before + 1


def test_kept_pipeline_results_stay_within_their_budget():
    kept = backend._PipelineResults(4000)
    for i in range(40):
        kept.put(("m", "p", f"text {i:03d}" * 10), "x" * 50)
    assert kept.get(("m", "p", "text 000" * 10)) is None
    assert kept.get(("m", "p", "text 039" * 10)) == "x" * 50
    assert 0 < kept._size <= 4000
    kept.put(("m", "p", "too large"), "x" * 1000)  # over a quarter of the budget: not kept
    assert kept.get(("m", "p", "too large")) is None
    kept.put(("m", "p", "ascii"), "x" * 300)
    assert kept.get(("m", "p", "ascii")) == "x" * 300
    wide = "\N{MATHEMATICAL ITALIC SMALL X}" * 300  # 4 bytes a character: counted as such
    kept.put(("m", "p", "wide"), wide)
    assert kept.get(("m", "p", "wide")) is None


def test_worker_dies_with_its_parent():
    script = ("import os, time, reactant_lab as rl\nfrom reactant_lab import backend\n"
              f"rl.run_pipeline({SMALL!r}, 'canonicalize')\n"
              "print(backend.worker_pid(), flush=True)\ntime.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env=child_env())
    worker = int(proc.stdout.readline())
    assert alive(worker)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(worker)


def test_in_process_mode_gives_the_same_stages(monkeypatch, rng):
    case = next(c for c in CASES if c.name == "mlp")
    args, kwargs = case.make(rng)
    traced = rl.trace(case.fn, *args, **kwargs)
    worker = traced.stages("all")
    monkeypatch.setenv("REACTANT_LAB_INPROCESS_PASSES", "1")
    backend._PIPELINE_RESULTS.clear()  # the passes run again, here
    here = traced.stages("all")
    assert [s.ir for s in here.stages] == [s.ir for s in worker.stages]


# ---------------------------------------------------------------- module text


@pytest.mark.parametrize("text", [
    "module {" * 5000 + "}" * 5000,
    'module attributes {x.deep = ' + "[" * 10000 + "]" * 10000 + "} {\n}\n",
])
def test_deep_nesting_is_refused_before_mlir_sees_it(text, rng):
    expected = r"nests brackets \d[\d,]* levels deep .* at most 1,000"
    with pytest.raises(ModuleTextError, match=expected):
        rl.run_pipeline(text, "canonicalize")
    with pytest.raises(ModuleTextError, match=expected):
        run_on_text(text, optimize="none")
    traced = rl.trace(lambda x: x + 1, rng.random(3))
    with pytest.raises(ModuleTextError, match=expected):
        compile_traced(traced, text)


def test_real_modules_nest_far_below_the_limit(rng):
    deepest = 0
    for case in CASES:
        args, kwargs = case.make(rng)
        text = rl.trace(case.fn, *args, **kwargs).ir
        deepest = max(deepest, backend._deepest_nesting(text, 0)[0])
    assert 5 < deepest < backend.MAX_NESTING // 10


def test_arrows_do_not_hide_nesting():
    text = "{" * 600 + "() -> f32 " * 600 + "\n" + "{" * 600
    assert backend._deepest_nesting(text, 1000) == (1200, 2)
    assert backend._deepest_nesting("func.func @f() -> tensor<f32>\n" * 5000, 10) is None


def test_hex_payloads_of_folded_constants_are_not_scanned_for_brackets(rng):
    """A folded constant's hex string holds no structure: nesting around one is found (at its
    line), and brackets inside a "0x..." string literal are not counted."""
    payload = rng.bytes(4096).hex().upper()
    text = "module {\n" + "(" * 1100 + f'dense<"0x{payload}">' + ")" * 1100 + "\n}\n"
    assert backend._deepest_nesting(text, 1000) == (1102, 2)
    quoted = f'module {{\n  %c = "x"() {{a = "0x{"(" * 2000}"}} : () -> ()\n}}\n'
    assert backend._deepest_nesting(quoted, 1000) is None


def test_unparsable_text_is_blamed_on_the_parser():
    for call in (lambda: rl.run_pipeline(UNPARSABLE, "canonicalize"),
                 lambda: run_on_text(UNPARSABLE, optimize="none"),
                 lambda: run_on_text(UNPARSABLE, pipeline="canonicalize,cse")):
        with pytest.raises(ModuleTextError) as info:
            call()
        message = str(info.value)
        assert message.startswith("the module text does not parse: line 3, column 10: custom "
                                  "op 'stablehlo.bogus' is unknown")
        assert "%0 = stablehlo.bogus %x" in message


MAGIC_SCRIPT = textwrap.dedent("""
    import json, sys
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output
    shell = start_ipython()
    shell.run_cell("%load_ext reactant_lab", store_history=False)
    with capture_output() as cap:
        result = shell.run_cell("%%reactant_mlir canonicalize\\n" + sys.stdin.read())
    print(json.dumps({"error": type(result.error_in_exec).__name__, "panels": [
        o.data["text/plain"] for o in cap.outputs if "text/plain" in o.data]}))
""")


def test_reactant_mlir_cell_that_does_not_parse_is_a_parser_panel():
    # in a subprocess: IPython's test shell can be started once per process (test_magics does)
    proc = subprocess.run([sys.executable, "-c", MAGIC_SCRIPT], input=UNPARSABLE,
                          capture_output=True, text=True, timeout=300, env=child_env())
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["error"] == "ModuleTextError"
    [panel] = report["panels"]
    assert panel.startswith("ModuleTextError: the module text does not parse: line 3, column 10")


@pytest.mark.parametrize(("source", "wanted"), [
    (None, "not NoneType"), (42, "not int"), (b"\xff\xfe", "not UTF-8"),
])
def test_module_text_must_be_text(source, wanted):
    with pytest.raises(ModuleTextError, match=wanted):
        rl.run_pipeline(source, "canonicalize")


def test_module_text_as_utf8_bytes_is_accepted():
    assert rl.run_pipeline(SMALL.encode(), "canonicalize") == rl.run_pipeline(SMALL,
                                                                             "canonicalize")


def test_pipeline_must_be_text():
    with pytest.raises(rl.PipelineError, match="pipeline must be a str"):
        rl.run_pipeline(SMALL, None)


# ---------------------------------------------------------------- stage lookup, reproducers


def test_unknown_stage_lists_the_stages(rng):
    st = rl.trace(lambda x: x * 2, rng.random(3)).stages("canonicalize")
    for call in (lambda: st[99], lambda: st.compile(99), lambda: st["nope"]):
        with pytest.raises(UnknownStageError) as info:
            call()
        assert "0 'traced', 1 'canonicalize'" in str(info.value)
    assert isinstance(info.value, IndexError) and isinstance(info.value, KeyError)
    assert [s.name for s in st] == ["traced", "canonicalize"]  # iteration stops cleanly
    assert st[-2] is st[0]


def test_reproducers_are_capped(tmp_path, monkeypatch):
    root = tmp_path / "capped"
    monkeypatch.setenv("REACTANT_LAB_REPRO_DIR", str(root))
    made = []
    for i in range(reproducer.KEEP_NEWEST + 5):
        made.append(reproducer.write_reproducer(f"module {i}", "cse", ""))
        os.utime(made[-1], (i, i))  # distinct ages, oldest first
    kept = sorted(p.name for p in root.iterdir())
    assert len(kept) == reproducer.KEEP_NEWEST
    assert kept == sorted(os.path.basename(p) for p in made[-reproducer.KEEP_NEWEST:])
    monkeypatch.setattr(reproducer, "KEEP_BYTES", 1)
    newest = reproducer.write_reproducer("module {}", "cse", "")
    assert [p.name for p in root.iterdir()] == [os.path.basename(newest)]


# ---------------------------------------------------------------- long stages


def test_progress_lines_come_at_growing_intervals():
    out = io.StringIO()
    report = progress.StageProgress("optimize+sroa", 41000, after=5, stream=out)
    for second in range(200):
        report(float(second))
    lines = out.getvalue().splitlines()
    assert lines[0] == ("reactant_lab: stage 'optimize+sroa' running for 5 s (module of 41,000 "
                        "ops)… Ctrl-C stops it.")
    times = [int(re.search(r"for (\d+) s", line).group(1)) for line in lines]
    assert times == [5, 10, 20, 40, 80, 140]


class InterruptingProgress(progress.StageProgress):
    """Presses Ctrl-C (a real SIGINT to this process) once the progress line was printed."""

    def __call__(self, seconds: float) -> None:
        super().__call__(seconds)
        if self.lines:
            os.kill(os.getpid(), signal.SIGINT)


@needs_enzyme  # jaxlib's own inliner is too quick on this module to be interrupted
def test_ctrl_c_stops_a_long_stage_and_the_worker(monkeypatch, capsys):
    monkeypatch.setattr(progress, "AFTER_SECONDS", 0.5)
    monkeypatch.setattr(runner, "StageProgress", InterruptingProgress)
    on_the_worker()
    pid = backend.worker_pid()
    start = time.perf_counter()
    with pytest.raises(PassInterruptedError) as info:
        run_on_text(nested_calls(1500), pipeline='inline{default-pipeline=""}')
    assert time.perf_counter() - start < 20  # the stage alone takes much longer
    assert info.value.stage == "custom" and isinstance(info.value, KeyboardInterrupt)
    assert "stage 'custom' was interrupted after" in str(info.value)
    assert "the pass worker running it was stopped" in str(info.value)
    assert not alive(pid)
    err = capsys.readouterr().err
    assert re.search(r"stage 'custom' running for \d+ s \(module of [\d,]+ ops\)", err)
    assert on_the_worker()  # a new worker
    assert backend.worker_pid() != pid


@needs_enzyme  # as above: a stage long enough to run past a short limit
def test_a_stage_past_the_pass_time_limit_is_stopped_with_a_clear_error(monkeypatch):
    monkeypatch.setenv(backend.PASS_TIME_LIMIT_VAR, "1")
    on_the_worker()
    pid = backend.worker_pid()
    start = time.perf_counter()
    with pytest.raises(rl.PassTimeoutError) as info:
        run_on_text(nested_calls(1500), pipeline='inline{default-pipeline=""}')
    assert time.perf_counter() - start < 15
    err = info.value
    assert isinstance(err, rl.PassFailedError) and err.stage == "custom" and err.limit == 1.0
    assert err.seconds >= 1.0 and "inline" in err.pass_name
    assert "past the pass time limit of 1 s, and was stopped" in str(err)
    assert "REACTANT_LAB_PASS_TIMEOUT" in str(err) and "granularity='pass'" in str(err)
    assert err.reproducer and os.path.exists(os.path.join(err.reproducer, "input.mlir"))
    assert "func.func" in err.last_good_ir
    assert not alive(pid)
    assert on_the_worker()  # a new worker
    assert backend.worker_pid() != pid


@pytest.mark.parametrize(("value", "limit"), [("", 600.0), ("0", None), ("none", None),
                                              ("2.5", 2.5)])
def test_the_pass_time_limit_is_read_from_the_environment(monkeypatch, value, limit):
    monkeypatch.setenv(backend.PASS_TIME_LIMIT_VAR, value)
    assert backend.pass_time_limit() == limit


@pytest.mark.parametrize("value", ["soon", "-3", "inf", "nan"])
def test_a_bad_pass_time_limit_is_refused_saying_what_to_set(monkeypatch, value):
    monkeypatch.setenv(backend.PASS_TIME_LIMIT_VAR, value)
    with pytest.raises(rl.PipelineError, match=r"REACTANT_LAB_PASS_TIMEOUT=.*seconds"):
        rl.run_pipeline(SMALL, "canonicalize")


def test_nesting_depth_and_line_agree_with_a_plain_scan(rng):
    """Random bracket soup (arrows, stray closers, text between): the depth and line of the
    deepest point are the ones a character-by-character scan finds."""
    def plain(text: str, limit: int) -> tuple[int, int] | None:
        depth = best = 0
        line = best_line = 1
        for i, ch in enumerate(text):
            if ch in "{[(<":
                depth += 1
            elif ch in "}])>" and not (ch == ">" and i and text[i - 1] == "-"):
                depth = max(depth - 1, 0)
            elif ch == "\n":
                line += 1
            if depth > best:
                best, best_line = depth, line
        return (best, best_line) if best > limit else None

    alphabet = [*"{[(<}])>-\nab ", "->"]
    for _ in range(200):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(1, 400))))
        for limit in (0, 3, 20):
            assert backend._deepest_nesting(text, limit) == plain(text, limit), text
