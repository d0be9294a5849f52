"""The command line: the demo runs end to end and fails loudly."""

from __future__ import annotations

import subprocess
import sys

from reactant_lab.cli import main


def test_demo_runs_every_example():
    proc = subprocess.run([sys.executable, "-m", "reactant_lab", "demo"], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for name in ("mlp", "heat_loop", "standardize"):
        assert f"=== {name}" in out
    assert out.count("result matches jax.jit") == 3
    assert out.count("median run time: reactant_lab") == 3
    assert "alias of args[0]" in out and "jit lowering" in out
    assert "all examples compiled, ran and matched jax.jit" in out


def test_demo_unknown_example(capsys):
    assert main(["demo", "--example", "nope"]) == 2
    assert "no example named nope" in capsys.readouterr().err
