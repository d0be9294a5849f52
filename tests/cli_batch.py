"""Many command lines in one process: each runs ``python -m reactant_lab ARGS`` as the command
does (``runpy`` on the package's ``__main__``, in its own working directory, with its own
stdout and stderr), and an exception that escapes it is printed as Python prints one at exit.
The tests of error lines use it so that dozens of command lines import JAX once, not dozens of
times; the tests of crashes, signals and whole runs keep a process each."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import child_env

_DRIVER = r'''
import contextlib, io, json, os, runpy, sys, traceback

cases = json.loads(sys.stdin.read())
answers = {}
for name, (argv, cwd) in cases.items():
    os.chdir(cwd)
    out, err = io.StringIO(), io.StringIO()
    sys.argv = ["reactant_lab", *argv]
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module("reactant_lab", run_name="__main__", alter_sys=True)
        except SystemExit as exc:  # as the interpreter turns it into an exit status
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
    answers[name] = [code, out.getvalue(), err.getvalue()]
sys.stdout.write("\n" + json.dumps(answers))
'''


@dataclass(frozen=True)
class Run:
    """What one command line gave: as ``subprocess.CompletedProcess``'s fields."""

    returncode: int
    stdout: str
    stderr: str


def run_commands(cases: dict[str, tuple[list[str], Path]], timeout: float = 600
                 ) -> dict[str, Run]:
    """Run each ``name -> (argv, cwd)`` as ``python -m reactant_lab *argv`` in ``cwd``, in
    turn, in one fresh Python process; each one's exit status, stdout and stderr."""
    payload = {name: [list(argv), str(cwd)] for name, (argv, cwd) in cases.items()}
    proc = subprocess.run([sys.executable, "-c", _DRIVER], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=timeout, env=child_env())
    assert proc.returncode == 0, f"the command lines' process failed:\n{proc.stderr[-4000:]}"
    answers = json.loads(proc.stdout.rsplit("\n", 1)[-1])
    return {name: Run(*answers[name]) for name in cases}
