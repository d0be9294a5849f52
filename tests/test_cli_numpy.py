"""The command line on NumPy kernels and on failing user code, run as a user runs it (a
subprocess): NumPy kernels and static arguments get their arguments as MAKE_ARGS made them, and
every failure is one ``error:`` line with exit code 2, never a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

KERNELS = '''
import numpy as np


def jacobi_2d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                               + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                               + B[:-2, 1:-1])


def make_jacobi(rng):
    A = rng.random((12, 12))
    return 4, A, A.copy()


def scaled(x, how):
    return x * 2.0 if how == "double" else x / 2.0


def make_scaled(rng):
    return rng.random(5), "double"


def explodes(x):
    y = x + 1
    raise ValueError("the kernel exploded")


def make_one(rng):
    return rng.random(4)


def broken_maker(rng):
    raise RuntimeError("cannot make the arguments")


def unsupported(x):
    return np.unique(x)
'''


def run_cli(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reactant_lab", *args], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


def assert_one_error_line(proc: subprocess.CompletedProcess, *phrases: str) -> str:
    """Exit code 2, no traceback, exactly one line starting with ``error:``; returns it."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    for phrase in phrases:
        assert phrase in proc.stderr, proc.stderr
    return errors[0]


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return path


def test_report_on_the_readme_numpy_kernel(kernels, tmp_path):
    out = tmp_path / "jacobi.html"
    proc = run_cli("report", f"{kernels}:jacobi_2d", "--args", "make_jacobi", "-o", str(out),
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"report: {out}" in proc.stdout
    assert proc.stdout.splitlines()[0].split()[:3] == ["#", "stage", "ops"]  # the stage table
    assert "jit lowering" in proc.stdout
    html = out.read_text()
    assert '<section id="stage-0"' in html and "median seconds" in html
    assert "resargs[1]" in html and "resargs[2]" in html  # A and B, updated in place


def test_report_with_a_static_string_argument(kernels, tmp_path):
    out = tmp_path / "scaled.html"
    proc = run_cli("report", f"{kernels}:scaled", "--args", "make_scaled", "-o", str(out),
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "<code>args[1]</code> = <code>&#x27;double&#x27;</code>" in out.read_text()  # static


@pytest.mark.parametrize(("name", "maker"), [("jacobi_2d", "make_jacobi"),
                                             ("scaled", "make_scaled")])
def test_bench_on_numpy_kernels(kernels, tmp_path, name, maker):
    proc = run_cli("bench", f"{kernels}:{name}", "--args", maker, "--presets", "none",
                   "--min-time", "0.01", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"{name} (numpy mode)" in proc.stdout and "numpy" in proc.stdout


def test_a_function_raising_while_traced(kernels, tmp_path):
    for command in ("report", "bench"):
        proc = run_cli(command, f"{kernels}:explodes", "--args", "make_one", cwd=tmp_path)
        line = assert_one_error_line(proc, "ValueError: the kernel exploded",
                                     f"{kernels}:", "in explodes()")
        assert f"{kernels}:explodes failed" in line


def test_arguments_maker_raising(kernels, tmp_path):
    proc = run_cli("report", f"{kernels}:explodes", "--args", "broken_maker", cwd=tmp_path)
    line = assert_one_error_line(proc, "RuntimeError: cannot make the arguments",
                                 "in broken_maker()")
    assert "the --args function broken_maker failed" in line


def test_a_file_raising_on_import(tmp_path):
    user = tmp_path / "broken.py"
    user.write_text("import numpy as np\n\nraise ImportError('no module named nowhere')\n")
    proc = run_cli("report", f"{user}:f", "--args", "make", cwd=tmp_path)
    line = assert_one_error_line(proc, "ImportError: no module named nowhere", f"{user}:3")
    assert f"importing {user} failed" in line


def test_a_file_with_a_syntax_error(tmp_path):
    user = tmp_path / "typo.py"
    user.write_text("def f(x:\n    return x\n")
    proc = run_cli("bench", f"{user}:f", "--args", "make", cwd=tmp_path)
    assert_one_error_line(proc, f"importing {user} failed: SyntaxError")


def test_our_own_errors_keep_their_advice(kernels, tmp_path):
    proc = run_cli("report", f"{kernels}:unsupported", "--args", "make_one", cwd=tmp_path)
    line = assert_one_error_line(proc, "Rewrite it with supported NumPy functions")
    assert line.startswith("error: np.unique has no traced equivalent")
    assert all(not rest or rest.startswith("  ") for rest in proc.stderr.splitlines()[1:])


@pytest.mark.parametrize(("args", "phrase"), [
    (["report", "{dir}/missing.py:f", "--args", "make"], "no file"),
    (["report", "{kernels}:nope", "--args", "make_one"], "has no function 'nope'"),
    (["report", "{kernels}:scaled", "--args", "no_maker"], "has no function 'no_maker'"),
    (["report", "{kernels}:scaled", "--args", "{dir}/nope.py:make"], "no file"),
    (["report", "{kernels}:scaled"], "the following arguments are required: --args"),
    (["bench", "{kernels}:scaled", "--args", "make_scaled", "--min-time", "soon"],
     "invalid float value: 'soon'"),
    (["report", "{kernels}:scaled", "--args", "make_scaled", "-o", "{dir}/no/such/dir/r.html"],
     "No such file or directory"),
    (["bisect", "{kernels}:scaled", "--args", "make_scaled", "--metric", "speed"],
     "invalid choice: 'speed'"),
    (["bisect", "{kernels}:scaled", "--args", "make_scaled", "--threshold", "3"],
     "threshold applies to metric='runtime' or 'compile_time'"),
])
def test_bad_command_lines(kernels, tmp_path, args, phrase):
    argv = [a.format(dir=tmp_path, kernels=kernels) for a in args]
    assert_one_error_line(run_cli(*argv, cwd=tmp_path), phrase)


def test_bisect_on_a_correct_numpy_kernel(kernels, tmp_path):
    proc = run_cli("bisect", f"{kernels}:jacobi_2d", "--args", "make_jacobi", "--metric",
                   "result", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "bisect jacobi_2d, metric=result: no culprit" in proc.stdout
    assert "The final module is not bad: ok" in proc.stdout and "NumPy eager" in proc.stdout


def test_interrupt_is_one_line_and_exit_130(tmp_path):
    marker = tmp_path / "ready"
    user = tmp_path / "slow.py"
    user.write_text("import pathlib\nimport time\n\n\ndef f(x):\n    return x\n\n\n"
                    f"def make():\n    pathlib.Path({str(marker)!r}).write_text('ready')\n"
                    "    time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-m", "reactant_lab", "report", f"{user}:f",
                             "--args", "make"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()[1] if proc.poll() is not None else "no marker"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.strip() == "error: interrupted"
