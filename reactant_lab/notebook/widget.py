"""The live explorer: ``ExplorerWidget(exploration)``, an anywidget whose front end is the same
explorer UI the JupyterLab extension renders saved outputs with.

Display path (measured in a real JupyterLab 4.6 with ipywidgets 8.1, anywidget 0.11 and this
package's extension, driven from Chromium; tests/browser/test_widget_browser.py): a caller only
``display(ExplorerWidget(ex, rerun=..., bench=...))``. ``_repr_mimebundle_`` returns the widget
view (``application/vnd.jupyter.widget-view+json``) merged with the static bundle of
``reactant_lab.notebook.display.explorer_bundle`` (the payload under
``application/vnd.reactant-lab.explorer+json``, the HTML fallback, the text summary). JupyterLab
by itself would always pick the widget view for such an output (the widget renderer's rank, -10,
beats every static renderer) and show "model not found" once the kernel is gone; so the
extension installs in each notebook an explorer renderer ranked ahead of it (-20) that shows the
live widget when the output is trusted, a kernel is attached and the widget manager has the
model, and the explorer from the saved payload otherwise. Measured: a cell run live shows the
live widget; reloading the page while the kernel runs shows the live widget again; after the
kernel is replaced, and in a notebook opened with no kernel at all, the saved explorer shows (and
no kernel is started). Without the extension (nbconvert, VS Code, GitHub) the HTML shows.

Protocol (docs/widget-protocol.md): the synced traits are ``payload`` (the explorer payload,
schema 1, as ``notebook_payload`` trims it), ``saved`` (the output's HTML fallback and text
summary for that payload, after a re-run), ``status`` (``{"state": "idle" | "running" |
"error", "message", "progress"}``), ``result`` (``{"id", "kind": "diff" | "slice" | "graph" |
"code" | "error", "data"}``, the answer to the last request) and ``bisect`` (the last
bisection's ``BisectEntry``, or None). The front end sends ``{"command": "rerun" | "diff" |
"slice" | "graph" | "code" | "verify" | "bisect", ...}`` messages; verify and bisect need the
call's ``example`` (the magics give it).

Saved = on screen: the output keeps the bundle of the cell's run, so after a re-run (or verify)
the extension's notebook renderer writes the new ``payload`` and ``saved`` into the output's data
(the widget view announces them with a DOM event, labextension/src/widget.ts): saving the
notebook then stores what is on screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets

from reactant_lab.errors import GraphTooLargeError, ReactantLabError
from reactant_lab.render.explorer import graph_svg
from reactant_lab.render.payload import PayloadOptions, notebook_payload

if TYPE_CHECKING:
    from reactant_lab.bench import BenchResult
    from reactant_lab.explore import Exploration
    from reactant_lab.notebook.session import Example

__all__ = ["BUNDLE", "ExplorerWidget", "Rerun", "front_end_bundle"]
SLICE_MAX_OPS = 2_000
"""The most ops of a result's slice the kernel lays out with Graphviz for the live widget."""
GRAPH_MAX_OPS = 100_000
"""The most ops of a stage whose whole graph model the live widget sends on request (past the
payload's cap; about 2 MB and 3 s per 13,000 ops), for the page to draw whole or sliced."""

BUNDLE = Path(__file__).with_name("static") / "widget.js"
"""The built front end (labextension/src/widget.ts bundled by the package build)."""
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
MESSAGE_MAX = 6_000
"""Error messages longer than this are cut (MLIR diagnostics can run long)."""

Rerun = Callable[[str, str, bool, str | None], "Exploration"]
"""``rerun(optimize, granularity, no_nan, pipeline) -> Exploration``."""


def front_end_bundle() -> str:
    """The widget's ES module; a clear error when the package was installed without it."""
    if not BUNDLE.is_file():
        raise ReactantLabError(
            f"the explorer widget's front end ({BUNDLE.name}) is missing from this installation "
            "of reactant_lab: it is built when the package is installed. Reinstall reactant_lab "
            "(pip install --force-reinstall reactant_lab, or pip install -e . in a checkout).")
    return BUNDLE.read_text(encoding="utf-8")


_RUNS = ("rerun", "verify", "bisect")
"""Commands that run in the kernel and report through ``status`` (the others answer with
``result``)."""


def _status(state: str, message: str = "", progress: float | None = None) -> dict[str, Any]:
    return {"state": state, "message": message, "progress": progress}


def _error_message(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= MESSAGE_MAX else text[:MESSAGE_MAX] + " …"


class ExplorerWidget(anywidget.AnyWidget):
    """An exploration in a notebook: stages, diffs between any two stages, graphs and one
    result's slice, op metrics, XLA's HLO, timings; re-runs with another preset, granularity,
    ``no_nan`` or pass pipeline without re-running the cell."""

    payload = traitlets.Dict().tag(sync=True)
    """The explorer payload (docs/explorer-schema.md), as a notebook saves it."""
    saved = traitlets.Dict().tag(sync=True)
    """The rest of the output's bundle for ``payload`` (``text/html``, ``text/plain``): empty
    until a re-run replaces the cell's own; the front end saves it with the payload."""
    status = traitlets.Dict().tag(sync=True)
    """What the widget is doing: idle, running (with a progress fraction) or error."""
    result = traitlets.Dict().tag(sync=True)
    """The answer to the front end's last request (``diff``, ``slice``, ``graph``, ``code``),
    or its error."""
    bisect = traitlets.Dict(default_value=None, allow_none=True).tag(sync=True)
    """What the last ``bisect`` command found (the schema's ``BisectEntry``), or None."""

    def __init__(self, exploration: Exploration, *, rerun: Rerun | None = None,
                 bench: BenchResult | None = None, labels: dict[str, str] | None = None,
                 example: Example | None = None, options: PayloadOptions | None = None) -> None:
        """``rerun`` re-explores for the controls (default: the exploration's own trace, staged
        and compiled again); ``bench`` a BenchResult shown in the timing panel; ``labels`` file
        name -> label for the texts (the magics' cell labels); ``example`` the call as
        ``(fn, args, kwargs)``, which the verify and find-culprit controls run (on copies);
        ``options`` what the payload keeps, and so what a saved notebook holds (e.g.
        ``PayloadOptions(kernel_code=0)``: no kernel's code, which the live explorer fetches)."""
        self._esm = front_end_bundle()
        super().__init__()
        self.exploration = exploration
        """The exploration shown (replaced by each re-run)."""
        self._rerun = rerun
        self._bench = bench
        self._labels = labels
        self._example = example
        self._options = options
        self.status = _status("idle")
        self._whole = self._payload(exploration)
        """The whole payload (the HTML fallback is made from it)."""
        self.payload = notebook_payload(self._whole)
        self.on_msg(self._on_msg)

    def _payload(self, exploration: Exploration) -> dict[str, Any]:
        from reactant_lab.notebook.display import explorer_payload

        return explorer_payload(exploration, bench=self._bench, labels=self._labels,
                                options=self._options)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The widget view together with the static explorer bundle (payload, HTML, text)."""
        from reactant_lab.notebook.display import explorer_bundle

        shown = super()._repr_mimebundle_(**kwargs)
        if shown is None:
            return None
        data, metadata = shown
        bundle = explorer_bundle(self.exploration, bench=self._bench, labels=self._labels,
                                 payload=self._whole)
        return {**bundle, WIDGET_MIME: data[WIDGET_MIME]}, metadata

    # Commands from the front end ---------------------------------------------------------

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        self.handle_command(content)

    def handle_command(self, content: dict[str, Any]) -> None:
        """Carry out one front-end command; a failure becomes the ``status`` (re-runs) or an
        ``error`` result (requests), never an exception in the kernel."""
        command = content.get("command") if isinstance(content, dict) else None
        handler = {"rerun": self._cmd_rerun, "diff": self._cmd_diff, "slice": self._cmd_slice,
                   "graph": self._cmd_graph, "code": self._cmd_code,
                   "verify": self._cmd_verify, "bisect": self._cmd_bisect}.get(str(command))
        request = content.get("id", 0) if isinstance(content, dict) else 0
        try:
            if handler is None:
                raise ReactantLabError(f"unknown explorer command {command!r}; known: rerun, "
                                       "diff, slice, graph, code, verify, bisect")
            if command in _RUNS:
                # The front end takes silence after a run command for a missing kernel: answer
                # at once, also when the handler fails before it reports progress.
                self.status = _status("running", f"{command}: starting…", 0.01)
            handler(content)
        except Exception as exc:
            if not isinstance(exc, ReactantLabError):
                self.log.exception("explorer command %r failed", command)
            message = _error_message(exc)
            if command in _RUNS:
                self.status = _status("error", message)
            else:
                self.result = {"id": request, "kind": "error", "data": {"message": message}}

    def _stage_index(self, value: Any, xla: bool = False) -> int:
        """A stage index of the request; ``xla``: XLA's own stages count too."""
        n = len(self.exploration.all_stages if xla else self.exploration.stages.stages)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
            raise ReactantLabError(f"no stage {value!r}: this explorer has stages 0 to {n - 1}"
                                   + ("" if xla else " with a dataflow graph"))
        return value

    def _cmd_diff(self, content: dict[str, Any]) -> None:
        from reactant_lab.analysis.diff import diff
        from reactant_lab.render.diff_html import diff_rows
        from reactant_lab.render.payload import DIFF_ROWS

        stages = self.exploration.all_stages
        a = stages[self._stage_index(content.get("before"), xla=True)]
        b = stages[self._stage_index(content.get("after"), xla=True)]
        d = diff(a, b)
        entry = {"before": a.index, "after": b.index, "kind": "pair", "empty": not d,
                 "added": d.added, "removed": d.removed, "changed": d.changed,
                 "summary": d.summary(), "truncated": False,
                 "rows": diff_rows(d, span_rows=DIFF_ROWS)}
        self.result = {"id": content.get("id", 0), "kind": "diff", "data": entry}

    def _cmd_slice(self, content: dict[str, Any]) -> None:
        stage = self._stage_index(content.get("stage"))
        result = content.get("result")
        if not isinstance(result, str | int) or isinstance(result, bool):
            raise ReactantLabError(f"a slice needs a result path such as 'result[0]', got "
                                   f"{result!r}")
        # Only a graph without a model (past its op cap) asks the kernel: the page slices the
        # model itself. Lay out up to SLICE_MAX_OPS ops; past that, say what draws it.
        try:
            svg = graph_svg(self.exploration, stage, result=result, max_ops=SLICE_MAX_OPS)
        except GraphTooLargeError as exc:
            raise ReactantLabError(
                f"the slice of {result} has more than {SLICE_MAX_OPS:,} ops, too many to lay out "
                "as a picture: draw the slice from the whole graph instead (the graph tab's "
                "“draw a slice”)") from exc
        self.result = {"id": content.get("id", 0), "kind": "slice",
                       "data": {"stage": stage, "result": result, "svg": svg}}

    def _cmd_graph(self, content: dict[str, Any]) -> None:
        """Stage ``stage``'s whole graph model; with ``compare``, that stage's model too and the
        graph diff between the two (the graph tab's "changes from" past the payload's cap)."""
        from reactant_lab.analysis.graph_diff import graph_diff_entry

        stage = self._stage_index(content.get("stage"))
        data: dict[str, Any] = {"stage": stage, "model": self._model(stage)}
        if content.get("compare") is not None:
            compare = self._stage_index(content.get("compare"))
            data.update(compare=compare, compare_model=self._model(compare))
            (a, ma), (b, mb) = sorted([(stage, data["model"]), (compare, data["compare_model"])],
                                      key=lambda sm: sm[0])
            data["diff"] = graph_diff_entry(a, b, ma, mb)
        self.result = {"id": content.get("id", 0), "kind": "graph", "data": data}

    def _model(self, stage: int) -> dict[str, Any]:
        """Stage ``stage``'s whole graph model, up to GRAPH_MAX_OPS ops."""
        from reactant_lab.render.explorer import stage_model

        model = stage_model(self.exploration, stage, max_ops=GRAPH_MAX_OPS)
        if model is None:
            ops = self.exploration.stages[stage].ops
            raise ReactantLabError(
                f"stage {stage} has {ops:,} ops, more than the {GRAPH_MAX_OPS:,} the explorer "
                "draws: the summary above shows which results depend on which arguments")
        return model

    def _cmd_code(self, content: dict[str, Any]) -> None:
        """A kernel's LLVM IR or assembly (``what``), for a kernel whose code the payload left
        out (``xla.code``)."""
        from reactant_lab.render.kernel_code import kernel_code

        xla = self.exploration.xla
        kernel, what = content.get("kernel"), content.get("what")
        if xla is None or not xla.kernels:
            raise ReactantLabError("this explorer has no kernels' code: XLA:CPU emits it, and "
                                   "only when the exploration keeps XLA's stages")
        if not isinstance(kernel, str):
            raise ReactantLabError(f"a kernel's code needs the kernel's name, got {kernel!r}")
        text = kernel_code(xla, kernel, str(what))
        self.result = {"id": content.get("id", 0), "kind": "code",
                       "data": {"kernel": kernel, "what": what, "text": text}}

    def _cmd_rerun(self, content: dict[str, Any]) -> None:
        optimize = str(content.get("optimize") or "all")
        granularity = str(content.get("granularity") or "stage")
        no_nan = bool(content.get("no_nan"))
        pipeline = str(content.get("pipeline") or "").strip() or None
        # a pipeline's own pattern pass says its list: exact is for the presets
        exact = bool(content.get("exact", self.exploration.options.exact)) and pipeline is None
        if granularity not in ("stage", "pass"):
            raise ReactantLabError(f"unknown granularity {granularity!r}; use 'stage' or 'pass'")
        what = f"pipeline {pipeline}" if pipeline else f"preset {optimize}" + (
            " (Reactant exact)" if exact else "")
        start = time.perf_counter()
        self.status = _status("running", f"re-running with {what}: running the passes…", 0.05)
        if self._rerun is not None:
            exploration = self._rerun(optimize, granularity, no_nan, pipeline)
            if exploration.options.exact != exact:
                exploration = exploration.restaged(exact=exact)
        else:
            exploration = self.exploration.restaged(optimize=optimize, granularity=granularity,
                                                    no_nan=no_nan, pipeline=pipeline,
                                                    exact=exact)
        if self.exploration.verification is not None and exploration.verification is None \
                and self._example is not None:  # a verified explorer stays verified
            self.status = _status("running", f"re-running with {what}: verifying…", 0.5)
            exploration = self._verified(exploration)
        self._show(exploration, f"re-ran with {what}: {len(exploration.stages.stages)} stages "
                                f"in {time.perf_counter() - start:.2f} s")

    def _show(self, exploration: Exploration, done: str) -> None:
        from reactant_lab.notebook.display import MIME_TYPE, explorer_bundle

        self.status = _status("running", "drawing the explorer…", 0.8)
        whole = self._payload(exploration)
        bundle = explorer_bundle(exploration, bench=self._bench, labels=self._labels,
                                 payload=whole)
        self.exploration, self._whole = exploration, whole
        # before the payload: the front end saves both when the payload changes
        self.saved = {k: v for k, v in bundle.items() if k != MIME_TYPE}
        self.payload = bundle[MIME_TYPE]
        self.status = _status("idle", done)

    def _example_call(self, what: str) -> Example:
        if self._example is None:
            raise ReactantLabError(
                f"this explorer cannot {what}: it was made without the call's arguments. Use "
                "%%reactant_jit (or ExplorerWidget(ex, example=(fn, args, kwargs))), or call "
                f"rl.{'explore(..., verify=True)' if what == 'verify' else 'bisect(fn, *args)'}.")
        return self._example

    def _verified(self, exploration: Exploration) -> Exploration:
        from reactant_lab.explore import verified

        _fn, args, kwargs = self._example_call("verify")
        return verified(exploration, args, kwargs)

    def _cmd_verify(self, _content: dict[str, Any]) -> None:
        if self.exploration.from_text:
            raise ReactantLabError("an explorer of module text has no inputs to run its stages "
                                   "on: verify a traced call")
        self._example_call("verify")
        start = time.perf_counter()
        n = len(self.exploration.stages.stages)
        self.status = _status("running", f"verifying {n} stages: compiling and running each…",
                              0.1)
        exploration = self._verified(self.exploration)
        v = exploration.verification
        wrong = v.first_wrong if v is not None else None
        verdict = (f"stage {wrong.index} {wrong.name} went wrong" if wrong is not None
                   else "every stage matches")
        self._show(exploration, f"verified {n} stages in {time.perf_counter() - start:.2f} s: "
                                f"{verdict}")

    def _cmd_bisect(self, content: dict[str, Any]) -> None:
        from reactant_lab.bisect import METRICS, bisect
        from reactant_lab.render.bisect_view import bisect_entry

        metric = str(content.get("metric") or "result")
        if metric not in METRICS:
            raise ReactantLabError(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
        fn, args, kwargs = self._example_call("find the culprit")
        o = self.exploration.options
        self.status = _status("running", f"finding the culprit for {metric}…", None)

        def progress(message: str) -> None:
            self.status = _status("running", f"find culprit ({metric}): {message}", None)

        result = bisect(fn, *args, optimize=o.optimize, pipeline=o.pipeline, metric=metric,
                        no_nan=o.no_nan, device=o.device, mode=o.mode,
                        trace_scalars=o.trace_scalars, exclude_patterns=o.exclude_patterns,
                        patterns=o.patterns, exact=o.exact, reference=o.reference,
                        progress=progress, **kwargs)
        self.bisect = bisect_entry(result)
        verdict = (f"culprit {result.pass_name}" if result.found else
                   "no regression" if result.regressed is False else "no single culprit")
        self.status = _status("idle", f"find culprit ({metric}): {verdict} after {result.tests} "
                                      f"tests in {result.seconds:.1f} s")
