"""Differential tests of kernels with data-dependent control flow and long loops under
``loops="auto"``: each NumPy kernel of tests/loop_kernels.py through reactant_lab.jit against
NumPy eager on fresh random inputs (results, dtypes, arguments updated in place), and its loops
rolled into stablehlo.while / stablehlo.case with nothing left in ``Traced.loop_notes``. The
JAX-mode kernels are compared with the same function run eagerly by JAX."""

from __future__ import annotations

import copy
import zlib
from typing import Any

import jax
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.analysis.ops import op_counts, total_ops
from tests.loop_kernels import JAX_KERNELS, LOOP_KERNELS, LoopKernel, crc32, heat_1d, laplace_2d
from tests.test_numpy_kernels import _nontrivial, assert_same


def _params(kernels: tuple[LoopKernel, ...]) -> list[Any]:
    return [pytest.param(k, id=k.name) for k in kernels]


def assert_rolled(traced: rl.Traced, kernel: LoopKernel) -> None:
    """The kernel's loops are stablehlo ops (or batched, or summed), none was unrolled."""
    unrolled = [n for n in traced.loop_notes if " batched (" not in n and " summed (" not in n]
    assert not unrolled, f"loops left unrolled: {unrolled}"
    assert kernel.batched == any(" batched (" in n for n in traced.loop_notes), traced.loop_notes
    assert kernel.summed == any(" summed (" in n for n in traced.loop_notes), traced.loop_notes
    for op in kernel.rolled:
        if op == "stablehlo.case":  # a few operations in each branch, in a loop: selects
            masked = "stablehlo.negate" in traced.ir and "stablehlo.and" in traced.ir
            assert op in traced.ir or "stablehlo.select" in traced.ir or masked, (
                "no case, select or integer mask (b ^ ((a ^ b) & -pred))")
            continue
        assert op in traced.ir, f"no {op} in the module"
    whiles = traced.ir.count("stablehlo.while")
    assert whiles >= kernel.whiles, f"{whiles} stablehlo.while, expected {kernel.whiles}"


def test_the_corpus_covers_the_loop_kinds():
    assert len(LOOP_KERNELS) >= 10
    assert len(JAX_KERNELS) >= 3


@pytest.mark.parametrize("kernel", _params(LOOP_KERNELS))
def test_loop_kernel_rolls_and_matches_numpy(kernel: LoopKernel, rng):
    jf = rl.jit(kernel.fn, loops="auto")
    for _ in range(2):  # a fresh draw (new shapes: a new trace) each time
        args = kernel.make(rng)
        _nontrivial(args)
        expected_args = copy.deepcopy(args)
        want = kernel.fn(*expected_args)
        before = [id(a) for a in args]
        got = jf(*args)
        assert jf.last is not None
        traced = jf.last.traced_call
        assert traced.mode == "numpy"
        assert_rolled(traced, kernel)
        assert set(traced.mutated) == set(kernel.mutates)
        assert [id(a) for a in args] == before
        assert_same(got, want, kernel.tol, "result")
        assert_same(args, expected_args, kernel.tol, "arguments after the call")


def test_crc32_kernel_is_zlibs(rng):
    data = rng.integers(0, 256, 64).astype(np.uint8)
    assert int(crc32(data)) == zlib.crc32(data.tobytes())
    got = rl.jit(crc32, loops="auto")(data)
    assert int(np.asarray(got)) == zlib.crc32(data.tobytes())


@pytest.mark.parametrize("fn,make", [
    (heat_1d, lambda r, steps: (r.random(32), steps, 0.25)),
    (laplace_2d, lambda r, steps: (r.random((12, 14)), steps)),
], ids=["heat_1d", "laplace_2d"])
def test_long_time_loops_do_not_grow_the_module(fn: Any, make: Any, rng):
    short = rl.trace(fn, *make(rng, 10), loops="auto")
    long = rl.trace(fn, *make(rng, 1000), loops="auto")
    assert not short.loop_notes and not long.loop_notes
    assert total_ops(op_counts(long.ir)) == total_ops(op_counts(short.ir))


def _leaf(x: Any) -> Any:
    return np.asarray(x) if isinstance(x, jax.Array) else x


@pytest.mark.parametrize("kernel", _params(JAX_KERNELS))
def test_jax_loop_kernel_rolls_and_matches_jax_eager(kernel: LoopKernel, rng):
    jf = rl.jit(kernel.fn, loops="auto")
    for _ in range(2):
        args = kernel.make(rng)
        _nontrivial(jax.tree_util.tree_map(_leaf, args))
        want = jax.tree_util.tree_map(_leaf, kernel.fn(*args))  # JAX eager: no tracing
        got = jf(*args)
        assert jf.last is not None
        traced = jf.last.traced_call
        assert traced.mode == "jax"
        assert_rolled(traced, kernel)
        assert traced.mutated == ()
        got_leaves, got_tree = jax.tree_util.tree_flatten(jax.tree_util.tree_map(_leaf, got))
        want_leaves, want_tree = jax.tree_util.tree_flatten(want)
        assert got_tree == want_tree
        for g, w in zip(got_leaves, want_leaves, strict=True):
            if isinstance(w, np.ndarray):
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_allclose(g, w, rtol=kernel.tol, atol=kernel.tol)
            else:  # a Python number in JAX eager (an iteration count): a traced scalar here
                assert np.asarray(g).shape == () and np.asarray(g) == w
