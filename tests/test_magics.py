"""The magics driven through IPython's own shell, in process: values and in-place updates equal a
plain run, explorers per call signature, tracebacks at the cell's lines, the error panel."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest
from IPython import get_ipython
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

import reactant_lab as rl
from reactant_lab.bench import BenchResult, default_baselines
from reactant_lab.errors import ControlFlowError, PassFailedError, PipelineError
from reactant_lab.notebook import last_explorations
from reactant_lab.notebook.session import CellFunction
from reactant_lab.render.payload import MIME_TYPE
from reactant_lab.render.texts import decode_text
from tests.conftest import assert_close, child_env, matmul_rtol, unattached_platform

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

MLP = """
def layer(w, b, x):
    return jnp.tanh(x @ w + b)

def mlp(params, x):
    for w, b in params:
        x = layer(w, b, x)
    return x.sum(axis=-1)

mlp(params, x)
"""

JACOBI = """
def sweep(dst, src):
    dst[1:-1, 1:-1] = 0.2 * (src[1:-1, 1:-1] + src[1:-1, :-2] + src[1:-1, 2:] + src[2:, 1:-1]
                             + src[:-2, 1:-1])

def jacobi(steps, A, B):
    for _ in range(steps):
        sweep(B, A)
        sweep(A, B)
    return A.mean()

jacobi(3, A, B)
"""


@pytest.fixture(scope="module")
def shell():
    ip = start_ipython() or get_ipython()  # one global shell per process
    ip.colors = "nocolor"
    ip.run_cell("%load_ext reactant_lab", store_history=False)
    ip.run_cell("import numpy as np, jax, jax.numpy as jnp", store_history=False)
    yield ip
    rl.use_aligned_arrays(False)  # %load_ext turned NumPy's aligned allocator on: off for others


def run(shell, cell: str):
    """(result, [display bundles], stdout) of one cell."""
    with capture_output() as cap:
        result = shell.run_cell(cell, store_history=True)
    return result, [o.data for o in cap.outputs], cap.stdout


def explorers(outputs: list[dict]) -> list[dict]:
    return [o[MIME_TYPE] for o in outputs if MIME_TYPE in o]


def mlp_params(rng, sizes=(5, 8, 3)):
    return [(rng.standard_normal((a, b)).astype(np.float32),
             rng.standard_normal(b).astype(np.float32)) for a, b in itertools.pairwise(sizes)]


def test_jax_mlp_cell_computes_what_the_plain_cell_does(shell, rng):
    shell.push({"params": mlp_params(rng), "x": rng.standard_normal((4, 5)).astype(np.float32)})
    plain = run(shell, MLP)[0]
    result, outputs, _ = run(shell, "%%reactant_jit" + MLP)
    assert result.success, result.error_in_exec
    # float32 dots: bf16 passes on a TPU, by default, in both cells (fused otherwise in ours)
    assert_close(np.asarray(result.result), np.asarray(plain.result), matmul_rtol(1e-5))
    [payload] = explorers(outputs)
    assert payload["meta"]["function"] == "mlp" and payload["meta"]["mode"] == "jax"
    assert [a["path"] for a in payload["signature"]["args"]][:2] == ["args[0][0][0]",
                                                                      "args[0][0][1]"]
    # after the cell the names hold the user's own functions again
    assert not isinstance(shell.user_ns["mlp"], CellFunction)
    assert shell.user_ns["mlp"].__name__ == "mlp" and "__reactant_lab_wrap__" not in shell.user_ns


def test_numpy_kernel_updates_its_arguments_as_a_plain_run_does(shell, rng):
    A0, B0 = rng.random((12, 12)), rng.random((12, 12))
    shell.push({"A": A0.copy(), "B": B0.copy()})
    plain = run(shell, JACOBI)[0]
    want_a, want_b = shell.user_ns["A"].copy(), shell.user_ns["B"].copy()
    a, b = A0.copy(), B0.copy()
    shell.push({"A": a, "B": b})
    result, outputs, _ = run(shell, "%%reactant_jit" + JACOBI)
    assert result.success, result.error_in_exec
    assert shell.user_ns["A"] is a and shell.user_ns["B"] is b  # the same arrays, updated
    np.testing.assert_allclose(a, want_a, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b, want_b, rtol=1e-12, atol=1e-14)
    assert not np.allclose(a, A0)
    assert_close(result.result, plain.result, rtol=1e-12)
    [payload] = explorers(outputs)
    assert payload["meta"]["mode"] == "numpy"
    assert {a["path"] for a in payload["signature"]["args"] if a["mutated"]} == {"args[1]",
                                                                                "args[2]"}


def test_a_loop_of_calls_with_one_signature_gives_one_explorer(shell, rng):
    xs = [rng.standard_normal(6) for _ in range(5)]
    shell.push({"xs": xs})
    result, outputs, _ = run(shell, "%%reactant_jit\ndef f(x):\n    return np.sin(x) * 2\n\n"
                                    "[f(x) for x in xs]\n")
    assert result.success, result.error_in_exec
    for got, x in zip(result.result, xs, strict=True):
        assert_close(got, np.sin(x) * 2, rtol=1e-12)
    assert len(explorers(outputs)) == 1 and len(last_explorations()) == 1


def test_two_signatures_give_two_explorers_in_call_order(shell, rng):
    shell.push({"x3": rng.standard_normal(3), "x5": rng.standard_normal((5, 2))})
    result, outputs, _ = run(shell, "%%reactant_jit\ndef f(x):\n    return x * 2\n\n"
                                    "a = f(x3)\nb = f(x5)\nc = f(x3)\n")
    assert result.success and result.result is None
    found = explorers(outputs)
    assert [p["signature"]["args"][0]["type"] for p in found] == ["float64[3]", "float64[5,2]"]
    assert_close(shell.user_ns["b"], shell.user_ns["x5"] * 2)


def test_tracebacks_point_at_the_cells_own_lines(shell, rng):
    shell.push({"x": rng.standard_normal(4)})
    cell = ("%%reactant_jit\n"                    # line 1
            "def f(x):\n"                         # line 2
            "    y = x + 1\n"                     # line 3
            "    return y.no_such_method()\n"     # line 4
            "\n"
            "f(x)\n")                             # line 6
    result, _, out = run(shell, cell)
    assert isinstance(result.error_in_exec, AttributeError)
    assert "line 4, in f" in out and "y.no_such_method()" in out and "line 6" in out
    assert f"Cell In[{result.execution_count}]" in out  # the number IPython shows for it
    assert "reactant_lab" + os.sep not in out and "jax" + os.sep + "_src" not in out


def test_control_flow_error_is_a_panel_and_variables_are_untouched(shell, rng):
    a0 = rng.random(6)
    a = a0.copy()
    shell.push({"a": a, "counter": 0})
    previous = shell.custom_exceptions
    cell = ("%%reactant_jit\ncounter = 1\ndef k(v):\n    for _ in range(2):\n"
            "        if v.sum() > 0:\n            return v + 1\n        v = v * 2\n"
            "    return v\n\nk(a)\ncounter = 2\n")
    result, outputs, out = run(shell, cell)
    assert isinstance(result.error_in_exec, ControlFlowError)
    [panel] = outputs
    assert "ControlFlowError" in panel["text/html"] and "Traceback" not in out
    assert "line 5" in panel["text/plain"] and "np.where" in panel["text/plain"]
    np.testing.assert_array_equal(shell.user_ns["a"], a0)
    assert shell.user_ns["a"] is a and shell.user_ns["counter"] == 1
    assert not isinstance(shell.user_ns["k"], CellFunction)
    assert shell.custom_exceptions == previous  # the hook is the user's again
    after, _, _ = run(shell, "counter + 40")
    assert after.success and after.result == 41


def test_failing_pass_is_a_panel_with_stage_pass_diagnostics_and_reproducer(
        shell, rng, tmp_path, monkeypatch):
    monkeypatch.setenv("REACTANT_LAB_REPRO_DIR", str(tmp_path))
    a0 = rng.random(5)
    shell.push({"a": a0.copy()})
    result, outputs, _ = run(shell, "%%reactant_jit --pipeline canonicalize,transform-interpreter"
                                    "\ndef k(v):\n    v *= 3\n\nk(a)\n")
    assert isinstance(result.error_in_exec, PassFailedError)
    [panel] = outputs
    text = panel["text/plain"]
    assert "stage: custom" in text and "pass: transform-interpreter" in text
    assert "__transform_main" in text  # MLIR's own diagnostics
    assert f"reproducer: {tmp_path}" in text
    assert os.path.exists(os.path.join(result.error_in_exec.reproducer, "rerun.py"))
    assert "MLIR diagnostics" in panel["text/html"]
    np.testing.assert_array_equal(shell.user_ns["a"], a0)


def test_asking_for_a_missing_device_is_a_panel(shell, rng):
    missing = unattached_platform()
    shell.push({"x": rng.random(3)})
    result, outputs, _ = run(shell, f"%%reactant_jit --device {missing}\ndef f(x):\n"
                                    "    return x + 1\nf(x)\n")
    assert isinstance(result.error_in_exec, PipelineError)
    assert f"no '{missing}' device" in outputs[0]["text/plain"]


def test_fn_explores_functions_of_earlier_cells_only(shell, rng):
    shell.push({"x": rng.standard_normal(7)})
    assert run(shell, "def scale(v):\n    return v * 3\n")[0].success
    result, outputs, _ = run(shell, "%%reactant_jit --fn scale\ndef shift(v):\n    return v + 1\n"
                                    "\nshift(scale(x))\n")
    assert result.success, result.error_in_exec
    assert_close(result.result, shell.user_ns["x"] * 3 + 1)
    assert [p["meta"]["function"] for p in explorers(outputs)] == ["scale"]
    assert not isinstance(shell.user_ns["scale"], CellFunction)
    bad = run(shell, "%%reactant_jit --fn nowhere\n1\n")[0]
    assert not bad.success and "--fn nowhere: no such name" in str(bad.error_in_exec)


def test_nested_cell_function_is_its_own_func_and_the_inline_stage_inlines_it(shell, rng):
    # layers of one shape: one function, called twice (Reactant's call cache)
    shell.push({"params": mlp_params(rng, (5, 5, 5)),
                "x": rng.standard_normal((2, 5)).astype(np.float32)})
    result, outputs, _ = run(shell, "%%reactant_jit --granularity pass" + MLP)
    assert result.success, result.error_in_exec
    [ex] = last_explorations()
    traced = ex.stages[0].as_text()
    assert "func.func private @layer(" in traced and traced.count("call @layer(") == 2
    inline = next(s for s in ex.stages if s.name == "inline")
    before = ex.stages[inline.index - 1]
    assert "call @layer(" in before.as_text() and inline.changed
    assert "call @layer" not in inline.as_text()
    payload = explorers(outputs)[0]
    assert payload["stages"][inline.index]["changed"]
    assert any(d["after"] == inline.index and not d["empty"] for d in payload["diffs"])


def test_nested_numpy_kernel_updates_the_callers_arrays_through_views(shell, rng):
    cell = ("\ndef relax(u):\n    u[1:-1] = 0.5 * (u[:-2] + u[2:])\n\n"
            "def solve(U):\n    for row in range(U.shape[0]):\n        relax(U[row])\n"
            "    relax(U[:, 0])\n    return U\n\nsolve(U)\n")
    u0 = rng.random((3, 6))
    shell.push({"U": u0.copy()})
    run(shell, cell)
    want = shell.user_ns["U"].copy()
    u = u0.copy()
    shell.push({"U": u})
    result, _, _ = run(shell, "%%reactant_jit" + cell)
    assert result.success, result.error_in_exec
    assert result.result is u  # the argument it returns is the caller's own array
    assert_close(u, want, rtol=1e-12)
    text = last_explorations()[0].stages[0].as_text()
    assert "func.func private @relax(" in text and "call @relax" in text


def test_nested_cell_function_loops_roll_under_loops_auto(shell, rng):
    cell = ("\ndef sweep(u, steps):\n    for _ in range(steps):\n"
            "        u[1:-1] = 0.5 * (u[:-2] + u[2:])\n\n"
            "def solve(U):\n    sweep(U[0], 40)\n    for i in range(U.shape[1]):\n"
            "        U[1, i:] += U[0, i]\n    return U\n\nsolve(U)\n")
    u0 = rng.random((2, 12))
    shell.push({"U": u0.copy()})
    run(shell, cell)
    want = shell.user_ns["U"].copy()
    u = u0.copy()
    shell.push({"U": u})
    result, _, _ = run(shell, "%%reactant_jit --loops auto" + cell)
    assert result.success, result.error_in_exec
    assert_close(u, want, rtol=1e-12)
    [ex] = last_explorations()
    text = ex.stages[0].as_text()
    assert "func.func private @sweep(" in text
    assert text.count("stablehlo.while") == 2  # the callee's 40 steps and the caller's loop
    assert ex.traced.loop_notes == ()


def test_no_run_explores_and_runs_the_original_python(shell, rng):
    a0 = rng.random(4)
    shell.push({"a": a0.copy()})
    result, outputs, _ = run(shell, "%%reactant_jit --no-run\ndef bump(v):\n    v += 2\n\n"
                                    "def k(v):\n    bump(v)\n    return v.sum()\n\nk(a)\n")
    assert result.success and isinstance(result.result, float | np.floating)  # NumPy's own
    assert_close(shell.user_ns["a"], a0 + 2)
    [ex] = last_explorations()  # bump, called by k's Python, is not explored on its own
    assert ex.compiled is not None and ex.run_seconds is None
    assert "func.func private @bump(" in ex.stages[0].as_text()
    assert len(explorers(outputs)) == 1


def test_no_display_shows_nothing_but_still_explores(shell, rng):
    shell.push({"x": rng.random(3)})
    result, outputs, _ = run(shell, "%%reactant_jit --no-display\ndef f(v):\n    return v * v\n"
                                    "f(x)\n")
    assert result.success and outputs == [] and len(last_explorations()) == 1


def test_reactant_mlir_runs_a_pipeline_stage_by_stage(shell):
    cell = """%%reactant_mlir --granularity pass inline,canonicalize
module {
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @twice(%a) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""
    result, outputs, _ = run(shell, cell)
    assert result.success, result.error_in_exec
    [payload] = explorers(outputs)
    assert [s["name"] for s in payload["stages"]] == ["traced", "inline", "canonicalize"]
    assert payload["stages"][1]["changed"] and payload["xla"] is None
    inlined = decode_text(payload["texts"], payload["stages"][1]["text"])
    assert "call @twice" not in inlined and "stablehlo.add" in inlined
    preset, outputs, _ = run(shell, "%%reactant_mlir canonicalize\n" + cell.split("\n", 1)[1])
    assert preset.success and explorers(outputs)[0]["meta"]["optimize"] == "canonicalize"


def test_reactant_mlir_failing_pass_is_a_panel(shell, tmp_path, monkeypatch):
    monkeypatch.setenv("REACTANT_LAB_REPRO_DIR", str(tmp_path))
    result, outputs, _ = run(shell, "%%reactant_mlir canonicalize,transform-interpreter\n"
                                    "module {\n  func.func @main() {\n    return\n  }\n}\n")
    assert isinstance(result.error_in_exec, PassFailedError)
    assert "pass: transform-interpreter" in outputs[0]["text/plain"]


def test_line_form_explores_one_call_and_returns_its_value(shell, rng):
    a0 = rng.random((3, 3))
    shell.push({"a": a0.copy(), "b": rng.random(3)})
    assert run(shell, "def k(m, v):\n    m += v\n    return m @ v\n")[0].success
    result, outputs, _ = run(shell, "%reactant_jit --optimize canonicalize k(a, v=b)")
    assert result.success, result.error_in_exec
    b = shell.user_ns["b"]
    assert_close(shell.user_ns["a"], a0 + b, rtol=1e-12)
    assert_close(result.result, (a0 + b) @ b, rtol=1e-12)
    [payload] = explorers(outputs)
    assert payload["meta"]["optimize"] == "canonicalize"
    assert [a["path"] for a in payload["signature"]["args"]] == ["args[0]", "kwargs['v']"]


def test_reactant_bench_times_the_compiled_call_beside_its_baselines(shell, rng):
    shell.push({"x": rng.random(64)})
    assert run(shell, "def f(v):\n    return (v * v).sum() + 1\n")[0].success
    result, _, _ = run(shell, "%reactant_bench --repeats 3 --presets all f(x)")
    assert result.success, result.error_in_exec
    res = result.result
    numba = ["numba"] if "numba" in default_baselines() else []  # where it is installed
    assert isinstance(res, BenchResult)
    assert [r.name for r in res.rows] == ["all", "numpy", "jax", *numba]
    assert all(len(r.samples_s) == 3 for r in res.rows)
    assert "<table" in shell.display_formatter.formatters["text/html"].lookup(res)(res)


def test_reactant_bench_takes_the_numba_baseline(shell, rng):
    from reactant_lab.bench.numba_baseline import NOT_INSTALLED, available

    shell.push({"x": rng.random(64)})
    assert run(shell, "def f(v):\n    return (v * v).sum() + 1\n")[0].success
    result, _, _ = run(shell, "%reactant_bench --repeats 3 --presets all --baselines numba f(x)")
    assert result.success, result.error_in_exec
    res = result.result
    if available():
        assert [r.name for r in res.rows] == ["all", "numba"] and res.reference == "numba"
        assert res.row("numba").compile_s > 0
    else:
        assert res.skipped["numba"] == NOT_INSTALLED


def test_bench_option_adds_the_timing_panel(shell, rng):
    shell.push({"x": rng.random(16)})
    result, outputs, _ = run(shell, "%%reactant_jit --bench 3\ndef f(v):\n    v *= 2\n\nf(x)\n")
    assert result.success, result.error_in_exec
    [bundle] = [o for o in outputs if MIME_TYPE in o]
    payload = bundle[MIME_TYPE]
    numba = {"numba"} if "numba" in default_baselines() else set()  # where it is installed
    assert {r["name"] for r in payload["bench"]["rows"]} == {"none", "all", "numpy", "jax", *numba}
    if numba:
        assert payload["run"]["numba_median_seconds"] > 0
        assert "numba" in bundle["text/plain"]
    assert payload["run"]["median_seconds"] > 0 and payload["run"]["samples"] == 3
    assert "Benchmark" in bundle["text/html"] and "numpy" in bundle["text/plain"]


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.handlers, self.ids = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.handlers += [k for k, _ in attrs if k.startswith("on")]
        self.ids += [v for k, v in attrs if k == "id"]


def test_display_bundle_has_the_three_types_and_script_free_html(shell, rng):
    shell.push({"x": rng.random(5), "y": rng.random((2, 2))})
    result, outputs, _ = run(shell, "%%reactant_jit\ndef f(v):\n    return np.cos(v) + 1\n"
                                    "f(x)\nf(y)\n")
    assert result.success
    bundles = [o for o in outputs if MIME_TYPE in o]
    assert len(bundles) == 2
    all_ids = []
    for bundle in bundles:
        # the static bundle, beside the live widget's view when the widget front end is built
        assert set(bundle) - {WIDGET_MIME} == {MIME_TYPE, "text/html", "text/plain"}
        payload = bundle[MIME_TYPE]
        assert payload["schema_version"] == 1 and json.loads(json.dumps(payload)) == payload
        parsed = _Tags()
        parsed.feed(bundle["text/html"])
        assert "script" not in parsed.tags and not parsed.handlers
        assert "img" in parsed.tags and "section" in parsed.tags  # the graph, the stages
        all_ids += parsed.ids
        assert "traced" in bundle["text/plain"] and "XLA compile" in bundle["text/plain"]
        # XLA's HLO names the source file of its ops: a cell, not a file of the machine
        hlo = decode_text(payload["texts"], payload["xla"]["hlo"])
        assert "ipython-input" not in json.dumps(payload) and "Cell In[" in hlo
        assert not re.search(r'"(/|[A-Za-z]:\\)', hlo)  # nor any other absolute file name
        # the report's CSS only styles its own div: the notebook page around it is left alone
        css = re.search(r"<style>(.*?)</style>", bundle["text/html"], re.S).group(1)
        scope = re.match(r'<div class="reactant-lab-report" id="([\w-]+)"', bundle["text/html"])
        selectors = [sel.strip() for rule in re.findall(r"([^{}]+)\{", css)
                     for sel in rule.split(",")]
        assert selectors and all(sel.startswith(f"#{scope.group(1)}") for sel in selectors)
    assert len(all_ids) == len(set(all_ids))  # two explorers on one page do not clash


def test_calls_under_the_users_own_jax_transformation_run_the_python(shell, rng):
    shell.push({"w": rng.standard_normal(4).astype(np.float32)})
    result, outputs, _ = run(shell, "%%reactant_jit\ndef loss(v):\n    return jnp.sum(v ** 2)\n"
                                    "\njax.grad(loss)(w)\n")
    assert result.success, result.error_in_exec
    assert_close(result.result, 2 * shell.user_ns["w"], rtol=1e-6)
    assert explorers(outputs) == []


def test_bench_option_takes_baselines_and_shows_a_numpy_kernels_copies(shell, rng):
    x = rng.random(16)
    shell.push({"x": x})
    result, outputs, _ = run(shell, "%%reactant_jit --bench 3 --baselines numpy\n"
                                    "def f(v):\n    v *= 2\n\nf(x)\n")
    assert result.success, result.error_in_exec
    [bundle] = [o for o in outputs if MIME_TYPE in o]
    rows = {r["name"]: r for r in bundle[MIME_TYPE]["bench"]["rows"]}
    assert set(rows) == {"none", "all", "numpy"}
    assert rows["all"]["h2d_bytes"] == rows["all"]["d2h_bytes"] == x.nbytes
    assert rows["numpy"]["h2d_bytes"] is None
    assert "to device" in bundle["text/html"] and "from device" in bundle["text/plain"]


def test_help_lists_every_option(shell):
    _, _, out = run(shell, "%%reactant_jit?")
    for option in ("--optimize", "--granularity", "--fn", "--bench", "--device", "--no-run",
                   "--no-display", "--pipeline", "--verify", "--reference", "--exact",
                   "--exclude-patterns", "--loops", "--shardy-passes", "--baselines"):
        assert option in out
    assert "every call the cell makes" in out


def test_loops_auto_rolls_a_time_loop_and_updates_the_array_as_numpy(shell, rng):
    from reactant_lab.notebook import magics

    u = rng.random((12, 12))
    want = u.copy()
    for _ in range(20):
        want[1:-1, 1:-1] = 0.25 * (want[:-2, 1:-1] + want[2:, 1:-1] + want[1:-1, :-2]
                                   + want[1:-1, 2:])
    shell.push({"u": u})
    cell = ("def smooth(a, steps):\n    for _ in range(steps):\n        a[1:-1, 1:-1] = 0.25 * ("
            "a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])\n\nsmooth(u, 20)\n")
    result, _, _ = run(shell, "%%reactant_jit --loops auto --no-display\n" + cell)
    assert result.success, result.error_in_exec
    assert_close(shell.user_ns["u"], want, rtol=1e-12)
    assert "stablehlo.while" in magics._LAST[0].traced_call.ir
    result, _, _ = run(shell, "%%reactant_jit --no-display\n" + cell)  # the default: rolled
    assert result.success and "stablehlo.while" in magics._LAST[0].traced_call.ir
    result, _, _ = run(shell, "%%reactant_jit --loops unroll --no-display\n" + cell)
    assert result.success and "stablehlo.while" not in magics._LAST[0].traced_call.ir


def test_shardy_passes_option_reaches_the_stages(shell, rng):
    from reactant_lab.notebook import magics

    shell.push({"x": rng.random(4)})
    cell = "def f(v):\n    return np.exp(v) + 1\n\nf(x)\n"
    result, _, _ = run(shell, "%%reactant_jit --shardy-passes to_mhlo_shardings --no-display\n"
                              + cell)
    assert result.success, result.error_in_exec
    [ex] = magics._LAST
    assert ex.options.shardy_passes == "to_mhlo_shardings"
    assert ex.stages.shardy_passes == "to_mhlo_shardings" and not ex.stages.sharded
    result, _, _ = run(shell, "%%reactant_jit --shardy-passes mhlo --no-display\n" + cell)
    assert not result.success


def test_restaged_explorations_do_not_run_the_cell_again(shell, rng):
    calls = []
    shell.push({"x": rng.random(4), "calls": calls})
    result, _, _ = run(shell, "%%reactant_jit\ndef f(v):\n    calls.append(1)\n"
                              "    return np.exp(v) + 1\n\nf(x)\n")
    assert result.success and calls == [1]  # traced once
    [ex] = last_explorations()
    again = ex.restaged(optimize="canonicalize", granularity="pass")
    assert calls == [1] and again.stages.optimize == "canonicalize"
    assert [s.name for s in again.stages][1:] == ["canonicalize"]
    assert_close(again.compiled(shell.user_ns["x"]), np.exp(shell.user_ns["x"]) + 1)
    custom = ex.restaged(pipeline="inline,cse")
    assert custom.stages.optimize == "custom"
    result, _, _ = run(shell, "%%reactant_mlir none\n" + ex.stages[0].as_text())
    assert result.success, result.error_in_exec
    [module] = last_explorations()
    module = module.restaged(optimize="none", pipeline="canonicalize")
    assert module.from_text and [s.name for s in module.stages] == ["traced", "custom"]


def test_a_global_changed_between_calls_of_a_cell_function_is_read_each_call(shell):
    cell = ("def step(a):\n    a += G\n\n"
            "a = np.zeros(3)\nfor k in range(3):\n    G = np.full(3, float(k + 1))\n    step(a)\n")
    result, _, _ = run(shell, cell)
    want = shell.user_ns["a"].copy()
    result, outputs, _ = run(shell, "%%reactant_jit\n" + cell)
    assert result.success, result.error_in_exec
    np.testing.assert_array_equal(shell.user_ns["a"], want)
    np.testing.assert_array_equal(want, [6.0, 6.0, 6.0])
    [payload] = explorers(outputs)
    assert [a["path"] for a in payload["signature"]["args"]] == ["args[0]", "fn.G"]


def test_a_cell_function_called_with_another_memory_layout_is_traced_again(shell):
    cell = ("def fill(a):\n    a.ravel()[:] = np.arange(a.size)\n\n"
            "c = np.zeros((2, 3))\nf = np.zeros((2, 3), order='F')\n"
            "base = np.zeros((4, 3))\nfill(c)\nfill(f)\nfill(base[::2])\n")
    run(shell, cell)
    want = {k: shell.user_ns[k].copy() for k in ("c", "f", "base")}
    result, outputs, _ = run(shell, "%%reactant_jit\n" + cell)
    assert result.success, result.error_in_exec
    for k, v in want.items():
        np.testing.assert_array_equal(shell.user_ns[k], v, err_msg=k)
    assert not want["f"].any() and not want["base"].any()  # ravel() copied: nothing written
    assert len(explorers(outputs)) == 3


CLAMPED = """
def clamped(z):
    return jax.lax.dynamic_update_slice(z, jnp.full((1,), 1.5, z.dtype), (9,))[3:4]
"""


def test_verify_adds_every_stages_check_and_leaves_the_arrays_as_one_run_does(shell, rng):
    a0 = rng.random(6)
    a = a0.copy()
    shell.push({"a": a})
    result, outputs, _ = run(shell, "%%reactant_jit --verify --optimize canonicalize\n"
                                    "def bump(v):\n    v += 1\n    return v.sum()\n\nbump(a)\n")
    assert result.success, result.error_in_exec
    assert_close(shell.user_ns["a"], a0 + 1, rtol=1e-12)  # one run, not more
    assert shell.user_ns["a"] is a
    [payload] = explorers(outputs)
    v = payload["verification"]
    # every MLIR stage checked (XLA's own stages follow them)
    assert v["reference"] == "numpy" and len(v["checks"]) == payload["xla"]["passes"]["first"]
    assert all(c["ok"] for c in v["checks"]) and v["first_wrong"] is None
    [ex] = last_explorations()
    assert ex.options.verify and ex.verification is not None


def test_without_verify_the_payload_has_no_verification(shell, rng):
    shell.push({"x": rng.random(3)})
    result, outputs, _ = run(shell, "%%reactant_jit\ndef g(v):\n    return v * 3\n\ng(x)\n")
    assert result.success
    assert "verification" not in explorers(outputs)[0]


@pytest.mark.skipif(not rl.enzyme_available(), reason="needs enzyme-ad")
def test_exact_and_exclude_patterns_reach_the_pipeline_and_verify_finds_the_wrong_stage(shell):
    # On the CPU: XLA's TPU compile drops the clamp under jax.jit too (4.0 for 1.5 there), so
    # the reference would agree with the wrong stage (docs/accelerator.md, known wrong results)
    shell.push({"z": np.arange(4, dtype=np.float32) + 1})
    result, outputs, _ = run(shell, "%%reactant_jit --verify --exact --device cpu" + CLAMPED
                                    + "clamped(z)\n")
    assert result.success, result.error_in_exec
    [payload] = explorers(outputs)
    v = payload["verification"]
    assert v["reference"] == "jax" and v["first_wrong"] == 1
    assert "1.5" in v["checks"][1]["first_bad"]
    result, outputs, _ = run(shell, "%%reactant_jit --verify --exact --device cpu "
                                    "--exclude-patterns slice_of_dynamic_update" + CLAMPED
                                    + "clamped(z)\n")
    assert result.success and np.asarray(result.result).tolist() == [1.5]
    assert explorers(outputs)[0]["verification"]["first_wrong"] is None
    [ex] = last_explorations()
    assert ex.options.exact and ex.options.exclude_patterns == ("slice_of_dynamic_update",)


def test_an_unknown_excluded_pattern_is_a_usage_error(shell, rng):
    shell.push({"x": rng.random(3)})
    result, _, _ = run(shell, "%%reactant_jit --exclude-patterns no_such_pattern_anywhere\n"
                              "def g(v):\n    return v * 3\n\ng(x)\n")
    assert not result.success


@pytest.mark.skipif(not rl.enzyme_available(), reason="needs enzyme-ad")
def test_reactant_bisect_finds_the_culprit_pattern_with_progress(shell, tmp_path, monkeypatch):
    from reactant_lab.bisect import BisectResult

    monkeypatch.setenv("REACTANT_LAB_REPRO_DIR", str(tmp_path))
    z = np.arange(4, dtype=np.float32) + 1
    shell.push({"z": z})
    assert run(shell, CLAMPED)[0].success
    # on the CPU, whose XLA clamps (the TPU's does not, under jax.jit either)
    result, outputs, _ = run(shell, "%reactant_bisect --exact --metric result --device cpu "
                                    "clamped(z)")
    assert result.success, result.error_in_exec
    res = result.result
    assert isinstance(res, BisectResult) and res.found
    assert res.patterns == ("slice_of_dynamic_update<1>",) and res.metric == "result"
    assert z.tolist() == [1, 2, 3, 4]  # the user's array is left alone
    progress = [o["text/plain"] for o in outputs if "text/plain" in o]
    assert progress and all(p.startswith("%reactant_bisect: ") for p in progress)
    html = shell.display_formatter.formatters["text/html"].lookup(res)(res)
    assert "Culprit for the result" in html and "slice_of_dynamic_update&lt;1&gt;" in html
    assert str(res.reproducer) in html and "<script" not in html.lower()


def test_reactant_bisect_runtime_options_reach_bisect(shell, rng, monkeypatch):
    import importlib

    # the package module (rl.bisect, the attribute, is the function)
    bisect_mod = importlib.import_module("reactant_lab.bisect")

    seen = {}

    def fake(fn, *args, **kwargs):
        seen.update(fn=fn, args=args, **kwargs)
        kwargs["progress"]("step one")
        return bisect_mod.BisectResult(fn_name="h", metric=kwargs["metric"], threshold=3.0,
                                       reference=None, found=False, why="nothing slower")

    monkeypatch.setattr(bisect_mod, "bisect", fake)
    shell.push({"x": rng.random(3)})
    assert run(shell, "def h(v):\n    return v + 1\n")[0].success
    result, outputs, _ = run(shell, "%reactant_bisect --metric runtime --threshold 3 --optimize "
                                    "canonicalize --exclude-patterns a,b h(x)")
    assert result.success, result.error_in_exec
    assert seen["fn"] is shell.user_ns["h"] and seen["args"][0] is shell.user_ns["x"]
    assert (seen["metric"], seen["threshold"], seen["optimize"]) == ("runtime", 3.0,
                                                                     "canonicalize")
    assert seen["exclude_patterns"] == ("a", "b") and seen["exact"] is False
    assert any("step one" in o.get("text/plain", "") for o in outputs)
    assert not result.result.found
    assert not run(shell, "%reactant_bisect --metric speed h(x)")[0].success


def test_load_ext_gives_the_notebooks_arrays_the_alignment_xla_reads_in_place(shell):
    from reactant_lab import host_memory

    if host_memory.available() is not None:
        pytest.skip(f"aligned allocator unavailable: {host_memory.available()}")
    _, _, out = run(shell, "import reactant_lab as rl\nprint(rl.is_aligned(np.empty(1001)))")
    assert out.strip() == "True"
    # A kernel that runs each cell in a copy of an older context loses NumPy's allocator choice:
    # the extension puts it back before each cell.
    host_memory._set(None)
    assert not host_memory.active()
    _, _, out = run(shell, "print(rl.is_aligned(np.ones(7)))")
    assert out.strip() == "True"
    # Turned off by the user, it stays off.
    _, _, out = run(shell, "rl.use_aligned_arrays(False)")
    _, _, out = run(shell, "print(rl.is_aligned(np.empty(1001)[1:]), rl.use_aligned_arrays(True))")
    assert out.strip() == "False False"


def test_the_environment_can_keep_numpys_allocator_in_notebooks():
    script = ("from IPython.testing.globalipapp import start_ipython\n"
              "ip = start_ipython()\n"
              "ip.run_cell('%load_ext reactant_lab')\n"
              "from reactant_lab import host_memory\n"
              "print('active', host_memory.active())\n")
    env = child_env(REACTANT_LAB_ALIGNED_ARRAYS="0")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300, check=True)
    assert "active False" in done.stdout, done.stdout + done.stderr


def test_a_syntax_error_in_the_cell_shows_the_cells_line_and_none_of_our_frames(shell):
    previous = shell.custom_exceptions
    cell = ("%%reactant_jit\n"          # line 1
            "def f(a):\n"               # line 2
            "    return a +* 1\n"       # line 3
            "f(np.ones(3))\n")
    result, _, out = run(shell, cell)
    assert isinstance(result.error_in_exec, SyntaxError)
    assert f"Cell In[{result.execution_count}], line 3" in out, out
    assert "return a +* 1" in out and "SyntaxError: invalid syntax" in out
    assert "reactant_lab" + os.sep not in out and "interactiveshell" not in out, out
    assert "Traceback" not in out and "run_cell_magic" not in out, out
    assert shell.custom_exceptions == previous


def test_a_syntax_error_the_cell_raises_while_running_keeps_its_frames(shell):
    result, _, out = run(shell, "%%reactant_jit\ncompile('a +* 1', 'made.py', 'exec')\n")
    assert isinstance(result.error_in_exec, SyntaxError)
    assert "made.py" in out and "compile(" in out, out  # the cell's line that raised it


@pytest.mark.parametrize(("line", "says"), [
    ("%%reactant_jit --optimise none --granularity pas --device tpv\nx = 1\n",
     ["'--optimise' (did you mean '--optimize'?)", "--granularity 'pas'",
      "(did you mean 'pass'?)", "--device 'tpv'", "(did you mean 'tpu'?)"]),
    ("%%reactant_jit --optimize alll --bench -2 --loop roll --verfy\nx = 1\n",
     ["--optimize 'alll'", "(did you mean 'all'?)", "--bench '-2'", "'--verfy' (did you mean "
      "'--verify'?)"]),
    ("%reactant_bench --presets none,al --baselines jaxx --repeats 0 --min-tme 1 len([1])\n",
     ["'al'", "'jaxx'", "--repeats '0'", "'--min-tme' (did you mean '--min-time'?)"]),
    ("%reactant_bisect --metric speed --threshold -1 --no-reprodcer len([1])\n",
     ["--metric 'speed'", "--threshold '-1'", "--no-reproducer"]),
    ("%%reactant_mlir --granularty pass --no-nan all\nmodule {}\n",
     ["'--granularty' (did you mean '--granularity'?)"]),
])
def test_every_wrong_option_is_reported_at_once_with_its_close_spelling(shell, line, says):
    result, _, _ = run(shell, line)
    error = result.error_in_exec
    assert type(error).__name__ == "UsageError", repr(error)
    for part in says:
        assert part in str(error), str(error)


def test_a_cell_ending_with_an_exploration_shows_the_explorer(shell, rng):
    """``ex = rl.explore(..., verify=True)`` then ``ex``: the live explorer (widget view) with the
    explorer's payload and its fallbacks, as ``%%reactant_jit`` shows it; not a static table."""
    shell.push({"x": rng.random(16)})
    assert run(shell, "def g(v):\n    return np.sin(v) * 2 + 1\n")[0].success
    result, _, _ = run(shell, "import reactant_lab as rl\nex = rl.explore(g, x, verify=True)\nex")
    assert result.success, result.error_in_exec
    data, _ = shell.display_formatter.format(result.result)
    assert {WIDGET_MIME, MIME_TYPE, "text/html", "text/plain"} <= set(data)
    payload = data[MIME_TYPE]
    assert payload["meta"]["function"] == "g" and payload["verification"]["first_wrong"] is None
    assert [s["name"] for s in payload["stages"]] == [s.name for s in result.result.all_stages]
