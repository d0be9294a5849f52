"""Command line: ``reactant-lab demo`` explores the built-in examples end to end."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import jax
import numpy as np

from reactant_lab import backend, timing
from reactant_lab.errors import ReactantLabError
from reactant_lab.examples import EXAMPLES, Example
from reactant_lab.explore import explore
from reactant_lab.stages.presets import PRESETS


def _demo_one(example: Example, optimize: str, rng: np.random.Generator) -> None:
    args = jax.device_put(example.make_args(rng))
    print(f"\n=== {example.name}: {example.what}")
    ex = explore(example.fn, *args, optimize=optimize)
    print(ex.traced.summary())
    print()
    print(ex.stages.table())
    expected = jax.jit(example.fn)(*args)
    for got, want in zip(jax.tree_util.tree_leaves(ex.outputs),
                         jax.tree_util.tree_leaves(expected), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-5,
                                   err_msg=f"{example.name}: result differs from jax.jit")
    print(f"\nresult matches jax.jit; XLA compile {ex.compiled.compile_seconds * 1e3:.1f} ms")
    ours, theirs = ex.compiled, jax.jit(example.fn).lower(*args).compile()
    s_ours, s_jax = timing.interleaved([lambda: ours(*args), lambda: theirs(*args)],
                                       rounds=60, batch=10)
    m_ours, m_jax = timing.median(s_ours), timing.median(s_jax)
    print(f"median run time: reactant_lab {m_ours * 1e6:.1f} us, jax.jit {m_jax * 1e6:.1f} us "
          f"(ratio {m_ours / m_jax:.2f})")


def demo(optimize: str = "all", only: Sequence[str] = ()) -> int:
    """Explore, compile, check and time each built-in example; 0 on success."""
    versions = ", ".join(f"{k} {v}" for k, v in backend.versions().items())
    print(f"reactant_lab demo (optimize={optimize!r}; {versions}; device {jax.devices()[0]})")
    if not backend.enzyme_available():
        print(f"note: {backend.enzyme_unavailable_reason()}")
    rng = np.random.default_rng()
    chosen = [e for e in EXAMPLES if not only or e.name in only]
    if not chosen:
        print(f"error: no example named {', '.join(only)}; examples: "
              f"{', '.join(e.name for e in EXAMPLES)}", file=sys.stderr)
        return 2
    for example in chosen:
        try:
            _demo_one(example, optimize, rng)
        except (ReactantLabError, AssertionError) as exc:
            print(f"\nerror in example {example.name}: {exc}", file=sys.stderr)
            return 1
    print("\nall examples compiled, ran and matched jax.jit")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``reactant-lab``."""
    parser = argparse.ArgumentParser(prog="reactant-lab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="explore the built-in examples end to end")
    p_demo.add_argument("--optimize", default="all", choices=list(PRESETS),
                        help="optimization preset (default: all)")
    p_demo.add_argument("--example", action="append", default=[],
                        help="run only this example (repeatable)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``reactant-lab`` command."""
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        return demo(args.optimize, args.example)
    return 2  # pragma: no cover - argparse rejects unknown commands first


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
