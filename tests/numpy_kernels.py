"""Plain NumPy kernels in the style of PolyBench / NPBench, with makers of fresh random inputs.

Each kernel is ordinary NumPy code: static time loops, in-place slice updates, writes through
views, boolean-mask updates, ``out=`` ufuncs. ``mutates`` lists the argument paths a kernel
updates in place (what ``Traced.mutated`` must report).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Kernel:
    """A NumPy kernel and a maker of its arguments from a generator."""

    name: str
    fn: Callable[..., Any]
    make: Callable[[np.random.Generator], tuple]
    mutates: tuple[str, ...] = ()
    tol: float = 1e-10
    tpu_tol: float = 0.0
    """Its tolerance on a TPU where that is looser than ``tol`` and the emulated float64's
    (``tests.conftest.float_rtol``): what was measured there, with why."""
    tpu_refuses: str = ""
    """Why a TPU refuses it with an error (an op XLA's TPU compiler has no float64 or complex128
    version of, or aborts on): there the test expects that error and the arguments unchanged."""


_TPU_NO_COMPLEX128_ABS = ("|z| of complex128 is refused on a TPU (XLA's TPU compiler aborts the "
                          "process on it)")
_TPU_NO_FLOAT64_FFT = "XLA's TPU compiler takes FFTs of float32 and complex64 only"


def _n(rng: np.random.Generator, lo: int = 6, hi: int = 14) -> int:
    return int(rng.integers(lo, hi))


# ---------------------------------------------------------------- stencils with time loops


def jacobi_1d(TSTEPS, A, B):
    for _ in range(1, TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def jacobi_2d(TSTEPS, A, B):
    for _ in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] +
                               A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] +
                               B[:-2, 1:-1])


def heat_3d(TSTEPS, A, B):
    for _ in range(1, TSTEPS):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1]) +
            0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1]) +
            0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, 0:-2]) +
            A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1]) +
            0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1]) +
            0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, 0:-2]) +
            B[1:-1, 1:-1, 1:-1])


def seidel_2d(TSTEPS, N, A):
    for _ in range(TSTEPS - 1):
        for i in range(1, N - 1):
            A[i, 1:-1] += (A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:] + A[i, 2:] +
                           A[i + 1, :-2] + A[i + 1, 1:-1] + A[i + 1, 2:])
            for j in range(1, N - 1):
                A[i, j] += A[i, j - 1]
                A[i, j] /= 9.0


def fdtd_2d(TMAX, ex, ey, hz, _fict_):
    for t in range(TMAX):
        ey[0, :] = _fict_[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def upwind_sweep(u, c, steps):
    # first-order upwind advection swept in place along each row: column j reads column j + 1,
    # not yet updated in this sweep (an anti-dependence: the sweep over j runs batched)
    for _ in range(steps):
        for j in range(u.shape[1] - 1):
            u[:, j] -= c * (u[:, j] - u[:, j + 1])


def adi(TSTEPS, N, u):
    v = np.empty(u.shape, dtype=u.dtype)
    p = np.empty(u.shape, dtype=u.dtype)
    q = np.empty(u.shape, dtype=u.dtype)
    DX, DY, DT = 1.0 / N, 1.0 / N, 1.0 / TSTEPS
    B1, B2 = 2.0, 1.0
    mul1, mul2 = B1 * DT / (DX * DX), B2 * DT / (DY * DY)
    a, b, c = -mul1 / 2.0, 1.0 + mul1, -mul1 / 2.0
    d, e, f = -mul2 / 2.0, 1.0 + mul2, -mul2 / 2.0
    for _ in range(1, TSTEPS + 1):
        v[0, 1:N - 1] = 1.0
        p[1:N - 1, 0] = 0.0
        q[1:N - 1, 0] = v[0, 1:N - 1]
        for j in range(1, N - 1):
            p[1:N - 1, j] = -c / (a * p[1:N - 1, j - 1] + b)
            q[1:N - 1, j] = (-d * u[j, 0:N - 2] + (1.0 + 2.0 * d) * u[j, 1:N - 1] -
                             f * u[j, 2:N] - a * q[1:N - 1, j - 1]) / (a * p[1:N - 1, j - 1] + b)
        v[N - 1, 1:N - 1] = 1.0
        for j in range(N - 2, 0, -1):
            v[j, 1:N - 1] = p[1:N - 1, j] * v[j + 1, 1:N - 1] + q[1:N - 1, j]
        u[1:N - 1, 0] = 1.0
        p[1:N - 1, 0] = 0.0
        q[1:N - 1, 0] = u[1:N - 1, 0]
        for j in range(1, N - 1):
            p[1:N - 1, j] = -f / (d * p[1:N - 1, j - 1] + e)
            q[1:N - 1, j] = (-a * v[0:N - 2, j] + (1.0 + 2.0 * a) * v[1:N - 1, j] -
                             c * v[2:N, j] - d * q[1:N - 1, j - 1]) / (d * p[1:N - 1, j - 1] + e)
        u[1:N - 1, N - 1] = 1.0
        for j in range(N - 2, 0, -1):
            u[1:N - 1, j] = p[1:N - 1, j] * u[1:N - 1, j + 1] + q[1:N - 1, j]


def floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path[:], np.add.outer(path[:, k], path[k, :]))


# ---------------------------------------------------------------- linear algebra kernels


def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


def k2mm(alpha, beta, A, B, C, D):
    D[:] = alpha * A @ B @ C + beta * D


def k3mm(A, B, C, D):
    return A @ B @ C @ D


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


def gesummv(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


def atax_bicg(A, x, p, r):
    return (A @ x) @ A, r @ A, A @ p


def mvt(x1, x2, y_1, y_2, A):
    x1 += A @ y_1
    x2 += y_2 @ A


def syrk(alpha, beta, C, A):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


def trmm(alpha, A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


def doitgen(NR, NQ, NP, A, C4):
    for r in range(NR):
        A[r, :, :] = np.reshape(np.reshape(A[r], (NQ, 1, NP)) @ C4, (NQ, NP))


def gramschmidt(A):
    Q = np.zeros_like(A)
    R = np.zeros((A.shape[1], A.shape[1]), dtype=A.dtype)
    for k in range(A.shape[1]):
        nrm = np.dot(A[:, k], A[:, k])
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, A.shape[1]):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


def lu(A):
    for i in range(A.shape[0]):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, A.shape[0]):
            A[i, j] -= A[i, :i] @ A[:i, j]


def ludcmp(A, b):
    x = np.zeros_like(b)
    y = np.zeros_like(b)
    lu(A)
    for i in range(A.shape[0]):
        y[i] = b[i] - A[i, :i] @ y[:i]
    for i in range(A.shape[0] - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x, y


def cholesky(A):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


def trisolv(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


def durbin(r):
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, r.shape[0]):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


def linalg_suite(A, b, S):
    L = np.linalg.cholesky(S)
    q, r = np.linalg.qr(A)
    w, v = np.linalg.eigh(S)
    sol = np.linalg.solve(S, b)
    fit = np.linalg.lstsq(A, b[:A.shape[0]], rcond=None)[0]
    return (L, np.abs(np.diag(r)), np.abs(q.T @ q), w, np.abs(v[:, -1]), sol, fit,
            np.linalg.norm(A), np.linalg.norm(A, axis=0), np.linalg.det(S),
            np.linalg.inv(S) @ S)


# ---------------------------------------------------------------- data analysis and ML


def correlation(M, float_n, data):
    mean = np.mean(data, axis=0)
    stddev = np.std(data, axis=0)
    stddev[stddev <= 0.1] = 1.0
    data -= mean
    data /= np.sqrt(float_n) * stddev
    corr = np.eye(M, dtype=data.dtype)
    for i in range(M - 1):
        corr[i + 1:M, i] = corr[i, i + 1:M] = data[:, i] @ data[:, i + 1:M]
    return corr


def covariance(M, float_n, data):
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
    return cov


def softmax(x):
    tmp_max = np.max(x, axis=-1, keepdims=True)
    tmp_out = np.exp(x - tmp_max)
    tmp_sum = np.sum(tmp_out, axis=-1, keepdims=True)
    return tmp_out / tmp_sum


def mlp_forward(x, w1, b1, w2, b2, w3, b3):
    h = np.maximum(x @ w1 + b1, 0)
    h = np.maximum(h @ w2 + b2, 0)
    return softmax(h @ w3 + b3)


def _acc(pos, mass, G, softening):
    x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
    dx, dy, dz = x.T - x, y.T - y, z.T - z
    inv_r3 = dx**2 + dy**2 + dz**2 + softening**2
    inv_r3[inv_r3 > 0] = inv_r3[inv_r3 > 0] ** (-1.5)
    ax = G * (dx * inv_r3) @ mass
    ay = G * (dy * inv_r3) @ mass
    az = G * (dz * inv_r3) @ mass
    return np.hstack((ax, ay, az))


def nbody_step(mass, pos, vel, acc, dt, G, softening):
    vel += acc * dt / 2.0
    pos += vel * dt
    acc[:] = _acc(pos, mass, G, softening)
    vel += acc * dt / 2.0
    return 0.5 * np.sum(mass * vel**2)  # kinetic energy


def arc_distance(theta_1, phi_1, theta_2, phi_2):
    temp = (np.sin((theta_2 - theta_1) / 2) ** 2 +
            np.cos(theta_1) * np.cos(theta_2) * np.sin((phi_2 - phi_1) / 2) ** 2)
    return 2 * np.arctan2(np.sqrt(temp), np.sqrt(1 - temp))


def reductions(x, m):
    return (x.sum(axis=0), np.mean(x, axis=1, keepdims=True), x.max(initial=-10.0),
            np.min(x, axis=0, where=m, initial=5.0), np.sum(x, where=m),
            np.prod(x[:2] * 0.5 + 1, axis=1), x.std(), np.var(x, axis=0),
            np.cumsum(x, axis=1), np.cumprod(x[:, :3] * 0.1 + 1, axis=0), np.argmax(x, axis=1),
            np.add.reduce(x, axis=1), np.maximum.accumulate(x, axis=0), x.any(), (x > 0).all(),
            np.count_nonzero(x > 0.5), np.trace(x[:, :x.shape[0]]))


def int_ops(a, b):
    s = a.sum()
    return (a + b, a * 3, a // (np.abs(b) + 1), a % 7, a / 2, s, a.mean(), np.cumsum(a),
            a << 1, a & b, a ^ 0x5, np.maximum(a, b), a + 1.5, np.sum(a > b),
            np.clip(a, -3, 3))


def complex_fft(z, x):
    spectrum = np.fft.fft(x)
    z.real[:] = np.abs(spectrum[:z.shape[0]])
    z.imag *= -1.0
    return (spectrum, np.fft.ifft(spectrum).real, np.fft.rfft(x), np.abs(z), np.angle(z),
            np.conj(z) * z, np.fft.fft2(np.outer(x[:4], x[:4])))


# ---------------------------------------------------------------- views, masks, out=


def views_write_through(A, v):
    row = A[2]
    row[:] = 0.0
    A.T[0] = 1.0
    flat = A.reshape(-1)
    flat[::3] += 1.0
    col = A[:, 1]
    col.fill(-2.0)
    block = A[1:, :2]
    block *= 2.0
    np.copyto(A[-1], v)
    A.flat[5] = 7.0
    sq = A[None, 3:4][0]
    sq[0, -1] = 42.0
    return A.sum(axis=1), A.ravel()[:4]


def mask_updates(A, B, C, D):
    A[A < 0] = 0.0
    B[B > 0.5] += 1.0
    C[D > 0] = D[D > 0]
    B[A > 1.0] = C[A > 1.0] * 2.0 + 1.0
    np.putmask(D, D < -1.0, -1.0)
    np.place(C, C > 1.5, [9.0, 8.0])
    return A[A > 0.2].sum(), B[B > 0.7].mean(), C[D < 0].max()


def out_ufuncs(x, y, z, w):
    np.add(x, y, out=z)
    np.multiply(z[:-1], 2.0, out=z[1:])
    np.exp(x, out=w, where=x > 0)
    np.sqrt(np.abs(y), out=y)
    q, r = np.divmod(x * 10, 3.0)
    return q, r, np.negative(x), np.hypot(x, y)


def creation_and_shapes(x, n):
    z = np.zeros((n, n))
    z[np.arange(n), np.arange(n)] = x[:n]
    e = np.eye(n) * 2 + np.identity(n)
    g = np.fromfunction(lambda i, j: i * 10 + j, (n, n))
    gx, gy = np.meshgrid(np.linspace(0.0, 1.0, n), np.arange(n))
    full = np.full((2, n), x[0])
    t = np.tril(z + g) - np.triu(e, 1)
    stacked = np.concatenate([np.stack([x[:n], x[-n:]]), np.vstack([x[:n]]),
                              np.hstack([x[:1], x[1:n]])[None, :]], axis=0)
    idx = np.argsort(x)
    return (z, e, g, gx * gy, full, t, stacked, np.sort(x), x[idx], np.roll(x, 2),
            np.diag(np.diag(g)), np.trace(g), np.kron(e[:2, :2], z[:2, :2]),
            np.tensordot(g, e, axes=1), np.einsum("ij,jk->ik", g, e), np.ones_like(x),
            np.where(x > 0, x, -1), np.select([x < -1, x > 1], [x * 2, x * 3], default=0.0),
            np.clip(x, -0.5, 0.5), np.outer(x[:3], x[:2]), np.dot(z, x[:n]),
            np.swapaxes(np.reshape(g, (n, n, 1)), 0, 2), np.squeeze(g[:, :1]),
            np.flip(g, axis=0), np.matmul(g, e), np.transpose(g).copy())


def scalar_promotion(f32, i64, i32, u8):
    return (f32 * 2.0, f32 + np.float64(1.0), i32 * 2, i32 + 2.5, i64 / 3, u8 + 200,
            u8.astype(np.int16) * 300, f32 + i32, i32 + i64, np.float32(3) * f32,
            np.sqrt(np.abs(i32)), f32 ** 2, (u8 > 100).sum(), np.mean(f32), np.sum(u8))


def time_loop_rebind(u, steps):
    for _ in range(steps):
        u = u + 0.1 * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
    return u


def row_normalize(A):
    norms = np.sqrt((A ** 2).sum(axis=1))
    for i in range(A.shape[0]):
        A[i] /= norms[i]
    return norms


def cumulative_update(x, w):
    w += np.cumsum(x)
    w[w > 3.0] -= 3.0
    x[::2] = w[::2] * 0.5
    return np.argmax(w), np.cumprod(np.ones_like(x) * 1.01)


# ---------------------------------------------------------------- more kernels (benchmarks/numpy_speed.py)


def syr2k(alpha, beta, C, A, B):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * alpha * B[i, k] + B[:i + 1, k] * alpha * A[i, k]


def hdiff(in_field, out_field, coeff):
    ni, nj = out_field.shape[0], out_field.shape[1]
    lap_field = 4.0 * in_field[1:ni + 3, 1:nj + 3, :] - (
        in_field[2:ni + 4, 1:nj + 3, :] + in_field[0:ni + 2, 1:nj + 3, :] +
        in_field[1:ni + 3, 2:nj + 4, :] + in_field[1:ni + 3, 0:nj + 2, :])
    res = lap_field[1:, 1:nj + 1, :] - lap_field[:-1, 1:nj + 1, :]
    flx_field = np.where(
        (res * (in_field[2:ni + 3, 2:nj + 2, :] - in_field[1:ni + 2, 2:nj + 2, :])) > 0, 0, res)
    res = lap_field[1:ni + 1, 1:, :] - lap_field[1:ni + 1, :-1, :]
    fly_field = np.where(
        (res * (in_field[2:ni + 2, 2:nj + 3, :] - in_field[2:ni + 2, 1:nj + 2, :])) > 0, 0, res)
    out_field[:, :, :] = in_field[2:ni + 2, 2:nj + 2, :] - coeff[:, :, :] * (
        flx_field[1:, :, :] - flx_field[:-1, :, :] + fly_field[:, 1:, :] - fly_field[:, :-1, :])


def power_iteration(A, x, iters):
    for _ in range(iters):
        x = A @ x
        x /= np.linalg.norm(x)
    return x, x @ (A @ x)


def conjugate_gradient(A, b, x, iters):
    r = b - A @ x
    p = r.copy()
    rs = r @ r
    for _ in range(iters):
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        rs_new = r @ r
        p = r + (rs_new / rs) * p
        rs = rs_new
    return np.sqrt(rs)


def layer_norm(x, gamma, beta):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def batch_norm(x, gamma, beta, running_mean, running_var):
    n = x.shape[0] * x.shape[2] * x.shape[3]
    mean = np.mean(x, axis=(0, 2, 3))
    var = np.var(x, axis=(0, 2, 3))
    running_mean *= 0.9
    running_mean += 0.1 * mean
    running_var *= 0.9
    running_var += 0.1 * var * n / (n - 1)
    xhat = (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
    return gamma[:, None, None] * xhat + beta[:, None, None]


def conv2d(x, w, b):
    # 'valid' convolution of NHWC images with (K, K, Cin, Cout) weights, bias and ReLU
    K = w.shape[0]
    H, W = x.shape[1] - K + 1, x.shape[2] - K + 1
    out = np.zeros((x.shape[0], H, W, w.shape[3]), dtype=x.dtype)
    for i in range(K):
        for j in range(K):
            out += x[:, i:i + H, j:j + W, :] @ w[i, j]
    return np.maximum(out + b, 0.0)


def attention(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s -= np.max(s, axis=-1, keepdims=True)
    p = np.exp(s)
    p /= np.sum(p, axis=-1, keepdims=True)
    return p @ v


def masked_stats(x, valid):
    count = np.sum(valid, axis=0)
    mean = np.sum(x, axis=0, where=valid) / np.maximum(count, 1)
    sq = np.sum((x - mean) ** 2, axis=0, where=valid)
    return (mean, np.sqrt(sq / np.maximum(count - 1, 1)),
            np.max(x, axis=0, where=valid, initial=-np.inf), x[valid].sum())


def azimint_naive(data, radius, npt):
    rmax = radius.max()
    res = np.zeros(npt, dtype=np.float64)
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        mask_r12 = np.logical_and((r1 <= radius), (radius < r2))
        values_r12 = data[mask_r12]
        res[i] = np.mean(values_r12)
    return res


def histogram(x, w):
    counts, edges = np.histogram(x, bins=64, range=(0.0, 1.0))
    wsum, _ = np.histogram(x, bins=64, range=(0.0, 1.0), weights=w)
    return counts, wsum / np.maximum(counts, 1), edges


def kmeans_step(X, C):
    d = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    labels = np.argmin(d, axis=1)
    onehot = (labels[:, None] == np.arange(C.shape[0])[None, :]).astype(X.dtype)
    counts = onehot.sum(axis=0)
    sums = onehot.T @ X
    C[:] = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1.0)[:, None], C)
    return labels, np.min(d, axis=1).sum()


def fft_convolve(x, k):
    n = x.shape[-1] + k.shape[-1] - 1
    return np.fft.irfft(np.fft.rfft(x, n) * np.fft.rfft(k, n), n)


def fft_lowpass(img, keep):
    spectrum = np.fft.fft2(img)
    fy = np.abs(np.fft.fftfreq(img.shape[0]))[:, None]
    fx = np.abs(np.fft.fftfreq(img.shape[1]))[None, :]
    spectrum[(fy > keep) | (fx > keep)] = 0.0
    return np.fft.ifft2(spectrum).real


def median_filter(x):
    # 3x3 median of the interior of an image; the border is kept
    n, m = x.shape
    windows = np.stack([x[i:n - 2 + i, j:m - 2 + j] for i in range(3) for j in range(3)])
    out = x.copy()
    out[1:-1, 1:-1] = np.median(windows, axis=0)
    return out


def spearman(x):
    ranks = np.argsort(np.argsort(x, axis=0), axis=0).astype(np.float64)
    ranks -= ranks.mean(axis=0)
    ranks /= np.sqrt((ranks ** 2).sum(axis=0))
    return ranks.T @ ranks


def winsorize(x):
    lo = np.percentile(x, 5.0, axis=0)
    hi = np.percentile(x, 95.0, axis=0)
    x[:] = np.clip(x, lo, hi)
    return x.mean(axis=0), x.std(axis=0)


def nbody_sim(mass, pos, vel, steps, dt, G, softening):
    acc = _acc(pos, mass, G, softening)
    for _ in range(steps):
        vel += acc * dt / 2.0
        pos += vel * dt
        acc = _acc(pos, mass, G, softening)
        vel += acc * dt / 2.0
    return 0.5 * np.sum(mass * vel**2)


def compute(array_1, array_2, a, b, c):
    return np.clip(array_1, 2, 10) * a + array_2 * b + c


# ------------------------------------- matrix-vector pairs and small dense layers (float64)


def atax(A, x):
    return A.T @ (A @ x)


def bicg(A, p, r):
    q = A @ p
    s = r @ A
    return q, s


def mvt_t(x1, x2, y_1, y_2, A):
    # mvt as written with the transpose (the corpus's mvt has y_2 @ A)
    x1 += A @ y_1
    x2 += A.T @ y_2


def mlp_small(x, W1, b1, W2, b2, steps):
    for _ in range(steps):
        x = np.maximum(x @ W1 + b1, 0.0) @ W2 + b2
    return x


# ------------------------------------- helpers, uninitialized arrays, all-scalar arguments


def match(b1, b2):
    # NPBench nussinov's helper: a return out of an `if` on traced values
    if b1 + b2 == 3:
        return 1
    return 0


def match_expr(b1, b2):
    return 1 if b1 + b2 == 3 else 0


def pair_matches(seq1, seq2):
    # a helper with an `if` on traced values called in a loop, stored and summed
    M = np.zeros(seq1.shape[0], dtype=np.int64)
    total = 0
    for i in range(seq1.shape[0]):
        M[i] = match(seq1[i], seq2[i])
        total += match_expr(seq1[i], seq2[-1 - i])
    return M, np.asarray(total)


def ndarray_fill(x):
    # np.ndarray(shape, dtype) as NumPy's uninitialized constructor, filled in loops
    I, J, K = x.shape  # noqa: E741  (the issue's names)
    out = np.ndarray((I, J, K), dtype=x.dtype)
    norms = np.ndarray((I, J))  # float64 by default
    cols = np.ndarray((K, I), order="F")
    for i in range(I):
        for j in range(J):
            out[i, j] = x[i, j] * 2.0 - x[i, j].mean()
            norms[i, j] = np.sum(x[i, j] ** 2)
        cols[:, i] = x[i].sum(axis=0)
    return out, norms, cols.ravel(order="K")


def chain_energy(x):
    # a 0-d result: the energy of one chain of spins
    return 0.5 * np.sum(x * x) - np.sum(x[:-1] * x[1:])


def chain_energies(X, E):
    # a traced scalar stored into an element: of an argument, of arrays the kernel makes
    F = np.zeros(X.shape[0])
    G = np.ndarray(X.shape[0])
    for i in range(X.shape[0]):
        E[i] = chain_energy(X[i])
        F[i] = chain_energy(X[i] * 0.5)
        G[i] = E[i] - F[i]
    return F, G


def mandelbrot(xmin, xmax, ymin, ymax, width, height, maxiter):
    # only Python scalars: sizes and the trip count static, the bounds static or traced
    X = np.linspace(xmin, xmax, width)
    Y = np.linspace(ymin, ymax, height)
    C = X + Y[:, None] * 1j
    N = np.zeros(C.shape, dtype=int)
    Z = np.zeros(C.shape, np.complex128)
    for n in range(maxiter):
        I = np.less(abs(Z), 2.0)  # noqa: E741  (the classic's name)
        N[I] = n
        Z[I] = Z[I]**2 + C[I]
    N[N == maxiter - 1] = 0  # noqa: SIM300  (the classic's form)
    return Z, N


# ------------------------------------- elementwise with masks and clipping


def clip_inplace(a):
    np.clip(a, -0.5, 0.5, out=a)


def clip_assign(a, lo, hi):
    a[:] = np.clip(a, lo, hi)


def where_chain(a, t1, t2):
    return np.where(a > t1, a * 2, np.where(a < t2, -a, a))


def where_scalars(a):
    return np.where(a > 0, 1.0, -1.0)


def mask_zero(a):
    a[a < 0] = 0


def mask_copy(a, b, mask):
    a[mask] = b[mask] * 2


def mask_increment(a, m):
    a[m] += 1


def _sq(rng, n):
    return rng.standard_normal((n, n))


def _spd(rng, n):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def _steps(r):
    return int(r.integers(3, 8))


def _pair(r, shape):
    a = r.random(shape)
    return a, a.copy()


def _vectors(r, count, n):
    return tuple(r.random(n) for _ in range(count))


def _mk_fdtd(r):
    n, m, t = _n(r), _n(r), int(r.integers(2, 6))
    return t, r.random((n, m)), r.random((n, m)), r.random((n, m)), r.random(t)


def _mk_adi(r):
    n = _n(r, 5, 10)
    return 2, n, r.random((n, n))


def _mk_gemm(r):
    n, m, k = _n(r), _n(r), _n(r)
    return 1.5, 1.2, r.random((n, m)), r.random((n, k)), r.random((k, m))


def _mk_k2mm(r):
    n = _n(r)
    return (1.5, 1.2, *(_sq(r, n) for _ in range(4)))


def _mk_gemver(r):
    n = _n(r)
    return (1.5, 1.2, _sq(r, n), *_vectors(r, 8, n))


def _mk_gesummv(r):
    n = _n(r)
    return 1.5, 1.2, _sq(r, n), _sq(r, n), r.random(n)


def _mk_atax_bicg(r):
    n, m = _n(r), _n(r)
    return r.random((n, m)), r.random(m), r.random(m), r.random(n)


def _mk_mvt(r):
    n = _n(r)
    return (*_vectors(r, 4, n), _sq(r, n))


def _mk_syrk(r):
    n, m = _n(r, 4, 9), _n(r, 3, 7)
    return 1.5, 1.2, r.random((n, n)), r.random((n, m))


def _mk_trmm(r):
    n, m = _n(r, 4, 9), _n(r, 3, 7)
    return 1.5, r.random((n, n)), r.random((n, m))


def _mk_doitgen(r):
    a, b, c = _n(r, 2, 5), _n(r, 2, 6), _n(r, 3, 7)
    return a, b, c, r.random((a, b, c)), r.random((c, c))


def _dominant(r, n):
    return r.random((n, n)) + n * np.eye(n)


def _mk_ludcmp(r):
    n = _n(r, 4, 10)
    return _dominant(r, n), r.random(n)


def _mk_trisolv(r):
    n = _n(r)
    return _dominant(r, n), r.random(n), r.random(n)


def _mk_linalg(r):
    n = _n(r, 3, 6)
    return r.standard_normal((n + 2, n)), r.standard_normal(n + 2), _spd(r, n + 2)


def _mk_data(r):
    m, n = _n(r, 4, 9), _n(r, 8, 16)
    return m, float(n), r.random((n, m))


def _mk_mlp(r):
    b, i, h, o = _n(r), _n(r), _n(r), _n(r)
    return (r.standard_normal((b, i)), r.standard_normal((i, h)), r.standard_normal(h),
            r.standard_normal((h, h)), r.standard_normal(h), r.standard_normal((h, o)),
            r.standard_normal(o))


def _mk_nbody(r):
    n = _n(r)
    return (r.random((n, 1)) + 0.5, r.standard_normal((n, 3)), r.standard_normal((n, 3)),
            r.standard_normal((n, 3)), 0.01, 1.0, 0.1)


def _mk_reductions(r):
    n, m = _n(r, 4, 9), _n(r, 9, 14)
    return r.standard_normal((n, m)), r.random((n, m)) > 0.3


def _mk_int_ops(r):
    n = _n(r)
    return (r.integers(-50, 50, n).astype(np.int32), r.integers(-50, 50, n).astype(np.int32))


def _mk_complex(r):
    n = _n(r)
    return r.standard_normal(n) + 1j * r.standard_normal(n), r.standard_normal(n + 4)


def _mk_normal(r, count, shape):
    return tuple(r.standard_normal(shape) for _ in range(count))


def _mk_views(r):
    n = _n(r, 5, 9)
    return _sq(r, n), r.standard_normal(n)


def _mk_promotion(r):
    n = _n(r)
    return (r.standard_normal(n).astype(np.float32), r.integers(-9, 9, n),
            r.integers(-9, 9, n).astype(np.int32), r.integers(0, 255, n).astype(np.uint8))


def _mk_syr2k(r):
    n, m = _n(r, 4, 9), _n(r, 3, 7)
    return 1.5, 1.2, r.random((n, n)), r.random((n, m)), r.random((n, m))


def _mk_hdiff(r):
    i, j, k = _n(r, 4, 8), _n(r, 4, 8), _n(r, 2, 5)
    return r.random((i + 4, j + 4, k)), r.random((i, j, k)), r.random((i, j, k))


def _mk_power(r):
    n = _n(r)
    return _spd(r, n), r.random(n), int(r.integers(2, 10))


def _mk_layer_norm(r):
    b, d = _n(r), _n(r)
    return r.standard_normal((b, d)), r.random(d) + 0.5, r.standard_normal(d)


def _mk_cg(r):
    n = _n(r)
    return _spd(r, n), r.random(n), r.random(n) * 0.1, int(r.integers(2, 10))


def _mk_batch_norm(r):
    b, c, h, w = _n(r, 2, 5), _n(r, 2, 5), _n(r, 3, 7), _n(r, 3, 7)
    return (r.standard_normal((b, c, h, w)), r.random(c) + 0.5, r.standard_normal(c),
            r.standard_normal(c), r.random(c) + 0.5)


def _mk_conv2d(r):
    n, h, w, ci, co = _n(r, 1, 3), _n(r, 5, 9), _n(r, 5, 9), _n(r, 1, 4), _n(r, 1, 4)
    return (r.standard_normal((n, h, w, ci)), r.standard_normal((3, 3, ci, co)),
            r.standard_normal(co))


def _mk_attention(r):
    shape = (_n(r, 1, 3), _n(r, 1, 3), _n(r, 4, 9), _n(r, 2, 6))
    return _mk_normal(r, 3, shape)


def _radii(r, n):
    # The largest radius is exactly 1.0, so the last bin's upper edge rmax * npt / npt is 1.0
    # however it is rounded (XLA:CPU divides by a constant as a multiply by its reciprocal).
    radius = r.random(n)
    radius[r.integers(n)] = 1.0
    return radius


def _mk_azimint(r):
    n = _n(r, 200, 400)
    return r.random(n), _radii(r, n), int(r.integers(3, 10))


def _mk_nbody_sim(r):
    n = _n(r)
    return (r.random((n, 1)) + 0.5, r.standard_normal((n, 3)), r.standard_normal((n, 3)),
            int(r.integers(2, 10)), 0.01, 1.0, 0.1)


def _mk_matches(r, n=None):
    n = _n(r, 10, 30) if n is None else n
    return r.integers(0, 4, n), r.integers(0, 4, n)


def _mk_chains(r, shape=None):
    n, m = (_n(r), _n(r)) if shape is None else shape
    return r.standard_normal((n, m)), r.random(n)


def _mk_matvec(r, shape=None):
    n, m = (_n(r), _n(r)) if shape is None else shape
    return r.standard_normal((n, m)), r.random(m), r.random(n)


def _mk_mvt_t(r, n=None):
    n = _n(r) if n is None else n
    return (*_vectors(r, 4, n), r.standard_normal((n, n)))


def _mk_mlp_small(r, shape=None):
    # Weights scaled by 1 / sqrt(width): the repeated layers neither blow up nor vanish.
    (batch, width, steps) = (_n(r, 2, 6), _n(r), int(r.integers(2, 6))) if shape is None else shape
    w = 1 / np.sqrt(width)
    return (r.standard_normal((batch, width)), r.standard_normal((width, width)) * w,
            r.standard_normal(width) * 0.1, r.standard_normal((width, width)) * w,
            r.standard_normal(width) * 0.1, steps)


def _mk_mandelbrot(r, size=None):
    width, height = (_n(r, 8, 20), _n(r, 8, 20)) if size is None else size
    x0, y0 = -2.0 - r.random() * 0.2, -1.2 - r.random() * 0.2
    return (x0, 0.5 + r.random() * 0.2, y0, -y0, width, height,
            int(r.integers(5, 15)) if size is None else 50)


def _mk_masked(r, shape=None, count=1, p=0.5):
    """``count`` standard normal arrays and a mask True with probability ``p``."""
    shape = (_n(r), _n(r)) if shape is None else shape
    return (*_mk_normal(r, count, shape), r.random(shape) < p)


def _mk_compute(r):
    n = _n(r, 20, 60)
    return r.integers(0, 1000, (n, n)), r.integers(0, 1000, (n, n)), 4, 3, 2


KERNELS: tuple[Kernel, ...] = (
    Kernel("jacobi_1d", jacobi_1d, lambda r: (_steps(r), *_pair(r, _n(r, 10, 30))),
           ("args[1]", "args[2]")),
    Kernel("jacobi_2d", jacobi_2d, lambda r: (_steps(r), *_pair(r, (_n(r), _n(r)))),
           ("args[1]", "args[2]")),
    Kernel("heat_3d", heat_3d, lambda r: (int(r.integers(2, 6)), *_pair(
        r, (_n(r, 5, 9), _n(r, 5, 9), _n(r, 5, 9)))), ("args[1]", "args[2]")),
    Kernel("seidel_2d", seidel_2d, lambda r: (3, *_mk_adi(r)[1:]), ("args[2]",)),  # N, A
    Kernel("fdtd_2d", fdtd_2d, _mk_fdtd, ("args[1]", "args[2]", "args[3]")),
    Kernel("adi", adi, _mk_adi, ("args[2]",), tol=1e-9),
    Kernel("upwind_sweep", upwind_sweep, lambda r: (r.random((_n(r), _n(r, 10, 30))), 0.4,
                                                    int(r.integers(2, 5))), ("args[0]",)),
    Kernel("floyd_warshall", floyd_warshall, lambda r: (r.random((_n(r),) * 2) * 10,),
           ("args[0]",)),
    Kernel("gemm", gemm, _mk_gemm, ("args[2]",)),
    Kernel("k2mm", k2mm, _mk_k2mm, ("args[5]",)),
    Kernel("k3mm", k3mm, lambda r: _mk_k2mm(r)[2:]),
    Kernel("gemver", gemver, _mk_gemver, ("args[2]", "args[7]", "args[8]"), tol=1e-9),
    Kernel("gesummv", gesummv, _mk_gesummv),
    Kernel("atax_bicg", atax_bicg, _mk_atax_bicg),
    Kernel("mvt", mvt, _mk_mvt, ("args[0]", "args[1]")),
    Kernel("syrk", syrk, _mk_syrk, ("args[2]",)),
    Kernel("trmm", trmm, _mk_trmm, ("args[2]",)),
    Kernel("doitgen", doitgen, _mk_doitgen, ("args[3]",)),
    Kernel("gramschmidt", gramschmidt, lambda r: (r.standard_normal((_n(r, 8, 12),
                                                                     _n(r, 3, 7))),),
           ("args[0]",), tol=1e-8),
    Kernel("lu", lu, lambda r: (_dominant(r, _n(r, 4, 10)),), ("args[0]",), tol=1e-9),
    Kernel("ludcmp", ludcmp, _mk_ludcmp, ("args[0]",), tol=1e-9),
    Kernel("cholesky", cholesky, lambda r: (_spd(r, _n(r, 4, 10)),), ("args[0]",), tol=1e-9),
    Kernel("trisolv", trisolv, _mk_trisolv, ("args[1]",), tol=1e-9),
    # Levinson's recursion on emulated float64: 1.3e-7 off on a TPU v5e (each step divides
    # by beta and feeds the next)
    Kernel("durbin", durbin, lambda r: (r.random(_n(r)) * 0.3,), tol=1e-8, tpu_tol=1e-6),
    Kernel("linalg_suite", linalg_suite, _mk_linalg, tol=1e-7,
           tpu_refuses="XLA's TPU compiler implements LU only for float32 and complex64"),
    Kernel("correlation", correlation, _mk_data, ("args[2]",), tol=1e-9),
    Kernel("covariance", covariance, _mk_data, ("args[2]",), tol=1e-9),
    Kernel("softmax", softmax, lambda r: (r.standard_normal((_n(r), _n(r), _n(r)))
                                          .astype(np.float32),), tol=1e-5),
    Kernel("mlp_forward", mlp_forward, _mk_mlp, tol=1e-9),
    Kernel("nbody_step", nbody_step, _mk_nbody, ("args[1]", "args[2]", "args[3]"), tol=1e-9),
    Kernel("arc_distance", arc_distance, lambda r: _vectors(r, 4, _n(r, 10, 40))),
    Kernel("reductions", reductions, _mk_reductions, tol=1e-9),
    Kernel("int_ops", int_ops, _mk_int_ops, tol=1e-12),
    Kernel("complex_fft", complex_fft, _mk_complex, ("args[0]",), tol=1e-9,
           tpu_refuses=_TPU_NO_COMPLEX128_ABS),
    Kernel("views_write_through", views_write_through, _mk_views, ("args[0]",)),
    Kernel("mask_updates", mask_updates, lambda r: _mk_normal(r, 4, (_n(r), _n(r))),
           ("args[0]", "args[1]", "args[2]", "args[3]")),
    Kernel("out_ufuncs", out_ufuncs, lambda r: _mk_normal(r, 4, _n(r)),
           ("args[1]", "args[2]", "args[3]")),
    Kernel("creation_and_shapes", creation_and_shapes, lambda r: (
        r.standard_normal(_n(r, 8, 14)), _n(r, 3, 6)), tol=1e-9),
    Kernel("scalar_promotion", scalar_promotion, _mk_promotion, tol=1e-6),
    Kernel("time_loop_rebind", time_loop_rebind, lambda r: (r.random(_n(r, 10, 30)),
                                                            int(r.integers(3, 9)))),
    Kernel("row_normalize", row_normalize, lambda r: (r.random((_n(r), _n(r))) + 0.1,),
           ("args[0]",)),
    Kernel("cumulative_update", cumulative_update, lambda r: _vectors(r, 2, _n(r)),
           ("args[0]", "args[1]")),
    Kernel("syr2k", syr2k, _mk_syr2k, ("args[2]",)),
    Kernel("hdiff", hdiff, _mk_hdiff, ("args[1]",)),
    Kernel("power_iteration", power_iteration, _mk_power, tol=1e-9),
    Kernel("conjugate_gradient", conjugate_gradient, _mk_cg, ("args[2]",), tol=1e-8),
    Kernel("layer_norm", layer_norm, _mk_layer_norm, tol=1e-9),
    Kernel("batch_norm", batch_norm, _mk_batch_norm, ("args[3]", "args[4]"), tol=1e-9),
    Kernel("conv2d", conv2d, _mk_conv2d, tol=1e-9),
    Kernel("attention", attention, _mk_attention, tol=1e-9),
    Kernel("masked_stats", masked_stats, _mk_reductions, tol=1e-9),
    Kernel("azimint_naive", azimint_naive, _mk_azimint, tol=1e-9),
    Kernel("histogram", histogram, lambda r: _vectors(r, 2, _n(r, 50, 200)), tol=1e-9),
    Kernel("kmeans_step", kmeans_step, lambda r: (r.standard_normal((_n(r, 30, 60), 3)),
                                                  r.standard_normal((_n(r, 2, 6), 3))),
           ("args[1]",), tol=1e-9),
    Kernel("fft_convolve", fft_convolve, lambda r: (r.standard_normal((_n(r, 2, 5), _n(r, 8, 30))),
                                                    r.standard_normal(_n(r, 2, 8))), tol=1e-9,
           tpu_refuses=_TPU_NO_FLOAT64_FFT),
    Kernel("fft_lowpass", fft_lowpass, lambda r: (r.standard_normal((_n(r, 6, 20), _n(r, 6, 20))),
                                                  0.2), tol=1e-9, tpu_refuses=_TPU_NO_FLOAT64_FFT),
    Kernel("median_filter", median_filter, lambda r: (r.random((_n(r, 5, 12), _n(r, 5, 12))),)),
    Kernel("spearman", spearman, lambda r: (r.standard_normal((_n(r, 8, 20), _n(r, 2, 6))),),
           tol=1e-9),
    Kernel("winsorize", winsorize, lambda r: (r.standard_normal((_n(r, 20, 60), _n(r, 2, 6))),),
           ("args[0]",), tol=1e-9),
    Kernel("nbody_sim", nbody_sim, _mk_nbody_sim, ("args[1]", "args[2]"), tol=1e-9),
    Kernel("compute", compute, _mk_compute, tol=0),
    Kernel("pair_matches", pair_matches, _mk_matches, tol=0),
    Kernel("ndarray_fill", ndarray_fill, lambda r: (r.standard_normal((_n(r, 2, 6), _n(r, 2, 6),
                                                                       _n(r, 2, 6))),)),
    Kernel("chain_energies", chain_energies, _mk_chains, ("args[1]",)),
    Kernel("mandelbrot", mandelbrot, _mk_mandelbrot, tol=1e-9,
           tpu_refuses=_TPU_NO_COMPLEX128_ABS + "; with other bounds XLA's TPU compiler fails "
           "an internal check (RET_CHECK in its precision emitters) on its complex128 loop"),
    Kernel("clip_inplace", clip_inplace, lambda r: _mk_normal(r, 1, (_n(r), _n(r))),
           ("args[0]",), tol=0),
    Kernel("clip_assign", clip_assign, lambda r: (r.standard_normal((_n(r), _n(r))), -0.5, 0.5),
           ("args[0]",), tol=0),
    Kernel("where_chain", where_chain, lambda r: (r.standard_normal((_n(r), _n(r))), 0.5, -0.5),
           tol=0),
    Kernel("where_scalars", where_scalars, lambda r: _mk_normal(r, 1, (_n(r), _n(r))), tol=0),
    Kernel("mask_zero", mask_zero, lambda r: _mk_normal(r, 1, (_n(r), _n(r))), ("args[0]",),
           tol=0),
    Kernel("mask_copy", mask_copy, lambda r: _mk_masked(r, count=2), ("args[0]",), tol=0),
    Kernel("mask_increment", mask_increment, _mk_masked, ("args[0]",), tol=0),
    Kernel("atax", atax, lambda r: _mk_matvec(r)[:2], tol=1e-9),
    Kernel("bicg", bicg, _mk_matvec, tol=1e-9),
    Kernel("mvt_t", mvt_t, _mk_mvt_t, ("args[0]", "args[1]"), tol=1e-9),
    Kernel("mlp_small", mlp_small, _mk_mlp_small, tol=1e-9),
)
