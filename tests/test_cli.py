"""The command line: the demo runs end to end and fails loudly."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend
from reactant_lab.cli import main
from tests.conftest import child_env


def test_demo_runs_every_example(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "reactant_lab", "demo", "--report-dir",
                           str(tmp_path)], capture_output=True, text=True, timeout=600,
                          env=child_env())
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for name in ("mlp", "heat_loop", "standardize"):
        assert f"=== {name}" in out
    assert out.count("result matches jax.jit") == 3
    assert out.count("median run time: reactant_lab") == 3
    assert "alias of args[0]" in out and "jit lowering" in out
    assert "all examples compiled, ran and matched jax.jit" in out
    for name in ("mlp", "heat_loop", "standardize"):
        report = tmp_path / f"reactant_lab_report_{name}.html"
        assert f"report: {report}" in out
        html = report.read_text()
        assert 'id="stage-0"' in html and "jax jit median seconds" in html
    # the report names the argument as the function does, beside its path
    assert "alias of x (args[0])" in (tmp_path / "reactant_lab_report_standardize.html").read_text()


def test_demo_unknown_example(capsys):
    assert main(["demo", "--example", "nope"]) == 2
    assert "no example named nope" in capsys.readouterr().err


USER_FILE = """
import jax.numpy as jnp
import numpy as np


def model(x, w):
    return jnp.sin(x @ w.T)


def make_args(rng):
    return (rng.standard_normal((4, 3)).astype(np.float32),
            rng.standard_normal((5, 3)).astype(np.float32))


def one_arg():
    return np.ones(3, np.float32)
"""


def test_report_command_writes_a_report(tmp_path, capsys):
    user = tmp_path / "user.py"
    user.write_text(USER_FILE)
    out = tmp_path / "out.html"
    assert main(["report", f"{user}:model", "--args", "make_args", "-o", str(out),
                 "--granularity", "pass"]) == 0
    printed = capsys.readouterr().out
    assert f"report: {out}" in printed and "enzyme-hlo patterns" in printed
    html = out.read_text()
    assert "median seconds" in html and "stablehlo.dot_general" in html
    assert html.count('<section id="stage-') > 20


def test_report_command_explains_bad_names(tmp_path, capsys):
    user = tmp_path / "user.py"
    user.write_text(USER_FILE)
    assert main(["report", f"{user}:nope", "--args", "make_args"]) == 2
    assert "has no function 'nope'; functions there: make_args, model, one_arg" in (
        capsys.readouterr().err)
    assert main(["report", f"{tmp_path}/missing.py:model", "--args", "make_args"]) == 2
    assert "no file" in capsys.readouterr().err


def test_a_file_alone_names_its_one_function(tmp_path, capsys):
    single = tmp_path / "single.py"
    single.write_text(USER_FILE.replace("def one_arg", "def _one_arg"))
    out = tmp_path / "out.html"
    # The file's functions are model and make_args: each spec picks the one the other does not.
    assert main(["report", str(single), "--args", "make_args", "-o", str(out)]) == 0
    assert "stablehlo.dot_general" in out.read_text()
    out.unlink()
    assert main(["report", f"{single}:model", "--args", str(single), "-o", str(out)]) == 0
    assert "stablehlo.dot_general" in out.read_text()
    capsys.readouterr()
    assert main(["report", f"{single}:", "--args", str(single), "-o", str(out)]) == 2
    assert "defines 2 functions (make_args, model)" in capsys.readouterr().err


def test_bench_command_prints_the_table_and_writes_json(tmp_path, capsys):
    user = tmp_path / "user.py"
    user.write_text(USER_FILE)
    out = tmp_path / "bench.json"
    assert main(["bench", f"{user}:model", "--args", "make_args", "--presets", "none", "all",
                 "--min-time", "0.02", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    for word in ("model (jax mode)", "none", "all", "jax", "skipped numpy", "roofline"):
        assert word in printed
    data = json.loads(out.read_text())
    assert [r["name"] for r in data["rows"]] == ["none", "all", "jax"]
    assert data["rows"][2]["ratio"] == 1.0


def test_bench_command_explains_bad_names(tmp_path, capsys):
    user = tmp_path / "user.py"
    user.write_text(USER_FILE)
    assert main(["bench", f"{user}:model", "--args", "no_such_maker"]) == 2
    assert "has no function 'no_such_maker'" in capsys.readouterr().err


def test_report_command_verifies_and_takes_pattern_options(tmp_path, capsys):
    user = tmp_path / "user.py"
    user.write_text(USER_FILE)
    out = tmp_path / "out.html"
    assert main(["report", f"{user}:model", "--args", "make_args", "-o", str(out), "--verify",
                 "--exclude-patterns", "add_simplify", "transpose_transpose<16>"]) == 0
    printed = capsys.readouterr().out
    assert "max abs err" in printed and "reference: jax.jit" in printed
    assert "left out as asked (exclude_patterns): " in printed
    assert "add_simplify<16>" in printed and "transpose_transpose<16>" in printed
    assert main(["report", f"{user}:model", "--args", "make_args", "-o", str(out),
                 "--exact"]) == 0
    printed = capsys.readouterr().out
    assert "exact: Reactant's list untouched" in printed and "max abs err" not in printed


BISECT_FILE = """
import numpy as np


def add_slice(x):
    return x.at[1:3].add(1.0)


def make_x(rng):
    return rng.random(8).astype(np.float32)
"""


@pytest.mark.skipif(not rl.enzyme_available(), reason="the pattern passes need enzyme-ad")
def test_bisect_command_names_the_culprit_patterns(tmp_path, capsys):
    user = tmp_path / "user.py"
    user.write_text(BISECT_FILE)
    listed = [p for p in backend.transform_patterns(no_nan=False).split(";") if p]
    pipeline = rl.trace(lambda x: x.at[1:3].add(1.0), np.zeros(8, np.float32)).stages(
        "all", patterns=listed).pipeline
    where = tmp_path / "repro"
    assert main(["bisect", f"{user}:add_slice", "--args", "make_x", "--pipeline", pipeline,
                 "--reproducer", str(where)]) == 0
    printed = capsys.readouterr().out
    assert "metric=result: culprit found" in printed
    assert "patterns: reshape_empty_broadcast<1>, scatter_op_canon<16>" in printed
    assert f"reproducer: {where}" in printed and (where / "rerun.py").is_file()
    assert main(["bisect", f"{user}:add_slice", "--args", "make_x", "--metric", "runtime",
                 "--threshold", "0.5"]) == 2
    assert "threshold must be a factor above 1" in capsys.readouterr().err
