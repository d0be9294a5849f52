"""Shared fixtures: fresh random generators and the differential check against jax.jit."""

from __future__ import annotations

import jax
import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    """A generator seeded from the OS: every run draws fresh inputs."""
    return np.random.default_rng()


def assert_trees_close(got, want, tol: float) -> None:
    """Same structure, same dtypes, values within ``tol`` (exact when tol == 0)."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree, f"structure {got_tree} != {want_tree}"
    for g, w in zip(got_leaves, want_leaves, strict=True):
        if not isinstance(g, np.ndarray | np.generic | jax.Array):
            # A static (Python) result comes back as itself; jax.jit makes an array of it.
            assert g == w, f"static result {g!r} != {w!r}"
            continue
        ga, wa = np.asarray(g), np.asarray(w)
        assert ga.dtype == wa.dtype, f"dtype {ga.dtype} != {wa.dtype}"
        assert ga.shape == wa.shape, f"shape {ga.shape} != {wa.shape}"
        if tol == 0:
            np.testing.assert_array_equal(ga, wa)
        else:
            np.testing.assert_allclose(ga, wa, rtol=tol, atol=tol)
