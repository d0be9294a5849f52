"""What seeing costs, measured in one run on real pass output (ratios between sizes show growth).

(a) diff + HTML render of stage pairs of ~2k / ~20k / ~100k lines, for a light pass (inline),
    a medium one (cse: removes 1 op in 9 and renumbers what follows) and a heavy one (the
    enzyme-hlo patterns: transposes folded, 1 op in 4 removed); ratios against the 2k pair
(b) dataflow graph of ~100 / ~1,000 / ~5,000 ops: parse + build, DOT, Graphviz layout to SVG
    (past 300 ops the summary is drawn; 1,000 ops are also drawn in full for comparison)
(c) report size: ~20k-line module, every pass its own stage (36 stages), total and per stage,
    against the raw text of all stages

The modules come from an L-layer MLP-like function (8 ops per layer), traced and run through the
first 13 steps of preset 'all' at pass granularity.

Run: .venv/bin/python benchmarks/render.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import reactant_lab as rl
from reactant_lab.analysis.graph import dataflow, signature_of
from reactant_lab.analysis.lexer import tokenize
from reactant_lab.render.graph_dot import to_dot
from reactant_lab.render.payload import PayloadOptions, build_payload
from reactant_lab.render.report import report_html
from reactant_lab.render.svg import render_svg
from reactant_lab.stages import plan

PAIRS = ("inline", "cse", "enzyme-hlo patterns")


def model(params, x):
    for i, (w, b) in enumerate(params):
        h = x @ w.T + b
        x = jnp.tanh(h) * 0.5 + x if i % 3 else jax.nn.relu(h)
    return (x ** 2).sum(), x


def traced_model(layers: int) -> rl.Traced:
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((32, 32)).astype(np.float32),
               rng.standard_normal(32).astype(np.float32)) for _ in range(layers)]
    return rl.trace(model, params, rng.standard_normal((8, 32)).astype(np.float32))


def first_steps(traced: rl.Traced, n: int = 13) -> rl.StageTrace:
    steps = plan("all", None, "pass", no_nan=False, target="cpu")[:n]
    return traced.stages(pipeline=",".join(p for _, _, p in steps), granularity="pass")


def best_of(fn, repeats: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def diff_and_html(before: rl.Stage, after: rl.Stage) -> tuple[float, float, float, rl.Diff, str]:
    """Best of 3 of: the diff, its HTML as shown (first 1,000 changed lines), and all of it;
    each repeat starts with a cold token cache, as a first look at a stage does."""
    best = (float("inf"), 0.0, 0.0, None, "")
    for _ in range(3):
        tokenize.cache_clear()
        start = time.perf_counter()
        d = rl.diff(before, after)
        mid = time.perf_counter()
        html = rl.diff_html(d)
        end = time.perf_counter()
        rl.diff_html(d, max_rows=None)
        full = time.perf_counter() - end
        if end - start < best[0] + best[1]:
            best = (mid - start, end - mid, full, d, html)
    return best


def diff_table(sizes: dict[str, int]) -> None:
    print("(a) structural diff + side-by-side HTML of one stage pair (best of 3). 'html' renders")
    print("    what Diff.html() shows by default (the first 1,000 changed lines); 'all' every line")
    print(f"{'lines':>8} {'pass':<20} {'+/-/~ lines':>20} {'diff s':>7} {'html s':>7} "
          f"{'total s':>8} {'x 2k':>6} {'html KB':>8} {'all s':>6} {'all KB':>7}")
    base: dict[str, float] = {}
    for label, layers in sizes.items():
        stages = first_steps(traced_model(layers))
        for name in PAIRS:
            after = stages[name]
            before = stages[after.index - 1]
            t_diff, t_html, t_full, d, html = diff_and_html(before, after)
            total = t_diff + t_html
            base.setdefault(name, total)
            full_kb = len(rl.diff_html(d, max_rows=None)) / 1024
            counts = f"{d.added}/{d.removed}/{d.changed}"
            print(f"{len(after.as_text().splitlines()):>8} {name:<20} {counts:>20} "
                  f"{t_diff:>7.3f} {t_html:>7.3f} {total:>8.3f} {total / base[name]:>6.1f} "
                  f"{len(html) / 1024:>8.0f} {t_full:>6.2f} {full_kb:>7.0f}  ({label})")


def graph_table(sizes: dict[str, int]) -> None:
    print("\n(b) dataflow graph of the traced module (best of 3 for build and DOT; one layout;")
    print("    the last row draws ~1,000 ops in full, past the default max_ops=300)")
    print(f"{'ops':>7} {'view':<9} {'nodes':>6} {'build s':>8} {'dot s':>7} {'svg s':>7} "
          f"{'svg KB':>7}")
    for layers, max_ops in sizes.items():
        t = traced_model(layers)
        sig = signature_of(t)
        t_build, g = best_of(lambda t=t, sig=sig, m=max_ops: dataflow(t.ir, sig, max_ops=m))
        t_dot, dot = best_of(lambda g=g: to_dot(g))
        start = time.perf_counter()
        svg = render_svg(dot)
        t_svg = time.perf_counter() - start
        print(f"{g.ops:>7} {g.kind:<9} {len(g.nodes):>6} {t_build:>8.3f} {t_dot:>7.3f} "
              f"{t_svg:>7.2f} {len(svg) / 1024:>7.0f}")


def report_table(layers: int) -> None:
    print("\n(c) HTML report of a module with every pass its own stage")
    t = traced_model(layers)
    stages = t.stages("all", granularity="pass")
    raw = sum(len(s.as_text()) for s in stages.stages)
    start = time.perf_counter()
    payload = build_payload(stages, traced=t, options=PayloadOptions())
    html = report_html(payload)
    took = time.perf_counter() - start
    changed = sum(s.changed for s in stages.stages)
    n = len(stages.stages)
    lines = len(stages.final.as_text().splitlines())
    print(f"{n} stages of {len(stages[0].as_text().splitlines()):,} to {lines:,} lines "
          f"({changed} changed), {len(payload['texts'])} distinct texts stored "
          f"({', '.join(e['encoding'] for e in payload['texts'])})")
    print(f"raw text of all stages {raw / 1e6:8.2f} MB")
    print(f"report                 {len(html) / 1e6:8.2f} MB  ({len(html) / n / 1024:.0f} KB per "
          f"stage, {raw / len(html):.0f}x smaller than the raw text; built in {took:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2k and 20k lines only")
    quick = parser.parse_args().quick
    sizes = {"~2k": 230, "~20k": 2300} if quick else {"~2k": 230, "~20k": 2300, "~100k": 11500}
    diff_table(sizes)
    graph_table({12: 300, 120: 300, 600: 300, 121: 2000})
    report_table(2300)


if __name__ == "__main__":
    main()
