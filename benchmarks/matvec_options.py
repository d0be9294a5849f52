"""XLA:CPU's options for float64 matrix-vector products and small dense layers, side by side
with NumPy (OpenBLAS), as ratios measured in one run (issue 39, family 1).

Each workload is written in JAX the ways XLA can be handed it, each form compiled under each
XLA:CPU option on its own (per compile, through ``compiler_options``: nothing is left in
XLA_FLAGS) and timed round-robin beside NumPy's own code on the same data (each form in a round
of its own, so that a slow form's traffic does not evict A before a fast one's sample), inputs
already on the device (the copy of a NumPy array that is not 64-byte aligned is another matter:
``numpy_speed.py --allocator numpy``):

- ``A.T @ y`` three ways: ``transpose`` (A.T, as jax.numpy traces it: XLA:CPU copies A.T and
  fuses the copy into a loop computing the dot element by element, reading A column by
  column), ``dot_general`` contracting A's first axis (A read row by row: what NumPy mode traces
  and the Enzyme-JAX passes leave), and ``y @ A``;
- the BiCG pair ``A @ p, r @ A`` as two dots, as two multiply-reduces, and in one pass over A
  (a loop over blocks of rows: each block read from memory once for both products);
- ``A.T @ (A @ x)``;
- a small MLP ``relu(x @ W1 + b1) @ W2 + b2`` repeated in a loop, at two sizes.

Options, each alone: XLA's defaults; ``eigen 1 thr`` (``xla_cpu_multi_thread_eigen=false``:
Eigen's dot on the calling thread); ``eigen dots`` (``xla_cpu_experimental_ynn_fusion_type=''``:
matrix products on Eigen, not YNNPACK, which XLA:CPU hands float64 matrix products by default;
matrix-vector dots are Eigen's either way); both; ``ynn fuse dot`` (YNNPACK's dot fusions with
their neighbours, and nothing else of YNNPACK's); ``xnnpack``; ``onednn``; ``fast math``; ``no
fusion emitters``. Child processes run the table again (``--children``): pinned to one core
(XLA's thread pool and OpenBLAS both size themselves from the CPU affinity), and with XLA:CPU's
small-loop threshold at reactant_lab's 256 KiB and at 4 MiB (XLA_FLAGS of the child: a backend
option no per-compile option reaches), which compiles the MLP's loop into one kernel.

NumPy's time is its best of OpenBLAS on all threads and on one (OPENBLAS_THREAD_TIMEOUT=4, as in
numpy_speed.py: each threaded call then wakes its threads, costly for small products on a loaded
machine); the ratios are NumPy's time over the form's (> 1: faster than NumPy).

Run: .venv/bin/python benchmarks/matvec_options.py [--n 2000] [--rounds 15] [--children]
     [--only TEXT ...]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # before NumPy loads OpenBLAS

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from reactant_lab.bench.measure import Variant, round_robin, warm_up

jax.config.update("jax_enable_x64", True)

_YNN = "xla_cpu_experimental_ynn_fusion_type"
OPTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "eigen 1 thr": {"xla_cpu_multi_thread_eigen": False},
    "eigen dots": {_YNN: ""},
    "eigen dots 1 thr": {_YNN: "", "xla_cpu_multi_thread_eigen": False},
    "ynn fuse dot": {_YNN: "LIBRARY_FUSION_TYPE_DOT"},
    "xnnpack": {"xla_cpu_use_xnnpack": True},
    "onednn": {"xla_cpu_use_onednn": True},
    "fast math": {"xla_cpu_enable_fast_math": True},
    "no fusion emitters": {"xla_cpu_use_fusion_emitters": False},
}
"""Column -> XLA:CPU options of one compile."""

_LOOP = "xla_cpu_small_while_loop_byte_threshold"
CHILDREN: dict[str, tuple[int | None, str]] = {
    "pinned to 1 core": (1, ""),
    "small-loop threshold 256 KiB": (None, f"--xla_backend_extra_options={_LOOP}=262144"),
    "small-loop threshold 4 MiB": (None, f"--xla_backend_extra_options={_LOOP}=4194304"),
}
"""Child process -> (cores it is pinned to, or None; XLA_FLAGS)."""


def _dot(a: Any, b: Any, ca: int, cb: int) -> Any:
    return lax.dot_general(a, b, (((ca,), (cb,)), ((), ())))


def _rows(n: int) -> int:
    """Rows per block of the one-pass pair: about 0.5 MB of A, well inside L2."""
    rows = max(1, (1 << 16) // n)
    while n % rows:
        rows -= 1
    return rows


def one_pass(A: Any, p: Any, r: Any) -> tuple[Any, Any]:
    """``(A @ p, r @ A)`` reading A once: a loop over blocks of rows, both products of a block
    while it is in cache."""
    n, m = A.shape
    rows = _rows(n)
    A3, r2 = A.reshape(n // rows, rows, m), r.reshape(n // rows, rows)

    def block(k: Any, qs: tuple[Any, Any]) -> tuple[Any, Any]:
        q, s = qs
        a = lax.dynamic_index_in_dim(A3, k, 0, keepdims=False)
        q = lax.dynamic_update_index_in_dim(q, a @ p, k, 0)
        return q, s + lax.dynamic_index_in_dim(r2, k, 0, keepdims=False) @ a

    q, s = lax.fori_loop(0, n // rows, block, (jnp.zeros((n // rows, rows)), jnp.zeros(m)))
    return q.reshape(n), s


def mlp_loop(x: Any, W1: Any, b1: Any, W2: Any, b2: Any, steps: Any) -> Any:
    return lax.fori_loop(0, steps.shape[0],
                         lambda _, x: jnp.maximum(x @ W1 + b1, 0.0) @ W2 + b2, x)


def np_mlp(x: Any, W1: Any, b1: Any, W2: Any, b2: Any, steps: Any) -> Any:
    for _ in range(steps.shape[0]):
        x = np.maximum(x @ W1 + b1, 0.0) @ W2 + b2
    return x


@dataclass(frozen=True)
class Form:
    """One way of writing a workload for XLA."""

    workload: str
    form: str
    fn: Callable[..., Any]


FORMS = (
    Form("A @ x", "dot", lambda A, x, y: A @ x),
    Form("A.T @ y", "transpose", lambda A, x, y: A.T @ y),
    Form("A.T @ y", "dot_general", lambda A, x, y: _dot(A, y, 0, 0)),
    Form("A.T @ y", "y @ A", lambda A, x, y: y @ A),
    Form("A @ p, r @ A", "two dots", lambda A, x, y: (A @ x, y @ A)),
    Form("A @ p, r @ A", "two reduces", lambda A, x, y: ((A * x).sum(1), (A * y[:, None]).sum(0))),
    Form("A @ p, r @ A", "one pass", one_pass),
    Form("A.T @ (A @ x)", "transpose", lambda A, x, y: A.T @ (A @ x)),
    Form("A.T @ (A @ x)", "dot_general", lambda A, x, y: _dot(A, A @ x, 0, 0)),
    Form("mlp 8x128 x1000", "fori_loop", mlp_loop),
    Form("mlp 64x256 x100", "fori_loop", mlp_loop),
)

NUMPY: dict[str, Callable[..., Any]] = {
    "A @ x": lambda A, x, y: A @ x,
    "A.T @ y": lambda A, x, y: A.T @ y,
    "A @ p, r @ A": lambda A, x, y: (A @ x, y @ A),
    "A.T @ (A @ x)": lambda A, x, y: A.T @ (A @ x),
    "mlp 8x128 x1000": np_mlp,
    "mlp 64x256 x100": np_mlp,
}


def inputs(workload: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """The workload's NumPy inputs (the MLP's step count as the length of its last one)."""
    if workload.startswith("mlp"):
        batch, width, steps = (int(d) for d in workload[4:].replace(" x", "x").split("x"))
        w = 1 / np.sqrt(width)
        return (rng.standard_normal((batch, width)), rng.standard_normal((width, width)) * w,
                rng.standard_normal(width) * 0.1, rng.standard_normal((width, width)) * w,
                rng.standard_normal(width) * 0.1, np.zeros(steps))
    return rng.random((n, n)), rng.random(n), rng.random(n)


class _Blas:
    """OpenBLAS's thread count, through its C API (the library NumPy loaded)."""

    def __init__(self) -> None:
        self.set: Any = None
        self.threads = 0
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
        for path in sorted(paths):
            lib = ctypes.CDLL(path)
            for prefix in ("scipy_openblas", "openblas"):
                setter = (getattr(lib, f"{prefix}_set_num_threads64_", None)
                          or getattr(lib, f"{prefix}_set_num_threads", None))
                getter = (getattr(lib, f"{prefix}_get_num_threads64_", None)
                          or getattr(lib, f"{prefix}_get_num_threads", None))
                if setter is not None and getter is not None:
                    self.set, self.threads = setter, getter()
                    return

    def single(self, fn: Callable[..., Any]) -> Callable[..., Any] | None:
        """``fn`` run with OpenBLAS on one thread; None when it has one or cannot be told."""
        if self.set is None or self.threads <= 1:
            return None

        def call(*args: Any) -> Any:
            self.set(1)
            try:
                return fn(*args)
            finally:
                self.set(self.threads)
        return call


BLAS = _Blas()


def compiled(form: Form, args: tuple[Any, ...], options: dict[str, Any]) -> Any:
    """The form compiled with ``options``, or why it could not be (the error's first line)."""
    try:
        return jax.jit(form.fn).lower(*args).compile(compiler_options=options or None)
    except Exception as exc:  # an option this jaxlib lacks, or a value it refuses
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"


def _check(got: Any, want: Any) -> None:
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-9, atol=1e-9 * np.abs(w).max())


def form_row(form: Form, n: int, rounds: int) -> dict[str, Any]:
    """One form's row: NumPy's ms (all threads, one) and the form's ms under each option (or
    why it did not compile), sampled round-robin together. Each form is sampled apart from the
    others: a 50 ms transposing copy of a 32 MB matrix between two samples of a 1 ms dot would
    leave A out of cache for the second."""
    host = inputs(form.workload, n, np.random.default_rng(0))
    dev = tuple(jax.device_put(a) for a in host)
    numpy_fn = NUMPY[form.workload]
    want = numpy_fn(*host)
    variants = [Variant("numpy", numpy_fn, [(host, {})])]
    single = BLAS.single(numpy_fn)
    if single is not None:
        variants.append(Variant("numpy 1 thread", single, [(host, {})]))
    cells: dict[str, int | str] = {}
    for opt, options in OPTIONS.items():
        exe = compiled(form, dev, options)
        if isinstance(exe, str):
            cells[opt] = exe
            continue
        _check(exe(*dev), want)
        cells[opt] = len(variants)
        variants.append(Variant(opt, exe, [(dev, {})]))
    for v in variants:
        warm_up(v, 3)
    ms = [float(np.median(s)) * 1e3 for s in round_robin(variants, rounds)]
    return {"workload": form.workload, "form": form.form, "numpy": ms[0],
            "numpy1": ms[1] if single is not None else None,
            "options": {opt: ms[c] if isinstance(c := cells[opt], int) else c
                        for opt in OPTIONS}}


def table(n: int, rounds: int, only: list[str]) -> list[dict[str, Any]]:
    return [form_row(form, n, rounds) for form in FORMS
            if not only or any(o in form.workload for o in only)]


def show(rows: list[dict[str, Any]], title: str) -> None:
    print(f"\n{title}: NumPy's ms (all threads, one), then NumPy's best / each form's time "
          "under each option")
    head = f"{'workload':<16} {'form':<12} {'numpy':>7} {'1 thr':>7} " + " ".join(
        f"{o:>{max(7, len(o))}}" for o in OPTIONS)
    print(head)
    print("-" * len(head))
    failed: dict[str, str] = {}
    for r in rows:
        best = min(t for t in (r["numpy"], r["numpy1"]) if t is not None)
        cells = []
        for opt in OPTIONS:
            v = r["options"][opt]
            if isinstance(v, str):
                failed[opt] = v
            cells.append(f"{'-' if isinstance(v, str) else f'{best / v:.2f}x':>{max(7, len(opt))}}")
        one = "-" if r["numpy1"] is None else f"{r['numpy1']:.2f}"
        print(f"{r['workload']:<16} {r['form']:<12} {r['numpy']:>7.2f} {one:>7} "
              + " ".join(cells))
    for opt, why in failed.items():
        print(f"  {opt}: not compiled ({why})")


def child(name: str, n: int, rounds: int, only: list[str]) -> None:
    """The table again in a child process set up as CHILDREN[name] says."""
    cores, flags = CHILDREN[name]
    env = dict(os.environ)
    if flags:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {flags}".strip()
    pin = "" if cores is None else (
        f"os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[:cores]}); ")
    argv = [__file__, "--n", str(n), "--rounds", str(rounds), "--json", "--only", *only]
    code = (f"import os, runpy, sys; {pin}sys.argv = {argv}; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=False)
    if out.returncode != 0:
        print(f"\n{name}: failed\n{out.stderr[-2000:]}")
        return
    show(json.loads(out.stdout.strip().splitlines()[-1]), name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="A is n x n float64")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--children", action="store_true",
                        help="also run the table pinned to one core and with XLA:CPU's "
                             "small-loop threshold raised (child processes)")
    parser.add_argument("--only", nargs="*", default=[], metavar="TEXT",
                        help="workloads whose name contains one of these (e.g. mlp 'A @')")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.json:
        print(json.dumps(table(opts.n, opts.rounds, opts.only)))
        return
    print(f"XLA:CPU options for float64 matrix-vector products (jax {jax.__version__}, NumPy "
          f"{np.__version__} on OpenBLAS, {len(os.sched_getaffinity(0))} cores, A "
          f"{opts.n}x{opts.n}, {opts.rounds} rounds)")
    show(table(opts.n, opts.rounds, opts.only), "all cores, XLA's own small-loop threshold")
    for name in CHILDREN if opts.children else ():
        child(name, opts.n, opts.rounds, opts.only)


if __name__ == "__main__":
    main()
