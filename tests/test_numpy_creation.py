"""NumPy mode: every array-creating function the kernel calls, given traced values (a fill value,
a start or stop, a diagonal offset read from an argument), gives NumPy's values, dtype and shape;
a traced value that would decide the result's shape raises DynamicShapeError naming the function
and the kernel's line. Each kernel runs compiled with no optimization and with the default preset,
against NumPy eager on the same fresh inputs."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import reactant_lab as rl
from tests.conftest import target_platform

HERE = __file__


def _write(x, value):
    x[...] = value
    return x


def _poke(x, a):
    """Write into ``x`` and return it with ``a``: shows whether ``x`` is a view of ``a``."""
    x[(0,) * x.ndim] = 9
    return x, a


def _i(a):
    """A small positive integer read from the traced argument (1 or 2)."""
    return (a[0] > 1.5).astype(np.int64) + 1


# Each kernel takes one float32 vector of 6 values in [1, 2).
KERNELS = {
    # np.full / np.full_like: the fill value's dtype, or the prototype's
    "full": lambda a: np.full(3, a[0]),
    "full_2d": lambda a: np.full((2, 3), a[1]),
    "full_keywords": lambda a: np.full(shape=3, fill_value=a[0]),
    "full_dtype": lambda a: np.full(3, a[0], dtype=np.float64),
    "full_dtype_object": lambda a: np.full(3, a[0], np.dtype(np.int32)),
    "full_array_fill": lambda a: np.full((2, 3), a[:3]),
    "full_list_fill": lambda a: np.full((2, 2), [a[0], a[1]]),
    "full_fortran": lambda a: np.full((2, 3), a[0], order="F").ravel(order="K"),
    "full_like_sum": lambda a: np.full_like(a, a.sum()),
    "full_like_static": lambda a: np.full_like(a, 2.5),
    "full_like_int": lambda a: np.full_like(a.astype(np.int64), a[0] * 2.7),
    "full_like_dtype": lambda a: np.full_like(a, a[0], dtype=np.float64),
    "full_like_shape": lambda a: np.full_like(a, a[0], shape=(2, 2)),
    "full_like_fortran": lambda a: np.full_like(a.reshape(2, 3), a[1], order="F").ravel("K"),
    "full_like_numpy_prototype": lambda a: np.full_like(np.ones(3), a[0]),
    # zeros / ones / empty and their *_like
    "zeros_plus": lambda a: np.zeros(3) + a[:3],
    "zeros_shape_dtype_of_arg": lambda a: np.zeros(a.shape, a.dtype) + a,
    "zeros_shape_from_arg": lambda a: np.zeros((2, a.shape[0])) + a,
    "zeros_like_arg": lambda a: np.zeros(3, like=a) + a[:3],
    "ones_dtype_of_arg": lambda a: np.ones(3, dtype=a.dtype) * a[0],
    "ones_like": lambda a: np.ones_like(a),  # noqa: PLW0108 - a kernel calling it
    "ones_like_plus": lambda a: np.ones_like(a) + a,
    "ones_like_strided": lambda a: np.ones_like(a[::2]),
    "zeros_like": lambda a: np.zeros_like(a),  # noqa: PLW0108 - a kernel calling it
    "zeros_like_dtype_shape": lambda a: np.zeros_like(a, dtype=np.int8, shape=(3,)),
    "zeros_like_numpy": lambda a: np.zeros_like(np.ones((2, 2))) + a[0],
    "empty_like_written": lambda a: _write(np.empty_like(a), a * 2),
    "empty_written": lambda a: _write(np.empty(a.shape, a.dtype), a),
    "empty_like_numpy_written": lambda a: _write(np.empty_like(np.ones(3)), a[:3]),
    # np.array / np.asarray / ...: stacking traced values, views and copies as NumPy makes them
    "array_pair": lambda a: np.array([a[0], a[1]]),
    "array_mixed": lambda a: np.array([a[0], 1.0, 2]),
    "array_nested": lambda a: np.array([[a[0], a[1]], [a[2], a[3]]]),
    "array_rows": lambda a: np.array([a[:3], a[3:]]),
    "array_row_and_list": lambda a: np.array([a[:2], [1.0, 2.0]]),
    "array_dtype": lambda a: np.array([a[0], a[1]], dtype=np.float64),
    "array_scalar": lambda a: np.array(a[0]) + 1,
    "array_ndmin": lambda a: np.array(a, ndmin=3) * 1,
    "array_nested_ndmin": lambda a: np.array([a[0], a[1]], ndmin=2),
    "array_is_a_copy": lambda a: _poke(np.array(a), a),
    "array_copy_false_is_a": lambda a: _poke(np.array(a, copy=False), a),
    "array_cast_is_a_copy": lambda a: _poke(np.array(a, dtype=np.int32), a),
    "asarray": lambda a: np.asarray(a) * 2,
    "asarray_is_a": lambda a: _poke(np.asarray(a), a),
    "asarray_same_dtype_is_a": lambda a: _poke(np.asarray(a, dtype=a.dtype), a),
    "asarray_dtype": lambda a: np.asarray(a, dtype=np.float64),
    "asarray_list_dtype": lambda a: np.asarray([a[0], 2], dtype=np.int64),
    "asarray_C_of_strided_is_a_copy": lambda a: _poke(np.asarray(a[::2], order="C"), a),
    "asanyarray": lambda a: np.asanyarray(a) + 1,
    "ascontiguousarray": lambda a: np.ascontiguousarray(a) + 1,
    "ascontiguousarray_is_a": lambda a: _poke(np.ascontiguousarray(a), a),
    "ascontiguousarray_of_strided_is_a_copy": lambda a: _poke(np.ascontiguousarray(a[::2]), a),
    "ascontiguousarray_0d": lambda a: np.ascontiguousarray(a[0]),
    "ascontiguousarray_of_scalar_is_new": lambda a: _poke(np.ascontiguousarray(a[0]), a),
    "asarray_of_scalar_is_new": lambda a: _poke(np.asarray(a[1]), a),
    "array_of_scalar_ndmin_is_new": lambda a: _poke(np.array(a[2], ndmin=1), a),
    "asfortranarray": lambda a: np.asfortranarray(a) + 1,
    "asfortranarray_2d_is_a_copy": lambda a: _poke(np.asfortranarray(a.reshape(2, 3)), a),
    "asfortranarray_2d_layout": lambda a: np.asfortranarray(a.reshape(2, 3)).ravel(order="K"),
    # ranges
    "arange_times": lambda a: np.arange(5) * a[0],
    "arange_dtype_of_arg": lambda a: np.arange(3, dtype=a.dtype) + a[:3],
    "arange_float_step": lambda a: np.arange(0.0, 1.0, 0.25) * a[0],
    "linspace": lambda a: np.linspace(a[0], a[1], 5),
    "linspace_static": lambda a: np.linspace(0, 1, 5) * a[0],
    "linspace_int": lambda a: np.linspace(a[0], a[1] * 3, 5, dtype=int),
    "linspace_retstep": lambda a: np.linspace(a[0], a[1], 4, retstep=True),
    "linspace_no_endpoint": lambda a: np.linspace(a[0], a[1], 4, endpoint=False),
    "linspace_arrays_axis": lambda a: np.linspace(a[:2], a[2:4], 3, axis=1),
    "logspace": lambda a: np.logspace(a[0], a[1], 4),
    "logspace_base": lambda a: np.logspace(0, 2, 3, base=a[0]),
    "geomspace": lambda a: np.geomspace(a[0], a[1] + 2, 4),
    # matrices
    "eye_times": lambda a: np.eye(3) * a[0],
    "eye_k": lambda a: np.eye(3, 4, _i(a)),
    "eye_k_keyword": lambda a: np.eye(3, k=-_i(a), dtype=np.float32),
    "identity_times": lambda a: np.identity(3) * a[0],
    "identity_dtype": lambda a: np.identity(3, dtype=a.dtype) * a[0],
    "tri_times": lambda a: np.tri(3) * a[0],
    "tri_k": lambda a: np.tri(3, 4, _i(a)),
    "tri_k_negative": lambda a: np.tri(3, k=-_i(a)),
    "tril_k": lambda a: np.tril(np.ones((3, 3)) * a[0], _i(a) - 1),
    "triu_k": lambda a: np.triu(a.reshape(2, 3), k=-_i(a)),
    "tril_k_of_vector": lambda a: np.tril(a[:3], _i(a) - 1),
    "diag": lambda a: np.diag(a[:3]),
    "diag_k": lambda a: np.diag(a[:2], 1),
    "diag_static": lambda a: np.diag([1.0, 2.0]) * a[0],
    "indices": lambda a: np.indices((2, 3))[0] * a[0],
    "indices_dtype": lambda a: np.indices((2, 2), dtype=np.float32) * a[0],
    "fromfunction": lambda a: np.fromfunction(lambda i, j: i + j * a[0], (2, 3)),
    "fromfunction_int": lambda a: np.fromfunction(lambda i, j: i * 2 + j, (2, 3), dtype=int) * a[0],
    "meshgrid": lambda a: np.meshgrid(a[:2], a[2:5]),
    "meshgrid_ij_sparse": lambda a: np.meshgrid(a[:2], a[2:5], indexing="ij", sparse=True),
    # copies, repeats and joins
    "copy": lambda a: np.copy(a) + 1,
    "copy_fortran": lambda a: np.copy(a.reshape(2, 3), order="F").ravel(order="K"),
    "tile": lambda a: np.tile(a[:2], 3),
    "tile_static": lambda a: np.tile(np.arange(2), 2) * a[0],
    "repeat": lambda a: np.repeat(a[:2], 2),
    "concatenate": lambda a: np.concatenate([a[:2], np.zeros(2)]),
    "concatenate_list": lambda a: np.concatenate([a[:2], [5.0]]),
    "stack": lambda a: np.stack([a[:2], np.ones(2)]),
    "stack_nested": lambda a: np.stack([a[:2], [a[3], a[4]]]),
    "vstack": lambda a: np.vstack([a[:2], a[2:4]]),
    "vstack_list": lambda a: np.vstack([a[:2], [5, 6]]),
    "hstack_list": lambda a: np.hstack([a[:2], [1.0]]),
    "hstack_scalar": lambda a: np.hstack([a[:2], 1.0]),
}
# Kernels whose dtypes depend on the input's: run on int64 inputs too.
INT_TOO = ("full", "full_like_sum", "full_like_static", "full_like_int", "zeros_plus",
           "ones_like", "zeros_like", "empty_like_written", "array_pair", "array_mixed",
           "asarray_dtype", "arange_times", "linspace", "linspace_int", "eye_times",
           "identity_dtype", "concatenate_list", "hstack_list", "meshgrid")


def _inputs(rng, dtype):
    if dtype == np.int64:
        return rng.integers(1, 3, 6)
    return (rng.random(6) + 1).astype(np.float32)


def _assert_same(got, want):
    assert type(got) is type(want), (type(got), type(want))
    got_leaves, want_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        assert np.shape(g) == np.shape(w)
        # a TPU's float32 power (logspace's 10 ** x) was 2.9e-6 off NumPy's
        np.testing.assert_allclose(g, w, rtol=1e-6 if target_platform() == "cpu" else 1e-5,
                                   atol=0)


CASES = [pytest.param(name, np.float32, id=name) for name in KERNELS] + [
    pytest.param(name, np.int64, id=f"{name}-int64") for name in INT_TOO]


@pytest.mark.parametrize("optimize", ["none", "all"])
@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_creation_with_traced_values_matches_numpy(name, dtype, optimize, rng):
    kernel = KERNELS[name]
    a = _inputs(rng, dtype)
    mine, theirs = a.copy(), a.copy()
    want = kernel(theirs)
    got = rl.jit(kernel, optimize=optimize)(mine)
    _assert_same(got, want)
    np.testing.assert_array_equal(mine, theirs)  # the argument: updated exactly as NumPy did


# Each kernel takes an int64 vector; the traced value would decide the result's shape.
SHAPE_KERNELS = [
    ("zeros", lambda n: np.zeros(n[0])),
    ("ones", lambda n: np.ones((2, n[0]))),
    ("empty", lambda n: np.empty(n[1])),
    ("full", lambda n: np.full(n[0], 1.0)),
    ("zeros_like", lambda n: np.zeros_like(n, shape=n[0])),
    ("full_like", lambda n: np.full_like(n, 3, shape=(n[0], 2))),
    ("arange", lambda n: np.arange(n[0])),
    ("arange", lambda n: np.arange(0, n[0])),
    ("arange", lambda n: np.arange(0, 5, n[0])),
    ("linspace", lambda n: np.linspace(0.0, 1.0, n[0])),
    ("logspace", lambda n: np.logspace(0.0, 1.0, num=n[0])),
    ("geomspace", lambda n: np.geomspace(1.0, 2.0, n[0])),
    ("eye", lambda n: np.eye(n[0])),
    ("eye", lambda n: np.eye(3, n[0])),
    ("identity", lambda n: np.identity(n[0])),
    ("tri", lambda n: np.tri(n[0])),
    ("indices", lambda n: np.indices((n[0], 2))),
    ("diag", lambda n: np.diag(n[:2], n[0])),
    ("diagflat", lambda n: np.diagflat(n[:2], n[0])),
    ("tile", lambda n: np.tile(n[:2], n[:1])),
    ("repeat", lambda n: np.repeat(n[:2], n[:2])),
    ("resize", lambda n: np.resize(n, n[0])),
    ("pad", lambda n: np.pad(n, n[0])),
    ("broadcast_to", lambda n: np.broadcast_to(n[0], (n[0],))),
    ("fromfunction", lambda n: np.fromfunction(lambda i: i, (n[0],))),
]


@pytest.mark.parametrize(("function", "kernel"), SHAPE_KERNELS,
                         ids=[f"{f}-{i}" for i, (f, _) in enumerate(SHAPE_KERNELS)])
def test_traced_shape_is_a_clear_error(function, kernel, rng):
    n = rng.integers(1, 4, 3)
    kernel(n.copy())  # NumPy itself runs it
    with pytest.raises(rl.DynamicShapeError) as info:
        rl.jit(kernel, optimize="none")(n)
    message = str(info.value)
    assert f"np.{function} was given a traced value" in message
    assert f"{HERE}:{kernel.__code__.co_firstlineno}" in message
    assert "decides the shape of the result" in message


@pytest.mark.parametrize("function", ["eye", "tri", "tril", "triu"])
def test_traced_non_integer_offset_is_a_clear_error(function, rng):
    def kernel(a):
        if function in ("tril", "triu"):
            return getattr(np, function)(np.ones((3, 3)), a[0])
        return getattr(np, function)(3, 3, a[0])

    with pytest.raises(rl.UnsupportedNumpyFunctionError) as info:
        rl.jit(kernel, optimize="none")(rng.random(2) + 1)
    assert info.value.function == f"np.{function}"
    assert info.value.filename == HERE and "traced k that is not an integer" in str(info.value)
