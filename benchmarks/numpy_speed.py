"""NumPy speed: NumPy eager vs rl.jit (default preset, and optimize="none") vs numba vs jax.jit.

Every kernel is a plain NumPy function of the differential suite (tests/numpy_kernels.py, where
each is checked against NumPy on random inputs, in-place effects included), here at a size where
NumPy eager takes roughly 5-100 ms. In one run, per kernel, round-robin sampled so that drift of
the machine hits all alike, each call on fresh copies of the inputs when the kernel updates its
arguments (copying is not timed):

- ``numpy``   the function itself, eager;
- ``rl.jit``  ``reactant_lab.jit(fn)`` (default preset), taking and updating NumPy arrays: the
  transfers and the write-back a NumPy user pays are in its time;
- ``none``    ``reactant_lab.jit(fn, optimize="none")``: the traced module straight to XLA;
- ``numba``   ``numba.njit(fn)`` of the unmodified function, the helper functions it calls
  njit-ed too as a numba user decorates them (its compile timed apart; "-" with numba's
  one-line reason in the notes where it refuses the code);
- ``jax.jit`` a port written the way a JAX expert would (functional, vectorized,
  ``lax.fori_loop`` / ``lax.scan`` for time loops, library routines where JAX has them), inputs
  already on the device, float64 under x64 where the NumPy kernel is float64. It returns
  ``(result, updated arguments)`` and is checked against NumPy once per run. It is timed as the
  others are: each call waits for its result (``block_until_ready``), and small inputs rotate
  among as many device copies as the other variants' (so caches flatter none of them more).
  ``--pipelined-port`` times it as this script did before: one input set, and a sample's
  calls left to overlap, the next dispatched while the last still runs (kernels under ~0.2 ms,
  whose samples hold several calls, then measure up to ~1.6x faster: cholesky 0.05 against
  0.08 ms per call).

XLA's options differ in one respect: rl.jit (and ``none``) compile on CPU with reactant_lab's
small-loop threshold (``REACTANT_LAB_SMALL_LOOP_BYTES``; unset, 8 MiB over the cores within
256 KiB-4 MiB: a while loop whose iteration touches less runs as one kernel), the ports with
jax.jit's, XLA's default of 1 KiB. The header says which. ``--port-small-loops`` gives the
ports (every jax.jit of the process) the same threshold through XLA_FLAGS, to compare the two
on equal XLA options.

rl.jit's first results (updated arguments included) and numba's are compared with NumPy's at the
benchmark size too; a variant that fails or differs is listed in the notes at the end.
``--quick`` runs the differential suite's own small inputs with 3 samples: a smoke test.

Warm medians and ratios to NumPy (> 1: faster than NumPy) are printed, then the first call of
rl.jit (trace + stages + XLA compile + run, beside its parts) and of the jax.jit port (trace +
compile + run), their ratio (flagged above 3x), the geometric means, and every kernel where
rl.jit is below 1x NumPy with its diagnosed cause (``CAUSES``), then every first call above 3x
the port's with its own (``FIRST_CALL_CAUSES``), then every kernel where rl.jit is more than 2x
slower than numba with its own (``NUMBA_GAPS``). A first call is one sample, and a 0.03 s port's
varies by half from run to run here: a kernel at 2x the port's or more in the run has both
first calls measured again in ``--first-samples`` fresh processes (5; the only way to time
another first call), as many again when their median ratio lies within 20% of the 3x limit, and
the table gives those medians.

NumPy's matrix products run on its BLAS threads: on a loaded machine they can be slower than on
an idle one (OPENBLAS_NUM_THREADS=1 compares single-threaded). OpenBLAS's threads keep spinning
for about 0.1 s after each product before they sleep, and round-robin sampling puts a compiled
call right after NumPy's: XLA's threads then share the cores with them, and mlp_forward's
compiled call measured 23-25 ms there against 15-16 ms alone or after a 0.2 s pause (NumPy's own
time, 13-15 ms, the same either way). This script sets OPENBLAS_THREAD_TIMEOUT=4 (the shortest
spin, 2^4 cycles) before NumPy loads OpenBLAS, unless it is set already.

Run: .venv/bin/python benchmarks/numpy_speed.py [--only NAME ...] [--min-time S] [--quick]
     [--no-numba] [--pipelined-port] [--port-small-loops] [--first-samples N]
"""

from __future__ import annotations

import os

# Before NumPy loads OpenBLAS (see the module's docstring): its threads stop spinning at once.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import argparse  # after the environment is set for OpenBLAS
import copy
import json
import math
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.linalg import solve_triangular

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl
from reactant_lab import backend, timing
from reactant_lab.bench import numba_baseline
from reactant_lab.bench.measure import Variant, copies, copy_inputs, plan_rounds, round_robin, warm_up
from tests import loop_kernels as lk
from tests import numpy_kernels as nk

SCALAR_LOOPS = ("crc32", "csr_matvec", "triangle_max_path", "recursive_filter")
"""Kernels of the loop suite (tests/loop_kernels.py) timed here: Python loops over array
elements, where NumPy runs the interpreter per element and numba compiles the loop."""
KERNELS = {k.name: k for k in (*nk.KERNELS, *(k for k in lk.LOOP_KERNELS
                                               if k.name in SCALAR_LOOPS))}
_pair, _sq, _spd, _dominant = nk._pair, nk._sq, nk._spd, nk._dominant  # the suite's input makers
VARIANTS = ("numpy", "rl.jit", "none", "numba", "jax.jit")
FIRST_CALL_LIMIT = 3.0
"""rl.jit's first call may take at most this many times the jax.jit port's first call."""

_LOOP = ("benchmarks/xla_loop_compile.py reproduces it in plain JAX: a 300-iteration loop adds "
         "0.03-0.1 s to XLA:CPU's compile whatever its body, 2-5x a loopless module's")
FIRST_CALL_CAUSES: dict[str, str] = {
    "covariance": "its loop is gone (trace/control_flow/scattered.py: the product hoisted, "
                  "the row and column writes two selects), compiled in 0.05-0.08 s; what is "
                  "left is the trace of the loop, twice (window writes for the batching check, "
                  "then scatters), and its checks (0.04-0.05 s) against the port's one product "
                  "(0.04-0.05 s in all): 2.5-2.9x in fresh processes; it was XLA's compile of "
                  "the 300-iteration loop of masked writes (0.16-0.23 s). " + _LOOP,
    "correlation": "as covariance: no loop left, the trace (0.1 s) against the port's product",
    "trmm": "its loop over i stays a while (see its warm-time note), compiled in 0.05-0.07 s "
            "(XLA:CPU's floor for any module is ~0.02 s here), against the port's one product "
            "(0.04-0.05 s in all); its trace, 0.05 s before its batched column loop kept plain "
            "windows (62 traced equations in the loop body, 28 now), is 0.035-0.045 s: "
            "2.0-2.9x in fresh processes, 3.05x in one full run on a loaded machine. " + _LOOP,
    "cholesky": "an 80-iteration while with a nested loop, compiled in 0.1-0.13 s; the port's "
                "LAPACK call compiles about as slowly, so it lands near 1-2x",
    "syrk": "no loop left (its loop over k runs as one sum, the loop over i batched): the "
            "trace is the cost, both loops traced, checked and rewritten (0.05-0.09 s) against "
            "the port's one product; syr2k alike",
    "conv2d": "a 3-iteration while (rolled: unrolled it ran 2x slower and compiled slower "
              "still) whose three window products a row are one (30752x48) @ (48x32) product "
              "(trace/numpy_mode/product_sums.py: 8 fusions and one dot in the module where "
              "there were 14 and three, compiled in 0.13-0.22 s where it took 0.20-0.26 s; "
              "first call 2.4-2.9x the port's where it was 2.8-3.4x); each fusion pays "
              "XLA:CPU's fusion emitter ~5 ms (xla_cpu_use_fusion_emitters=false compiles "
              "faster but made other kernels' warm runs up to 3.5x slower, so it is not set), "
              "against 0.05-0.08 s for the port's one convolution (which runs 3x slower warm)",
    "doitgen": "no loop left (it runs batched), but a floor of fixed costs against the port's "
               "0.02-0.03 s: tracing the loop body and batching it (0.02-0.03 s), the preset's "
               "passes (0.02 s, most of it the three pattern stages building their pattern "
               "sets), the compile (0.01 s) and the first run with the 13 MB write-back",
    "softmax": "the same fixed costs as doitgen's, against a 0.03 s port",
    "syr2k": "as syrk: no loop left, the trace of both loops (0.06-0.09 s) against one product",
    "crc32": "its loop over the 16,384 bytes, the 8 bit steps unrolled in it and each `if` "
             "masked as in the port, and the trace (0.055 s): 0.115-0.125 s against the "
             "port's 0.055 s, 2.1-2.2x in fresh processes (2.45-2.5x while its first byte's "
             "iteration ran apart, its bit loop a second while; 2.4-3.2x with two nested "
             "whiles and a conditional before). " + _LOOP,
}
"""Why a kernel's first call can exceed FIRST_CALL_LIMIT times the port's, printed with it."""


# ---------------------------------------------------------------- jax.jit ports
# Each takes the kernel's arguments and returns (result, the updated arguments in argument order).


def jx_jacobi_1d(tsteps, A, B):
    def step(_, ab):
        A, B = ab
        B = B.at[1:-1].set(0.33333 * (A[:-2] + A[1:-1] + A[2:]))
        A = A.at[1:-1].set(0.33333 * (B[:-2] + B[1:-1] + B[2:]))
        return A, B

    return None, lax.fori_loop(1, tsteps, step, (A, B))


def _jacobi_2d_step(src, dst):
    return dst.at[1:-1, 1:-1].set(0.2 * (src[1:-1, 1:-1] + src[1:-1, :-2] + src[1:-1, 2:] +
                                         src[2:, 1:-1] + src[:-2, 1:-1]))


def _ping_pong(update, tsteps, A, B):
    """PolyBench's two-array time loop: B from A, then A from B, steps 1..tsteps-1."""
    def step(_, ab):
        A, B = ab
        B = update(A, B)
        return update(B, A), B

    return None, lax.fori_loop(1, tsteps, step, (A, B))


def jx_jacobi_2d(tsteps, A, B):
    return _ping_pong(_jacobi_2d_step, tsteps, A, B)


def _heat_3d_step(src, dst):
    c = src[1:-1, 1:-1, 1:-1]
    return dst.at[1:-1, 1:-1, 1:-1].set(
        0.125 * (src[2:, 1:-1, 1:-1] - 2.0 * c + src[:-2, 1:-1, 1:-1]) +
        0.125 * (src[1:-1, 2:, 1:-1] - 2.0 * c + src[1:-1, :-2, 1:-1]) +
        0.125 * (src[1:-1, 1:-1, 2:] - 2.0 * c + src[1:-1, 1:-1, :-2]) + c)


def jx_heat_3d(tsteps, A, B):
    return _ping_pong(_heat_3d_step, tsteps, A, B)


def jx_seidel_2d(tsteps, n, A):
    def row(i, A):
        prev, cur, nxt = (lax.dynamic_index_in_dim(A, i + d, 0, keepdims=False) for d in (-1, 0, 1))
        t = cur[1:-1] + (prev[:-2] + prev[1:-1] + prev[2:] + cur[2:] + nxt[:-2] + nxt[1:-1] +
                         nxt[2:])

        def recurrence(left, tj):  # A[i, j] = (A[i, j] + A[i, j - 1]) / 9, left to right
            y = (tj + left) / 9.0
            return y, y

        _, ys = lax.scan(recurrence, cur[0], t)
        return lax.dynamic_update_index_in_dim(A, cur.at[1:-1].set(ys), i, 0)

    return None, (lax.fori_loop(0, tsteps - 1, lambda _, A: lax.fori_loop(1, n - 1, row, A), A),)


def jx_fdtd_2d(tmax, ex, ey, hz, fict):
    def step(t, s):
        ex, ey, hz = s
        ey = ey.at[0, :].set(fict[t])
        ey = ey.at[1:, :].add(-0.5 * (hz[1:, :] - hz[:-1, :]))
        ex = ex.at[:, 1:].add(-0.5 * (hz[:, 1:] - hz[:, :-1]))
        hz = hz.at[:-1, :-1].add(-0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1]))
        return ex, ey, hz

    return None, lax.fori_loop(0, tmax, step, (ex, ey, hz))


def jx_upwind_sweep(u, c, steps):
    def step(_, u):
        return u.at[:, :-1].add(-c * (u[:, :-1] - u[:, 1:]))

    return None, (lax.fori_loop(0, steps, step, u),)


def jx_adi(tsteps, n, u):
    DX, DY, DT = 1.0 / n, 1.0 / n, 1.0 / tsteps
    mul1, mul2 = 2.0 * DT / (DX * DX), 1.0 * DT / (DY * DY)
    a, b, c = -mul1 / 2.0, 1.0 + mul1, -mul1 / 2.0
    d, e, f = -mul2 / 2.0, 1.0 + mul2, -mul2 / 2.0
    ones = jnp.ones(n - 2, u.dtype)

    def sweep(rhs, lo, diag, up, lo_q):
        """Thomas sweeps along j: p, q forward, then x_j = p_j x_{j+1} + q_j backward; rows of
        ``rhs`` are the j = 1..n-2 right-hand sides; returns x_1..x_{n-2}."""
        def forward(pq, r):
            p, q = pq
            den = lo * p + diag
            p, q = -up / den, (r - lo_q * q) / den
            return (p, q), (p, q)

        _, (P, Q) = lax.scan(forward, (jnp.zeros_like(ones), ones), rhs)

        def backward(x, pq):
            x = pq[0] * x + pq[1]
            return x, x

        _, X = lax.scan(backward, ones, (P, Q), reverse=True)
        return X

    def step(_, u):
        rhs = -d * u[1:-1, :-2] + (1.0 + 2.0 * d) * u[1:-1, 1:-1] - f * u[1:-1, 2:]
        v = jnp.concatenate([ones[None], sweep(rhs, a, b, c, a), ones[None]])  # v[:, 1:-1]
        rhs = (-a * v[:-2] + (1.0 + 2.0 * a) * v[1:-1] - c * v[2:]).T
        cols = sweep(rhs, d, e, f, d).T  # u[1:-1, 1:-1]
        return u.at[1:-1, 1:-1].set(cols).at[1:-1, 0].set(1.0).at[1:-1, -1].set(1.0)

    return None, (lax.fori_loop(0, tsteps, step, u),)


def jx_floyd_warshall(path):
    def step(k, p):
        return jnp.minimum(p, lax.dynamic_index_in_dim(p, k, 1) + lax.dynamic_index_in_dim(p, k, 0))

    return None, (lax.fori_loop(0, path.shape[0], step, path),)


def jx_gemm(alpha, beta, C, A, B):
    return None, (alpha * (A @ B) + beta * C,)


def jx_k2mm(alpha, beta, A, B, C, D):
    return None, (alpha * (A @ B @ C) + beta * D,)


def jx_k3mm(A, B, C, D):
    return (A @ B) @ (C @ D), ()


def jx_gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A = A + jnp.outer(u1, v1) + jnp.outer(u2, v2)
    x = x + beta * (y @ A) + z
    return None, (A, w + alpha * (A @ x), x)


def jx_gesummv(alpha, beta, A, B, x):
    return alpha * (A @ x) + beta * (B @ x), ()


def jx_atax_bicg(A, x, p, r):
    return ((A @ x) @ A, r @ A, A @ p), ()


def jx_mvt(x1, x2, y_1, y_2, A):
    return None, (x1 + A @ y_1, x2 + y_2 @ A)


def jx_atax(A, x):
    return (A @ x) @ A, ()  # A.T @ v as v @ A: jax.numpy's A.T would be a copy (matvec_options.py)


def jx_bicg(A, p, r):
    return (A @ p, r @ A), ()


def jx_mvt_t(x1, x2, y_1, y_2, A):
    return None, (x1 + A @ y_1, x2 + y_2 @ A)


def jx_mlp_small(x, W1, b1, W2, b2, steps):
    return lax.fori_loop(0, steps, lambda _, x: jnp.maximum(x @ W1 + b1, 0.0) @ W2 + b2, x), ()


def _lower(n):
    return jnp.tril(jnp.ones((n, n), bool))


def jx_syrk(alpha, beta, C, A):
    return None, (jnp.where(_lower(C.shape[0]), beta * C + alpha * (A @ A.T), C),)


def jx_syr2k(alpha, beta, C, A, B):
    return None, (jnp.where(_lower(C.shape[0]), beta * C + alpha * (A @ B.T + B @ A.T), C),)


def jx_trmm(alpha, A, B):
    return None, (alpha * (B + jnp.tril(A, -1).T @ B),)


def jx_doitgen(NR, NQ, NP, A, C4):
    return None, (A @ C4,)


def jx_gramschmidt(A):
    m = A.shape[1]
    idx = jnp.arange(m)

    def step(k, s):
        A, Q, R = s
        a = lax.dynamic_index_in_dim(A, k, 1, keepdims=False)
        nrm = jnp.sqrt(a @ a)
        q = a / nrm
        r = jnp.where(idx > k, q @ A, 0.0)
        A = A - jnp.outer(q, r)
        R = lax.dynamic_update_index_in_dim(R, r.at[k].set(nrm), k, 0)
        Q = lax.dynamic_update_index_in_dim(Q, q[:, None], k, 1)
        return A, Q, R

    A, Q, R = lax.fori_loop(0, m, step, (A, jnp.zeros_like(A), jnp.zeros((m, m), A.dtype)))
    return (Q, R), (A,)


def _lu(A):
    """Doolittle LU without pivoting (right-looking, masked rank-1 updates)."""
    idx = jnp.arange(A.shape[0])

    def step(k, A):
        below = idx > k
        col = jnp.where(below, lax.dynamic_index_in_dim(A, k, 1, keepdims=False) / A[k, k], 0.0)
        row = jnp.where(below, lax.dynamic_index_in_dim(A, k, 0, keepdims=False), 0.0)
        A = A - jnp.outer(col, row)
        return lax.dynamic_update_index_in_dim(
            A, jnp.where(below, col, lax.dynamic_index_in_dim(A, k, 1, keepdims=False))[:, None],
            k, 1)

    return lax.fori_loop(0, A.shape[0], step, A)


def jx_lu(A):
    return None, (_lu(A),)


def jx_ludcmp(A, b):
    A = _lu(A)
    y = solve_triangular(A, b, lower=True, unit_diagonal=True)
    return (solve_triangular(A, y, lower=False), y), (A,)


def jx_cholesky(A):
    return None, (jnp.tril(jnp.linalg.cholesky(A)) + jnp.triu(A, 1),)


def jx_trisolv(L, x, b):
    return None, (solve_triangular(L, b, lower=True),)


def jx_durbin(r):
    n = r.shape[0]
    idx = jnp.arange(n)

    def step(k, s):
        y, alpha, beta = s
        rev = jnp.clip(k - 1 - idx, 0, n - 1)  # flip(x[:k]) as a gather, zero beyond k
        beta = beta * (1.0 - alpha * alpha)
        alpha = -(r[k] + jnp.where(idx < k, r[rev], 0.0) @ y) / beta
        y = jnp.where(idx < k, y + alpha * y[rev], y).at[k].set(alpha)
        return y, alpha, beta

    y0 = jnp.zeros_like(r).at[0].set(-r[0])
    y, _, _ = lax.fori_loop(1, n, step, (y0, -r[0], jnp.ones((), r.dtype)))
    return y, ()


def jx_correlation(M, float_n, data):
    mean = data.mean(axis=0)
    std = data.std(axis=0)
    data = (data - mean) / (jnp.sqrt(float_n) * jnp.where(std <= 0.1, 1.0, std))
    corr = data.T @ data
    return corr.at[jnp.diag_indices(M)].set(1.0), (data,)


def jx_covariance(M, float_n, data):
    data = data - data.mean(axis=0)
    return data.T @ data / (float_n - 1.0), (data,)


def _softmax(x):
    e = jnp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def jx_softmax(x):
    return _softmax(x), ()


def jx_mlp_forward(x, w1, b1, w2, b2, w3, b3):
    h = jnp.maximum(x @ w1 + b1, 0)
    h = jnp.maximum(h @ w2 + b2, 0)
    return _softmax(h @ w3 + b3), ()


def _acc(pos, mass, G, softening):
    x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
    dx, dy, dz = x.T - x, y.T - y, z.T - z
    r2 = dx * dx + dy * dy + dz * dz + softening**2
    w = G * jnp.where(r2 > 0, lax.rsqrt(r2) ** 3, r2) * mass[:, 0]  # a reduction, not a matvec
    return jnp.stack([(dx * w).sum(axis=1), (dy * w).sum(axis=1), (dz * w).sum(axis=1)], axis=1)


def jx_nbody_step(mass, pos, vel, acc, dt, G, softening):
    vel = vel + acc * dt / 2.0
    pos = pos + vel * dt
    acc = _acc(pos, mass, G, softening)
    vel = vel + acc * dt / 2.0
    return 0.5 * jnp.sum(mass * vel**2), (pos, vel, acc)


def jx_nbody_sim(mass, pos, vel, steps, dt, G, softening):
    def step(_, s):
        pos, vel, acc = s
        vel = vel + acc * dt / 2.0
        pos = pos + vel * dt
        acc = _acc(pos, mass, G, softening)
        return pos, vel + acc * dt / 2.0, acc

    pos, vel, _ = lax.fori_loop(0, steps, step, (pos, vel, _acc(pos, mass, G, softening)))
    return 0.5 * jnp.sum(mass * vel**2), (pos, vel)


def jx_arc_distance(theta_1, phi_1, theta_2, phi_2):
    temp = (jnp.sin((theta_2 - theta_1) / 2) ** 2 +
            jnp.cos(theta_1) * jnp.cos(theta_2) * jnp.sin((phi_2 - phi_1) / 2) ** 2)
    return 2 * jnp.arctan2(jnp.sqrt(temp), jnp.sqrt(1 - temp)), ()


def jx_mask_updates(A, B, C, D):
    A = jnp.where(A < 0, 0.0, A)
    B = jnp.where(B > 0.5, B + 1.0, B)
    C = jnp.where(D > 0, D, C)
    B = jnp.where(A > 1.0, C * 2.0 + 1.0, B)
    D = jnp.where(D < -1.0, -1.0, D)
    big = C > 1.5  # np.place cycles through [9.0, 8.0] over the selected elements
    nth = jnp.cumsum(big.ravel()).reshape(C.shape) - 1
    C = jnp.where(big, jnp.where(nth % 2 == 0, 9.0, 8.0), C)
    b = B > 0.7
    return ((jnp.where(A > 0.2, A, 0.0).sum(), jnp.where(b, B, 0.0).sum() / b.sum(),
             jnp.where(D < 0, C, -jnp.inf).max()), (A, B, C, D))


def jx_row_normalize(A):
    norms = jnp.sqrt((A * A).sum(axis=1))
    return norms, (A / norms[:, None],)


def jx_time_loop_rebind(u, steps):
    return lax.fori_loop(0, steps, lambda _, u: u + 0.1 * (jnp.roll(u, 1) - 2 * u +
                                                             jnp.roll(u, -1)), u), ()


def jx_cumulative_update(x, w):
    w = w + jnp.cumsum(x)
    w = jnp.where(w > 3.0, w - 3.0, w)
    x = x.at[::2].set(w[::2] * 0.5)
    return (jnp.argmax(w), 1.01 ** jnp.arange(1, x.shape[0] + 1, dtype=x.dtype)), (x, w)


def jx_hdiff(in_field, out_field, coeff):
    ni, nj = out_field.shape[0], out_field.shape[1]
    lap = 4.0 * in_field[1:ni + 3, 1:nj + 3] - (
        in_field[2:ni + 4, 1:nj + 3] + in_field[0:ni + 2, 1:nj + 3] +
        in_field[1:ni + 3, 2:nj + 4] + in_field[1:ni + 3, 0:nj + 2])
    res = lap[1:, 1:nj + 1] - lap[:-1, 1:nj + 1]
    flx = jnp.where(res * (in_field[2:ni + 3, 2:nj + 2] - in_field[1:ni + 2, 2:nj + 2]) > 0, 0, res)
    res = lap[1:ni + 1, 1:] - lap[1:ni + 1, :-1]
    fly = jnp.where(res * (in_field[2:ni + 2, 2:nj + 3] - in_field[2:ni + 2, 1:nj + 2]) > 0, 0, res)
    return None, (in_field[2:ni + 2, 2:nj + 2] - coeff * (flx[1:] - flx[:-1] + fly[:, 1:] -
                                                          fly[:, :-1]),)


def jx_power_iteration(A, x, iters):
    def step(_, x):
        x = A @ x
        return x / jnp.linalg.norm(x)

    x = lax.fori_loop(0, iters, step, x)
    return (x, x @ (A @ x)), ()


def jx_conjugate_gradient(A, b, x, iters):
    def step(_, s):
        x, r, p, rs = s
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        return x, r, r + (rs_new / rs) * p, rs_new

    r = b - A @ x
    x, _, _, rs = lax.fori_loop(0, iters, step, (x, r, r, r @ r))
    return jnp.sqrt(rs), (x,)


def jx_layer_norm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * gamma + beta, ()


def jx_batch_norm(x, gamma, beta, running_mean, running_var):
    n = x.shape[0] * x.shape[2] * x.shape[3]
    mean = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    scale = gamma * lax.rsqrt(var + 1e-5)
    y = x * scale[:, None, None] + (beta - mean * scale)[:, None, None]
    return y, (0.9 * running_mean + 0.1 * mean, 0.9 * running_var + 0.1 * var * n / (n - 1))


def jx_conv2d(x, w, b):
    out = lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                   dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jnp.maximum(out + b, 0.0), ()


def jx_attention(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1])
    return _softmax(s) @ v, ()


def jx_masked_stats(x, valid):
    count = valid.sum(axis=0)
    mean = jnp.sum(x, axis=0, where=valid) / jnp.maximum(count, 1)
    sq = jnp.sum((x - mean) ** 2, axis=0, where=valid)
    return (mean, jnp.sqrt(sq / jnp.maximum(count - 1, 1)),
            jnp.max(x, axis=0, where=valid, initial=-jnp.inf), jnp.sum(x, where=valid)), ()


def jx_azimint_naive(data, radius, npt):
    edges = radius.max() * jnp.arange(npt + 1) / npt  # NumPy's r1, r2; radius == rmax: dropped
    which = jnp.searchsorted(edges, radius, side="right") - 1
    sums = jax.ops.segment_sum(data, which, num_segments=npt + 1)[:npt]
    counts = jax.ops.segment_sum(jnp.ones_like(data), which, num_segments=npt + 1)[:npt]
    return sums / counts, ()


def jx_histogram(x, w):
    # 64 equal bins of [0, 1]: the bin is floor(64 x) (exact), 1.0 in the last, others dropped
    which = jnp.floor(x * 64).astype(jnp.int32)
    which = jnp.where(x == 1.0, 63, jnp.where((x >= 0) & (x < 1.0), which, 64))
    counts = jax.ops.segment_sum(jnp.ones_like(which, jnp.int64), which, num_segments=65)[:64]
    wsum = jax.ops.segment_sum(w, which, num_segments=65)[:64]
    return (counts, wsum / jnp.maximum(counts, 1), np.linspace(0.0, 1.0, 65)), ()


def jx_kmeans_step(X, C):
    d = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    labels = jnp.argmin(d, axis=1)
    k = C.shape[0]
    sums = jax.ops.segment_sum(X, labels, num_segments=k)
    counts = jax.ops.segment_sum(jnp.ones(X.shape[0], X.dtype), labels, num_segments=k)
    C = jnp.where(counts[:, None] > 0, sums / jnp.maximum(counts, 1.0)[:, None], C)
    return (labels, d.min(axis=1).sum()), (C,)


def jx_fft_convolve(x, k):
    n = x.shape[-1] + k.shape[-1] - 1
    return jnp.fft.irfft(jnp.fft.rfft(x, n) * jnp.fft.rfft(k, n), n), ()


def jx_fft_lowpass(img, keep):
    fy = np.abs(np.fft.fftfreq(img.shape[0]))[:, None]  # static: NumPy at trace time
    fx = np.abs(np.fft.fftfreq(img.shape[1]))[None, :]
    spectrum = jnp.where((fy > keep) | (fx > keep), 0.0, jnp.fft.fft2(img))
    return jnp.fft.ifft2(spectrum).real, ()


_MEDIAN_9 = ((1, 2), (4, 5), (7, 8), (0, 1), (3, 4), (6, 7), (1, 2), (4, 5), (7, 8), (0, 3),
             (5, 8), (4, 7), (3, 6), (1, 4), (2, 5), (4, 7), (4, 2), (6, 4), (4, 2))
"""Compare-exchanges of a median-of-9 sorting network (v[4] ends up the median)."""


def jx_median_filter(x):
    n, m = x.shape
    v = [x[i:n - 2 + i, j:m - 2 + j] for i in range(3) for j in range(3)]
    for a, b in _MEDIAN_9:
        v[a], v[b] = jnp.minimum(v[a], v[b]), jnp.maximum(v[a], v[b])
    return x.at[1:-1, 1:-1].set(v[4]), ()


def jx_spearman(x):
    n, m = x.shape
    order = jnp.argsort(x, axis=0)  # the ranks by a scatter of the order, not a second sort
    ranks = jnp.zeros((n, m)).at[order, jnp.arange(m)].set(jnp.arange(n, dtype=jnp.float64)[:, None])
    ranks = ranks - ranks.mean(axis=0)
    ranks = ranks / jnp.sqrt((ranks * ranks).sum(axis=0))
    return ranks.T @ ranks, ()


def jx_winsorize(x):
    lo, hi = jnp.percentile(x, jnp.array([5.0, 95.0]), axis=0)
    x = jnp.clip(x, lo, hi)
    return (x.mean(axis=0), x.std(axis=0)), (x,)


def jx_compute(array_1, array_2, a, b, c):
    return jnp.clip(array_1, 2, 10) * a + array_2 * b + c, ()


def jx_pair_matches(seq1, seq2):
    return (((seq1 + seq2) == 3).astype(jnp.int64),
            jnp.sum((seq1 + seq2[::-1]) == 3).astype(jnp.int64)), ()


def jx_ndarray_fill(x):
    out = x * 2.0 - x.mean(axis=2, keepdims=True)
    return (out, jnp.sum(x**2, axis=2), x.sum(axis=1).ravel()), ()


def _chain_energy(x):
    return 0.5 * jnp.sum(x * x, axis=-1) - jnp.sum(x[..., :-1] * x[..., 1:], axis=-1)


def jx_chain_energies(X, E):
    E, F = _chain_energy(X), _chain_energy(X * 0.5)
    return (F, E - F), (E,)


def jx_mandelbrot(xmin, xmax, ymin, ymax, width, height, maxiter):
    C = jnp.linspace(xmin, xmax, width) + jnp.linspace(ymin, ymax, height)[:, None] * 1j

    def step(n, s):
        N, Z = s
        inside = jnp.abs(Z) < 2.0
        return jnp.where(inside, n, N), jnp.where(inside, Z * Z + C, Z)

    N, Z = lax.fori_loop(0, maxiter, step, (jnp.zeros(C.shape, jnp.int64),
                                            jnp.zeros(C.shape, jnp.complex128)))
    return (Z, jnp.where(N == maxiter - 1, 0, N)), ()  # noqa: SIM300


def jx_clip_inplace(a):
    return None, (jnp.clip(a, -0.5, 0.5),)


def jx_clip_assign(a, lo, hi):
    return None, (jnp.clip(a, lo, hi),)


def jx_where_chain(a, t1, t2):
    return jnp.where(a > t1, a * 2, jnp.where(a < t2, -a, a)), ()


def jx_where_scalars(a):
    return jnp.where(a > 0, 1.0, -1.0), ()


def jx_mask_zero(a):
    return None, (jnp.where(a < 0, 0.0, a),)


def jx_mask_copy(a, b, mask):
    return None, (jnp.where(mask, b * 2, a),)


def jx_mask_increment(a, m):
    return None, (jnp.where(m, a + 1, a),)


def jx_crc32(data):
    def byte(i, crc):
        crc = crc ^ data[i].astype(jnp.uint32)
        for _ in range(8):  # the eight bit steps, unrolled and branch-free
            crc = (crc >> 1) ^ (jnp.uint32(0xEDB88320) & -(crc & 1))
        return crc

    return lax.fori_loop(0, data.shape[0], byte, jnp.uint32(0xFFFFFFFF)) ^ 0xFFFFFFFF, ()


def jx_csr_matvec(indptr, indices, data, x, y):
    rows = jnp.searchsorted(indptr, jnp.arange(data.shape[0]), side="right") - 1
    return None, (y + jax.ops.segment_sum(data * x[indices], rows, num_segments=y.shape[0]),)


def jx_triangle_max_path(T):
    n = T.shape[0]
    j = jnp.arange(n)

    def row(k, T):  # row i from row i + 1, all its cells at once
        i = n - 2 - k
        below = T[i + 1]
        best = jnp.maximum(below, jnp.roll(below, -1))
        return T.at[i].set(jnp.where(j <= i, T[i] + best, T[i]))

    T = lax.fori_loop(0, n - 1, row, T)
    return T[0, 0], (T,)


def jx_recursive_filter(x, y, a):
    def step(prev, column):
        out = a * prev + column
        return out, out

    _, columns = lax.scan(step, x[:, 0], x[:, 1:].T)
    return None, (jnp.concatenate([x[:, :1], columns.T], axis=1),)


# ---------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Case:
    """A kernel of the differential suite at benchmark size, with its jax.jit port."""

    make: Callable[[np.random.Generator], tuple]
    """Benchmark-size inputs."""
    size: str
    port: Callable[..., Any]
    """The jax.jit port: the kernel's arguments -> (result, updated arguments in order)."""
    static: tuple[int, ...] = ()
    """Positions of the port's static arguments (sizes, step counts, Python scalars)."""


def _vecs(r, count, n):
    return tuple(r.random(n) for _ in range(count))


def _nbody(r, n):
    return r.random((n, 1)) + 0.5, r.standard_normal((n, 3)), r.standard_normal((n, 3))


CASES: dict[str, Case] = {
    # stencils with time loops, 1-D / 2-D / 3-D
    "jacobi_1d": Case(lambda r: (100, *_pair(r, 40_000)), "40k x 100", jx_jacobi_1d, (0,)),
    "time_loop_rebind": Case(lambda r: (r.random(100_000), 50), "100k x 50",
                             jx_time_loop_rebind, (1,)),
    "jacobi_2d": Case(lambda r: (20, *_pair(r, (300, 300))), "300^2 x 20", jx_jacobi_2d, (0,)),
    "fdtd_2d": Case(lambda r: (20, r.random((250, 300)), r.random((250, 300)),
                               r.random((250, 300)), r.random(20)), "250x300 x 20",
                    jx_fdtd_2d, (0,)),
    "seidel_2d": Case(lambda r: (5, 80, r.random((80, 80))), "80^2 x 5", jx_seidel_2d, (0, 1)),
    "adi": Case(lambda r: (5, 80, r.random((80, 80))), "80^2 x 5", jx_adi, (0, 1)),
    "upwind_sweep": Case(lambda r: (r.random((400, 300)), 0.4, 10), "400x300 x 10",
                         jx_upwind_sweep, (1, 2)),
    "heat_3d": Case(lambda r: (10, *_pair(r, (50, 50, 50))), "50^3 x 10", jx_heat_3d, (0,)),
    "hdiff": Case(lambda r: (r.random((132, 132, 64)), r.random((128, 128, 64)),
                             r.random((128, 128, 64))), "128^2x64", jx_hdiff),
    # dense linear algebra, matrix-vector
    "gemm": Case(lambda r: (1.5, 1.2, r.random((500, 500)), r.random((500, 500)),
                            r.random((500, 500))), "500^3", jx_gemm, (0, 1)),
    "k2mm": Case(lambda r: (1.5, 1.2, *(_sq(r, 400) for _ in range(4))), "400^3 x 2",
                 jx_k2mm, (0, 1)),
    "k3mm": Case(lambda r: tuple(_sq(r, 400) for _ in range(4)), "400^3 x 3", jx_k3mm),
    "doitgen": Case(lambda r: (100, 128, 128, r.random((100, 128, 128)),
                                r.random((128, 128))), "100x128x128", jx_doitgen, (0, 1, 2)),
    "gemver": Case(lambda r: (1.5, 1.2, _sq(r, 2000), *_vecs(r, 8, 2000)), "2000^2",
                   jx_gemver, (0, 1)),
    "gesummv": Case(lambda r: (1.5, 1.2, _sq(r, 2000), _sq(r, 2000), r.random(2000)), "2000^2",
                    jx_gesummv, (0, 1)),
    "atax_bicg": Case(lambda r: (r.random((2000, 2000)), *_vecs(r, 3, 2000)), "2000^2",
                      jx_atax_bicg),
    "mvt": Case(lambda r: (*_vecs(r, 4, 2000), _sq(r, 2000)), "2000^2", jx_mvt),
    "atax": Case(lambda r: nk._mk_matvec(r, (4000, 4000))[:2], "4000^2", jx_atax),
    "bicg": Case(lambda r: nk._mk_matvec(r, (4000, 4000)), "4000^2", jx_bicg),
    "mvt_t": Case(lambda r: nk._mk_mvt_t(r, 4000), "4000^2", jx_mvt_t),
    "power_iteration": Case(lambda r: (_spd(r, 2000), r.random(2000), 20), "2000^2 x 20",
                            jx_power_iteration, (2,)),
    "conjugate_gradient": Case(lambda r: (_spd(r, 2000), r.random(2000), r.random(2000) * 0.1,
                                          20), "2000^2 x 20", jx_conjugate_gradient, (3,)),
    "gramschmidt": Case(lambda r: (r.standard_normal((200, 60)),), "200x60", jx_gramschmidt),
    # triangular linear algebra
    "syrk": Case(lambda r: (1.5, 1.2, r.random((120, 120)), r.random((120, 80))), "120x80",
                 jx_syrk, (0, 1)),
    "syr2k": Case(lambda r: (1.5, 1.2, r.random((100, 100)), r.random((100, 60)),
                             r.random((100, 60))), "100x60", jx_syr2k, (0, 1)),
    "trmm": Case(lambda r: (1.5, r.random((100, 100)), r.random((100, 80))), "100x80",
                 jx_trmm, (0,)),
    "lu": Case(lambda r: (_dominant(r, 80),), "80^2", jx_lu),
    "ludcmp": Case(lambda r: (_dominant(r, 80), r.random(80)), "80^2", jx_ludcmp),
    "cholesky": Case(lambda r: (_spd(r, 80),), "80^2", jx_cholesky),
    "trisolv": Case(lambda r: (_dominant(r, 1500), r.random(1500), r.random(1500)), "1500",
                    jx_trisolv),
    "durbin": Case(lambda r: (r.random(1000) * 0.3,), "1000", jx_durbin),
    # data analysis, reductions with masks
    "correlation": Case(lambda r: (300, 1000.0, r.random((1000, 300))), "1000x300",
                        jx_correlation, (0, 1)),
    "covariance": Case(lambda r: (300, 1000.0, r.random((1000, 300))), "1000x300",
                       jx_covariance, (0, 1)),
    "row_normalize": Case(lambda r: (r.random((4000, 200)) + 0.1,), "4000x200",
                          jx_row_normalize),
    "masked_stats": Case(lambda r: (r.standard_normal((2000, 1000)),
                                    r.random((2000, 1000)) > 0.3), "2000x1000", jx_masked_stats),
    "mask_updates": Case(lambda r: tuple(r.standard_normal((1000, 1000)) for _ in range(4)),
                         "1000^2", jx_mask_updates),
    "cumulative_update": Case(lambda r: _vecs(r, 2, 1_000_000), "1M", jx_cumulative_update),
    "azimint_naive": Case(lambda r: (r.random(200_000), nk._radii(r, 200_000), 32), "200k x 32",
                          jx_azimint_naive, (2,)),
    "histogram": Case(lambda r: _vecs(r, 2, 1_000_000), "1M", jx_histogram),
    "compute": Case(lambda r: (r.integers(0, 1000, (2000, 2000)),
                               r.integers(0, 1000, (2000, 2000)), 4, 3, 2), "2000^2 int64",
                    jx_compute, (2, 3, 4)),
    # ML layers
    "softmax": Case(lambda r: (r.standard_normal((128, 128, 256)).astype(np.float32),),
                    "128x128x256 f32", jx_softmax),
    "layer_norm": Case(lambda r: (r.standard_normal((2048, 1024)), r.random(1024) + 0.5,
                                  r.standard_normal(1024)), "2048x1024", jx_layer_norm),
    "batch_norm": Case(lambda r: (r.standard_normal((32, 64, 32, 32)), r.random(64) + 0.5,
                                  r.standard_normal(64), r.standard_normal(64),
                                  r.random(64) + 0.5), "32x64x32x32", jx_batch_norm),
    "conv2d": Case(lambda r: (r.standard_normal((8, 64, 64, 16)),
                              r.standard_normal((3, 3, 16, 32)), r.standard_normal(32)),
                   "8x64x64x16 k3 ->32", jx_conv2d),
    "mlp_forward": Case(lambda r: (r.standard_normal((256, 1024)),
                                   r.standard_normal((1024, 1024)) / 32, r.standard_normal(1024),
                                   r.standard_normal((1024, 1024)) / 32, r.standard_normal(1024),
                                   r.standard_normal((1024, 10)), r.standard_normal(10)),
                        "256x1024", jx_mlp_forward),
    "mlp_small": Case(lambda r: nk._mk_mlp_small(r, (8, 128, 1000)), "8x128 x 1000",
                      jx_mlp_small, (5,)),
    "attention": Case(lambda r: tuple(r.standard_normal((4, 8, 256, 64)) for _ in range(3)),
                      "4x8x256x64", jx_attention),
    "kmeans_step": Case(lambda r: (r.standard_normal((50_000, 8)), r.standard_normal((16, 8))),
                        "50k x 8, k=16", jx_kmeans_step),
    # FFT-based
    "fft_convolve": Case(lambda r: (r.standard_normal((64, 8192)), r.standard_normal(257)),
                         "64x8192 * 257", jx_fft_convolve),
    "fft_lowpass": Case(lambda r: (r.standard_normal((1024, 1024)), 0.2), "1024^2",
                        jx_fft_lowpass, (1,)),
    # physics
    "nbody_step": Case(lambda r: (*_nbody(r, 800), r.standard_normal((800, 3)), 0.01, 1.0,
                                  0.1), "800 bodies", jx_nbody_step, (4, 5, 6)),
    "nbody_sim": Case(lambda r: (*_nbody(r, 300), 10, 0.01, 1.0, 0.1), "300 bodies x 10",
                      jx_nbody_sim, (3, 4, 5, 6)),
    "arc_distance": Case(lambda r: _vecs(r, 4, 1_000_000), "1M", jx_arc_distance),
    # graphs, sorting-based
    "floyd_warshall": Case(lambda r: (r.random((200, 200)) * 10,), "200^2", jx_floyd_warshall),
    "median_filter": Case(lambda r: (r.random((512, 512)),), "512^2 3x3", jx_median_filter),
    "spearman": Case(lambda r: (r.standard_normal((2000, 100)),), "2000x100", jx_spearman),
    "winsorize": Case(lambda r: (r.standard_normal((20_000, 50)),), "20000x50", jx_winsorize),
    # helpers returning out of an `if`, np.ndarray(shape), scalars stored into elements, and a
    # kernel of Python numbers only
    "pair_matches": Case(lambda r: nk._mk_matches(r, 20_000), "20k", jx_pair_matches),
    "ndarray_fill": Case(lambda r: (r.standard_normal((60, 60, 200)),), "60x60x200",
                         jx_ndarray_fill),
    "chain_energies": Case(lambda r: nk._mk_chains(r, (3000, 50)), "3000x50",
                           jx_chain_energies),
    "mandelbrot": Case(lambda r: nk._mk_mandelbrot(r, (200, 150)), "200x150 x 50",
                       jx_mandelbrot, (4, 5, 6)),
    # elementwise with masks and clipping, on large arrays
    "clip_inplace": Case(lambda r: (r.standard_normal((4000, 4000)),), "4000^2",
                         jx_clip_inplace),
    "clip_assign": Case(lambda r: (r.standard_normal((2000, 2000)), -0.5, 0.5), "2000^2",
                        jx_clip_assign, (1, 2)),
    "where_chain": Case(lambda r: (r.standard_normal((1000, 2000)), 0.5, -0.5), "1000x2000",
                        jx_where_chain, (1, 2)),
    "where_scalars": Case(lambda r: (r.standard_normal((2000, 2000)),), "2000^2",
                          jx_where_scalars),
    "mask_zero": Case(lambda r: (r.standard_normal((2000, 2000)),), "2000^2", jx_mask_zero),
    "mask_copy": Case(lambda r: nk._mk_masked(r, (1000, 2000), 2), "1000x2000", jx_mask_copy),
    "mask_increment": Case(lambda r: nk._mk_masked(r, (1000, 2000)), "1000x2000",
                           jx_mask_increment),
    # scalar loops: a Python loop over array elements (tests/loop_kernels.py)
    "crc32": Case(lambda r: (r.integers(0, 256, 16_384).astype(np.uint8),), "16 KiB x 8 bits",
                  jx_crc32),
    "csr_matvec": Case(lambda r: lk.csr_inputs(r, 4000, 4000, 10), "4000^2, ~40k nonzeros",
                       jx_csr_matvec),
    "triangle_max_path": Case(lambda r: lk._mk_triangle(r, 250), "250 rows",
                              jx_triangle_max_path),
    "recursive_filter": Case(lambda r: lk._mk_filter(r, (100, 400)), "100x400",
                             jx_recursive_filter, (2,)),
}

_TRANSFER = ("with NumPy's own allocator (--allocator numpy) each large NumPy input is copied "
             "into an XLA buffer on every call (~6 ms per 32 MB here); with reactant_lab's "
             "aligned one (rl.use_aligned_arrays, this run's default) XLA reads them in place "
             "and only an updated array is copied back")

_MATVEC = ("No XLA:CPU option beats OpenBLAS here (reproducer: benchmarks/matvec_options.py --n "
           "4000 --only 'A @' 'A.T'; on a quiet moment of this machine XLA's defaults ran each "
           "product at 1.0-1.25x NumPy's best, and Eigen on one thread, products on Eigen "
           "instead of YNNPACK, XNNPACK, oneDNN, fast math or fusion emitters off within 10% of "
           "that), nor did reading A once for both products of a pair (a loop over blocks of "
           "rows: 0.7x, two dots 1.1-1.3x); from run to run of this script on the loaded 2-core "
           "machine these kernels land anywhere in 0.6-1.6x, NumPy and the ports alike; "
           + _TRANSFER)

CAUSES: dict[str, str] = {
    # in-place updates in rolled time loops
    "jacobi_1d": "was 0.53x while dynamic_update_to_concat<1> turned each step's in-place slice "
                 "update into a concatenate that XLA copies every step; now left out of the "
                 "default list (pattern_exclusions.json): the in-place updates stay",
    "fdtd_2d": "was 0.93x for the same reason as jacobi_1d (dynamic_update_to_concat<1>, now left "
               "out)",
    "time_loop_rebind": "each np.roll is a concatenate of two slices of the 100k array that XLA "
                        "materializes, 2 per step: the fused step moves as many bytes as NumPy's "
                        "temporaries",
    "row_normalize": "was 0.00x: `A[i] /= norms[i]` wrote the row, then wrote the updated view "
                     "back onto itself (Python's augmented assignment), and the second write "
                     "kept XLA from updating the carried 4000x200 A in place (a 6.4 MB copy per "
                     "row); then one in-place row update per step; now the loop's iterations, "
                     "each on its own row, run batched (control_flow.batched): A / norms[:, None], "
                     "the jax.jit port's form",
    # scalar and triangular loops
    "seidel_2d": "was 0.12-0.16x: `A[i, j] += A[i, j - 1]; A[i, j] /= 9` read A[i, j] back from the "
                 "array just updated, and XLA fused that read with the update, reading the old "
                 "array after it was written: 2 copies of the carried 80x80 A per iteration of the "
                 "24k-iteration while loop. Now the read takes the written value and the second "
                 "write replaces the first (storage.write_window): no copy, ~5x NumPy; ~25x "
                 "with the loop compiled as one kernel (small-loop threshold: 1.1 -> 0.3-0.4 ms)",
    "gramschmidt": "was a while over j inside the loop over k (1,770 iterations, ~14 fusions each); "
                   "the inner loop's iterations each touch only column j of A and R, so it now "
                   "runs batched over the columns (control_flow.batched): 60 iterations of a "
                   "masked matrix-vector step. The jax.jit port is the same, with its inner "
                   "product as one matvec. The batched loop over j writes R[k, j] only: it puts "
                   "back row k of R's columns, not all of them (1.9 -> 1.45 ms). The span "
                   "j can take, 1 .. 59, one column short of A's 60, now widens to all 60 (no "
                   "slab of 59 columns copied per iteration), and the slots outside the range "
                   "keep their values by a select after the batched body (no copy of R per "
                   "iteration): 0.88 -> 0.54-0.62 ms, the port 0.36-0.7",
    "trmm": "the loop over j, batched, wrote all of B back in each of the 100 iterations over "
            "i (B[i, j] touches column j's slab at row i); now row i only (1.36 -> 0.71 ms, the "
            "jax.jit port's matmul 0.4-0.5 ms in that run). The loop over i stays a while: its "
            "reads B[i + 1:, j] of rows later iterations write are masked full columns the "
            "batching check does not follow",
    "cholesky": "was 0.53x: `A[i, j] -= ...; A[i, j] /= A[j, j]` read A[i, j] and A[j, j] from "
                "the array just updated, which XLA fused with the update (reading the old array "
                "after writing it): 2 copies of the carried 80x80 A in each of 3,160 iterations. "
                "Now those reads come from the value before the first write and the second write "
                "replaces it (storage.write_window): no copy. XLA:CPU then dispatched the small "
                "loop body's kernels one by one (1.4 ms); compiled as one kernel under "
                "reactant_lab's small-loop threshold, 0.3-0.4 ms. The port is LAPACK's potrf",
    "lu": "was 1.3-1.5x with 2 copies of the carried 80x80 A per inner iteration, as cholesky's; "
          "now none, and its loops run as one kernel each (small-loop threshold: 2.7 -> 0.8 ms)",
    "ludcmp": "was 0.9x: lu's loops (see lu) plus two 80-step substitutions of masked "
              "full-length dots",
    "trisolv": "1,500 iterations of `L[i, :i] @ x[:i]` masked to full 1,500-wide rows in a while "
               "loop: the same O(n^2) traffic as NumPy plus a few us of loop overhead per row",
    "durbin": "each of 1,000 iterations flips and masks y[:k] over the full length (gathers and "
              "selects) in a while body: close to NumPy's per-iteration cost; "
              "concat_to_broadcast<16> made the default preset 1.6x slower than optimize='none' "
              "here (a broadcast built anew per iteration), now left out "
              "(pattern_exclusions.json)",
    "correlation": "was 0.25-0.5x: `corr[i + 1:M, i] = corr[i, i + 1:M] = ...` wrote a column, then "
                   "a row, each a masked write reading the old window, which XLA fused into 2 "
                   "copies of the carried 300x300 per iteration (now scattered, masked-off "
                   "elements dropped: storage.write_where), and each of the 300 iterations "
                   "computed `data[:, i] @ data[:, i + 1:M]` as an f64 vector-matrix product. "
                   "The loop cannot be batched (a row and a column per iteration), but the "
                   "products read only data: they are hoisted ahead of it (control_flow."
                   "hoisted), one 299x1000 @ 1000x300 product, and the loop only scatters: "
                   "about 2.6x NumPy, level with the jax.jit port",
    "covariance": "as correlation: the per-iteration copies gone, the products hoisted ahead "
                  "of the loop as one matrix product",
    # transfers and evaluation order
    "compute": "one fused elementwise loop (faster than NumPy's 4 passes); was 0.7x while its 2 "
               "32 MB int64 inputs were copied in on every call: " + _TRANSFER,
    "gesummv": "was 0.2-0.7x while NumPy's order (alpha * A) @ x scaled both 2000x2000 matrices "
               "into new 32 MB buffers before the matvecs; factor_scalars_in_dot_general (a "
               "pattern of Reactant's later lists, now run after Reactant's list: "
               "pattern_additions.json) computes alpha * (A @ x), as the jax.jit port does, ~3x "
               "faster; then 1.2-1.75x while both 32 MB matrices were copied in on every call "
               "(2.4x with aligned arrays). What remains: XLA's f64 matvec is no faster than "
               "OpenBLAS's; " + _TRANSFER,
    "mvt": "two f64 matvecs on 2000x2000: XLA:CPU's dot is no faster than OpenBLAS's gemv, level "
           "with the jax.jit port (with the matrix in cache NumPy's two gemv calls take ~2 ms); "
           "no XLA:CPU option changes that (benchmarks/matvec_options.py --only 'A @'); "
           + _TRANSFER,
    "conjugate_gradient": "20 iterations of a 2000x2000 f64 matvec in a while loop: 1.1x, the "
                          "jax.jit port alike; 0.9-1.3x from run to run while OpenBLAS's threads "
                          "still spun after NumPy's calls, sharing the 2 cores with the compiled "
                          "call sampled next (this script now stops them: "
                          "OPENBLAS_THREAD_TIMEOUT); " + _TRANSFER,
    "power_iteration": "as conjugate_gradient: 20 f64 matvecs on 2000x2000 in a while loop, 1.1x; "
                       + _TRANSFER,
    "gemm": "one f64 500^3 dot: XLA:CPU's dot (YNNPACK) level with OpenBLAS's dgemm, 1.0x in "
            "two runs, the jax.jit port 1.1x; it measured 0.8-1.3x while OpenBLAS's threads, spinning "
            "for ~0.1 s after each of NumPy's calls, shared the 2 cores with the compiled call "
            "sampled next (this script now stops them at once: OPENBLAS_THREAD_TIMEOUT)",
    "k2mm": "two f64 400^3 dots, as gemm: 0.87-1.0x OpenBLAS's dgemm (two runs; 0.8-1.35x "
            "while its threads spun into the next sample)",
    "k3mm": "three f64 400^3 dots, as gemm: level with OpenBLAS's dgemm (0.99-1.01x)",
    "mlp_forward": "the three f64 matmuls (256x1024 @ 1024x1024 twice, then 1024x10) dominate; "
                   "the bias, ReLU and softmax fuse. 0.85-1.06x NumPy (two runs) once "
                   "OpenBLAS's threads stop spinning after NumPy's calls: before, the compiled "
                   "call sampled right after them took 23-25 ms against 15-16 ms alone "
                   "(0.55-0.64x), the jax.jit port alike",
    "atax_bicg": "four f64 matvecs over one 2000x2000 A (~3 ms, the matrix in cache): XLA:CPU's "
                 "matvec is slower than OpenBLAS's gemv there (0.77-0.85x, the jax.jit port "
                 "0.88-0.91x); benchmarks/matvec_options.py times each product alone: 1.0-1.35x "
                 "NumPy under every XLA:CPU option; " + _TRANSFER,
    "atax": "two f64 matrix-vector products over a 4000x4000 A (128 MB, read from memory twice, "
            "the second contracting A's rows): XLA:CPU's dot streams A about as fast as "
            "OpenBLAS's gemv, so 0.8-1.3x from run to run, the port alike. " + _MATVEC,
    "bicg": "A @ p and r @ A over a 4000x4000 A, as atax: " + _MATVEC,
    "mvt_t": "x1 += A @ y_1; x2 += A.T @ y_2 over a 4000x4000 A, as atax; under optimize='none' "
             "A.T @ y_2 was a transpose and a dot, which XLA:CPU runs as a copy of A.T fused "
             "into an element-by-element dot (0.11-0.18x): NumPy mode now traces it as one "
             "dot_general over A (0.84-1.0x). " + _MATVEC,
    "gemver": "f64 matvecs on 2000x2000 (no faster than OpenBLAS) after NumPy's (alpha * A) @ x "
              "order; 1.2x while the 32 MB A was copied in and donated (2.9x with aligned "
              "arrays, A not donated); " + _TRANSFER,
    "cumulative_update": "np.cumsum of 1M becomes XLA:CPU's blocked reduce-window scan (5 "
                         "reduce-windows, several passes) instead of one sequential pass, "
                         "`x[::2] = ...` is a strided scatter; the cumprod of ones, computed "
                         "while tracing, is no longer an 8 MB constant of the module (its first "
                         "call 3.5x the port's, 0.29 s of stages and 0.31 s of XLA compile) but "
                         "a copy of the array made on each call; " + _TRANSFER,
    # XLA:CPU code generation
    "histogram": "was 0.48x while np.histogram with equal bins lowered to a generic searchsorted "
                 "(a 7-step binary-search while loop, each step a 1M-element gather); NumPy mode "
                 "now computes each bin as NumPy does ((x - first) / width, corrected against "
                 "the edges): 2.2x; and with no correction where the edges are a binary grid "
                 "(bins=64 over (0, 1): x / 1 * 64 is exact), as the jax.jit port's floor(64 x): "
                 "3.1x -> 5x",
    "conv2d": "was 0.54-0.66x: the loop over the kernel's rows hoisted its nine (30752x16) @ "
              "(16x32) f64 products, 68 MiB alive at once in XLA's temporary buffer, mapped afresh "
              "and page-faulted on every call (~20,000 faults); hoisting now stops at 32 MiB, and "
              "the rolled loop runs 1.5-1.9x NumPy (the jax.jit port's convolution 0.7-0.9x)",
    "nbody_sim": "was 0.67x while `inv_r3 ** (-1.5)` was a general f64 pow on XLA:CPU (~1.5 ms vs "
                 "NumPy's 0.3 ms per 300x300, 11 times); NumPy mode now computes x ** +-0.5 / "
                 "+-1.5 through one sqrt (2.55x); the three (300x300) @ (300x1) f64 matvecs per "
                 "step still run slower on XLA:CPU than OpenBLAS at this size",
    "nbody_step": "was 1.91x with `inv_r3 ** (-1.5)` a general f64 pow on XLA:CPU; through one sqrt "
                  "7.75x; x ** -1.5 as 1 / (x * sqrt(x)), one division where it was two: "
                  "4.3 -> 2.2 ms, the jax.jit port's rsqrt(x) ** 3 3.4 ms",
    "arc_distance": "one fused loop, but compute-bound in f64 transcendentals: XLA:CPU's arctan2 "
                    "is ~3x and sin ~1.4x slower than NumPy's SIMD versions on 1M elements, which "
                    "eats the saved memory traffic (the jax.jit port: the same)",
    "fft_lowpass": "`spectrum[mask] = 0.0` with a mask computed from static fftfreq: once a "
                   "scatter of 881,295 constant index pairs, then a select on a dense 1024x1024 "
                   "constant (2 MB of hex in every stage: a 1.1 s first call); now the mask is "
                   "the OR of its row and column vectors in the module (storage.to_jax), a "
                   "select on them; the two FFTs match NumPy's",
    "azimint_naive": "32 rolled iterations, each a full pass over 200k (two compares, a masked "
                     "mean): the same passes as NumPy (the jax.jit port bins once: searchsorted, "
                     "segment_sum)",
    "softmax": "the whole softmax is one XLA:CPU YNNPACK fusion (max, exp, sum and divide per "
               "row, one pass), but it is bound by the f32 exp, which NumPy's SIMD exp does as "
               "fast, and the 16 MB input and result are copied in and out (~1.5 ms): about 1x",
    "attention": "the two batched f64 matmuls (32 x 256x64x256 each) dominate and XLA:CPU's are "
                 "about as fast as OpenBLAS's (NumPy's time here varies 2-8x with the machine's "
                 "load); the softmax between them is one fusion; 3 x 4 MB inputs copied in per call",
    "batch_norm": "mean and var over axes (0, 2, 3) and the normalization fuse into a few passes "
                  "over the 16 MB input, about NumPy's passes, plus the input and result copied "
                  "in and out on every call",
    "mask_updates": "the masked updates and reductions fuse, but np.place's cyclic values need a "
                    "running count of the mask (XLA:CPU's blocked reduce-window scan, 5 "
                    "reduce-windows, and a gather), and 4 x 8 MB arrays are copied in and 4 "
                    "updated ones back on every call",
    "doitgen": "was a 100-iteration while with one (128x128) @ (128x128) dot each; each "
               "iteration reads and writes only A[r], so the loop now runs batched "
               "(control_flow.batched) into the port's one (12800x128) @ (128x128) dot. What "
               "remains is the 13 MB A copied in and the result copied back on each call",
    "fft_convolve": "rfft / irfft of length 8,448 (64 rows) on XLA:CPU's FFT are about as fast as "
                    "NumPy's pocketfft; only the product in between fuses",
    # sorting
    "median_filter": "was 0.30x while np.median over the 9 stacked windows was an XLA sort along "
                     "the stacked axis (260k comparator sorts of 9 values); NumPy mode now takes "
                     "the median of an axis of at most 32 values through a min/max selection "
                     "network (24 exchanges for 9, one fusion), equal to NumPy's to the bit: ~9x",
    "spearman": "was 0.26-0.33x: argsort along axis 0 of 2000x100 was an XLA sort carrying an "
                "index operand (XLA:CPU's comparator path); NumPy mode now packs each 64-bit "
                "key above its index and sorts single int64 operands in two passes (low then "
                "high 32 bits, stable), ~3x faster and 2.4x the jax.jit port; the ranks are "
                "the inverse permutation, one scatter (0.47-0.62x). Now float64 keys sort once, "
                "less the 11 low bits the index needs, and a check of the order falls back to "
                "the two passes where two values differ only in those bits: argsort 15 -> 9 ms "
                "(NumPy's SIMD argsort: 2.6 ms; XLA:CPU sorts one int64 operand of 2000x100 "
                "along either axis in 7-8 ms, its comparator sort's floor)",
    # elementwise with masks and clipping: one fused select / clamp each (no scatter, sort or
    # compaction for a[mask] = ...); what is left is where the result is written
    "clip_inplace": "0.6-0.7x (0.43-0.48x before the page trade, 0.42-0.44x before the "
                    "streamed copy back, 0.19x before the kept buffer, 0.08-0.10x at first). "
                    "NumPy clips the 128 MB array where it lies: one pass over memory it has "
                    "just read (8-9.5 ms). XLA:CPU cannot write into the caller's array (a "
                    "donated zero-copy buffer over it is not written to), so the new value is "
                    "computed into a buffer of XLA's, kept between calls "
                    "(compile.KEPT_RESULT_MIN_BYTES; new memory each call faulted in 32,769 "
                    "pages, half the time), on two threads in ~11 ms (each line of that buffer "
                    "read before it is written). That buffer's pages then trade places with "
                    "the caller's array's (host_memory.swap_pages, mremap: 0.3 ms per 32 MB), "
                    "where a copy back took 8.4 ms on two threads with non-temporal stores "
                    "(np.copyto: 19). XLA's one pass into its own memory is the floor. The "
                    "jax.jit port, which returns a new array (new memory each call), is slower. "
                    "Reproducer: benchmarks/in_place_floor.py (NumPy; XLA into new memory, into "
                    "a kept buffer; copies back; where a donated caller's array lands)",
    "mandelbrot": "1.2-1.3x on 2 cores; was 0.79-0.87x. Its 50 iterations each run two "
                  "fusions over the 150x200 grid (each recomputing |Z|, XLA's overflow-safe "
                  "complex abs: the mask is not kept) and copy the carried Z, where NumPy "
                  "squares only the points still inside (31% on average). With the loop "
                  "dispatched op by op (XLA:CPU's path for an iteration touching more than "
                  "the small-loop threshold, ~1.9 MB here) each fusion is split across the "
                  "thread pool in each iteration: 6.5-7.2 ms; as one kernel, 4.8-5.0 ms. "
                  "Reproducer: REACTANT_LAB_SMALL_LOOP_BYTES=262144 (the old default) "
                  "against unset, benchmarks/numpy_speed.py --only mandelbrot; the jax.jit "
                  "port runs op by op (XLA's 1 KiB threshold)",
    "clip_assign": "about level (0.96-1.01x; was 0.49x in the same process with the result "
                   "faulted in anew, benchmarks/kept_buffers.py): NumPy clips into a temporary "
                   "and copies it into a, two passes; ours are the same two (XLA into a kept "
                   "buffer, the copy back into a: benchmarks/in_place_floor.py), or one where "
                   "the kept buffer's pages can trade places with a's (host_memory.swap_pages): "
                   "then 1.5x faster (4.2 -> 2.8 ms)",
    "winsorize": "was 0.16x: np.percentile sorted each 20,000-row column with the float "
                 "total-order comparator (175 ms); NumPy mode now sorts integer keys of the "
                 "floats (35 ms, NaN last) and takes NumPy's interpolation, one sort for both "
                 "percentiles (CSE), 5x the jax.jit port; NumPy partitions (introselect, O(n)) "
                 "instead of sorting",
}
"""Kernel -> why rl.jit (default preset) is slower than NumPy eager there, diagnosed from the final
IR (``rl.explore(fn, *args).stages[-1].ir``), XLA's optimized HLO (``compiled.hlo_text()``:
while-body copies, fusions), presets 'none' vs 'all', and parts timed apart."""

NUMBA_LIMIT = 2.0
"""A kernel where rl.jit is more than this many times slower than numba is listed with its
cause (``NUMBA_GAPS``)."""

_WHILE_COST = ("benchmarks/while_cost.py measures the loop itself: XLA:CPU's while compiled as "
               "one native loop costs 1.5-2.5x numba per iteration with scalars carried (each "
               "iteration loads and stores its carried buffers), 3-5x with an array carried")
NUMBA_GAPS: dict[str, str] = {
    "cumulative_update": "numba runs np.cumsum and np.cumprod as one sequential pass each over "
                         "the 1M elements; XLA:CPU scans with a blocked reduce-window (5 of "
                         "them, several passes over the data), and the strided `x[::2] = ...` "
                         "is a scatter: 1.6-2x numba's time in full runs (the jax.jit port "
                         "slower still; see its entry below 1x NumPy)",
    "cholesky": "its loop over j < i has a traced bound, so each of its 3,160 iterations (80 "
                "rows) dots `A[i, :j]` with `A[j, :j]` as masked full 80-element rows and "
                "writes one element of the carried 80x80 A: the executable alone takes "
                "0.18-0.19 ms (~55 ns an iteration, XLA:CPU's while step plus two masked row "
                "reads; the same loop in plain JAX 0.16 ms), where numba runs the exact "
                "lengths (0.09 ms). The call took 0.36-0.46 ms in full runs while it was "
                "guarded (XLA cannot tell the inner trip count; a runner thread and the "
                "executable's twin); its inner loop is bounded by the outer one "
                "(_backend_ir.loop_bounds), so it now takes the usual path: 0.19 ms alone. The "
                "jax.jit port calls LAPACK's potrf (0.11 ms)",
    "durbin": "each of the 1,000 iterations flips, dots and updates the whole 1,000-element y, "
              "masked (y[:k] has a traced length), where numba touches the first k elements "
              "(half on average): twice the data, plus the while's cost per iteration. The "
              "executable alone, its input on the device, takes 1.9 ms (1.9 us an iteration), "
              "the call 2.0 ms, numba 0.82 ms",
    "pair_matches": "the loop runs batched: five small fusions over the 20k elements (0.3 MB), "
                    "the port's (six while its first iteration ran apart, `total` starting as a "
                    "Python int), 0.13 ms as a bare executable (the port 0.12 ms) and 0.16 ms "
                    "called (the port's calls overlap in a sample; ours wait for their "
                    "results), which is XLA:CPU's cost per computation on "
                    "this 2-vCPU machine, not the work: a one-fusion jax.jit of "
                    "`where(a + b == 3, 1, 0)` over 20k int64 takes 60 us, and 14-17 us with the "
                    "process pinned to one core or the other core kept busy (waking XLA's idle "
                    "worker thread on the other vCPU costs ~45 us here); numba's loop 26 us",
    "trisolv": "each of the 1,500 iterations computes `L[i, :i] @ x[:i]` over the full row, "
               "masked (a select, a multiply, and XLA:CPU's tree reduction into 47 and then 2 "
               "partial sums: three passes over 12 KB), where numba calls BLAS ddot on the first "
               "i elements: twice the data and three passes. The executable alone, its inputs "
               "on the device, takes 1.25 ms (numba 0.44 ms); the call adds the hand-over of "
               "the 18 MB L. The jax.jit port (solve_triangular) is slower still",
    "crc32": "one while over the 16,384 bytes, the 8 bit steps unrolled in it and each `if` "
             "picked by an integer mask (`b ^ ((a ^ b) & -bit)`, which XLA:CPU folds into "
             "`(crc >> 1) ^ (POLY & -bit)`, the port's form: 0.29 ms as selects, 0.16 ms so, "
             "the port 0.15 ms); numba's loop runs ~8 ns a byte, XLA:CPU's while ~10 ns: each "
             "iteration stores and reloads its carried values (benchmarks/while_cost.py)",
    "csr_matvec": "the loop over a row's nonzeros (traced bounds indptr[i] .. indptr[i + 1], ~10 "
                  "trips) reads and writes y[i] through the carried y in every iteration: "
                  "XLA:CPU keeps no value in a register across iterations of its while. The "
                  "same nested lax.fori_loop in plain JAX takes 0.175 ms, 0.125 ms with y[i] "
                  "accumulated in a scalar carry (numba 0.067 ms). The call is guarded too (a "
                  "trip count read from the data may not end: a runner thread and the "
                  "executable's twin; handed over by a spin, ~10-20 us a call, where locks "
                  "took 0.1-0.2 ms). " + _WHILE_COST,
    "triangle_max_path": "numba vectorizes the loop over j (SIMD over the contiguous rows: 8 us "
                         "for the 31k cells); here that loop runs batched, each row of the "
                         "outer while three row windows read and one fused update, as the "
                         "jax.jit port's row-at-a-time loop. It was 11 ms while the batched "
                         "loop cut two transposed copies of T per row "
                         "(batched._read_before_write), then 0.32 ms with the reads as four "
                         "249-element gathers (now row windows: batched._Plan.windows, 0.24)",
    "recursive_filter": "the loop over columns runs batched over the rows as one native loop "
                        "(0.065 ms as a bare executable, numba 0.06 ms); the rest is the call: "
                        "the 320 KB y handed to the executable and the result written back "
                        "into the caller's array",
}
"""Kernel -> why rl.jit is more than NUMBA_LIMIT times slower than numba there (reproduce:
``benchmarks/numpy_speed.py --only NAME``; the executable alone: ``rl.code_hlo`` of the kernel
compiled and run on device arrays)."""


# ---------------------------------------------------------------- measuring


@dataclass
class Result:
    """One kernel's row."""

    name: str
    size: str
    medians: dict[str, float] = field(default_factory=dict)
    first: dict[str, float] = field(default_factory=dict)
    """Variant -> first-call seconds (rl.jit, none, jax.jit) or compile seconds (numba)."""
    parts: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """rl.jit's first call: trace, stages and XLA compile seconds."""
    notes: dict[str, str] = field(default_factory=dict)
    """Variant -> why it did not run, or why its result is off."""
    first_samples: int = 1
    """How many first calls ``first`` holds the median of (each in a fresh process past 1)."""


def _mutated(name: str) -> list[int]:
    return sorted(int(p.removeprefix("args[").removesuffix("]")) for p in KERNELS[name].mutates)


def _outcome(ret: Any, args: Sequence[Any], mutated: list[int]) -> tuple[Any, tuple]:
    return ret, tuple(args[i] for i in mutated)


def _differs(got: Any, want: Any, tol: float) -> str | None:
    """Where ``got`` is not ``want`` within ``tol`` (relative to the leaf's scale), else None."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    if got_tree != want_tree:
        return f"structure {got_tree} != {want_tree}"
    for i, (got_leaf, want_leaf) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        g, w = np.asarray(got_leaf), np.asarray(want_leaf)
        if g.shape != w.shape:
            return f"leaf {i}: shape {g.shape} != {w.shape}"
        finite = w[np.isfinite(w)] if w.dtype.kind in "fc" else w
        scale = float(np.max(np.abs(finite))) if finite.size else 1.0
        if not np.allclose(g, w, rtol=tol, atol=tol * max(scale, 1e-30), equal_nan=True):
            bad = int(np.sum(~np.isclose(g, w, rtol=tol, atol=tol * max(scale, 1e-30),
                                         equal_nan=True)))
            return f"leaf {i}: {bad} of {w.size} values differ (rtol {tol:g})"
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _rl_variant(name: str, kernel: Callable[..., Any], args: tuple, mutated: list[int],
                want: Any, optimize: str, tol: float, res: Result
                ) -> tuple[Variant | None, rl.Traced | None]:
    """The rl.jit variant (first call timed and checked) and its traced call."""
    label = "rl.jit" if optimize == "all" else "none"
    jf = rl.jit(kernel, optimize=optimize)
    first = copy_inputs((args, {}), np.array)[0]
    try:
        start = time.perf_counter()
        ret = jax.block_until_ready(jf(*first))
        res.first[label] = time.perf_counter() - start
    except Exception as exc:  # a package bug: reported, the row goes on without it
        res.notes[label] = f"failed: {_first_line(exc)}"
        return None, None
    ex = jf.last
    assert ex is not None and ex.compiled is not None
    if label == "rl.jit":
        res.parts = (ex.traced.seconds, ex.stages.compile_path_seconds,
                     ex.compiled.compile_seconds)
    bad = _differs(_outcome(ret, first, mutated), want, tol)
    if bad is not None:
        res.notes[label] = f"result differs from NumPy's: {bad}"
    return Variant(label, jf, [] if mutated else copies((args, {}), np.array),
                   (lambda: copy_inputs((args, {}), np.array)) if mutated else None), ex.traced


def _jax_variant(case: Case, args: tuple, want: Any, tol: float, res: Result,
                 pipelined: bool = False) -> Variant | None:
    """The port's variant; ``pipelined`` (--pipelined-port): timed on one input set, the calls
    of a sample not waited for one by one (what this script did before)."""
    with backend.x64_scope(True):
        fn = jax.jit(case.port, static_argnums=case.static)
        dev = tuple(a if i in case.static or not isinstance(a, np.ndarray) else jax.device_put(a)
                    for i, a in enumerate(args))
        jax.block_until_ready(dev)
        try:
            start = time.perf_counter()
            got = jax.block_until_ready(fn(*dev))
            res.first["jax.jit"] = time.perf_counter() - start
        except Exception as exc:
            res.notes["jax.jit"] = f"failed: {_first_line(exc)}"
            return None
    bad = _differs(got, want, tol)
    if bad is not None:
        res.notes["jax.jit"] = f"port differs from NumPy: {bad}"

    if pipelined:
        def overlapped(*a):
            with backend.x64_scope(True):
                return fn(*a)

        return Variant("jax.jit", overlapped, [(dev, {})])

    def call(*a):
        with backend.x64_scope(True):
            return jax.block_until_ready(fn(*a))

    def placed() -> tuple[tuple, dict]:
        return tuple(a if i in case.static or not isinstance(a, np.ndarray)
                     else jax.device_put(np.array(a)) for i, a in enumerate(args)), {}

    with backend.x64_scope(True):  # float64 stays float64
        pool = [placed() for _ in copies((args, {}), lambda a: a)]
        jax.block_until_ready(pool)
    assert [getattr(a, "dtype", None) for a in pool[0][0]] == [
        getattr(a, "dtype", None) for a in dev], "the port's copies changed a dtype"
    return Variant("jax.jit", call, pool)


def _numba_variant(kernel: Callable[..., Any], traced: rl.Traced, args: tuple,
                   res: Result) -> Variant | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's deprecation and performance warnings
        made = numba_baseline.numba_variant(kernel, traced, args, {})
    if isinstance(made, str):
        res.notes["numba"] = made
        return None
    variant, compile_s = made
    res.first["numba"] = compile_s
    return variant


def measure(name: str, case: Case, args: tuple, min_time: float, repeats: int | None,
            numba: bool, size: str | None = None, pipelined_port: bool = False) -> Result:
    """One kernel: first calls, checks against NumPy, then round-robin warm samples."""
    kernel = KERNELS[name].fn
    mutated = _mutated(name)
    tol = max(KERNELS[name].tol, 1e-9) * 1e3
    res = Result(name, case.size if size is None else size)
    expected = copy.deepcopy(args)
    with np.errstate(all="ignore"):
        want = _outcome(kernel(*expected), expected, mutated)
    numpy_v = Variant("numpy", kernel, [] if mutated else copies((args, {}), np.array),
                      (lambda: copy_inputs((args, {}), np.array)) if mutated else None)
    variants: list[Variant | None] = [numpy_v]
    default, traced = _rl_variant(name, kernel, args, mutated, want, "all", tol, res)
    none, traced_none = _rl_variant(name, kernel, args, mutated, want, "none", tol, res)
    variants += [default, none]
    traced = traced or traced_none
    if numba and traced is not None:
        variants.append(_numba_variant(kernel, traced, args, res))
    elif numba:
        res.notes["numba"] = "not run: no trace of the kernel to check numba's result against"
    variants.append(_jax_variant(case, args, want, tol, res, pipelined_port))
    running = [v for v in variants if v is not None]
    with np.errstate(all="ignore"):
        per_sample = [warm_up(v, 3) for v in running]
        samples = round_robin(running, plan_rounds(per_sample, min_time, repeats))
    res.medians = {v.name: timing.median(s) for v, s in zip(running, samples, strict=True)}
    return res


# ---------------------------------------------------------------- printing


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.2f}" if seconds < 0.1 else f"{seconds * 1e3:.0f}"


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f}"


def _ratio(num: float | None, den: float | None) -> float | None:
    return None if num is None or den is None else num / den


def _x(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def geomean(values: Sequence[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def speedups(rows: Sequence[Result], name: str, over: str = "numpy") -> list[float]:
    """``over``'s median / ``name``'s median on every kernel both ran (> 1: ``name`` faster)."""
    return [r.medians[over] / r.medians[name] for r in rows
            if name in r.medians and over in r.medians]


def print_tables(rows: Sequence[Result]) -> None:
    head = (f"{'kernel':<19} {'size':<18} {'numpy ms':>9} {'rl.jit':>8} {'none':>8} "
            f"{'numba':>8} {'jax.jit':>8}  {'rl.jit':>7} {'none':>7} {'numba':>7} {'jax.jit':>7}")
    print("\nWarm medians (ms) and speedup over NumPy eager (numpy / variant; > 1: faster)")
    print(head)
    print("-" * len(head))
    for r in rows:
        t = r.medians
        times = " ".join(f"{_ms(t.get(v)):>8}" for v in VARIANTS[1:])
        ratios = " ".join(f"{_x(_ratio(t.get('numpy'), t.get(v))):>7}" for v in VARIANTS[1:])
        print(f"{r.name:<19} {r.size:<18} {_ms(t.get('numpy')):>9} {times}  {ratios}")
    head = (f"{'kernel':<19} {'rl trace':>8} {'stages':>7} {'compile':>7} {'rl 1st':>7} "
            f"{'none 1st':>8} {'numba c':>7} {'jax 1st':>7} {'rl/jax':>8}")
    print(f"\nFirst call (s): rl.jit = trace + stages + XLA compile + run; jax.jit port = trace + "
          f"compile + run; numba = its compile; rl/jax flagged '!' above {FIRST_CALL_LIMIT:g}x")
    print(head)
    print("-" * len(head))
    for r in rows:
        f = r.first
        ratio = _ratio(f.get("rl.jit"), f.get("jax.jit"))
        flag = "!" if ratio is not None and ratio > FIRST_CALL_LIMIT else " "
        trace_s, stages_s, compile_s = r.parts
        median = f"  median of {r.first_samples} fresh processes" if r.first_samples > 1 else ""
        print(f"{r.name:<19} {trace_s:>8.2f} {stages_s:>7.2f} {compile_s:>7.2f} "
              f"{_s(f.get('rl.jit')):>7} {_s(f.get('none')):>8} {_s(f.get('numba')):>7} "
              f"{_s(f.get('jax.jit')):>7} {_x(ratio):>7}{flag}{median}")


def print_summary(rows: Sequence[Result], quick: bool = False) -> None:
    print("\nGeometric means (speedup; > 1: the first is faster)")
    for name in VARIANTS[1:]:
        g = geomean(speedups(rows, name))
        n = len(speedups(rows, name))
        print(f"  {name + ' vs numpy':<22} {_x(g):>8}  over {n} kernels")
    for other in ("numba", "jax.jit", "none"):
        s = speedups(rows, "rl.jit", over=other)
        print(f"  {'rl.jit vs ' + other:<22} {_x(geomean(s)):>8}  over {len(s)} kernels both ran")
    firsts = [r.first["rl.jit"] / r.first["jax.jit"] for r in rows
              if "rl.jit" in r.first and "jax.jit" in r.first]
    print(f"  {'first call rl / jax':<22} {_x(geomean(firsts)):>8}  over {len(firsts)} kernels "
          f"(max {_x(max(firsts, default=None))})")

    slow = [(r, r.medians["numpy"] / r.medians["rl.jit"]) for r in rows
            if "rl.jit" in r.medians and r.medians["rl.jit"] > r.medians["numpy"]]
    print(f"\nBelow 1x NumPy with rl.jit (default preset): {len(slow)} of {len(rows)}")
    for r, s in slow:
        cause = ("(--quick: the suite's sizes; causes are diagnosed at the benchmark sizes)"
                 if quick else CAUSES.get(r.name, "not diagnosed"))
        print(f"  {r.name:<19} {s:.2f}x  {cause}")
    late = [r for r in rows if "rl.jit" in r.first and "jax.jit" in r.first
            and r.first["rl.jit"] > FIRST_CALL_LIMIT * r.first["jax.jit"]]
    print(f"\nFirst call above {FIRST_CALL_LIMIT:g}x the jax.jit port's: {len(late)}")
    for r in late:
        trace_s, stages_s, compile_s = r.parts
        print(f"  {r.name:<19} {r.first['rl.jit']:.2f} s vs {r.first['jax.jit']:.2f} s "
              f"(trace {trace_s:.2f}, stages {stages_s:.2f}, XLA compile {compile_s:.2f})")
        cause = ("(--quick: the suite's sizes; causes are diagnosed at the benchmark sizes)"
                 if quick else FIRST_CALL_CAUSES.get(r.name, "not diagnosed"))
        print(f"  {'':<19} {cause}")
    behind = [(r, r.medians["rl.jit"] / r.medians["numba"]) for r in rows
              if "rl.jit" in r.medians and "numba" in r.medians
              and r.medians["rl.jit"] > NUMBA_LIMIT * r.medians["numba"]]
    print(f"\nMore than {NUMBA_LIMIT:g}x slower than numba with rl.jit: {len(behind)}")
    for r, s in behind:
        cause = ("(--quick: the suite's sizes; causes are diagnosed at the benchmark sizes)"
                 if quick else NUMBA_GAPS.get(r.name, "not diagnosed"))
        print(f"  {r.name:<19} {s:.2f}x  {cause}")
    notes = [(r.name, v, r.notes[v]) for r in rows for v in VARIANTS if v in r.notes]
    if notes:
        print("\nNotes (variants not run or not matching NumPy)")
        for name, v, text in notes:
            print(f"  {name:<19} {v:<8} {text}")


def _warm_stacks() -> None:
    """Start JAX and reactant_lab once, so the first kernel's first calls are not charged
    for it."""
    def f(x):
        x[1:] += 1.0
        return x.sum()

    rl.jit(f)(np.ones(4))
    rl.jit(f, optimize="none")(np.ones(4))
    with backend.x64_scope(True):
        jax.block_until_ready(jax.jit(lambda x: x.at[1:].add(1.0).sum())(jnp.ones(4)))


FIRST_CALL_RECHECK = 2.0
"""A kernel whose first call (one sample, in this run) is at least this many times the port's
has its first calls measured again in fresh processes (``--first-samples``), both sides."""


def first_calls(name: str, case: Case, args: tuple, port_first: bool = False
                ) -> dict[str, Any]:
    """rl.jit's and the port's first calls of kernel ``name``, in this process, as ``measure``
    times them (``port_first``: the port's first): what a fresh process (``--first-call NAME``)
    prints as JSON."""
    res = Result(name, case.size)
    kernel = KERNELS[name].fn
    mutated = _mutated(name)
    expected = copy.deepcopy(args)
    with np.errstate(all="ignore"):
        want = _outcome(kernel(*expected), expected, mutated)
        tol = max(KERNELS[name].tol, 1e-9) * 1e3
        if port_first:
            _jax_variant(case, args, want, tol, res)
        _rl_variant(name, kernel, args, mutated, want, "all", tol, res)
        if not port_first:
            _jax_variant(case, args, want, tol, res)
    return {"first": res.first, "parts": res.parts, "notes": res.notes}


FIRST_CALL_NEAR = 0.2
"""A kernel whose median first-call ratio over ``--first-samples`` fresh processes lies within
this fraction of FIRST_CALL_LIMIT (2.4x-3.6x) gets as many samples again, and the medians of
all: one sample more or less moves a median of five 0.03-0.05 s ports by 10-20% here."""


def remeasure_first_calls(rows: Sequence[Result], samples: int, argv: Sequence[str]) -> None:
    """Measure again, in ``samples`` fresh processes each, the first calls of the kernels whose
    one in-run sample put rl.jit at FIRST_CALL_RECHECK times the port's or more: a first call is
    one sample on a noisy machine (0.03 s ports vary by half from run to run), and only a fresh
    process has a first call to time; as many again for a median near the limit
    (FIRST_CALL_NEAR). The rows get the medians of both sides, and the parts'."""
    for r in rows:
        ratio = _ratio(r.first.get("rl.jit"), r.first.get("jax.jit"))
        if samples < 2 or ratio is None or ratio < FIRST_CALL_RECHECK:
            continue
        ok = _fresh_first_calls(r.name, samples, argv)
        near = len(ok) >= 2 and abs(
            statistics.median(g["first"]["rl.jit"] for g in ok)
            / statistics.median(g["first"]["jax.jit"] for g in ok)
            / FIRST_CALL_LIMIT - 1) <= FIRST_CALL_NEAR
        if near:  # the order alternating on from where it was
            ok += _fresh_first_calls(r.name, samples, argv, start=samples)
        if len(ok) < 2:
            print(f"  {r.name}: its fresh-process first calls failed; the in-run one is kept",
                  file=sys.stderr)
            continue
        r.first["rl.jit"] = statistics.median(g["first"]["rl.jit"] for g in ok)
        r.first["jax.jit"] = statistics.median(g["first"]["jax.jit"] for g in ok)
        r.parts = tuple(statistics.median(g["parts"][i] for g in ok)  # type: ignore[assignment]
                        for i in range(3))
        r.first_samples = len(ok)


def _fresh_first_calls(name: str, samples: int, argv: Sequence[str], start: int = 0
                       ) -> list[dict[str, Any]]:
    """Kernel ``name``'s first calls (both sides) in ``samples`` fresh processes, those that
    measured both. Every other process (counted from ``start``: how many were started before
    for the kernel) times the port's first: what a process does first for
    the first time (its first matrix product, say) costs more than later (doitgen's rl.jit
    0.08-0.10 s first, 0.07-0.09 s second; its port 0.033-0.038 s first, 0.030-0.037 s
    second), and neither side is to carry that for the other."""
    got = []
    for i in range(start, start + samples):
        order = ["--port-first"] if i % 2 else []
        out = subprocess.run([sys.executable, __file__, *argv, "--first-call", name, *order],
                             capture_output=True, text=True, check=False)
        lines = out.stdout.strip().splitlines()
        if out.returncode == 0 and lines:
            got.append(json.loads(lines[-1]))
    return [g for g in got if "rl.jit" in g["first"] and "jax.jit" in g["first"]]


def _print_first_calls(opts: argparse.Namespace) -> None:
    """``--first-call NAME``: this fresh process's first calls of NAME, as one line of JSON."""
    if opts.allocator == "aligned":
        rl.use_aligned_arrays()
    _warm_stacks()
    case = CASES[opts.first_call]
    rng = np.random.default_rng(opts.seed)
    args = KERNELS[opts.first_call].make(rng) if opts.quick else case.make(rng)
    print(json.dumps(first_calls(opts.first_call, case, args, opts.port_first)))


def _ports_threshold(same: bool) -> str:
    """Which small-loop threshold the ports compile with, in words."""
    if same:
        return "the same"
    if backend.SMALL_LOOP_OPTION in os.environ.get("XLA_FLAGS", ""):
        return "set by XLA_FLAGS"
    return "jax.jit's default, 1024 bytes"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], metavar="NAME", help="kernel names")
    parser.add_argument("--min-time", type=float, default=0.2,
                        help="seconds of sampling for the slowest variant of each kernel")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: the differential suite's small sizes, 3 samples each")
    parser.add_argument("--no-numba", action="store_true", help="leave the numba baseline out")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs")
    parser.add_argument("--pipelined-port", action="store_true",
                        help="time the jax.jit port as before: one input set, its calls in a "
                             "sample left to overlap (dispatch of one during the run of the last)")
    parser.add_argument("--allocator", choices=("aligned", "numpy"), default="aligned",
                        help="NumPy's allocator for every variant's arrays: reactant_lab's "
                             "64-byte-aligned one (rl.use_aligned_arrays, on in notebooks with "
                             "%%load_ext reactant_lab), or NumPy's own")
    parser.add_argument("--port-small-loops", action="store_true",
                        help="compile the jax.jit ports with reactant_lab's small-loop "
                             "threshold too (XLA_FLAGS), not XLA's default")
    parser.add_argument("--first-samples", type=int, default=5, metavar="N",
                        help="kernels whose first call is at least "
                             f"{FIRST_CALL_RECHECK:g}x the port's have both first calls measured "
                             "again in N fresh processes, the medians reported (1: not)")
    parser.add_argument("--first-call", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--port-first", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = _parser()
    opts = parser.parse_args(argv)
    threshold = backend.small_loop_bytes()
    if opts.port_small_loops:  # read when JAX makes its CPU client: before any computation
        os.environ["XLA_FLAGS"] = (
            f"{os.environ.get('XLA_FLAGS', '')} --xla_backend_extra_options="
            f"{backend.SMALL_LOOP_OPTION}={threshold}").strip()
    unknown = [n for n in [*opts.only, *([opts.first_call] if opts.first_call else [])]
               if n not in CASES]
    if unknown:
        parser.error(f"unknown kernel(s) {unknown}; known: {', '.join(CASES)}")
    if opts.first_call:  # one fresh process's first calls, as JSON (remeasure_first_calls)
        _print_first_calls(opts)
        return
    versions = ", ".join(f"{k} {v}" for k, v in rl.versions().items())
    numba_v = "off"
    if not opts.no_numba and numba_baseline.available():
        import numba
        numba_v = numba.__version__
    print(f"NumPy speed: NumPy {np.__version__} eager vs reactant_lab.jit (preset 'all', and "
          f"'none') vs numba {numba_v} vs jax.jit ports ({versions}; device {jax.devices()[0]})")
    print(f"{len(CASES)} kernels; {'quick smoke sizes' if opts.quick else 'benchmark sizes'}, "
          f"min time {opts.min_time:g} s per kernel, seed {opts.seed}")
    allocator = "NumPy's own"
    if opts.allocator == "aligned":
        try:
            rl.use_aligned_arrays()
            allocator = "rl.use_aligned_arrays() (64-byte-aligned data)"
        except rl.AlignedArraysUnavailable as exc:
            allocator = f"NumPy's own (the aligned one is unavailable: {exc})"
    print(f"arrays allocated by {allocator}")
    print(f"XLA:CPU small-loop threshold: rl.jit and none {threshold} bytes; ports "
          f"{_ports_threshold(opts.port_small_loops)}")
    _warm_stacks()
    rows = []
    total = time.perf_counter()
    for name, case in CASES.items():
        if opts.only and name not in opts.only:
            continue
        rng = np.random.default_rng(opts.seed)
        args = KERNELS[name].make(rng) if opts.quick else case.make(rng)
        with np.errstate(all="ignore"):  # cumulative_update's cumprod overflows, as in NumPy
            rows.append(measure(name, case, args, opts.min_time, 3 if opts.quick else None,
                                not opts.no_numba and numba_baseline.available(),
                                "suite's" if opts.quick else None, opts.pipelined_port))
        print(f"  measured {name} ({time.perf_counter() - total:.0f} s)", file=sys.stderr,
              flush=True)
    remeasure_first_calls(rows, opts.first_samples, [
        *(["--quick"] if opts.quick else []), "--seed", str(opts.seed),
        "--allocator", opts.allocator, *(["--port-small-loops"] if opts.port_small_loops
                                         else [])])
    print_tables(rows)
    print_summary(rows, opts.quick)
    print(f"\n({time.perf_counter() - total:.0f} s)")


if __name__ == "__main__":
    main()
