"""Gradients by Enzyme (reactant_lab.enzyme.gradient through the 'all' preset) against
``jax.jit(jax.grad(f))``, side by side: run time and compile time.

Targets: the compiled gradient runs in <= 1.2x the time of ``jax.jit(jax.grad(f))`` on an MLP
loss and on a 2-D stencil loss; its compile time (the preset's stages + XLA compile) is <= 3x
jax's (``jax.jit(jax.grad(f)).lower(...).compile()``: trace, lowering, XLA compile).

Ours is ``rl.jit(rle.gradient(loss), mode="jax")``: the traced module holds one
``enzyme.autodiff`` calling the loss, which the 'enzyme (AD)' stage differentiates. Both
variants get the same device-resident inputs; warm run times are sampled round-robin in one run
(so drift of the machine hits both alike) and their medians compared. Compile times are the
medians of ``--compiles`` fresh compilations of each (interleaved; a fresh function each time, so
no cache of either side is hit); ours is also shown with its trace time, which the target leaves
out and jax's figure includes. Both results are checked against each other before timing.

Run: .venv/bin/python benchmarks/enzyme_grad.py [--min-time S] [--compiles N] [--only NAME ...]
     [--optimize PRESET] [--exclude-patterns P1,P2]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl
from reactant_lab import backend, timing
from reactant_lab import enzyme as rle
from reactant_lab.bench.measure import Variant, copies, plan_rounds, round_robin, warm_up

RUN_TARGET = 1.2
"""Ours / jax run time at most this."""
COMPILE_TARGET = 3.0
"""Ours (stages + XLA) / jax compile time at most this."""


def mlp_loss(params: dict[str, Any], x: Any, y: Any) -> Any:
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    h = jax.nn.relu(h @ params["w2"] + params["b2"])
    logits = h @ params["w3"] + params["b3"]
    return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(logits, axis=-1), axis=-1))


def _mlp_args(rng: np.random.Generator) -> tuple[Any, ...]:
    def w(n: int, m: int) -> np.ndarray:
        return (rng.standard_normal((n, m)) / np.sqrt(n)).astype(np.float32)

    params = {"w1": w(256, 512), "b1": np.zeros(512, np.float32) + 0.01,
              "w2": w(512, 512), "b2": np.zeros(512, np.float32) + 0.01,
              "w3": w(512, 10), "b3": np.zeros(10, np.float32) + 0.01}
    x = rng.standard_normal((256, 256)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)]
    return params, x, y


STENCIL_STEPS = 4


def stencil_loss(u: Any, target: Any) -> Any:
    """``STENCIL_STEPS`` smoothing steps of a 5-point stencil with a mild nonlinearity, then the
    squared distance to a target."""
    for _ in range(STENCIL_STEPS):
        p = jnp.pad(u, 1)
        u = 0.2 * (p[1:-1, 1:-1] + p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:])
        u = u + 0.05 * jnp.sin(u)
    return jnp.sum((u - target) ** 2)


def _stencil_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return (rng.standard_normal((256, 256)).astype(np.float32),
            rng.standard_normal((256, 256)).astype(np.float32))


@dataclass(frozen=True)
class Case:
    loss: Callable[..., Any]
    make: Callable[[np.random.Generator], tuple[Any, ...]]
    size: str


CASES = {
    "mlp": Case(mlp_loss, _mlp_args, "256x512x512x10, batch 256"),
    "stencil_2d": Case(stencil_loss, _stencil_args, f"256x256, {STENCIL_STEPS} steps"),
}


def ours(loss: Callable[..., Any], optimize: str = "all",
         exclude: tuple[str, ...] = ()) -> rl.JitFunction:
    """A fresh compiled Enzyme gradient of ``loss`` (nothing cached)."""
    return rl.jit(rle.gradient(loss), mode="jax", optimize=optimize, exclude_patterns=exclude)


def compile_ours(loss: Callable[..., Any], args: tuple[Any, ...], optimize: str = "all",
                 exclude: tuple[str, ...] = ()) -> tuple[rl.JitFunction, dict[str, float]]:
    jf = ours(loss, optimize, exclude)
    jax.block_until_ready(jf(*args))
    ex = jf.last
    assert ex is not None and ex.compiled is not None
    stages = {s.name: s for s in ex.stages.stages}
    assert stages["enzyme (AD)"].changed and "enzyme.autodiff" not in ex.stages.final.ir
    return jf, {"trace": ex.traced_call.seconds, "stages": ex.stages.compile_path_seconds,
                "xla": ex.compiled.compile_seconds}


def compile_jax(loss: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, float]:
    fn = jax.jit(jax.grad(loss))  # a fresh function: no trace or compile cache
    start = time.perf_counter()
    compiled = fn.lower(*args).compile()
    return compiled, time.perf_counter() - start


def _close(got: Any, want: Any) -> float:
    """Largest error relative to the largest magnitude, over all leaves (and check it)."""
    worst = 0.0
    for got_leaf, want_leaf in zip(jax.tree_util.tree_leaves(got),
                                   jax.tree_util.tree_leaves(want), strict=True):
        g, w = np.asarray(got_leaf, np.float64), np.asarray(want_leaf, np.float64)
        worst = max(worst, float(np.max(np.abs(g - w)) / max(np.max(np.abs(w)), 1e-30)))
    if worst > 1e-4:
        raise AssertionError(f"Enzyme's gradient differs from jax.grad: relative error {worst:.2e}")
    return worst


def measure(name: str, case: Case, min_time: float, n_compiles: int,
            optimize: str = "all", exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    args = jax.device_put(case.make(np.random.default_rng()))
    ours_compiles, jax_compiles = [], []
    jf = compiled = None
    for _ in range(n_compiles):  # interleaved, so drift hits both alike
        jf, parts = compile_ours(case.loss, args, optimize, exclude)
        ours_compiles.append(parts)
        compiled, seconds = compile_jax(case.loss, args)
        jax_compiles.append(seconds)
    assert jf is not None and compiled is not None
    error = _close(jf(*args), compiled(*args))

    pool = copies((args, {}), jax.device_put)
    variants = [Variant("ours", jf, pool), Variant("jax", compiled, pool)]
    per_sample = [warm_up(v, 5) for v in variants]
    samples = round_robin(variants, plan_rounds(per_sample, min_time, None))
    run = {v.name: timing.median(s) for v, s in zip(variants, samples, strict=True)}
    compile_parts = {k: timing.median([c[k] for c in ours_compiles])
                     for k in ("trace", "stages", "xla")}
    return {"name": name, "size": case.size, "run": run, "rounds": len(samples[0]),
            "ours_compile": compile_parts, "jax_compile": timing.median(jax_compiles),
            "error": error}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-time", type=float, default=2.0,
                        help="seconds of run-time sampling for the slower variant of each case")
    parser.add_argument("--compiles", type=int, default=3,
                        help="fresh compilations of each variant (their median is shown)")
    parser.add_argument("--only", nargs="*", default=[],
                        help="case names")
    parser.add_argument("--optimize", default="all",
                        choices=["all", "only_enzyme", "after_enzyme", "before_enzyme"],
                        help="preset of ours (default all; the targets are for 'all')")
    parser.add_argument("--exclude-patterns", default="", metavar="P1,P2",
                        help="enzyme-hlo patterns to leave out of ours, e.g. "
                             "slice_elementwise,slice_pad (the stencil's slowdown)")
    opts = parser.parse_args()
    if not backend.enzyme_available():
        print(f"enzyme-ad unavailable: {backend.enzyme_unavailable_reason()}")
        return 1
    versions = ", ".join(f"{k} {v}" for k, v in rl.versions().items())
    exclude = tuple(p for p in opts.exclude_patterns.split(",") if p)
    print(f"Enzyme gradient (rl.jit of rle.gradient, preset {opts.optimize!r}"
          f"{', without ' + ', '.join(exclude) if exclude else ''}) vs jax.jit(jax.grad) "
          f"({versions}; device {jax.devices()[0]})")
    header = (f"{'case':<11} {'size':<26} {'ours ms':>8} {'jax ms':>8} {'run ratio':>9} "
              f"{'ours compile s':>22} {'jax s':>6} {'compile ratio':>13}")
    print(header)
    print("-" * len(header))
    verdicts = []
    for name, case in CASES.items():
        if opts.only and name not in opts.only:
            continue
        m = measure(name, case, opts.min_time, opts.compiles, opts.optimize, exclude)
        run_ratio = m["run"]["ours"] / m["run"]["jax"]
        c = m["ours_compile"]
        stages_xla = c["stages"] + c["xla"]
        compile_ratio = stages_xla / m["jax_compile"]
        with_trace = (stages_xla + c["trace"]) / m["jax_compile"]
        print(f"{name:<11} {m['size']:<26} {_ms(m['run']['ours']):>8} {_ms(m['run']['jax']):>8} "
              f"{run_ratio:>8.2f}x {c['stages']:>6.2f}+{c['xla']:.2f} (+{c['trace']:.2f} trace)"
              f" {m['jax_compile']:>6.2f} {compile_ratio:>12.2f}x")
        print(f"{'':<11} {m['rounds']} round-robin samples each; gradient max relative error "
              f"{m['error']:.1e}; compile ratio with our trace time: {with_trace:.2f}x")
        verdicts.append((name, run_ratio, compile_ratio))
    print("-" * len(header))
    ok = True
    for name, run_ratio, compile_ratio in verdicts:
        run_ok, compile_ok = run_ratio <= RUN_TARGET, compile_ratio <= COMPILE_TARGET
        ok = ok and run_ok and compile_ok
        print(f"{name}: run {run_ratio:.2f}x jax (target <= {RUN_TARGET}x): "
              f"{'holds' if run_ok else 'MISSED'}; compile (stages + XLA) {compile_ratio:.2f}x "
              f"jax (target <= {COMPILE_TARGET}x): {'holds' if compile_ok else 'MISSED'}")
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
