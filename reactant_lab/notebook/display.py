"""What the magics show: the explorer's display bundle (the JSON payload under the explorer's MIME
type, a script-free HTML report, a plain-text summary) and the error panel."""

from __future__ import annotations

import re
import uuid
from typing import Any

from reactant_lab.analysis.normalize import strip_locations
from reactant_lab.bench import BenchResult
from reactant_lab.errors import (
    ControlFlowError,
    PassFailedError,
    ReactantLabError,
    UnsupportedArgumentError,
    UnsupportedNumpyFunctionError,
)
from reactant_lab.explore import Exploration
from reactant_lab.render.highlight import esc
from reactant_lab.render.payload import MIME_TYPE, PayloadOptions, notebook_payload
from reactant_lab.render.texts import TextStore, decode_text

__all__ = ["MIME_TYPE", "cell_file_labels", "error_bundle", "explorer_bundle", "explorer_payload",
           "relabel_files", "summary_text"]

ERROR_IR_LINES = 200
"""The error panel shows at most this many lines of the last good module."""


def cell_file_labels(shell: Any) -> dict[str, str]:
    """File name -> ``Cell In[N]`` for the notebook's cells (IPython's own traceback labels), so
    that what a notebook saves names cells, not files of the kernel's temporary directory."""
    numbers = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    return {name: f"Cell In[{n}]" for name, n in numbers.items() if isinstance(name, str)}


def relabel(text: str, labels: dict[str, str]) -> str:
    """``text`` with each file name of ``labels`` replaced by its label."""
    if not labels:
        return text
    pattern = re.compile("|".join(re.escape(n) for n in sorted(labels, key=len, reverse=True)))
    return pattern.sub(lambda m: labels[m.group(0)], text)


_QUOTED_PATH = re.compile(r'"((?:/|[A-Za-z]:[\\/])[^"\n]*)"')


def _short(path: str) -> str:
    parts = re.split(r"[\\/]", path)
    if "site-packages" in parts:  # an installed package: its own path
        return "/".join(parts[len(parts) - parts[::-1].index("site-packages"):])
    return parts[-1]


def shorten_paths(text: str, labels: dict[str, str]) -> str:
    """``relabel``, then any other quoted absolute file name (XLA's HLO lists the files of its
    ops' stack frames, the kernel's own included) shortened to its package path or base name."""
    return _QUOTED_PATH.sub(lambda m: f'"{_short(m.group(1))}"', relabel(text, labels))


def relabel_files(payload: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """The payload with file names in every module text relabelled and shortened
    (``shorten_paths``): what a notebook saves names cells and packages, not this machine's
    directories."""
    store, ids = TextStore(PayloadOptions().compress_over), dict[int, int]()
    for entry in payload["texts"]:
        text = decode_text(payload["texts"], entry["id"])
        base = ids[entry["base"]] if entry.get("encoding") == "delta" else None
        # a short text gzipped stays so (a kernel's code, kept compressed)
        ids[entry["id"]] = store.add(shorten_paths(text, labels), base,
                                     packed=entry.get("encoding") == "gzip")
    out = {**payload, "texts": store.entries,
           "stages": [{**s, "text": ids[s["text"]]} for s in payload["stages"]]}
    if payload.get("xla"):
        out["xla"] = {**payload["xla"], "hlo": ids[payload["xla"]["hlo"]]}
        code = payload["xla"].get("code")
        if code:
            kernels = [{**k, **{what: None if k[what] is None else ids[k[what]]
                                for what in ("llvm_ir", "assembly")}} for k in code["kernels"]]
            out["xla"]["code"] = {**code, "kernels": kernels}
    if payload.get("custom_calls"):
        out["custom_calls"] = [
            {**c, "kernel": {**c["kernel"], "text": ids[c["kernel"]["text"]]}}
            if c.get("kernel") and c["kernel"].get("text") is not None else c
            for c in payload["custom_calls"]]
    if payload.get("provenance"):
        files = [labels.get(f) or _short(f) for f in payload["provenance"]["files"]]
        out["provenance"] = {**payload["provenance"], "files": files}
    return out


def bench_run(bench: BenchResult, preset: str) -> dict[str, Any]:
    """The payload's ``run`` timings from a benchmark of the preset beside its baselines."""
    out: dict[str, Any] = {}
    for row in bench.rows:
        if row.name == preset and row.kind == "preset":
            out.update(median_seconds=row.median_s, iqr_seconds=row.iqr_s,
                       samples=len(row.samples_s))
        elif row.kind == "baseline":
            name = "jax_jit" if row.name == "jax" else row.name
            out[f"{name}_median_seconds"] = row.median_s
    return out


def explorer_payload(ex: Exploration, *, bench: BenchResult | None = None,
                     labels: dict[str, str] | None = None,
                     options: PayloadOptions | None = None) -> dict[str, Any]:
    """The explorer payload of ``ex`` (schema 1), with the benchmark under ``bench`` when given
    and file names relabelled; ``options`` says what to keep (default ``PayloadOptions()``)."""
    from reactant_lab.render.explorer import exploration_payload

    run = bench_run(bench, ex.stages.optimize) if bench is not None else None
    payload = exploration_payload(ex, run, options=options)
    if bench is not None:
        payload["bench"] = bench.to_dict()
    return relabel_files(payload, labels or {})


def explorer_bundle(ex: Exploration, *, bench: BenchResult | None = None,
                    labels: dict[str, str] | None = None,
                    payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """The display bundle: the payload under the explorer's MIME type (as ``notebook_payload``
    trims it: what the explorer reads), a script-free HTML report in brief (for nbconvert, VS
    Code, GitHub and anything without the explorer; made from the whole ``payload``) and a text
    summary. ``payload``: the whole payload when already made (``explorer_payload``)."""
    from reactant_lab.render.bench_chart import result_html
    from reactant_lab.render.report import report_fragment

    payload = payload if payload is not None else explorer_payload(ex, bench=bench, labels=labels)
    html = report_fragment(payload, "rl-" + uuid.uuid4().hex[:10])
    if bench is not None:
        html += f"<h2>Benchmark</h2>{result_html(bench)}"
    return {MIME_TYPE: notebook_payload(payload), "text/html": html,
            "text/plain": summary_text(ex, bench)}


def summary_text(ex: Exploration, bench: BenchResult | None = None) -> str:
    """Plain-text summary: signature, stage table, compile and run times, benchmark."""
    return ex.summary() + (f"\n\n{bench.table()}" if bench is not None else "")


_HINTS = {
    UnsupportedArgumentError: "%%reactant_jit explores every function the cell defines; choose "
                              "the ones to explore with --fn NAME.",
}
# The error panel's colours: JupyterLab's theme variables (so that it reads in light and dark
# themes alike, at WCAG AA contrast), light colours where there are none (nbconvert, GitHub). Each
# element that JupyterLab's rendered-HTML styles colour (pre, code, th, td, summary) gets the
# panel's pair explicitly. A sanitized (untrusted) output loses the var() declarations, all of
# them together, and shows JupyterLab's own colours.
_FG = "color:var(--jp-content-font-color1,#1f2328)"
_PANEL = ("border-left:4px solid #cf222e;"
          "background-color:var(--jp-rendermime-error-background,#fff8f8);"
          f"padding:.4em 1em;margin:.3em 0;font:13px/1.45 system-ui,sans-serif;{_FG}")
_PRE = ("font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;"
        f"background-color:var(--jp-layout-color2,#f6f8fa);{_FG};padding:.4em;margin:.2em 0;"
        "max-height:30em;overflow:auto;border:none")
_CELL = f"background-color:transparent;{_FG};border:none"
_CODE = f"background-color:transparent;{_FG}"


def error_fields(exc: ReactantLabError, labels: dict[str, str]) -> list[tuple[str, str]]:
    """(label, text) rows of what the error knows: stage, pass, where, reproducer."""
    rows: list[tuple[str, str]] = []
    if isinstance(exc, PassFailedError):
        rows += [("stage", exc.stage), ("pass", exc.pass_name)]
        if exc.reproducer:
            rows.append(("reproducer", f"{exc.reproducer} (python {exc.reproducer}/rerun.py)"))
    if isinstance(exc, ControlFlowError | UnsupportedNumpyFunctionError) and exc.filename:
        rows.append(("where", f"{relabel(exc.filename, labels)}, line {exc.lineno}"))
    if isinstance(exc, UnsupportedArgumentError):
        rows.append(("argument", f"{exc.path} ({exc.leaf_type.__name__})"))
    return rows


def error_bundle(exc: ReactantLabError, labels: dict[str, str] | None = None) -> dict[str, str]:
    """The error panel: what failed and where (stage, pass, MLIR's diagnostics, the reproducer),
    without reactant_lab's traceback."""
    labels = labels or {}
    name = type(exc).__name__
    message = relabel(str(exc), labels).strip()
    if isinstance(exc, PassFailedError):  # diagnostics and reproducer get their own rows
        message = message.split("\nMLIR diagnostics:", 1)[0]
    rows = error_fields(exc, labels)
    hint = next((h for cls, h in _HINTS.items() if isinstance(exc, cls)), None)
    plain = [f"{name}: {message}", *(f"  {k}: {v}" for k, v in rows)]
    html = [f'<div class="reactant-lab-error" style="{_PANEL}"><strong>{esc(name)}</strong>'
            f'<pre style="{_PRE}">{esc(message)}</pre>']
    if rows:
        html.append('<table style="border-collapse:collapse;margin:.2em 0">' + "".join(
            f'<tr style="background-color:transparent">'
            f'<th style="text-align:left;padding:0 1em 0 0;{_CELL}">{esc(k)}</th>'
            f'<td style="text-align:left;padding:0;{_CELL}"><code style="{_CODE}">{esc(v)}</code>'
            "</td></tr>" for k, v in rows) + "</table>")
    if isinstance(exc, PassFailedError):
        diagnostics = relabel(exc.diagnostics.strip(), labels) or "(none printed)"
        plain.append(f"  MLIR diagnostics:\n    {diagnostics}")
        html.append(f'<div>MLIR diagnostics</div><pre style="{_PRE}">{esc(diagnostics)}</pre>')
        lines = strip_locations(exc.last_good_ir).splitlines()
        shown = "\n".join(lines[:ERROR_IR_LINES]) + (
            f"\n... {len(lines) - ERROR_IR_LINES} more lines" if len(lines) > ERROR_IR_LINES else "")
        html.append(f'<details><summary style="{_FG}">module before the failing pass '
                    f"({len(lines)} lines)"
                    f'</summary><pre style="{_PRE}">{esc(relabel(shown, labels))}</pre></details>')
    if hint:
        plain.append(hint)
        html.append(f'<p style="{_FG}">{esc(hint)}</p>')
    html.append("</div>")
    return {"text/html": "".join(html), "text/plain": "\n".join(plain)}
