"""Command line: ``reactant-lab demo`` explores the built-in examples end to end;
``reactant-lab report FILE.py:FUNC --args FILE.py:MAKE_ARGS -o report.html`` writes a report;
``reactant-lab bench FILE.py:FUNC --args FILE.py:MAKE_ARGS`` times presets against baselines;
``reactant-lab bisect FILE.py:FUNC --args FILE.py:MAKE_ARGS --metric runtime`` finds the pass
(and the enzyme-hlo patterns) that make it wrong, slow or slow to compile."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import os
import sys
import types
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, NoReturn

import jax
import numpy as np

from reactant_lab import backend, timing
from reactant_lab.errors import CliError, ReactantLabError
from reactant_lab.examples import EXAMPLES, Example
from reactant_lab.explore import Exploration, ExploreOptions, build, explore
from reactant_lab.render.explorer import save_html
from reactant_lab.stages.presets import PRESETS
from reactant_lab.trace import Traced
from reactant_lab.trace.paths import flatten_call
from reactant_lab.trace.user_errors import describe, user_frame


def _demo_one(example: Example, optimize: str, rng: np.random.Generator,
              report_dir: str | None) -> None:
    args = jax.device_put(example.make_args(rng))
    print(f"\n=== {example.name}: {example.what}")
    ex = explore(example.fn, *args, optimize=optimize)
    traced, ours = ex.traced, ex.compiled
    assert isinstance(traced, Traced) and ours is not None  # explore() traces and compiles a call
    print(traced.summary())
    print()
    print(ex.stages.table())
    expected = jax.jit(example.fn)(*args)
    for got, want in zip(jax.tree_util.tree_leaves(ex.outputs),
                         jax.tree_util.tree_leaves(expected), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-5,
                                   err_msg=f"{example.name}: result differs from jax.jit")
    print(f"\nresult matches jax.jit; XLA compile {ours.compile_seconds * 1e3:.1f} ms")
    theirs = jax.jit(example.fn).lower(*args).compile()
    s_ours, s_jax = timing.interleaved([lambda: ours(*args), lambda: theirs(*args)],
                                       rounds=60, batch=10)
    m_ours, m_jax = timing.median(s_ours), timing.median(s_jax)
    print(f"median run time: reactant_lab {m_ours * 1e6:.1f} us, jax.jit {m_jax * 1e6:.1f} us "
          f"(ratio {m_ours / m_jax:.2f})")
    if report_dir is not None:
        os.makedirs(report_dir, exist_ok=True)
        path = save_html(ex, os.path.join(report_dir, f"reactant_lab_report_{example.name}.html"),
                         run={"median_seconds": m_ours, "iqr_seconds": timing.iqr(s_ours),
                              "jax_jit_median_seconds": m_jax})
        print(f"report: {path}")


def demo(optimize: str = "all", only: Sequence[str] = (),
         report_dir: str | None = None) -> int:
    """Explore, compile, check and time each built-in example, writing an HTML report for each
    into ``report_dir`` (none when None); 0 on success."""
    versions = ", ".join(f"{k} {v}" for k, v in backend.versions().items())
    print(f"reactant_lab demo (optimize={optimize!r}; {versions}; device {backend.resolve_device(None)})")
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


class _Parser(argparse.ArgumentParser):
    """argparse with a usage error as one ``error: ...`` line (exit code 2), as every failure."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``reactant-lab``."""
    parser = _Parser(prog="reactant-lab", description=__doc__)
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
    p_rep.add_argument("--verify", action="store_true",
                       help="also compile, run, compare and time every stage, and print the table")
    _pattern_options(p_rep)
    p_bench = _target_parser(sub, "bench", "time FILE.py:FUNC compiled with each preset beside "
                                           "NumPy and jax.jit, and print the table")
    p_bench.add_argument("--presets", nargs="+", default=["none", "all"], choices=list(PRESETS),
                         metavar="PRESET", help="presets to compile and time (default: none all)")
    p_bench.add_argument("--baselines", nargs="*", default=None,
                         choices=["numpy", "jax", "numba"],
                         help="baselines (default: numpy jax, and numba where it is installed: "
                              "pip install reactant-lab[numba])")
    p_bench.add_argument("--min-time", type=_seconds, default=0.2,
                         help="seconds of samples per variant (default: 0.2)")
    p_bench.add_argument("--repeats", type=_positive_int, default=None,
                         help="fixed number of samples")
    p_bench.add_argument("--json", metavar="OUT.json", help="also write the result as JSON")
    p_bis = _target_parser(sub, "bisect", "find the pass, and the enzyme-hlo patterns inside "
                                          "it, that make FILE.py:FUNC wrong, slow or slow to "
                                          "compile")
    p_bis.add_argument("--metric", default="result", choices=["result", "runtime", "compile_time"],
                       help="what goes bad (default: result)")
    p_bis.add_argument("--threshold", type=_seconds, default=None,
                       help="runtime / compile_time: bad above this many times the traced "
                            "module's (default: 2)")
    p_bis.add_argument("--optimize", default="all", choices=list(PRESETS),
                       help="optimization preset (default: all)")
    p_bis.add_argument("--pipeline", default=None, help="a pass pipeline instead of the preset")
    p_bis.add_argument("--reference", default="auto", choices=["auto", "numpy", "jax", "stage0"],
                       help="what results are compared with (default: auto)")
    p_bis.add_argument("--reproducer", default=None, metavar="DIR",
                       help="write the reproducer here (default: a fresh directory under the "
                            "reproducer root)")
    _pattern_options(p_bis)
    return parser


def _positive_int(text: str) -> int:
    """argparse's type of a count of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _seconds(text: str) -> float:
    """argparse's type of a finite number of at least 0 (seconds, a factor)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of at least 0, not {text}")
    return value


def _pattern_options(parser: argparse.ArgumentParser) -> None:
    """--exclude-patterns and --exact, as ExploreOptions takes them."""
    parser.add_argument("--exclude-patterns", nargs="+", default=[], metavar="PATTERN",
                        help="enzyme-hlo patterns to leave out: entries such as "
                             "slice_of_dynamic_update<1> or names")
    parser.add_argument("--exact", action="store_true",
                        help="run Reactant's pattern list untouched (no exclusion table)")


def _target_parser(sub: Any, name: str, what: str) -> argparse.ArgumentParser:
    """A subcommand taking FILE.py:FUNC and --args [FILE.py:]MAKE_ARGS."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=what)
    parser.add_argument("function", metavar="FILE.py:FUNC", help="the function")
    parser.add_argument("--args", required=True, metavar="[FILE.py:]MAKE_ARGS",
                        help="a function returning the example args (a tuple of positional "
                             "args; it may take a numpy Generator for fresh random inputs)")
    return parser


DEFAULT_REPORT_DIR = "."
"""Where the demo writes its reports unless told otherwise: the current directory."""


def _load_module(path: str, spec: str) -> types.ModuleType:
    """Run the user's file ``path`` as a module (anything it raises becomes a CliError)."""
    if not path or not os.path.isfile(path):
        raise CliError(f"cannot load {spec!r}: no file {path!r}; write FILE.py:NAME")
    module_spec = importlib.util.spec_from_file_location(
        "_reactant_lab_user_" + os.path.splitext(os.path.basename(path))[0], path)
    if module_spec is None or module_spec.loader is None:
        raise CliError(f"cannot load {path!r} as Python source; pass a .py file")
    module = importlib.util.module_from_spec(module_spec)
    with _user_code(f"importing {path} failed"):
        module_spec.loader.exec_module(module)
    return module


def split_spec(spec: str, default_file: str | None = None) -> tuple[str, str]:
    """``FILE.py:NAME`` -> (file, name): a spec naming a file alone (``FILE.py``, or a file
    that exists) has the name ''; a bare ``NAME`` is in ``default_file`` ('' when None)."""
    path, sep, name = spec.rpartition(":")
    if sep and not (len(path) == 1 and name[:1] in ("\\", "/")):  # not a drive letter, C:\
        return path, name
    if spec.endswith(".py") or os.path.isfile(spec):
        return spec, ""
    return default_file or "", spec


def load_callable(spec: str, default_file: str | None = None,
                  modules: dict[str, types.ModuleType] | None = None,
                  exclude: Collection[str] = ()) -> Callable[..., Any]:
    """``FILE.py:NAME`` (or ``NAME`` in ``default_file``) -> the function it names; ``FILE.py``
    alone -> the one function the file defines (leaving out the names in ``exclude``: the other
    function of the command line). ``modules`` caches the files already run, by path, so that
    each runs once."""
    path, name = split_spec(spec, default_file)
    if not path:
        raise CliError(f"{spec!r} names no file: write FILE.py:{name or 'FUNC'}")
    modules = {} if modules is None else modules
    if path not in modules:
        modules[path] = _load_module(path, spec)
    module = modules[path]
    if not name:
        return _only_function(module, path, exclude)
    fn: object = module
    for part in name.split("."):  # NAME or Class.method
        fn = getattr(fn, part, None)
    if not callable(fn):
        names = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
        raise CliError(f"{path} has no function {name!r}; functions there: {', '.join(names)}")
    return fn


def _only_function(module: types.ModuleType, path: str,
                   exclude: Collection[str]) -> Callable[..., Any]:
    """The single public function ``path`` defines (besides ``exclude``), or a CliError listing
    them and asking for FILE.py:FUNC."""
    defined = sorted(k for k, v in vars(module).items()
                     if inspect.isfunction(v) and v.__module__ == module.__name__
                     and not k.startswith("_") and k not in exclude)
    if len(defined) == 1:
        fn: Callable[..., Any] = getattr(module, defined[0])
        return fn
    if not defined:
        raise CliError(f"{path} defines no function; write FILE.py:FUNC naming one")
    raise CliError(f"{path} defines {len(defined)} functions ({', '.join(defined)}): say which "
                   f"one, e.g. {path}:{defined[0]}")


def _load_target(function: str, args_spec: str) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The function ``FILE.py:FUNC`` and the example args its MAKE_ARGS makes (``FILE.py`` alone
    for either: the one function of the file that the other does not name)."""
    modules: dict[str, types.ModuleType] = {}
    path, _ = split_spec(function)
    args_path, args_name = split_spec(args_spec, path)
    same = bool(path) and os.path.abspath(args_path) == os.path.abspath(path)
    fn = load_callable(function, modules=modules,
                       exclude={args_name} if same and args_name else ())
    make_args = load_callable(args_spec, default_file=path, modules=modules,
                              exclude={getattr(fn, "__name__", "")} if same else ())
    return fn, _example_args(make_args, args_spec)


def _example_args(make_args: Callable[..., Any], spec: str) -> tuple[Any, ...]:
    with _user_code(f"the --args function {spec} failed"):
        try:
            takes_rng = bool(inspect.signature(make_args).parameters)
        except (TypeError, ValueError):  # no signature to read (a builtin): call it plainly
            takes_rng = False
        args = make_args(np.random.default_rng()) if takes_rng else make_args()
    return args if isinstance(args, tuple) else (args,)


@contextlib.contextmanager
def _user_code(what: str) -> Iterator[None]:
    """Exceptions other than ours, raised by the user's code in the block, become a CliError
    saying ``what`` failed, with the exception and the user's line that raised it."""
    try:
        yield
    except ReactantLabError:
        raise
    except Exception as exc:
        held = backend.held_device_error(exc)  # the user's code was the first to open JAX
        if held is not None:
            raise held from None
        raise CliError(f"{what}: {_describe_exception(exc)}") from exc


def _describe_exception(exc: BaseException) -> str:
    """``ValueError: message``, then the notes (reactant_lab's say where tracing failed) or else
    the innermost line of the user's code that the exception came through."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    # JAX's own note (about its filtered traceback frames) means nothing without a traceback.
    notes = [n for n in getattr(exc, "__notes__", ()) if "JAX_TRACEBACK_FILTERING" not in n]
    frame = user_frame(exc.__traceback__)
    if not notes and frame is not None:
        notes = [f"(raised at {describe(frame)})"]
    return "\n".join([text, *notes])


def _explore(fn: Callable[..., Any], args: tuple[Any, ...],
             options: ExploreOptions) -> tuple[Exploration, tuple[Any, ...]]:
    """Explore the call on the args as MAKE_ARGS made them, and return the args it ran on.

    JAX code handed NumPy arrays is explored on device-resident copies (64-bit types kept), so
    that its timing leaves out host transfers, as ``bench`` times it; a NumPy kernel runs on the
    caller's NumPy arrays, which it may update in place.
    """
    flat = flatten_call(args, {})
    if not flat.all_numpy:
        return build(fn, args, {}, options, run=True), args
    exploration = build(fn, args, {}, options.replace(mode="auto"), run=True)
    if getattr(exploration.traced, "mode", None) == "numpy":
        return exploration, args
    with backend.x64_scope(flat.needs_x64):
        on_device: tuple[Any, ...] = jax.tree_util.tree_map(
            lambda a: jax.device_put(a) if isinstance(a, np.ndarray | np.generic) else a, args)
    return build(fn, on_device, {}, options.replace(mode="jax"), run=True), on_device


def _array_copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The args with each NumPy array copied (same dtype and memory order), statics as they are."""
    copies: tuple[Any, ...] = jax.tree_util.tree_map(
        lambda a: np.array(a) if isinstance(a, np.ndarray) else a, args)
    return copies


def report(function: str, args_spec: str, output: str, optimize: str = "all",
           granularity: str = "stage", options: ExploreOptions | None = None) -> int:
    """Explore ``FILE.py:FUNC`` on ``MAKE_ARGS()``, time it and write the HTML report
    (``options``, when given, decide the exploration instead of ``optimize`` / ``granularity``;
    with ``options.verify`` the verification table is printed too).

    The timed calls run on copies of the arrays: a NumPy kernel updates its arguments on each
    call, and the explored run's outputs (which may be those very arrays) stay as one call left
    them.
    """
    if options is None:
        options = ExploreOptions(optimize=optimize, granularity=granularity)
    fn, args = _load_target(function, args_spec)
    with _user_code(f"exploring {function} failed"):
        ex, used = _explore(fn, args, options)
        compiled = ex.compiled
        assert compiled is not None  # explore() compiles a call
        timed = _array_copies(used)
        samples = timing.sample(lambda: compiled(*timed), min_time=0.2)
    path = save_html(ex, output, run={"median_seconds": timing.median(samples),
                                      "iqr_seconds": timing.iqr(samples),
                                      "samples": len(samples)})
    print(ex.stages.table())
    if ex.verification is not None:
        print()
        print(ex.verification.table())
    print(f"report: {os.path.abspath(path)}")
    return 0


def bisect_command(function: str, args_spec: str, *, metric: str, threshold: float | None,
                   optimize: str, pipeline: str | None, reference: str,
                   exclude_patterns: Sequence[str], exact: bool, reproducer: str | None) -> int:
    """Bisect ``FILE.py:FUNC`` on ``MAKE_ARGS()`` and print what was found (0 either way: the
    summary says whether a culprit was found)."""
    from reactant_lab.bisect import bisect

    fn, args = _load_target(function, args_spec)
    with _user_code(f"bisecting {function} failed"):
        result = bisect(fn, *args, metric=metric, threshold=threshold, optimize=optimize,
                        pipeline=pipeline, reference=reference,
                        exclude_patterns=tuple(exclude_patterns), exact=exact,
                        reproducer=True if reproducer is None else reproducer)
    print(result.summary())
    return 0


def bench_command(function: str, args_spec: str, presets: Sequence[str],
                  baselines: Sequence[str] | None, min_time: float, repeats: int | None,
                  json_path: str | None) -> int:
    """Benchmark ``FILE.py:FUNC`` on ``MAKE_ARGS()`` and print the table."""
    from reactant_lab.bench import bench

    fn, args = _load_target(function, args_spec)
    with _user_code(f"benchmarking {function} failed"):
        result = bench(fn, *args, presets=tuple(presets), baselines=baselines,
                       min_time=min_time, repeats=repeats)
    print(result.table())
    if json_path:
        with open(json_path, "w", encoding="utf-8") as fh:
            fh.write(result.to_json())
        print(f"json: {os.path.abspath(json_path)}")
    return 0


def _fail(message: str) -> int:
    """Print ``message`` as one ``error:`` line (its further lines indented under it); 2."""
    first, *rest = str(message).strip().splitlines() or [""]
    print("\n".join([f"error: {first}", *(f"  {line}" for line in rest)]), file=sys.stderr)
    return 2


def _run(args: argparse.Namespace) -> int:
    if args.command == "demo":
        return demo(args.optimize, args.example, None if args.no_report else args.report_dir)
    if args.command == "report":
        options = ExploreOptions(optimize=args.optimize, granularity=args.granularity,
                                 verify=args.verify,
                                 exclude_patterns=tuple(args.exclude_patterns), exact=args.exact)
        return report(args.function, args.args, args.output, options=options)
    if args.command == "bisect":
        return bisect_command(args.function, args.args, metric=args.metric,
                              threshold=args.threshold, optimize=args.optimize,
                              pipeline=args.pipeline, reference=args.reference,
                              exclude_patterns=args.exclude_patterns, exact=args.exact,
                              reproducer=args.reproducer)
    return bench_command(args.function, args.args, args.presets, args.baselines,
                         args.min_time, args.repeats, args.json)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``reactant-lab`` command: 0 on success, 2 with one ``error:`` line on
    stderr on any failure (no traceback), 130 when interrupted."""
    try:
        with backend.device_errors():
            return _run(build_parser().parse_args(argv))
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except ReactantLabError as exc:
        return _fail(str(exc))
    except OSError as exc:  # the report or JSON file cannot be written
        return _fail(f"{exc}; check the path and its permissions")
    except Exception as exc:  # a bug in reactant_lab: still no traceback, but say so
        return _fail(f"reactant_lab failed unexpectedly: {_describe_exception(exc)}\n"
                     "This is a bug in reactant_lab; please report it with your file.")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
