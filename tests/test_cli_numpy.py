"""The command line on NumPy kernels and on failing user code, run as a user runs it
(``python -m reactant_lab``; tests/cli_batch.py runs the command lines in turn in one process):
NumPy kernels and static arguments get their arguments as MAKE_ARGS made them, and every failure
is one ``error:`` line with exit code 2, never a traceback."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_batch import Run, run_commands
from tests.conftest import child_env

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


def assert_one_error_line(proc: Run, *phrases: str) -> str:
    """Exit code 2, no traceback, exactly one line starting with ``error:``; returns it."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    for phrase in phrases:
        assert phrase in proc.stderr, proc.stderr
    return errors[0]


# Each command line runs in a folder of its own holding kernels.py (KERNELS), broken.py (raises
# on import) and typo.py (a syntax error): {dir} is that folder, {kernels} its kernels.py.
COMMANDS = {
    "report jacobi_2d": ["report", "{kernels}:jacobi_2d", "--args", "make_jacobi", "-o",
                         "{dir}/jacobi.html"],
    "report scaled": ["report", "{kernels}:scaled", "--args", "make_scaled", "-o",
                      "{dir}/scaled.html"],
    "bench jacobi_2d": ["bench", "{kernels}:jacobi_2d", "--args", "make_jacobi", "--presets",
                        "none", "--min-time", "0.01"],
    "bench scaled": ["bench", "{kernels}:scaled", "--args", "make_scaled", "--presets", "none",
                     "--min-time", "0.01"],
    "report explodes": ["report", "{kernels}:explodes", "--args", "make_one"],
    "bench explodes": ["bench", "{kernels}:explodes", "--args", "make_one"],
    "maker raises": ["report", "{kernels}:explodes", "--args", "broken_maker"],
    "file raises on import": ["report", "{dir}/broken.py:f", "--args", "make"],
    "file with a syntax error": ["bench", "{dir}/typo.py:f", "--args", "make"],
    "unsupported function": ["report", "{kernels}:unsupported", "--args", "make_one"],
    "bisect jacobi_2d": ["bisect", "{kernels}:jacobi_2d", "--args", "make_jacobi", "--metric",
                         "result"],
}

BAD_COMMAND_LINES = {
    "missing file": (["report", "{dir}/missing.py:f", "--args", "make"], "no file"),
    "missing function": (["report", "{kernels}:nope", "--args", "make_one"],
                         "has no function 'nope'"),
    "missing maker": (["report", "{kernels}:scaled", "--args", "no_maker"],
                      "has no function 'no_maker'"),
    "maker in a missing file": (["report", "{kernels}:scaled", "--args", "{dir}/nope.py:make"],
                                "no file"),
    "no --args": (["report", "{kernels}:scaled"], "the following arguments are required: --args"),
    "--min-time not a number": (["bench", "{kernels}:scaled", "--args", "make_scaled",
                                 "--min-time", "soon"], "invalid float value: 'soon'"),
    "output in a missing folder": (["report", "{kernels}:scaled", "--args", "make_scaled", "-o",
                                    "{dir}/no/such/dir/r.html"], "No such file or directory"),
    "unknown metric": (["bisect", "{kernels}:scaled", "--args", "make_scaled", "--metric",
                        "speed"], "invalid choice: 'speed'"),
    "threshold with metric result": (["bisect", "{kernels}:scaled", "--args", "make_scaled",
                                      "--threshold", "3"],
                                     "threshold applies to metric='runtime' or 'compile_time'"),
}


@dataclass(frozen=True)
class Ran:
    """A command line of COMMANDS or BAD_COMMAND_LINES as it ran, and its folder."""

    proc: Run
    dir: Path

    @property
    def kernels(self) -> Path:
        return self.dir / "kernels.py"


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict[str, Ran]:
    """Every command line above, run as a user runs it, all in one process
    (tests/cli_batch.py: the process imports JAX once)."""
    every = {**COMMANDS, **{name: args for name, (args, _) in BAD_COMMAND_LINES.items()}}
    cases, dirs = {}, {}
    for name, args in every.items():
        where = dirs[name] = tmp_path_factory.mktemp("cli")
        (where / "kernels.py").write_text(KERNELS)
        (where / "broken.py").write_text(
            "import numpy as np\n\nraise ImportError('no module named nowhere')\n")
        (where / "typo.py").write_text("def f(x:\n    return x\n")
        cases[name] = ([a.format(dir=where, kernels=where / "kernels.py") for a in args], where)
    return {name: Ran(proc, dirs[name]) for name, proc in run_commands(cases).items()}


def test_report_on_the_readme_numpy_kernel(ran):
    proc, out = ran["report jacobi_2d"].proc, ran["report jacobi_2d"].dir / "jacobi.html"
    assert proc.returncode == 0, proc.stderr
    assert f"report: {out}" in proc.stdout
    assert proc.stdout.splitlines()[0].split()[:3] == ["#", "stage", "ops"]  # the stage table
    assert "jit lowering" in proc.stdout
    html = out.read_text()
    assert '<section id="stage-0"' in html and "median seconds" in html
    assert "resargs[1]" in html and "resargs[2]" in html  # A and B, updated in place


def test_report_with_a_static_string_argument(ran):
    proc = ran["report scaled"].proc
    assert proc.returncode == 0, proc.stderr
    html = (ran["report scaled"].dir / "scaled.html").read_text()
    assert "<code>how</code> = <code>&#x27;double&#x27;</code>" in html  # static, by its name


@pytest.mark.parametrize("name", ["jacobi_2d", "scaled"])
def test_bench_on_numpy_kernels(ran, name):
    proc = ran[f"bench {name}"].proc
    assert proc.returncode == 0, proc.stderr
    assert f"{name} (numpy mode)" in proc.stdout and "numpy" in proc.stdout


def test_a_function_raising_while_traced(ran):
    for command in ("report", "bench"):
        kernels = ran[f"{command} explodes"].kernels
        line = assert_one_error_line(ran[f"{command} explodes"].proc,
                                     "ValueError: the kernel exploded", f"{kernels}:",
                                     "in explodes()")
        assert f"{kernels}:explodes failed" in line


def test_arguments_maker_raising(ran):
    line = assert_one_error_line(ran["maker raises"].proc,
                                 "RuntimeError: cannot make the arguments", "in broken_maker()")
    assert "the --args function broken_maker failed" in line


def test_a_file_raising_on_import(ran):
    user = ran["file raises on import"].dir / "broken.py"
    line = assert_one_error_line(ran["file raises on import"].proc,
                                 "ImportError: no module named nowhere", f"{user}:3")
    assert f"importing {user} failed" in line


def test_a_file_with_a_syntax_error(ran):
    user = ran["file with a syntax error"].dir / "typo.py"
    assert_one_error_line(ran["file with a syntax error"].proc,
                          f"importing {user} failed: SyntaxError")


def test_our_own_errors_keep_their_advice(ran):
    proc = ran["unsupported function"].proc
    line = assert_one_error_line(proc, "Rewrite it with supported NumPy functions")
    assert line.startswith("error: np.unique has no traced equivalent")
    assert all(not rest or rest.startswith("  ") for rest in proc.stderr.splitlines()[1:])


@pytest.mark.parametrize("name", sorted(BAD_COMMAND_LINES))
def test_bad_command_lines(name, ran):
    assert_one_error_line(ran[name].proc, BAD_COMMAND_LINES[name][1])


def test_bisect_on_a_correct_numpy_kernel(ran):
    proc = ran["bisect jacobi_2d"].proc
    assert proc.returncode == 0, proc.stderr
    assert "bisect jacobi_2d, metric=result: no regression" in proc.stdout
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
                            env=child_env(PYTHONUNBUFFERED="1"))
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()[1] if proc.poll() is not None else "no marker"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.strip() == "error: interrupted"
