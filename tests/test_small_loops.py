"""Our XLA:CPU compiles raise XLA's small-loop threshold: a while loop whose iteration touches
under REACTANT_LAB_SMALL_LOOP_BYTES (by default 8 MiB over the cores, within 256 KiB-4 MiB) runs
as one kernel instead of dispatching its body op by op, on every compile route, with the user's
own setting kept."""

from __future__ import annotations

import os

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import _compile_isolation, backend
from reactant_lab.errors import CompileError
from tests.conftest import assert_close

pytestmark = pytest.mark.cpu_only("the small-loop threshold is an XLA:CPU option; other "
                                  "platforms compile loops their own way")

ONE_KERNEL = "xla_cpu_small_call"
"""What XLA:CPU marks a loop compiled into one kernel with, in the optimized HLO."""


def forward_substitution(L, b):
    """Row by row, as NumPy code solves L x = b: a rolled loop whose body is a short dot."""
    for i in range(b.shape[0]):
        b[i] = (b[i] - L[i, :i] @ b[:i]) / L[i, i]


def inputs(rng, n=40):
    L = np.tril(rng.random((n, n))) + n * np.eye(n)
    return L, rng.random(n) + 0.5


def compiled_and_result(L, b):
    st = rl.trace(forward_substitution, L, b).stages("none")
    compiled = st.compile()
    got = b.copy()
    compiled(L, got)
    return compiled, got


def expected(L, b):
    want = b.copy()
    forward_substitution(L, want)
    return want


def test_a_small_loop_runs_as_one_kernel_and_gives_numpys_answer(rng):
    L, b = inputs(rng)
    compiled, got = compiled_and_result(L, b)
    assert ONE_KERNEL in compiled.hlo_text()
    assert_close(got, expected(L, b), rtol=1e-12)


@pytest.mark.parametrize("route", ["worker", "raw"])
def test_every_compile_route_sets_it(rng, monkeypatch, route):
    if route == "worker":
        monkeypatch.setenv(backend.COMPILE_CHECK_VAR, "always")
    else:
        monkeypatch.setenv("REACTANT_LAB_RAW_EXECUTE", "1")
    L, b = inputs(rng)
    compiled, got = compiled_and_result(L, b)
    assert ONE_KERNEL in compiled.hlo_text()
    assert_close(got, expected(L, b), rtol=1e-12)


def test_xlas_own_threshold_dispatches_the_loop_op_by_op(rng, monkeypatch):
    monkeypatch.setenv(_compile_isolation.SMALL_LOOP_VAR, "1024")
    L, b = inputs(rng)
    compiled, got = compiled_and_result(L, b)
    hlo = compiled.hlo_text()
    assert ONE_KERNEL not in hlo and "while(" in hlo
    assert_close(got, expected(L, b), rtol=1e-12)


def escape_steps(z, c):
    """Fifty masked steps over a 150x200 grid (a Mandelbrot-like body, ~1 MB an iteration)."""
    for _ in range(50):
        inside = np.abs(z) < 2.0
        z[inside] = z[inside] ** 2 + c[inside]


@pytest.mark.parametrize(("cores", "one_kernel"), [(2, True), (32, False)])
def test_the_default_grows_as_cores_shrink(rng, monkeypatch, cores, one_kernel):
    """On 2 cores a body of about a megabyte runs as one kernel (the dispatch of its kernels in
    each iteration costs more than splitting them over two cores gains); on 32 it stays op by op,
    each kernel split over the cores. Either way NumPy's answer."""
    monkeypatch.delenv(_compile_isolation.SMALL_LOOP_VAR, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cores)))
    assert _compile_isolation.small_loop_bytes() == {2: 1 << 22, 32: 1 << 18}[cores]
    z = (rng.random((150, 200)) - 0.5) * 0.5
    c = (rng.random((150, 200)) - 0.7) * 1.5
    compiled = rl.trace(escape_steps, z, c).stages("none").compile()
    assert (ONE_KERNEL in compiled.hlo_text()) is one_kernel
    got, want = z.copy(), z.copy()
    compiled(got, c)
    escape_steps(want, c)
    assert_close(got, want, rtol=1e-12)


def test_a_bad_threshold_is_a_clear_error_and_the_array_survives(rng, monkeypatch):
    monkeypatch.setenv(_compile_isolation.SMALL_LOOP_VAR, "lots")
    L, b = inputs(rng)
    before = b.copy()
    with pytest.raises(CompileError, match=r"REACTANT_LAB_SMALL_LOOP_BYTES='lots' is not a "
                                           r"number of bytes: set it to a whole number"):
        rl.jit(forward_substitution)(L, b)
    np.testing.assert_array_equal(b, before)


def test_a_threshold_already_set_is_kept(monkeypatch):
    """The user's XLA_FLAGS put the option in the compile options first: ours does not replace
    it (shown with options that already hold it)."""
    from jax.extend import backend as jex_backend

    fresh = jex_backend.get_compile_options(num_replicas=1, num_partitions=1)
    option = _compile_isolation.SMALL_LOOP_OPTION.encode()
    assert option not in fresh.SerializeAsString()
    monkeypatch.setenv(_compile_isolation.SMALL_LOOP_VAR, "4096")
    theirs = _compile_isolation.cpu_options(fresh, "cpu")
    data = theirs.SerializeAsString()
    assert option in data and b"4096" in data
    monkeypatch.setenv(_compile_isolation.SMALL_LOOP_VAR, "65536")
    kept = _compile_isolation.cpu_options(theirs, "cpu").SerializeAsString()
    assert kept == data and b"65536" not in kept
    assert _compile_isolation.cpu_options(fresh, "gpu") is fresh


def test_the_users_own_jax_jit_keeps_xlas_default(rng):
    """Only our compiles get the threshold: a jax.jit compiled after ours (same process, same
    wrapped JAX compile) still dispatches its loop op by op, as JAX's defaults say."""
    import jax
    from jax import lax

    L, b = inputs(rng)
    assert ONE_KERNEL in compiled_and_result(L, b)[0].hlo_text()

    def smooth(x, y):  # each iteration touches 3 x 8 KB: over XLA's 1 KiB, under ours
        return lax.fori_loop(0, 20, lambda i, x: jax.numpy.tanh(x) * y + i, x)

    x, y = rng.random(1000), rng.random(1000)
    theirs = jax.jit(smooth).lower(x, y).compile()
    assert ONE_KERNEL not in theirs.as_text()
    ours = rl.trace(smooth, x, y).stages("none").compile()
    assert ONE_KERNEL in ours.hlo_text()
    want = x.copy()
    for i in range(20):
        want = np.tanh(want) * y + i
    assert_close(ours(x, y), want, rtol=1e-12)
