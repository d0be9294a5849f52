"""What exploring costs, measured side by side in one run (ratios, since absolute times drift).

(a) preset 'all' stage by stage + XLA compile, over jax.jit(f).lower(...).compile() alone
(b) per-call run time of our Compiled over a precompiled jax.jit executable, inputs on the device
    (target <= 1.10)
(c) preset 'all' stage by stage over the same passes in one shot (target <= 4)

Run: .venv/bin/python benchmarks/overhead.py [--rounds N]
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import reactant_lab as rl
from reactant_lab import timing
from reactant_lab.examples import EXAMPLES


def _alternate(fns, rounds: int) -> list[float]:
    """Median wall time of each function, calling them in turn ``rounds`` times."""
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            samples[i].append(time.perf_counter() - start)
    return [timing.median(s) for s in samples]


def measure(example, rounds: int) -> dict[str, float]:
    args = jax.device_put(example.make_args(np.random.default_rng(0)))
    traced = rl.trace(example.fn, *args)
    staged = traced.stages("all")
    pipeline = staged.pipeline

    # JAX caches lowerings and executables in memory: clear them so both sides really compile.
    def ours_pipeline_and_compile():
        jax.clear_caches()
        traced.stages("all").compile()

    def jax_compile():
        jax.clear_caches()
        jax.jit(example.fn).lower(*args).compile()

    def one_shot():
        rl.run_pipeline(traced.ir, pipeline)

    def stage_by_stage():
        traced.stages("all")

    t_ours, t_jax = _alternate([ours_pipeline_and_compile, jax_compile], rounds)
    t_staged, t_once = _alternate([stage_by_stage, one_shot], rounds)

    ours = staged.compile()
    theirs = jax.jit(example.fn).lower(*args).compile()
    s_ours, s_jax = timing.interleaved([lambda: ours(*args), lambda: theirs(*args)],
                                       rounds=max(50, rounds * 10), batch=20)
    r_ours, r_jax = timing.median(s_ours), timing.median(s_jax)
    return {"pipeline+compile_s": t_ours, "jax_compile_s": t_jax, "a": t_ours / t_jax,
            "run_ours_us": r_ours * 1e6, "run_jax_us": r_jax * 1e6, "b": r_ours / r_jax,
            "staged_s": t_staged, "one_shot_s": t_once, "c": t_staged / t_once}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    opts = parser.parse_args()
    print(f"reactant_lab overhead benchmark ({', '.join(f'{k} {v}' for k, v in rl.versions().items())};"
          f" device {jax.devices()[0]})")
    header = (f"{'example':<12} {'(a) stages+compile / jax compile':>34} "
              f"{'(b) run ours / jax.jit':>26} {'(c) staged / one shot':>24}")
    print(header)
    print("-" * len(header))
    for example in EXAMPLES[:2]:  # the MLP and the loop
        m = measure(example, opts.rounds)
        a = f"{m['a']:.2f} ({m['pipeline+compile_s'] * 1e3:.0f}/{m['jax_compile_s'] * 1e3:.0f} ms)"
        b = f"{m['b']:.3f} ({m['run_ours_us']:.1f}/{m['run_jax_us']:.1f} us)"
        c = f"{m['c']:.2f} ({m['staged_s'] * 1e3:.0f}/{m['one_shot_s'] * 1e3:.0f} ms)"
        print(f"{example.name:<12} {a:>34} {b:>26} {c:>24}")
    x = jax.device_put(np.ones(4, np.float32))
    ours = rl.trace(_add_one, x).stages("all").compile()
    theirs = jax.jit(_add_one).lower(x).compile()
    s_ours, s_jax = timing.interleaved([lambda: ours(x), lambda: theirs(x)],
                                       rounds=max(50, opts.rounds * 10), batch=50)
    r_ours, r_jax = timing.median(s_ours), timing.median(s_jax)
    b = f"{r_ours / r_jax:.3f} ({r_ours * 1e6:.1f}/{r_jax * 1e6:.1f} us)"
    print(f"{'dispatch':<12} {'(x + 1 on 4 floats: call overhead only)':>34} {b:>26}")
    print("targets: (b) <= 1.10, (c) <= 4")


def _add_one(x):
    return x + 1


if __name__ == "__main__":
    main()
