"""The ``numba`` baseline of ``rl.bench``: the user's own function under ``numba.njit``, its
compile timed apart, its result checked against NumPy's, and skipped with a reason where numba
refuses the code, the code is JAX's, or numba is not installed. No timing is asserted."""

from __future__ import annotations

import dataclasses
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from reactant_lab.bench import BASELINES, bench, default_baselines
from reactant_lab.bench.numba_baseline import (
    JAX_CODE,
    NOT_INSTALLED,
    available,
    refusal,
    whole,
)
from tests.conftest import assert_close

needs_numba = pytest.mark.skipif(not available(), reason="numba is not installed")
FAST = {"presets": (), "repeats": 3, "warmup": 1, "roofline": False, "progress": False}


def relax(u, steps):
    """Loop-heavy NumPy kernel that updates its argument in place (Gauss-Seidel sweeps)."""
    n = u.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            u[i] = 0.5 * (u[i - 1] + u[i + 1]) + 0.01 * u[i]
    return u.sum()


def least_squares(a, b):
    return np.linalg.lstsq(a, b, rcond=None)[0] * 2


@needs_numba
def test_numba_runs_the_function_itself_and_times_its_compile_apart(rng):
    u = rng.random(300)
    before = u.copy()
    result = bench(relax, u, 5, baselines=("numpy", "numba"), **FAST)
    assert [r.name for r in result.rows] == ["numpy", "numba"] and not result.skipped
    assert result.reference == "numpy"
    row = result.row("numba")
    assert row.kind == "baseline" and row.compile_s is not None and row.compile_s > 0
    assert result.row("numpy").compile_s is None
    assert row.ratio is not None and row.ratio > 0 and len(row.samples_s) == 3
    np.testing.assert_array_equal(u, before)  # the caller's array is never the one timed
    assert "numba" in result.table() and "numba" in {r["name"] for r in result.to_dict()["rows"]}


@needs_numba
def test_numba_result_equals_numpys_and_each_call_gets_fresh_inputs(rng):
    import numba

    from reactant_lab.bench.numba_baseline import numba_variant
    from reactant_lab.trace import trace

    u = rng.random(50)
    made = numba_variant(relax, trace(relax, u, 3), (u, 3), {})
    assert not isinstance(made, str)
    variant, compile_s = made
    assert compile_s > 0 and isinstance(variant.call, numba.core.registry.CPUDispatcher)
    want_u = u.copy()
    want = relax(want_u, 3)
    for i in range(3):  # the function updates its argument: each call starts from the original
        args, kwargs = variant.inputs(i)
        got = variant.run_once((args, kwargs))
        assert got == pytest.approx(want, rel=1e-12)
        assert_close(args[0], want_u, rtol=1e-12)
    assert len(variant.call.signatures) == 1  # the timed calls reuse the compile


@needs_numba
def test_a_kernel_numba_refuses_is_skipped_with_numbas_reason(rng):
    a, b = rng.random((6, 3)), rng.random(6)
    result = bench(least_squares, a, b, baselines=("numpy", "numba"), **FAST)
    assert [r.name for r in result.rows] == ["numpy"]
    why = result.skipped["numba"]
    assert why.startswith("numba cannot compile the function: TypingError: ")
    assert "lstsq" in why and "Failed in nopython mode pipeline" not in why
    assert "\n" not in why and "0x" not in why  # one line, no object addresses
    assert "line " in why and "np.linalg.lstsq(a, b, rcond=None)" in why  # where it stopped
    assert f"skipped numba: {why}" in result.table()


def larger(a, b):
    return a if a > b else b


def best_path(T):
    """A kernel calling a helper of the user's code (tests/loop_kernels.py's triangle)."""
    for i in range(T.shape[0] - 2, -1, -1):
        for j in range(i + 1):
            T[i, j] += larger(T[i + 1, j], T[i + 1, j + 1])
    return T[0, 0]


@needs_numba
def test_the_users_helpers_are_compiled_by_numba_too(rng):
    """numba calls no plain Python function: the helpers the kernel calls run under numba.njit
    as a numba user decorates them, and the kernel is timed with its result equal to NumPy's;
    the caller's module keeps its plain helper."""
    T = np.tril(rng.standard_normal((12, 12)))
    before = T.copy()
    result = bench(best_path, T, baselines=("numpy", "numba"), **FAST)
    assert [r.name for r in result.rows] == ["numpy", "numba"], result.skipped  # checked equal
    assert result.row("numba").compile_s is not None and result.row("numba").ratio is not None
    np.testing.assert_array_equal(T, before)  # every run had its own copy
    assert type(larger).__name__ == "function"  # the module's helper is left as it was


@needs_numba
def test_a_result_unlike_numpys_is_skipped(rng, monkeypatch):
    from reactant_lab.bench import numba_baseline

    real = numba_baseline.reference_outcome

    def off_by_one(*args, **kwargs):  # NumPy's answer, changed: numba's no longer matches it
        want = real(*args, **kwargs)
        return dataclasses.replace(want, values=tuple(v + 1 for v in want.values))

    monkeypatch.setattr(numba_baseline, "reference_outcome", off_by_one)
    result = bench(relax, rng.random(20), 2, baselines=("numpy", "numba"), **FAST)
    assert [r.name for r in result.rows] == ["numpy"]
    why = result.skipped["numba"]
    assert why.startswith("numba's result differs from NumPy's eager one: result: got ")
    assert "reference" in why


def test_jax_code_is_skipped_without_importing_numba(rng, monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # an import would fail
    result = bench(lambda x: jnp.sin(x) * 2, rng.random(8).astype(np.float32),
                   baselines=("jax", "numba"), **FAST)
    assert [r.name for r in result.rows] == ["jax"]
    assert result.skipped["numba"] == JAX_CODE and "NumPy code only" in JAX_CODE


def test_without_numba_the_reason_names_the_extra(rng, monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` raises ModuleNotFoundError
    assert not available()
    assert default_baselines() == ("numpy", "jax")
    result = bench(relax, rng.random(20), 2, baselines=("numpy", "numba"), **FAST)
    assert [r.name for r in result.rows] == ["numpy"]
    assert result.skipped["numba"] == NOT_INSTALLED
    assert "pip install reactant-lab[numba]" in NOT_INSTALLED


def test_default_baselines_add_numba_only_where_installed():
    assert BASELINES == ("numpy", "jax", "numba")
    assert default_baselines() == (BASELINES if available() else ("numpy", "jax"))


def test_refusal_keeps_the_meaningful_line_whole():
    class TypingError(Exception):
        pass

    message = ("\x1b[1mFailed in nopython mode pipeline (step: nopython frontend)\n\x1b[1m"
               "Use of unsupported NumPy function 'numpy.einsum' or unsupported use of the "
               "function.\n\nFile \"cell.py\", line 2:\ndef f(a):\n    return np.einsum('ij', a)\n"
               "    ^\n\nDuring: Pass nopython_type_inference")
    assert refusal(TypingError(message)) == (
        "TypingError: Use of unsupported NumPy function 'numpy.einsum' or unsupported use of "
        "the function. (line 2: return np.einsum('ij', a))")
    assert refusal(ValueError("")) == "ValueError"
    long = "First sentence is short. " + "word " * 200
    assert whole(long) == "First sentence is short."
    cut = whole("word " * 200)
    assert cut.endswith("word…") and len(cut) <= 401


@needs_numba
def test_the_explorer_payloads_bench_and_run_timings_take_the_numba_row(rng):
    import json

    import jsonschema

    from reactant_lab.notebook.display import bench_run
    from reactant_lab.render.payload import SCHEMA_PATH

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    result = bench(relax, rng.random(30), 2, presets=("all",), baselines=("numpy", "numba"),
                   repeats=3, warmup=1, roofline=False, progress=False)
    run = bench_run(result, "all")
    assert run["numba_median_seconds"] > 0
    for instance, definition in ((json.loads(result.to_json()), "BenchEntry"), (run, "RunTimings")):
        validator = jsonschema.Draft202012Validator(
            {"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]})
        assert not [e.message for e in validator.iter_errors(instance)]
