"""Command line: ``reactant-lab demo`` explores the built-in examples end to end;
``reactant-lab report FILE.py:FUNC --args FILE.py:MAKE_ARGS -o report.html`` writes a report;
``reactant-lab bench FILE.py:FUNC --args FILE.py:MAKE_ARGS`` times presets against baselines."""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from reactant_lab import backend, timing
from reactant_lab.errors import ReactantLabError
from reactant_lab.examples import EXAMPLES, Example
from reactant_lab.explore import explore
from reactant_lab.stages.presets import PRESETS


def _demo_one(example: Example, optimize: str, rng: np.random.Generator,
              report_dir: str | None) -> None:
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
    if report_dir is not None:
        os.makedirs(report_dir, exist_ok=True)
        path = ex.save_html(os.path.join(report_dir, f"reactant_lab_report_{example.name}.html"),
                            run={"median_seconds": m_ours, "iqr_seconds": timing.iqr(s_ours),
                                 "jax_jit_median_seconds": m_jax})
        print(f"report: {path}")


def demo(optimize: str = "all", only: Sequence[str] = (),
         report_dir: str | None = None) -> int:
    """Explore, compile, check and time each built-in example, writing an HTML report for each
    into ``report_dir`` (none when None); 0 on success."""
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
            _demo_one(example, optimize, rng, report_dir)
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
    p_demo.add_argument("--report-dir", default=DEFAULT_REPORT_DIR,
                        help="where to write an HTML report per example, "
                             "reactant_lab_report_EXAMPLE.html (default: the current directory)")
    p_demo.add_argument("--no-report", action="store_true", help="write no HTML reports")
    p_rep = _target_parser(sub, "report", "explore FILE.py:FUNC on example args and write a "
                                          "self-contained HTML report")
    p_rep.add_argument("-o", "--output", default="report.html", help="report file to write")
    p_rep.add_argument("--optimize", default="all", choices=list(PRESETS),
                       help="optimization preset (default: all)")
    p_rep.add_argument("--granularity", default="stage", choices=["stage", "pass"],
                       help="one step per preset stage, or per pass")
    p_bench = _target_parser(sub, "bench", "time FILE.py:FUNC compiled with each preset beside "
                                           "NumPy and jax.jit, and print the table")
    p_bench.add_argument("--presets", nargs="+", default=["none", "all"], choices=list(PRESETS),
                         metavar="PRESET", help="presets to compile and time (default: none all)")
    p_bench.add_argument("--baselines", nargs="*", default=["numpy", "jax"],
                         choices=["numpy", "jax"], help="baselines (default: numpy jax)")
    p_bench.add_argument("--min-time", type=float, default=0.2,
                         help="seconds of samples per variant (default: 0.2)")
    p_bench.add_argument("--repeats", type=int, default=None, help="fixed number of samples")
    p_bench.add_argument("--json", metavar="OUT.json", help="also write the result as JSON")
    return parser


def _target_parser(sub: Any, name: str, what: str) -> argparse.ArgumentParser:
    """A subcommand taking FILE.py:FUNC and --args [FILE.py:]MAKE_ARGS."""
    parser = sub.add_parser(name, help=what)
    parser.add_argument("function", metavar="FILE.py:FUNC", help="the function")
    parser.add_argument("--args", required=True, metavar="[FILE.py:]MAKE_ARGS",
                        help="a function returning the example args (a tuple of positional "
                             "args; it may take a numpy Generator for fresh random inputs)")
    return parser


DEFAULT_REPORT_DIR = "."
"""Where the demo writes its reports unless told otherwise: the current directory."""


class CliError(ReactantLabError):
    """A command-line argument that does not name something loadable."""


def load_callable(spec: str, default_file: str | None = None) -> Callable[..., Any]:
    """``FILE.py:NAME`` (or ``NAME`` in ``default_file``) -> the function it names."""
    path, sep, name = spec.rpartition(":")
    if not sep:
        path, name = default_file or "", spec
    if not path or not os.path.isfile(path):
        raise CliError(f"cannot load {spec!r}: no file {path!r}; write FILE.py:NAME")
    module_spec = importlib.util.spec_from_file_location(
        "_reactant_lab_user_" + os.path.splitext(os.path.basename(path))[0], path)
    if module_spec is None or module_spec.loader is None:
        raise CliError(f"cannot load {path!r} as Python source; pass a .py file")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if not callable(fn):
        names = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
        raise CliError(f"{path} has no function {name!r}; functions there: {', '.join(names)}")
    return fn


def _example_args(make_args: Callable[..., Any]) -> tuple:
    takes_rng = bool(inspect.signature(make_args).parameters)
    args = make_args(np.random.default_rng()) if takes_rng else make_args()
    return args if isinstance(args, tuple) else (args,)


def report(function: str, args_spec: str, output: str, optimize: str = "all",
           granularity: str = "stage") -> int:
    """Explore ``FILE.py:FUNC`` on ``MAKE_ARGS()``, time it and write the HTML report."""
    fn = load_callable(function)
    make_args = load_callable(args_spec, default_file=function.rpartition(":")[0])
    args = jax.device_put(_example_args(make_args))
    ex = explore(fn, *args, optimize=optimize, granularity=granularity)
    samples = timing.sample(lambda: ex.compiled(*args), min_time=0.2)
    path = ex.save_html(output, run={"median_seconds": timing.median(samples),
                                     "iqr_seconds": timing.iqr(samples),
                                     "samples": len(samples)})
    print(ex.stages.table())
    print(f"report: {os.path.abspath(path)}")
    return 0


def bench_command(function: str, args_spec: str, presets: Sequence[str],
                  baselines: Sequence[str], min_time: float, repeats: int | None,
                  json_path: str | None) -> int:
    """Benchmark ``FILE.py:FUNC`` on ``MAKE_ARGS()`` and print the table."""
    from reactant_lab.bench import bench

    fn = load_callable(function)
    make_args = load_callable(args_spec, default_file=function.rpartition(":")[0])
    result = bench(fn, *_example_args(make_args), presets=tuple(presets),
                   baselines=tuple(baselines), min_time=min_time, repeats=repeats)
    print(result.table())
    if json_path:
        with open(json_path, "w", encoding="utf-8") as fh:
            fh.write(result.to_json())
        print(f"json: {os.path.abspath(json_path)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``reactant-lab`` command."""
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        return demo(args.optimize, args.example,
                    None if args.no_report else args.report_dir)
    try:
        if args.command == "report":
            return report(args.function, args.args, args.output, args.optimize,
                          args.granularity)
        if args.command == "bench":
            return bench_command(args.function, args.args, args.presets, args.baselines,
                                 args.min_time, args.repeats, args.json)
    except ReactantLabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 2  # pragma: no cover - argparse rejects unknown commands first


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
