"""The benchmark suite: every example through ``reactant_lab.bench``, one table of ratios.

Columns: ours (preset all) / jax.jit, ours (all) / NumPy eager, preset all / preset none, each
measured side by side in one ``bench`` run per kernel; the suite makes several passes over all the
kernels and reports each ratio's median over the passes, with the geometric mean per column.
For the NumPy kernels ours is the run on the device alone, its inputs already there (``bench``
times the copies a call of NumPy arrays makes apart: ``benchmarks/accelerator.py`` shows them).

Run: .venv/bin/python benchmarks/suite.py [--min-time S] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import reactant_lab as rl
from reactant_lab.examples import EXAMPLES


def transformer_block(p: dict[str, Any], x: Any) -> Any:
    """Pre-norm transformer block: multi-head self-attention and a GELU MLP, residuals."""

    def norm(v, g):
        mu = v.mean(-1, keepdims=True)
        return (v - mu) * jax.lax.rsqrt(((v - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g

    b, s, d = x.shape
    heads = 4
    h = norm(x, p["g1"])
    q, k, v = (jnp.einsum("bsd,de->bse", h, p[w]).reshape(b, s, heads, d // heads)
               for w in ("wq", "wk", "wv"))
    att = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // heads)
    mask = jnp.tril(jnp.ones((s, s), bool))
    att = jax.nn.softmax(jnp.where(mask, att, -1e9), axis=-1)
    o = jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, s, d) @ p["wo"]
    x = x + o
    return x + jax.nn.gelu(norm(x, p["g2"]) @ p["w1"]) @ p["w2"]


def _transformer_args(rng: np.random.Generator) -> tuple:
    d = 128

    def w(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32)

    p = {"wq": w(d, d), "wk": w(d, d), "wv": w(d, d), "wo": w(d, d), "w1": w(d, 4 * d),
         "w2": w(4 * d, d), "g1": np.ones(d, np.float32), "g2": np.ones(d, np.float32)}
    return p, rng.standard_normal((4, 64, d)).astype(np.float32)


def kernels() -> list[tuple[str, Callable, Callable[[np.random.Generator], tuple]]]:
    """(name, function, maker of arguments) for every kernel of the suite."""
    out = [(e.name, e.fn, e.make_args) for e in EXAMPLES[:2]]
    out.append(("transformer", transformer_block, _transformer_args))
    from numpy_kernels import CASES  # benchmarks/numpy_kernels.py: the NumPy-mode kernels

    out += [(name, CASES[name].kernel, CASES[name].make) for name in NUMPY_KERNELS]
    return out


NUMPY_KERNELS = ("jacobi_2d", "heat_3d", "floyd_warshall", "gemm", "softmax", "mlp_forward",
                 "arc_distance", "mask_updates")
"""The NumPy kernels of the suite: those that compile in well under a second."""


def _ratio(result: rl.BenchResult, a: str, b: str) -> float | None:
    names = {r.name: r for r in result.rows}
    if a in names and b in names:
        return names[a].median_s / names[b].median_s
    return None


def _geomean(values: list[float | None]) -> float | None:
    got = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in got) / len(got)) if got else None


def _cells(values, widths=(13, 11, 9)) -> str:
    return " ".join(f"{v:>{w}.3f}" if v else f"{'-':>{w}}" for v, w in zip(values, widths,
                                                                             strict=True))


def _median(values: list[float | None]) -> float | None:
    got = sorted(v for v in values if v)
    return got[len(got) // 2] if got else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-time", type=float, default=0.3,
                        help="seconds of samples per variant and pass (default: 0.3)")
    parser.add_argument("--passes", type=int, default=3,
                        help="independent passes over all kernels; each ratio is the median over "
                             "passes, so a burst of load on a shared machine does not decide it")
    parser.add_argument("--json", help="also write the ratios as JSON here")
    opts = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"reactant_lab benchmark suite ({', '.join(f'{k} {v}' for k, v in rl.versions().items())};"
          f" device {jax.devices()[0]}; {opts.passes} passes)")
    work = [(name, fn, make(rng)) for name, fn, make in kernels()]
    runs: dict[str, list[tuple]] = {name: [] for name, _, _ in work}
    for _ in range(opts.passes):
        for name, fn, args in work:
            res = rl.bench(fn, *args, presets=("none", "all"), min_time=opts.min_time,
                           roofline=False, progress=False)
            runs[name].append((_ratio(res, "all", "jax"), _ratio(res, "all", "numpy"),
                               _ratio(res, "all", "none")))
    head = f"{'kernel':<16} {'ours/jax.jit':>13} {'ours/numpy':>11} {'all/none':>9}"
    print(head)
    print("-" * len(head))
    table = {name: tuple(_median([r[i] for r in rows]) for i in range(3))
             for name, rows in runs.items()}
    for name, row in table.items():
        print(f"{name:<16} {_cells(row)}")
    means = [_geomean([row[i] for row in table.values()]) for i in range(3)]
    print("-" * len(head))
    print(f"{'geometric mean':<16} {_cells(means)}")
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as fh:
            json.dump({"kernels": table, "geomean": means, "passes": runs}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
