"""The IPython magics: ``%%reactant_jit`` (and its line form), ``%%reactant_mlir``,
``%reactant_bench`` and ``%reactant_bisect``; errors of reactant_lab become an error panel instead
of a traceback."""

from __future__ import annotations

import argparse
import ast
import weakref
from collections.abc import Callable
from types import CodeType
from typing import Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from reactant_lab.bench import BASELINES, EXACT, BenchResult, bench
from reactant_lab.errors import (
    ExecutionError,
    PipelineError,
    ReactantLabError,
    UnknownPresetError,
)
from reactant_lab.explore import Exploration, ExploreOptions, build_from_text
from reactant_lab.notebook import display as nbdisplay
from reactant_lab.notebook.cell import CELL_SYNTAX, NoValue, cell_number, run_body
from reactant_lab.notebook.magic_options import at_least, one_of, parse, seconds
from reactant_lab.notebook.session import CellOptions, CellSession, Example, Explored
from reactant_lab.stages.presets import PRESETS, SHARDY_PASSES

_LAST: list[Exploration] = []
_PRESET = {"--optimize": one_of(PRESETS)}


def last_explorations() -> list[Exploration]:
    """The explorations the most recent magic displayed (one per distinct call signature)."""
    return list(_LAST)


@magics_class
class ReactantMagics(Magics):
    """``%load_ext reactant_lab`` registers these."""

    @magic_arguments()
    @argument("--optimize", default="all", metavar="PRESET",
              help=f"optimize preset of every call (default all): {', '.join(PRESETS)}")
    @argument("--pipeline", default=None, metavar="PASSES",
              help="a pass pipeline to run instead of the preset, e.g. inline,canonicalize,cse")
    @argument("--granularity", choices=("stage", "pass"), default="stage",
              help="one step per preset stage (default) or per pass")
    @argument("--fn", nargs="+", action="extend", metavar="NAME",
              help="explore only these functions (of this cell or earlier cells) instead of "
                   "every function the cell defines")
    @argument("--bench", nargs="?", type=at_least(0), const=0, default=None, metavar="N",
              help="add a benchmark of each call signature (N samples; default: automatic) "
                   "beside NumPy and jax.jit")
    @argument("--baselines", default=None, metavar="B1,B2",
              help="with --bench, the baselines to time (default: numpy, jax, and numba where "
                   "installed), e.g. numpy")
    @argument("--device", choices=("cpu", "gpu", "tpu"), default=None,
              help="device to compile for and run on (default: JAX's default device)")
    @argument("--no-run", action="store_true",
              help="explore without running compiled code: the calls run the original Python")
    @argument("--verify", action="store_true",
              help="also compile, run and time every stage on copies of the call's arguments "
                   "and compare each with the reference (the explorer's XLA / run / error "
                   "columns)")
    @argument("--reference", choices=("auto", "numpy", "jax", "stage0"), default="auto",
              help="what --verify compares with (default auto: NumPy eager for NumPy code, "
                   "jax.jit for JAX code)")
    @argument("--exclude-patterns", default="", metavar="P1,P2",
              help="enzyme-hlo patterns to leave out (entries or names, comma-separated)")
    @argument("--exact", action="store_true",
              help="run Reactant's pattern list untouched (no exclusions applied)")
    @argument("--loops", choices=("auto", "roll", "unroll"), default="auto",
              help="Python loops and branches on traced values: roll them into stablehlo.while "
                   "/ case where possible (auto, the default), always (roll: an error where "
                   "not), or trace every iteration (unroll); see docs/loops.md")
    @argument("--shardy-passes", choices=tuple(SHARDY_PASSES), default="default",
              help="for a call sharded over a mesh: keep the traced sdy annotations for XLA's "
                   "partitioner (default), or add Shardy's propagation and export as stages "
                   "(to_mhlo_shardings: every value shows its sharding)")
    @argument("--timeout", type=float, default=None, metavar="SECONDS",
              help="limit each compiled call's run (a CallTimeoutError past it, the arrays "
                   "untouched); Ctrl-C stops a call that may not end either way")
    @argument("--no-display", action="store_true", help="show no explorer")
    @argument("call", nargs="*", help="line form only: the call to explore, e.g. f(x, y)")
    @line_cell_magic
    def reactant_jit(self, line: str, cell: str | None = None) -> Any:
        """Trace, stage, compile and run every call the cell makes, and show an explorer per
        distinct call signature below the cell's output.

        The functions the cell defines (or those named by --fn) are wrapped while the cell runs:
        each call is traced to StableHLO, run through the optimize preset stage by stage,
        compiled with XLA and run on the device; calls with the same signature share one
        executable and one explorer. The cell computes the same values as without the magic
        (a NumPy kernel's arguments are updated in place) and its last expression is shown as
        usual. A cell function called from another one appears in the module as its own
        func.func (called, until the inline stage inlines it). Calls without an array argument,
        and calls under the cell's own jax.jit / jax.grad / vmap, run the original Python. After
        the cell the names hold the original functions again; errors of reactant_lab show as a
        panel (stage, pass, diagnostics, reproducer) and leave the arrays as they were. With
        --verify every stage is also compiled, run on copies of the first call's arguments,
        compared with the reference and timed (the arrays end as one run leaves them).

        Line form: ``%reactant_jit f(x, y)`` explores one call and returns its value.
        """
        __tracebackhide__ = True
        if cell is None:
            return self._jit_line(line)
        args = parse(self.reactant_jit, line, "%reactant_jit", _PRESET)
        if args.call:
            raise UsageError(f"%%reactant_jit takes options only, not {' '.join(args.call)!r}; "
                             "the cell body is the code (line form: %reactant_jit f(x))")
        options = _options(args)
        install_error_panel(self.shell)
        session = CellSession(options)
        header = f"%%reactant_jit {line}".rstrip()
        try:
            value = run_body(self.shell, header, cell, session, args.fn)
        except Exception as exc:
            _relabel_notes(exc, nbdisplay.cell_file_labels(self.shell))
            raise
        if value is not NoValue:
            self._shell().displayhook(value)
        self._finish(list(session.explored.values()), options, args.no_display)
        return None

    def _jit_line(self, line: str) -> Any:
        __tracebackhide__ = True
        prefix, call = split_call(line)
        args = parse(self.reactant_jit, prefix, "reactant_jit", _PRESET)
        if args.fn:
            raise UsageError("--fn is for the cell form; the line form explores the call it is "
                             "given")
        options = _options(args)
        install_error_panel(self.shell)
        fn, call_args, call_kwargs = self._evaluate_call(call)
        session = CellSession(options)
        try:
            value = session.call(fn, call_args, call_kwargs)
        finally:
            session.close()
        if not session.explored:
            print(f"%reactant_jit: nothing to explore: {call} has no array argument")
        self._finish(list(session.explored.values()), options, args.no_display)
        return value

    def _finish(self, explored: list[Explored], options: CellOptions, no_display: bool) -> None:
        _LAST[:] = [e.exploration for e in explored]
        for entry in explored:
            result = None
            if options.bench is not None:
                result = _bench(entry, options)
            if not no_display:
                show(self.shell, entry.exploration, bench=result, example=entry.example())

    @magic_arguments()
    @argument("--granularity", choices=("stage", "pass"), default="stage",
              help="one step per preset stage (default) or per pass")
    @argument("--no-nan", action="store_true", help="let the enzyme-hlo patterns assume no NaNs")
    @argument("--device", choices=("cpu", "gpu", "tpu"), default=None,
              help="target of the lowering passes (default: JAX's default device)")
    @argument("--no-display", action="store_true", help="show no explorer")
    @argument("pipeline", nargs="*", metavar="PIPELINE-or-PRESET",
              help="an optimize preset (default all) or a pass pipeline, e.g. canonicalize,cse")
    @cell_magic
    def reactant_mlir(self, line: str, cell: str) -> None:
        """Run a preset or a pass pipeline stage by stage on the MLIR module in the cell body
        (Reactant's run_pass_pipeline_on_source) and show the explorer. Nothing is compiled or
        run: a module given as text has no Python signature."""
        args = parse(self.reactant_mlir, line, "%reactant_mlir")
        install_error_panel(self.shell)
        target = " ".join(args.pipeline).strip() or "all"
        preset, pipeline = (target, None) if target in PRESETS else ("all", target)
        ex = build_from_text(cell, ExploreOptions(
            optimize=preset, pipeline=pipeline, granularity=args.granularity,
            no_nan=args.no_nan, device=args.device))
        _LAST[:] = [ex]
        if not args.no_display:
            show(self.shell, ex)

    @magic_arguments()
    @argument("--presets", default="none,all", metavar="P1,P2",
              help="optimize presets to time (default none,all)")
    @argument("--baselines", default=None, metavar="B1,B2",
              help="baselines to time beside them: numpy (NumPy code only), jax (jax.jit), "
                   "numba (numba.njit of NumPy code; pip install reactant-lab[numba]); default "
                   "numpy,jax, and numba where it is installed")
    @argument("--repeats", type=at_least(1), default=None, metavar="N",
              help="samples per variant (default: as many as --min-time allows)")
    @argument("--min-time", type=seconds, default=0.2, metavar="SECONDS",
              help="measure each variant for at least this long (default 0.2)")
    @argument("--device", choices=("cpu", "gpu", "tpu"), default=None, help="device to run on")
    @argument("--timeout", type=float, default=None, metavar="SECONDS",
              help="limit each preset's first run (a CallTimeoutError past it)")
    @argument("call", nargs="*", help="the call to time, e.g. f(x, y)")
    @line_magic
    def reactant_bench(self, line: str) -> BenchResult:
        """%timeit for the compiled call: each preset compiled through the pipeline and timed
        beside NumPy and jax.jit in one round-robin run; returns the BenchResult (a table and a
        chart of the samples)."""
        __tracebackhide__ = True
        prefix, call = split_call(line)
        args = parse(self.reactant_bench, prefix, "reactant_bench", {
            "--presets": one_of(PRESETS, listed=True, suffix=EXACT),
            "--baselines": one_of(BASELINES, listed=True)})
        install_error_panel(self.shell)
        fn, call_args, call_kwargs = self._evaluate_call(call)
        result: BenchResult = bench(
            fn, *call_args, presets=_names(args.presets),
            baselines=None if args.baselines is None else _names(args.baselines),
            repeats=args.repeats, min_time=args.min_time, device=args.device,
            timeout=args.timeout, **call_kwargs)
        return result

    @magic_arguments()
    @argument("--metric", choices=("result", "runtime", "compile_time"), default="result",
              help="what goes bad: a wrong result (default), a slower run, a slower compile")
    @argument("--threshold", type=seconds, default=None, metavar="X",
              help="runtime / compile_time: bad above X times the traced module's (default 2)")
    @argument("--optimize", default="all", metavar="PRESET",
              help=f"optimize preset to bisect (default all): {', '.join(PRESETS)}")
    @argument("--pipeline", default=None, metavar="PASSES",
              help="a pass pipeline to bisect instead of the preset")
    @argument("--reference", choices=("auto", "numpy", "jax", "stage0"), default="auto",
              help="what a result is compared with (default auto)")
    @argument("--exclude-patterns", default="", metavar="P1,P2",
              help="enzyme-hlo patterns to leave out (entries or names, comma-separated)")
    @argument("--exact", action="store_true",
              help="run Reactant's pattern list untouched (no exclusions applied)")
    @argument("--no-nan", action="store_true", help="let the enzyme-hlo patterns assume no NaNs")
    @argument("--device", choices=("cpu", "gpu", "tpu"), default=None, help="device to run on")
    @argument("--no-reproducer", action="store_true", help="write no reproducer directory")
    @argument("call", nargs="*", help="the call to bisect, e.g. f(x, y)")
    @line_magic
    def reactant_bisect(self, line: str) -> Any:
        """Find the pass (and inside the enzyme-hlo pattern pass, the patterns) that first makes
        the call's result wrong, or its run or compile slower: rl.bisect on the call, with its
        progress shown below the cell; returns the BisectResult (the culprit, the figures
        without and with it, what it changed, the reproducer, the log)."""
        __tracebackhide__ = True
        from reactant_lab.bisect import bisect

        prefix, call = split_call(line)
        args = parse(self.reactant_bisect, prefix, "reactant_bisect", _PRESET)
        install_error_panel(self.shell)
        fn, call_args, call_kwargs = self._evaluate_call(call)
        progress = display({"text/plain": "%reactant_bisect: starting…"}, raw=True,
                           display_id=True)

        def say(message: str) -> None:
            if progress is not None:
                progress.update({"text/plain": f"%reactant_bisect: {message}"}, raw=True)

        try:
            result = bisect(fn, *call_args, optimize=args.optimize, pipeline=args.pipeline,
                            metric=args.metric, threshold=args.threshold, no_nan=args.no_nan,
                            device=args.device, exclude_patterns=_names(args.exclude_patterns),
                            exact=args.exact, reference=args.reference,
                            reproducer=not args.no_reproducer, progress=say, **call_kwargs)
        except UnknownPresetError as exc:
            raise UsageError(str(exc)) from None
        say(f"done: {result.tests} tests in {result.seconds:.1f} s")
        return result

    def _shell(self) -> InteractiveShell:
        shell = self.shell
        assert shell is not None  # IPython registers magics with the shell that runs them
        return shell

    def _evaluate_call(self, call: str
                       ) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        """The function, positional and keyword arguments of a call written in the line."""
        __tracebackhide__ = True
        shell = self._shell()
        filename = shell.compile.cache(call, cell_number(shell))
        tree = shell.compile.ast_parse(call, filename=filename, symbol="eval")
        if not isinstance(tree, ast.Expression) or not isinstance(tree.body, ast.Call):
            raise UsageError(f"expected a call such as f(x, y), not {call!r}")
        ns = shell.user_ns
        fn = eval(_compile(shell, ast.Expression(tree.body.func), filename), ns)
        capture = ast.Call(ast.Name("__reactant_lab_args__", ast.Load()), tree.body.args,
                           tree.body.keywords)
        code = _compile(shell, ast.fix_missing_locations(ast.Expression(capture)), filename)
        args, kwargs = eval(code, ns, {"__reactant_lab_args__": lambda *a, **k: (a, k)})
        return fn, args, kwargs


def _compile(shell: InteractiveShell, tree: ast.Expression, filename: str) -> CodeType:
    """Compile with the shell's compiler, so the code keeps the cell's ``__future__`` flags."""
    # codeop.Compile hands its source to compile(), which takes an AST too; typeshed says str.
    return shell.compile(tree, filename, "eval")  # type: ignore[arg-type]  # AST source, see above


def split_call(line: str) -> tuple[str, str]:
    """``'--opt v f(x, y)'`` -> ``('--opt v', 'f(x, y)')``: the call is the shortest tail of the
    line that reads as a Python call."""
    words = [i for i, ch in enumerate(line) if not ch.isspace() and (i == 0 or line[i - 1].isspace())]
    for i in words:
        tail = line[i:].strip()
        if tail.startswith("-"):
            continue
        try:
            tree = ast.parse(tail, mode="eval")
        except SyntaxError:
            continue
        if isinstance(tree.body, ast.Call):
            return line[:i].strip(), tail
    raise UsageError(f"expected options and then a call such as f(x, y), not {line.strip()!r}")


def _relabel_notes(exc: BaseException, labels: dict[str, str]) -> None:
    """File names of the kernel's cells in the notes reactant_lab added become ``Cell In[N]``."""
    notes = getattr(exc, "__notes__", None)
    if notes:
        notes[:] = [nbdisplay.relabel(n, labels) for n in notes]


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def _options(args: argparse.Namespace) -> CellOptions:
    try:
        explore = ExploreOptions(optimize=args.optimize, pipeline=args.pipeline,
                                 granularity=args.granularity, device=args.device,
                                 exclude_patterns=_names(args.exclude_patterns),
                                 exact=args.exact, verify=args.verify, reference=args.reference,
                                 loops=args.loops, shardy_passes=args.shardy_passes,
                                 timeout=args.timeout)
    except (UnknownPresetError, PipelineError, ExecutionError) as exc:
        raise UsageError(str(exc)) from None
    return CellOptions(explore=explore, run=not args.no_run, bench=args.bench,
                       baselines=None if args.baselines is None else _names(args.baselines))


def _bench(entry: Explored, options: CellOptions) -> BenchResult:
    args, kwargs = entry.inputs
    presets = tuple(dict.fromkeys(("none", options.explore.optimize)))
    result: BenchResult = bench(entry.fn, *args, presets=presets,
                                baselines=options.baselines,
                                repeats=options.bench or None, device=options.explore.device,
                                timeout=options.explore.timeout, **kwargs)
    return result


def show(shell: Any, ex: Exploration, *, bench: BenchResult | None = None,
         example: Example | None = None) -> None:
    """Display the explorer of ``ex`` below the cell: the live widget, whose output also carries
    the static bundle that saved notebooks and other front ends show (see notebook/widget.py);
    the static bundle alone when this installation has no widget front end. ``example`` (the
    call's function and arguments) lets the widget verify and bisect."""
    from reactant_lab.notebook.widget import ExplorerWidget

    labels = nbdisplay.cell_file_labels(shell)
    try:
        widget = ExplorerWidget(ex, bench=bench, labels=labels, example=example)
    except ReactantLabError as exc:  # the front end was not built into this installation
        display(nbdisplay.explorer_bundle(ex, bench=bench, labels=labels), raw=True)
        print(f"(static explorer: {exc})")
        return
    display(widget)


_PANELS: weakref.WeakKeyDictionary[Any, Callable[[], None]] = weakref.WeakKeyDictionary()


def install_error_panel(shell: Any) -> None:
    """Until the current cell has finished, show a ReactantLabError as an error panel (the cell
    still fails; the kernel keeps running). IPython's custom exception hook is restored after."""
    if shell in _PANELS:
        return
    saved = (shell.custom_exceptions, shell.CustomTB)
    previous = saved[1]

    def handler(shell: Any, etype: type, value: BaseException, tb: Any,
                tb_offset: int | None = None) -> list[str]:
        if isinstance(value, SyntaxError) and not isinstance(value, saved[0]):
            # As IPython shows it: a syntax error of the cell's code at its line, without a
            # frame (as in a plain cell), another one (compile() of a string at run time) with
            # the frames it came through. IPython discards what a handler returns.
            shell.showsyntaxerror(running_compiled_code=not getattr(value, CELL_SYNTAX, False))
            return []
        if not isinstance(value, ReactantLabError):
            shown: list[str] = previous(etype, value, tb, tb_offset)
            return shown
        display(nbdisplay.error_bundle(value, nbdisplay.cell_file_labels(shell)), raw=True)
        first = str(value).strip().splitlines()[0] if str(value).strip() else ""
        return [f"{etype.__name__}: {first} (details in the panel above)"]

    def restore() -> None:
        shell.custom_exceptions, shell.CustomTB = saved
        shell.events.unregister("post_execute", restore)
        _PANELS.pop(shell, None)

    shell.set_custom_exc((*saved[0], ReactantLabError, SyntaxError), handler)
    shell.events.register("post_execute", restore)
    _PANELS[shell] = restore
