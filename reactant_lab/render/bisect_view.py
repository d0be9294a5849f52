"""Views of a ``BisectResult``: JSON for the live explorer (``BisectEntry`` of the explorer
schema) and a script-free HTML panel for notebooks (``%reactant_bisect``): the culprit, the
figures without and with it, what it changed, the reproducer, and the log collapsed."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from reactant_lab.analysis.diff import Diff, diff
from reactant_lab.errors import AnalysisError
from reactant_lab.render.diff_html import diff_html
from reactant_lab.render.highlight import esc
from reactant_lab.render.payload import check_entry
from reactant_lab.render.report import scoped_css
from reactant_lab.verify import REFERENCE_LABELS

if TYPE_CHECKING:
    from reactant_lab.bisect import BisectResult
    from reactant_lab.verify import StageCheck

DIFF_TEXT_MAX = 200_000
"""The live explorer gets at most this many characters of the culprit's diff."""

_PANEL = ("border-left:4px solid {color};background:#fafbfc;padding:.4em 1em;margin:.3em 0;"
          "font:13px/1.45 system-ui,sans-serif;color:#1f2328")
_PRE = ("font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;"
        "background:#f6f8fa;padding:.4em;margin:.2em 0;max-height:30em;overflow:auto")
_CELL = "border:1px solid #d0d7de;padding:.15em .5em;text-align:left"


def culprit_diff(result: BisectResult) -> Diff | None:
    """The culprit's before -> after diff, or None without a culprit (or unreadable modules)."""
    if not result.found or result.before_ir is None or result.after_ir is None:
        return None
    try:
        d = diff(result.before_ir, result.after_ir)
    except AnalysisError:
        return None
    return Diff(d.before, d.after, d.before_lines, d.after_lines, d.blocks, d.structural,
                "before the culprit", "after it", d.renamings)


def bisect_entry(result: BisectResult) -> dict[str, Any]:
    """``result`` as the explorer schema's ``BisectEntry`` (JSON-able)."""
    d = culprit_diff(result)
    text = d.text() if d is not None else None
    if text is not None and len(text) > DIFF_TEXT_MAX:
        text = text[:DIFF_TEXT_MAX] + "\n… (cut: the reproducer holds both modules)\n"
    return {"fn_name": result.fn_name, "metric": result.metric, "threshold": result.threshold,
            "reference": _reference(result.reference), "found": bool(result.found),
            **({} if result.regressed is None else {"regressed": bool(result.regressed)}),
            "why": result.why, "stage": result.stage, "pass_index": result.pass_index,
            "pass_name": result.pass_name, "pass_pipeline": result.pass_pipeline,
            "patterns": list(result.patterns),
            "good": None if result.good is None else check_entry(result.good),
            "bad": None if result.bad is None else check_entry(result.bad),
            "tests": result.tests, "seconds": result.seconds,
            "reproducer": None if result.reproducer is None else str(result.reproducer),
            "diff": text, "diff_summary": None if d is None else d.summary(),
            "log": list(result.log)}


def _reference(reference: str | None) -> str | None:
    return None if reference is None else REFERENCE_LABELS.get(reference, reference)


def _figures(label: str, c: StageCheck | None) -> str:
    if c is None:
        cells = [label, "-", "-", "-", "-"]
    else:
        verdict = c.error or ("-" if c.ok is None else "ok" if c.ok else "wrong")
        cells = [label, _seconds(c.compile_seconds), _seconds(c.run_seconds),
                 "-" if c.max_abs is None else f"{c.max_abs:.2g}", verdict]
    return "<tr>" + "".join(f'<td style="{_CELL}">{esc(x)}</td>' for x in cells) + "</tr>"


def _seconds(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s * 1e6:,.1f} µs" if s < 1e-3 else f"{s * 1e3:,.2f} ms"


def bisect_html(result: BisectResult) -> str:
    """A script-free panel of ``result`` (inline styles: it shows the same anywhere)."""
    what = "the result" if result.metric == "result" else (
        result.metric.replace("_", " ") + (f" (×{result.threshold:g})" if result.threshold else ""))
    color = "#cf222e" if result.found else "#1a7f37" if result.regressed is False else "#656d76"
    scope = "rl-" + uuid.uuid4().hex[:10]  # the diff's CSS applies inside this panel only
    out = [f'<div class="reactant-lab-bisect" id="{scope}" style="{_PANEL.format(color=color)}">'
           f"<style>{scoped_css(scope, prefix_ids=False)}</style>"]
    if result.found:
        culprit = str(result.pass_name) + (f": {', '.join(result.patterns)}" if result.patterns
                                           else "")
        out.append(f"<div><strong>Culprit for {esc(what)}:</strong> <code>{esc(culprit)}</code>"
                   f" (stage {esc(str(result.stage))}, pass {result.pass_index})</div>")
    elif result.regressed is False:
        out.append(f"<div><strong>No regression in {esc(what)}</strong>: the final module is "
                   "not bad, so there is no pass to blame</div>")
    else:
        out.append(f"<div><strong>No single culprit for {esc(what)}</strong></div>")
    out.append(f"<p>{esc(result.why)}</p>")
    if result.pass_pipeline:
        out.append(f"<details><summary>the pass as it ran</summary><pre style=\"{_PRE}\">"
                   f"{esc(result.pass_pipeline)}</pre></details>")
    if result.good is not None or result.bad is not None:
        against = _reference(result.reference) or "the traced module"
        head = "".join(f'<th style="{_CELL}">{esc(h)}</th>' for h in
                       ("", "XLA compile", "run", "max abs error", f"vs {against}"))
        out.append(f'<table class="rl-bisect-figures" style="border-collapse:collapse">'
                   f"<tr>{head}</tr>{_figures('without it', result.good)}"
                   f"{_figures('with it', result.bad)}</table>")
    d = culprit_diff(result)
    if d is not None:
        out.append(f"<details open><summary>what the culprit changed: {esc(d.summary())}"
                   f"</summary>{diff_html(d, 'unified')}</details>")
    if result.reproducer is not None:
        out.append(f"<div>reproducer: <code>{esc(str(result.reproducer))}</code> "
                   "(<code>python rerun.py</code> in it)</div>")
    out.append(f"<details><summary>log: {result.tests} tests in {result.seconds:.1f} s</summary>"
               f'<pre style="{_PRE}">{esc(chr(10).join(result.log))}</pre></details></div>')
    return "".join(out)
