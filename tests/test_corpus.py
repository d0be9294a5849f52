"""Differential tests: every corpus function, through every preset, against jax.jit."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend
from tests.conftest import assert_trees_close
from tests.corpus import CASES, Case


@functools.cache
def traced_case(name: str) -> tuple[Case, rl.Traced]:
    case = next(c for c in CASES if c.name == name)
    args, kwargs = case.make(np.random.default_rng())
    return case, rl.trace(case.fn, *args, **kwargs)


def jax_reference(case: Case, args: tuple, kwargs: dict):
    fn = jax.jit(case.fn, static_argnums=case.static_argnums,
                 static_argnames=case.static_argnames)
    with backend.x64_scope(case.x64):
        return fn(*args, **kwargs)


def test_corpus_is_large_enough():
    assert len(CASES) >= 20


@pytest.mark.parametrize("preset", list(rl.PRESETS))
@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_preset_matches_jax_jit(name, preset, rng):
    case, traced = traced_case(name)
    stages = traced.stages(preset)
    compiled = stages.compile()
    args, kwargs = case.make(rng)  # a fresh draw, not the one traced
    got = compiled(*args, **kwargs)
    assert_trees_close(got, jax_reference(case, args, kwargs), case.tol)


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_numpy_in_numpy_out_and_preserved(name, rng):
    case, traced = traced_case(name)
    assert dict(traced.preserved) == case.preserved
    args, kwargs = case.make(rng)
    got = traced.stages("all").compile()(*args, **kwargs)
    arg_leaves = dict(zip(
        [a.path for a in traced.linear_args],
        [leaf for leaf in jax.tree_util.tree_leaves((args, kwargs))
         if isinstance(leaf, np.ndarray | np.generic)], strict=True))
    by_path = dict(zip([r.path for r in traced.linear_results],
                       [leaf for leaf in jax.tree_util.tree_leaves(got)
                        if isinstance(leaf, np.ndarray | np.generic)], strict=False))
    for result_path, arg_path in case.preserved.items():
        assert by_path[result_path] is arg_leaves[arg_path]
    for spec in traced.linear_results:
        assert isinstance(by_path[spec.path], np.ndarray | np.generic), spec.path


@pytest.mark.parametrize("name", ["mlp", "fori_loop", "nested_pytree", "float64"])
def test_jax_arrays_in_jax_arrays_out(name, rng):
    case, _ = traced_case(name)
    args, kwargs = case.make(rng)
    with backend.x64_scope(case.x64):
        dev_args, dev_kwargs = jax.device_put((args, kwargs))
    compiled = rl.trace(case.fn, *dev_args, **dev_kwargs).stages("all").compile()
    got = compiled(*dev_args, **dev_kwargs)
    assert all(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(got))
    assert_trees_close(got, jax_reference(case, args, kwargs), case.tol)
