"""Plain NumPy kernels with data-dependent control flow and long loops, with makers of fresh
random inputs: the loops and branches that ``loops="auto"`` must turn into ``stablehlo.while`` /
``stablehlo.case`` (docs/loops.md).

Each kernel is written the way a NumPy user writes it: ``for i in range(n)`` over indices,
``if`` on array elements, ``while err > tol``, in-place element and slice updates. ``rolled``
names the ops the traced module must contain (each at least ``whiles`` ``stablehlo.while`` for
the while loops); ``mutates`` lists the arguments updated in place. Several kernels come in two
spellings (builtin ``max`` and ``np.maximum``, a Python counter and an ``np.int64`` one, ...):
both must roll.

The JAX-mode kernels (``JAX_KERNELS``) are the functional ``jax.numpy`` versions of three of
them; they are checked against the same function run eagerly by JAX, without tracing.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from tests.numpy_kernels import Kernel, jacobi_2d


@dataclass(frozen=True)
class LoopKernel(Kernel):
    """A Kernel whose loops must roll: ``rolled`` ops in the module, at least ``whiles``
    ``stablehlo.while`` ops, and no loop left unrolled in ``Traced.loop_notes``; with
    ``batched``, its loop's iterations are independent and run batched (a note says so); with
    ``summed``, its loop only accumulates and runs as a sum (a note says so)."""

    rolled: tuple[str, ...] = ("stablehlo.while",)
    whiles: int = 1
    batched: bool = False
    summed: bool = False


def _n(rng: np.random.Generator, lo: int = 8, hi: int = 16) -> int:
    return int(rng.integers(lo, hi))


# ---------------------------------------------------------------- bit twiddling


def crc32(data):
    """CRC-32 (zlib's polynomial, reflected) of a uint8 array, bit by bit."""
    crc = np.uint32(0xFFFFFFFF)
    for i in range(data.shape[0]):
        crc = crc ^ data[i]
        for _ in range(8):
            if crc & 1:  # noqa: SIM108  (a statement: a stablehlo.case; `a if c else b` is not)
                crc = (crc >> 1) ^ np.uint32(0xEDB88320)
            else:
                crc = crc >> 1
    return crc ^ np.uint32(0xFFFFFFFF)


def _mk_crc(r):
    return (r.integers(0, 256, _n(r, 8, 40)).astype(np.uint8),)


# ---------------------------------------------------------------- sparse


def csr_matvec(indptr, indices, data, x, y):
    """y += A @ x for A in CSR form, one scalar product at a time (traced inner bounds)."""
    for i in range(y.shape[0]):
        for j in range(indptr[i], indptr[i + 1]):
            y[i] += data[j] * x[indices[j]]


def _mk_csr(r):
    rows, cols = _n(r), _n(r)
    dense = r.standard_normal((rows, cols)) * (r.random((rows, cols)) < 0.4)
    dense[0, 0] = 1.5  # never all zeros
    nz = dense != 0
    indptr = np.concatenate([[0], np.cumsum(nz.sum(axis=1))]).astype(np.int64)
    indices = np.nonzero(nz)[1].astype(np.int64)
    return indptr, indices, dense[nz], r.standard_normal(cols), r.standard_normal(rows)


def csr_inputs(r, rows, cols, per_row):
    """csr_matvec's arguments for a random rows x cols matrix of about ``per_row`` nonzeros in
    each row (sorted column indices), without building it dense."""
    counts = r.integers(per_row // 2, per_row + per_row // 2 + 1, rows)
    indices = np.concatenate([np.sort(r.choice(cols, c, replace=False)) for c in counts])
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return (indptr, indices.astype(np.int64), r.standard_normal(indices.shape[0]),
            r.standard_normal(cols), r.standard_normal(rows))


# ---------------------------------------------------------------- convergence


def jacobi_solve(A, b, x, tol, maxiter):
    """Jacobi iteration for A x = b until the update is below ``tol`` (or ``maxiter`` steps);
    ``x`` is the starting guess, updated in place."""
    d = np.diag(A)
    R = A - np.diag(d)
    err = np.inf
    it = 0
    while (err > tol) & (it < maxiter):
        x_new = (b - R @ x) / d
        err = np.abs(x_new - x).max()
        x[:] = x_new
        it += 1
    return it, err


def _mk_jacobi_solve(r):
    n = _n(r, 5, 12)
    A = r.standard_normal((n, n))
    A += np.diag(np.abs(A).sum(axis=1) + 1.0)  # diagonally dominant: converges
    return A, r.standard_normal(n), r.standard_normal(n), 1e-10, 500


def jacobi_solve_counted(A, b, x, tol, maxiter):
    """jacobi_solve with a NumPy integer as the iteration counter."""
    d = np.diag(A)
    R = A - np.diag(d)
    err = np.inf
    it = np.int64(0)
    while (err > tol) & (it < maxiter):
        x_new = (b - R @ x) / d
        err = np.abs(x_new - x).max()
        x[:] = x_new
        it += 1
    return it, err


def bisection_roots(a, tol):
    """Cube roots of the elements of ``a`` (> 1) by bisection, all elements at once."""
    lo = np.zeros_like(a)
    hi = a.copy()
    while np.max(hi - lo) > tol:
        mid = 0.5 * (lo + hi)
        above = mid * mid * mid > a
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    return 0.5 * (lo + hi)


def bisection_roots_declared(a, tol):
    """bisection_roots with the loop's temporaries assigned before the loop."""
    lo = np.zeros_like(a)
    hi = a.copy()
    mid = lo
    above = np.zeros(a.shape, dtype=bool)
    while np.max(hi - lo) > tol:
        mid = 0.5 * (lo + hi)
        above = mid * mid * mid > a
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    return 0.5 * (lo + hi), mid, above


# ---------------------------------------------------------------- dynamic programming


def edit_distance(a, b):
    """Levenshtein distance of two integer sequences."""
    n, m = a.shape[0], b.shape[0]
    D = np.zeros((n + 1, m + 1), dtype=np.int64)
    D[:, 0] = np.arange(n + 1)
    D[0, :] = np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                D[i, j] = D[i - 1, j - 1]
            else:
                D[i, j] = 1 + min(D[i - 1, j], D[i, j - 1], D[i - 1, j - 1])
    return D[n, m]


def edit_distance_ufuncs(a, b):
    """edit_distance with np.minimum in place of the builtin min."""
    n, m = a.shape[0], b.shape[0]
    D = np.zeros((n + 1, m + 1), dtype=np.int64)
    D[:, 0] = np.arange(n + 1)
    D[0, :] = np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                D[i, j] = D[i - 1, j - 1]
            else:
                D[i, j] = 1 + np.minimum(np.minimum(D[i - 1, j], D[i, j - 1]), D[i - 1, j - 1])
    return D[n, m]


def lcs_length(a, b):
    """Length of the longest common subsequence of two integer sequences."""
    n, m = a.shape[0], b.shape[0]
    L = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                L[i, j] = L[i - 1, j - 1] + 1
            else:
                L[i, j] = np.maximum(L[i - 1, j], L[i, j - 1])
    return L[n, m], L


def knapsack(weights, values, capacity):
    """0/1 knapsack: the best total value within ``capacity`` (one row of the table)."""
    best = np.zeros(capacity + 1, dtype=np.int64)
    for i in range(weights.shape[0]):
        for c in range(capacity, weights[i] - 1, -1):
            best[c] = max(best[c], best[c - weights[i]] + values[i])
    return best[capacity]


def knapsack_ufuncs(weights, values, capacity):
    """knapsack with np.maximum in place of the builtin max."""
    best = np.zeros(capacity + 1, dtype=np.int64)
    for i in range(weights.shape[0]):
        for c in range(capacity, weights[i] - 1, -1):
            best[c] = np.maximum(best[c], best[c - weights[i]] + values[i])
    return best[capacity], best


def larger(a, b):
    """The larger of two numbers: triangle_max_path's helper, an `if` on traced values."""
    return a if a > b else b


def triangle_max_path(T):
    """The largest sum along a path from the apex of the triangle ``T[i, :i + 1]`` down to its
    base, each step straight down or down-right; each cell of ``T`` becomes the best sum from
    there (in place), bottom row first."""
    for i in range(T.shape[0] - 2, -1, -1):
        for j in range(i + 1):
            T[i, j] += larger(T[i + 1, j], T[i + 1, j + 1])
    return T[0, 0]


def _mk_triangle(r, n=None):
    n = _n(r, 10, 20) if n is None else n  # 9 rows or more above the base: the loop rolls
    return (np.tril(r.standard_normal((n, n))),)


def _mk_sequences(r):
    return r.integers(0, 4, _n(r)), r.integers(0, 4, _n(r))


def _mk_knapsack(r):
    n = _n(r)
    return r.integers(1, 10, n), r.integers(1, 30, n), int(r.integers(15, 30))


# ---------------------------------------------------------------- binning


def row_histograms(X, counts):
    """A 10-bin histogram of each row of ``X`` on [0, 1), written into ``counts``."""
    for r in range(X.shape[0]):
        h, _ = np.histogram(X[r], bins=10, range=(0.0, 1.0))
        counts[r] = h
    return counts.sum(axis=0)


def row_affine(X, W, b, out):
    """``out[i] = W @ X[i] + b`` row by row: independent iterations, run batched."""
    for i in range(X.shape[0]):
        out[i] = W @ X[i] + b
    return out.max()


def _mk_row_affine(rng):
    n = _n(rng, 9, 40)
    return (rng.standard_normal((n, 6)), rng.standard_normal((4, 6)), rng.standard_normal(4),
            rng.standard_normal((n, 4)))


def byte_frequencies(blocks, totals):
    """Byte frequencies of each block of a uint8 array (np.bincount with minlength=256),
    accumulated into ``totals``; returns the commonest byte."""
    for r in range(blocks.shape[0]):
        totals += np.bincount(blocks[r], minlength=256)
    return np.argmax(totals)


def digitized_counts(x, edges):
    """How many values of all rows fall in each bin of ``edges`` (np.digitize, np.add.at)."""
    bins = np.zeros(edges.shape[0] + 1, dtype=np.int64)
    for r in range(x.shape[0]):
        np.add.at(bins, np.digitize(x[r], edges), 1)
    return bins


def digitized_bincount(x, edges):
    """digitized_counts with np.bincount(..., minlength=) over np.digitize's bin numbers."""
    bins = np.zeros(edges.shape[0] + 1, dtype=np.int64)
    for r in range(x.shape[0]):
        bins += np.bincount(np.digitize(x[r], edges), minlength=bins.shape[0])
    return bins


def _mk_histograms(r):
    rows = _n(r)
    return r.random((rows, _n(r, 20, 60))), r.integers(1, 9, (rows, 10))


def _mk_bytes(r):
    return r.integers(0, 256, (_n(r), _n(r, 20, 60))).astype(np.uint8), r.integers(0, 3, 256)


def _mk_digitize(r):
    return r.standard_normal((_n(r), _n(r, 10, 30))), np.sort(r.standard_normal(5))


# ---------------------------------------------------------------- stencils


def heat_1d(u, steps, alpha):
    """Explicit 1-D heat equation with fixed ends."""
    for _ in range(steps):
        u[1:-1] = u[1:-1] + alpha * (u[2:] - 2.0 * u[1:-1] + u[:-2])


def laplace_2d(u, steps):
    """Jacobi sweeps of Laplace's equation: each new interior point is the mean of its four
    neighbours from the previous sweep."""
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return np.abs(u).max()


def _mk_heat(r):
    return r.random(_n(r, 20, 60)), 1000, 0.25


def _mk_laplace(r):
    return r.random((_n(r, 10, 24), _n(r, 10, 24))), 200


def _mk_jacobi_2d(r):
    shape = (_n(r, 8, 16), _n(r, 8, 16))
    return 200, r.random(shape), r.random(shape)


# ---------------------------------------------------------------- escape time


def mandelbrot(c_re, c_im, maxiter):
    """Escape-time counts: iterations each point stays within |z| <= 2 (np.where on a mask)."""
    zr = np.zeros_like(c_re)
    zi = np.zeros_like(c_im)
    count = np.zeros(c_re.shape, dtype=np.int64)
    for _ in range(maxiter):
        inside = zr * zr + zi * zi <= 4.0
        zr, zi = (np.where(inside, zr * zr - zi * zi + c_re, zr),
                  np.where(inside, 2.0 * zr * zi + c_im, zi))
        count += inside
    return count


def escape_while(c_re, c_im, maxiter):
    """The same escape time as a ``while`` over the mask of points still iterating."""
    zr = np.zeros_like(c_re)
    zi = np.zeros_like(c_im)
    count = np.zeros(c_re.shape, dtype=np.int64)
    active = np.ones(c_re.shape, dtype=bool)
    it = 0
    while active.any() & (it < maxiter):
        zr, zi = (np.where(active, zr * zr - zi * zi + c_re, zr),
                  np.where(active, 2.0 * zr * zi + c_im, zi))
        count[active] += 1
        active &= zr * zr + zi * zi <= 4.0
        it += 1
    return count, it


def _mk_mandelbrot(r):
    # points well inside (|c| < 0.2), or outside (|c| > 2.5): escape counts that do not hinge
    # on the last bit of a rounding
    shape = (_n(r, 4, 8), _n(r, 4, 8))
    radius = np.where(r.random(shape) < 0.5, 0.2 * r.random(shape), 2.5 + r.random(shape))
    angle = 2 * np.pi * r.random(shape)
    return radius * np.cos(angle), radius * np.sin(angle), 40


# ---------------------------------------------------------------- scans and in-place branches


def prefix_sum(x, out):
    """Inclusive prefix sum written element by element into ``out``."""
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = out[i - 1] + x[i]
    return out[x.shape[0] - 1]


def bubble_sort(a):
    """Bubble sort in place: compare and swap neighbours, n - 1 full passes."""
    n = a.shape[0]
    for _ in range(n - 1):
        for j in range(n - 1):
            if a[j] > a[j + 1]:
                a[j], a[j + 1] = a[j + 1], a[j]


def limit_steps(x, limit):
    """Clamp each step of a walk to at most ``limit``, left to right, in place; count the
    clamped steps."""
    clamped = 0
    for i in range(1, x.shape[0]):
        if x[i] - x[i - 1] > limit:
            x[i] = x[i - 1] + limit
            clamped += 1
    return clamped


def limit_steps_counted(x, limit):
    """limit_steps with a NumPy integer as the counter."""
    clamped = np.int64(0)
    for i in range(1, x.shape[0]):
        if x[i] - x[i - 1] > limit:
            x[i] = x[i - 1] + limit
            clamped += 1
    return clamped


def _mk_walk(r):
    return np.cumsum(r.standard_normal(_n(r, 10, 30))), 0.5


def recursive_filter(x, y, a):
    """A first-order recursive (IIR) filter along each row of ``x``, into ``y``:
    y[i, j] = a * y[i, j - 1] + x[i, j]."""
    for i in range(x.shape[0]):
        y[i, 0] = x[i, 0]
        for j in range(1, x.shape[1]):
            y[i, j] = a * y[i, j - 1] + x[i, j]


def _mk_filter(r, shape=None):
    rows, cols = (_n(r), _n(r, 10, 30)) if shape is None else shape
    return r.standard_normal((rows, cols)), r.standard_normal((rows, cols)), 0.9


# ---------------------------------------------------------------- graphs


def floyd_warshall_paths(dist, pred):
    """All-pairs shortest paths with predecessors: ``dist`` and ``pred`` updated in place."""
    for k in range(dist.shape[0]):
        through = dist[:, k, None] + dist[None, k, :]
        shorter = through < dist
        pred[...] = np.where(shorter, pred[k, :][None, :], pred)
        dist[...] = np.minimum(dist, through)


def floyd_warshall_slices(dist):
    """Floyd-Warshall with the k-th column and row taken as one-wide slices."""
    for k in range(dist.shape[0]):
        dist[...] = np.minimum(dist, dist[:, k:k + 1] + dist[k:k + 1, :])


def _mk_graph(r):
    n = _n(r)
    dist = r.random((n, n)) * 10 + np.where(r.random((n, n)) < 0.3, 100.0, 0.0)
    np.fill_diagonal(dist, 0.0)
    return dist, np.repeat(np.arange(n)[:, None], n, axis=1)


LOOP_KERNELS: tuple[LoopKernel, ...] = (
    LoopKernel("crc32", crc32, _mk_crc, tol=0, rolled=("stablehlo.while", "stablehlo.case"),
               whiles=1),  # its 8-step inner loop unrolled in the rolled one (small_loops)
    LoopKernel("csr_matvec", csr_matvec, _mk_csr, ("args[4]",), whiles=2),
    LoopKernel("jacobi_solve", jacobi_solve, _mk_jacobi_solve, ("args[2]",), tol=1e-9),
    LoopKernel("jacobi_solve_counted", jacobi_solve_counted, _mk_jacobi_solve, ("args[2]",),
               tol=1e-9),
    LoopKernel("bisection_roots", bisection_roots,
               lambda r: (1.0 + 10 * r.random(_n(r)), 1e-12), tol=1e-11),
    # stops at 1e-9, not 1e-12: it returns the last step's comparison `mid ** 3 > a`, which a
    # TPU's emulated float64 decided the other way for a mid within 1e-15 of the root (one of
    # 15 elements, measured on a TPU v5e); 1000 times the margin makes such a tie a rarity
    LoopKernel("bisection_roots_declared", bisection_roots_declared,
               lambda r: (1.0 + 10 * r.random(_n(r)), 1e-9), tol=1e-11),
    LoopKernel("edit_distance", edit_distance, _mk_sequences, tol=0,
               rolled=("stablehlo.while", "stablehlo.case"), whiles=2),
    LoopKernel("edit_distance_ufuncs", edit_distance_ufuncs, _mk_sequences, tol=0,
               rolled=("stablehlo.while", "stablehlo.case"), whiles=2),
    LoopKernel("lcs_length", lcs_length, _mk_sequences, tol=0,
               rolled=("stablehlo.while", "stablehlo.case"), whiles=2),
    LoopKernel("triangle_max_path", triangle_max_path, _mk_triangle, ("args[0]",), tol=1e-12,
               batched=True),
    LoopKernel("knapsack", knapsack, _mk_knapsack, tol=0, whiles=2),
    LoopKernel("knapsack_ufuncs", knapsack_ufuncs, _mk_knapsack, tol=0, whiles=2),
    LoopKernel("row_histograms", row_histograms, _mk_histograms, ("args[1]",), tol=0),
    LoopKernel("row_affine", row_affine, _mk_row_affine, ("args[3]",), tol=1e-12, rolled=(),
               whiles=0, batched=True),
    LoopKernel("byte_frequencies", byte_frequencies, _mk_bytes, ("args[1]",), tol=0, rolled=(),
               whiles=0, summed=True),
    LoopKernel("digitized_counts", digitized_counts, _mk_digitize, tol=0),
    LoopKernel("digitized_bincount", digitized_bincount, _mk_digitize, tol=0, rolled=(),
               whiles=0, summed=True),
    LoopKernel("heat_1d_1000", heat_1d, _mk_heat, ("args[0]",), tol=1e-12),
    LoopKernel("laplace_2d_200", laplace_2d, _mk_laplace, ("args[0]",), tol=1e-12),
    LoopKernel("jacobi_2d_200", jacobi_2d, _mk_jacobi_2d, ("args[1]", "args[2]"), tol=1e-12),
    LoopKernel("mandelbrot", mandelbrot, _mk_mandelbrot, tol=0),
    LoopKernel("escape_while", escape_while, _mk_mandelbrot, tol=0),
    LoopKernel("prefix_sum", prefix_sum, lambda r: (r.standard_normal(_n(r, 10, 40)),
                                                    r.standard_normal(40)), ("args[1]",),
               tol=1e-12),
    LoopKernel("recursive_filter", recursive_filter, _mk_filter, ("args[1]",), tol=1e-12,
               batched=True),
    LoopKernel("bubble_sort", bubble_sort, lambda r: (r.standard_normal(_n(r, 9)),), ("args[0]",),
               tol=0, rolled=("stablehlo.while", "stablehlo.case"), whiles=2),
    LoopKernel("limit_steps", limit_steps, _mk_walk, ("args[0]",), tol=1e-12,
               rolled=("stablehlo.while", "stablehlo.case")),
    LoopKernel("limit_steps_counted", limit_steps_counted, _mk_walk, ("args[0]",), tol=1e-12,
               rolled=("stablehlo.while", "stablehlo.case")),
    LoopKernel("floyd_warshall_paths", floyd_warshall_paths, _mk_graph,
               ("args[0]", "args[1]"), tol=1e-12),
    LoopKernel("floyd_warshall_slices", floyd_warshall_slices, lambda r: _mk_graph(r)[:1],
               ("args[0]",), tol=1e-12),
)


# ---------------------------------------------------------------- JAX mode (functional)


def crc32_jax(data):
    crc = jnp.uint32(0xFFFFFFFF)
    for i in range(data.shape[0]):
        crc = crc ^ data[i].astype(jnp.uint32)
        for _ in range(8):
            if crc & 1:  # noqa: SIM108  (a statement: a stablehlo.case; `a if c else b` is not)
                crc = (crc >> 1) ^ jnp.uint32(0xEDB88320)
            else:
                crc = crc >> 1
    return crc ^ jnp.uint32(0xFFFFFFFF)


def jacobi_solve_jax(A, b, x, tol, maxiter):
    d = jnp.diag(A)
    R = A - jnp.diag(d)
    err = jnp.inf
    it = 0
    while (err > tol) & (it < maxiter):
        x_new = (b - R @ x) / d
        err = jnp.abs(x_new - x).max()
        x = x_new
        it += 1
    return x, it, err


def edit_distance_jax(a, b):
    n, m = a.shape[0], b.shape[0]
    D = jnp.zeros((n + 1, m + 1), dtype=jnp.int32)
    D = D.at[:, 0].set(jnp.arange(n + 1))
    D = D.at[0, :].set(jnp.arange(m + 1))
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                D = D.at[i, j].set(D[i - 1, j - 1])
            else:
                D = D.at[i, j].set(1 + jnp.minimum(jnp.minimum(D[i - 1, j], D[i, j - 1]),
                                                   D[i - 1, j - 1]))
    return D[n, m]


def _mk_jacobi_solve_jax(r):
    A, b, x, _, maxiter = _mk_jacobi_solve(r)
    return (jnp.asarray(A, jnp.float32), jnp.asarray(b, jnp.float32),
            jnp.asarray(x, jnp.float32), 1e-5, maxiter)


JAX_KERNELS: tuple[LoopKernel, ...] = (
    LoopKernel("crc32_jax", crc32_jax, lambda r: (jnp.asarray(_mk_crc(r)[0]),), tol=0,
               rolled=("stablehlo.while", "stablehlo.case"), whiles=2),
    LoopKernel("jacobi_solve_jax", jacobi_solve_jax, _mk_jacobi_solve_jax, tol=1e-5),
    LoopKernel("edit_distance_jax", edit_distance_jax,
               lambda r: tuple(jnp.asarray(s, jnp.int32) for s in _mk_sequences(r)), tol=0,
               rolled=("stablehlo.while", "stablehlo.case"), whiles=2),
)
