"""What the explorer's interactive graph costs on the Python side, for modules of ~100 / ~300 /
~1,000 ops (a 2-D Jacobi stencil unrolled, 13 ops a sweep, 4 of them constants and broadcasts of
constants): parsing main and building the graph model (SSA names, attributes, types, source
lines, producers), its JSON size, and the summary graph (DOT + Graphviz SVG) the payload keeps
beside it. The front end lays the model out itself; its time (tab click to drawn graph) is
measured in Chromium by tests/browser/test_graph_browser.py.

Run: .venv/bin/python benchmarks/graph_scale.py
"""

from __future__ import annotations

import json
import time

import numpy as np

import reactant_lab as rl
from reactant_lab.analysis.graph import dataflow, signature_of
from reactant_lab.analysis.graph_model import graph_model
from reactant_lab.render.graph_dot import to_dot
from reactant_lab.render.layout_adapter import graphviz_binary
from reactant_lab.render.svg import render_svg

OPS_PER_SWEEP = 13


def laplace_2d(u, steps):
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


def best(fn, repeat: int = 5) -> float:
    """Fastest of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    print(f"{'ops':>6} {'model s':>9} {'model KB':>9} {'nodes':>6} {'with src':>8} "
          f"{'summary DOT+SVG s':>18}")
    for target in (100, 300, 1_000):
        t = rl.trace(laplace_2d, np.ones((128, 128)), max(1, round(target / OPS_PER_SWEEP)),
                     loops="unroll")
        sig = signature_of(t)
        model = graph_model(t.ir, sig)
        assert model is not None
        seconds = best(lambda t=t, sig=sig: graph_model(t.ir, sig))
        size = len(json.dumps(model, separators=(",", ":"))) / 1024
        with_src = sum(1 for n in model["nodes"] if n.get("src"))
        summary = "no layout program"
        if graphviz_binary() is not None:
            summary = f"{best(lambda t=t, sig=sig: render_svg(to_dot(dataflow(t.ir, sig))), 1):.3f}"
        print(f"{model['ops']:>6} {seconds:>9.3f} {size:>9.0f} {len(model['nodes']):>6} "
              f"{with_src:>8} {summary:>18}")


if __name__ == "__main__":
    main()
