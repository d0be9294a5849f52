"""Differential tests: every NumPy kernel of the corpus through reactant_lab.jit against NumPy
eager, on fresh random inputs and random shapes; outputs and every argument compared."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import reactant_lab as rl
from tests.conftest import float_rtol, target_platform
from tests.loop_kernels import LOOP_KERNELS
from tests.numpy_kernels import KERNELS, Kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from numpy_speed import CASES, CAUSES, FIRST_CALL_CAUSES, NUMBA_GAPS, Case


def assert_same(got, want, tol: float, what: str, tpu_tol: float = 0.0) -> None:
    """Same structure and dtypes (exactly); values within ``tol`` (NaN where NumPy has NaN), or
    what the device computes them to (``float_rtol``; at least ``tpu_tol`` on a TPU)."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree, f"{what}: structure {got_tree} != {want_tree}"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        if not isinstance(w, np.ndarray | np.generic):
            assert g == w, f"{what}[{i}]: {g!r} != {w!r}"
            continue
        ga, wa = np.asarray(g), np.asarray(w)
        assert ga.dtype == wa.dtype, f"{what}[{i}]: dtype {ga.dtype} != NumPy's {wa.dtype}"
        assert ga.shape == wa.shape, f"{what}[{i}]: shape {ga.shape} != {wa.shape}"
        rtol = float_rtol(wa.dtype, tol)
        if target_platform() == "tpu":
            rtol = max(rtol, tpu_tol)
        np.testing.assert_allclose(ga, wa, rtol=rtol, atol=rtol, equal_nan=True,
                                   err_msg=f"{what}[{i}]")


def _nontrivial(args: tuple) -> None:
    for leaf in jax.tree_util.tree_leaves(args):
        if isinstance(leaf, np.ndarray) and leaf.size > 1:
            assert np.any(leaf != 0)


def test_corpus_is_large_enough():
    assert len(KERNELS) >= 30


def test_every_benchmarked_kernel_is_in_the_suite():
    """benchmarks/numpy_speed.py times at least 40 kernels, each one of this suite's or of the
    loop suite's (the same function, checked against NumPy including its in-place effects here
    or in tests/test_loop_kernels.py)."""
    assert len(CASES) >= 40
    assert set(CASES) <= {k.name for k in (*KERNELS, *LOOP_KERNELS)}
    bad = [name for name, case in CASES.items()
           if not (isinstance(case, Case) and callable(case.make) and callable(case.port))]
    assert not bad, f"not a benchmark case (a port and its inputs): {bad}"
    assert set(CAUSES) <= set(CASES), "a diagnosed cause names no benchmarked kernel"
    assert set(FIRST_CALL_CAUSES) <= set(CASES), "a first call's cause names no such kernel"
    assert set(NUMBA_GAPS) <= set(CASES), "a cause of a gap to numba names no such kernel"


@pytest.mark.parametrize("kernel", KERNELS, ids=[k.name for k in KERNELS])
def test_kernel_matches_numpy(kernel: Kernel, rng):
    jf = rl.jit(kernel.fn)
    if kernel.tpu_refuses and target_platform() == "tpu":
        args = kernel.make(rng)
        before = copy.deepcopy(args)
        with pytest.raises((rl.CompileError, rl.UnsupportedOnDeviceError)):
            jf(*args)  # refused, saying why: the process and the caller's arrays unharmed
        assert_same(args, before, 0.0, "arguments after the refusal")
        return
    for _ in range(2):  # a fresh draw (new shapes: a new trace) each time
        args = kernel.make(rng)
        _nontrivial(args)
        expected_args = copy.deepcopy(args)
        want = kernel.fn(*expected_args)
        before = [id(a) for a in args]
        got = jf(*args)
        traced = jf.last.traced
        assert traced.mode == "numpy"
        assert set(traced.mutated) == set(kernel.mutates)
        assert [id(a) for a in args] == before
        assert_same(got, want, kernel.tol, "result", kernel.tpu_tol)
        assert_same(args, expected_args, kernel.tol, "arguments after the call", kernel.tpu_tol)
    # rl.jit compiled the module of one run of all the passes; its stages, run one by one
    # when looked at, end in the same module, text for text.
    stages = jf.last.stages
    assert stages.is_deferred or stages.one_shot is None
    if stages.one_shot is not None:
        assert stages.final.ir == stages.one_shot
        assert not stages.is_deferred


@pytest.mark.parametrize("kernel", [k for k in KERNELS if k.mutates][:6],
                         ids=lambda k: k.name)
def test_cached_executable_updates_fresh_arguments_in_place(kernel: Kernel, rng):
    args = kernel.make(rng)
    jf = rl.jit(kernel.fn)
    jf(*copy.deepcopy(args))
    for _ in range(2):  # same shapes: the cached executable, run on new values
        fresh = jax.tree_util.tree_map(
            lambda a: (a + rng.random(a.shape) * 0.01).astype(a.dtype)
            if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a, args)
        expected = copy.deepcopy(fresh)
        want = kernel.fn(*expected)
        got = jf(*fresh)
        assert jf.cache_size == 1
        assert_same(got, want, kernel.tol, "result")
        assert_same(fresh, expected, kernel.tol, "arguments after the call")
