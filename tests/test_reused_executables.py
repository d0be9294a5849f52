"""An identical compile of ours reuses the executable XLA made the first time (the same module
under another preset or another jit object, the same options and device); XLA runs anew for
anything else, for bench's timed compiles and after ``forget_executables``."""

from __future__ import annotations

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend
from tests.conftest import float_rtol


def kernel(a, b):
    a += 2 * b
    return np.sin(a).sum()


def _call(rng, **options):
    a, b = rng.random(9), rng.random(9)
    want_a = a + 2 * b
    want = np.sin(want_a).sum()
    f = rl.jit(kernel, **options)
    got = f(a, b)
    np.testing.assert_allclose(a, want_a, rtol=float_rtol(a.dtype, 1e-15))
    assert got == pytest.approx(want, rel=float_rtol(a.dtype, 1e-14, functions=True))
    return f.last.compiled


def _twice(rng, **options):
    """Two jit objects' first calls, from one line (the module's locations name the line that
    called: the same module twice)."""
    return [_call(rng, **options) for _ in range(2)]


def test_a_second_identical_compile_reuses_the_executable_and_still_updates_in_place(rng):
    backend.forget_executables()
    first, second = _twice(rng)
    assert not first.reused and second.reused  # served by the kept executables: no XLA run
    backend.forget_executables()
    assert not _twice(rng)[0].reused


def test_other_options_or_xla_flags_compile_anew(rng, monkeypatch):
    backend.forget_executables()
    _twice(rng)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_thunk_runtime=true")
    first, second = _twice(rng)
    assert not first.reused and second.reused
    assert [c.reused for c in _twice(rng, donate=False)] == [False, True]


def test_bench_times_a_compile_of_its_own(rng):
    backend.forget_executables()
    with backend.fresh_compiles():
        assert [c.reused for c in _twice(rng)] == [False, False]
    a, b = rng.random(9), rng.random(9)
    for _ in range(2):
        result = rl.bench(kernel, a, b, presets=("all",), baselines=(), repeats=3,
                          min_time=0.0)
        assert result.rows[0].compile_s > 0
        assert not backend.last_compile_reused()  # XLA ran, the second time too


def test_the_summary_says_when_xla_did_not_run(rng):
    backend.forget_executables()
    a, b = rng.random(9), rng.random(9)
    for _ in range(2):
        ex = rl.explore(kernel, a.copy(), b, xla_passes=False)
    assert ex.compiled.reused
    assert "XLA did not run: the executable of an identical earlier compile" in ex.summary()
