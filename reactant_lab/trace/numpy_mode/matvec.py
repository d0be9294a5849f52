"""Matrix-vector products of a transposed matrix (``A.T @ y``, ``y @ A.T``) as one dot_general
over the matrix as it is stored.

Through jax.numpy, ``A.T @ y`` traces to a transpose of A and a dot. XLA:CPU makes the transpose
a copy and fuses it into a loop that computes the product element by element, reading A column
by column: 0.04-0.3x NumPy's gemv for a 2000x2000 float64 A, where a dot_general contracting A's
first axis reads A row by row at the speed of ``A @ x`` (benchmarks/matvec_options.py). The
Enzyme-JAX passes fold the transpose too; traced this way, every preset gets the product XLA runs
fast, ``optimize='none'`` included.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from jax import lax

from reactant_lab.trace.numpy_mode.proxy import ProxyArray
from reactant_lab.trace.numpy_mode.storage import Transpose, view_value

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
           np.dtype(np.complex128))
"""Dtypes whose products are folded: a dot_general of these computes what jax.numpy's does."""


def untransposed(x: Any, dtype: np.dtype) -> Any | None:
    """The traced value (as ``dtype``) of the matrix whose ``.T`` the 2-D proxy ``x`` is, or
    None when ``x`` is not such a view."""
    if not isinstance(x, ProxyArray) or x.ndim != 2 or x.mask is not None:
        return None
    ops = x._ops
    if not ops or not isinstance(ops[-1], Transpose) or ops[-1].axes != (1, 0):
        return None
    value = view_value(x.root, ops[:-1])
    return value if np.dtype(value.dtype) == dtype else value.astype(dtype)


def product(a: Any, b: Any, va: Any, vb: Any) -> Any | None:
    """``a @ b`` (their traced values ``va``, ``vb``, cast to one dtype) as a dot_general over
    the untransposed matrix when one operand is a vector and the other a transposed view; None
    otherwise (jax.numpy's product then)."""
    ndims = (np.ndim(va), np.ndim(vb))
    if ndims not in ((2, 1), (1, 2)) or va.dtype != vb.dtype or np.dtype(va.dtype) not in _DTYPES:
        return None
    dtype = np.dtype(va.dtype)
    if ndims == (2, 1):  # A.T @ y: contract A's rows
        matrix = untransposed(a, dtype)
        return None if matrix is None else lax.dot_general(matrix, vb, (((0,), (0,)), ((), ())))
    matrix = untransposed(b, dtype)  # y @ A.T is A @ y
    return None if matrix is None else lax.dot_general(matrix, va, (((1,), (0,)), ((), ())))
