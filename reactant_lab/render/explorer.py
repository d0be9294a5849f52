"""Views of an ``Exploration``: a stage's dataflow graph (DOT, SVG), the explorer payload, the
HTML report. Functions that take the exploration: the explore layer below knows nothing of
rendering."""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING, Any

from reactant_lab import checks
from reactant_lab.analysis.graph import MAX_OPS, Dataflow, dataflow, signature_of
from reactant_lab.explore import Exploration
from reactant_lab.render.graph_dot import to_dot
from reactant_lab.render.highlight import esc
from reactant_lab.render.payload import PayloadOptions, build_payload, verification_entry
from reactant_lab.render.report import report_html, scoped_css
from reactant_lab.render.svg import render_svg
from reactant_lab.render.tables import stage_table_html

if TYPE_CHECKING:
    from reactant_lab.trace import Traced


def _exploration(ex: Any) -> None:
    """``ex`` must be an Exploration (rl.explore's, or a jit function's ``.last``)."""
    if not isinstance(ex, Exploration):
        hint = (" (a jit function's latest one is its .last)"
                if hasattr(ex, "explorations") else "")
        checks.instance("ex", ex, Exploration,
                        f"an Exploration from rl.explore(f, *args){hint}")


def _mapping(name: str, value: Any) -> None:
    if value is not None:
        checks.instance(name, value, dict, "a dict or None")


def _traced(ex: Exploration) -> Traced | None:
    """The exploration's trace; None for an exploration of module text."""
    return None if ex.from_text else ex.traced_call


def stage_graph(ex: Exploration, stage: int | str = -1, max_ops: int = MAX_OPS,
                result: str | int | None = None) -> Dataflow:
    """Dataflow graph of one stage's ``main`` of an Exploration."""
    _exploration(ex)
    checks.count("max_ops", max_ops, minimum=1)
    s = ex.stages[stage]
    title = f"{ex.traced.fn_name} · stage {s.index}: {s.name}"
    if ex.from_text:  # the signature comes from the module itself
        return dataflow(s.ir, max_ops=max_ops, result=result, title=title)
    compiled = ex.compiled
    sig = signature_of(ex.traced, donated=compiled.donated_args if compiled is not None
                       else False)
    return dataflow(s.ir, sig, max_ops=max_ops, result=result, title=title)


def graph_dot(ex: Exploration, stage: int | str = -1, *, max_ops: int = 300,
              result: str | int | None = None) -> str:
    """DOT source of the dataflow graph of a stage's ``main``: a summary of which results
    depend on which arguments past ``max_ops`` ops; ``result=PATH`` draws one result's slice."""
    return to_dot(stage_graph(ex, stage, max_ops, result))


def graph_svg(ex: Exploration, stage: int | str = -1, *, max_ops: int = 300,
              result: str | int | None = None) -> str:
    """The graph of ``graph_dot`` laid out as SVG (graphviz-pure, else Graphviz's dot)."""
    return render_svg(graph_dot(ex, stage, max_ops=max_ops, result=result))


def exploration_payload(ex: Exploration, run: dict[str, Any] | None = None, *,
                        meta: dict[str, Any] | None = None,
                        options: PayloadOptions | None = None) -> dict[str, Any]:
    """The explorer payload of an Exploration (JSON-able; schema in
    ``render/explorer.schema.json``); ``run`` adds measured run times. A verified exploration's
    payload carries its ``verification``."""
    _exploration(ex)
    _mapping("run", run)
    _mapping("meta", meta)
    if options is not None:
        checks.instance("options", options, PayloadOptions, "a PayloadOptions or None")
    timing = {"first_call_seconds": ex.run_seconds} if ex.run_seconds is not None else {}
    timing.update(run or {})
    return build_payload(ex.stages, traced=_traced(ex), compiled=ex.compiled, run=timing or None,
                         meta={"versions": dict(ex.versions), **(meta or {})}, options=options,
                         verification=ex.verification)


def exploration_html(ex: Exploration, run: dict[str, Any] | None = None, *,
                     options: PayloadOptions | None = None) -> str:
    """A self-contained HTML report: stages, IR, diffs, graphs, op metrics, XLA HLO, timing
    (``run`` adds measured run times, e.g. ``{"median_seconds": ...}``)."""
    return report_html(exploration_payload(ex, run, options=options))


def save_html(ex: Exploration, path: str, run: dict[str, Any] | None = None) -> str:
    """Write ``exploration_html(ex, run)`` to ``path``; returns the path."""
    checks.instance("path", path, (str, os.PathLike), "a file path (str or os.PathLike)")
    html = exploration_html(ex, run)
    with open(path, "w", encoding="utf-8") as f:
        f.write(html)
    return path


def exploration_summary_html(ex: Exploration) -> str:
    """An Exploration as a notebook shows the value: what was explored, and the stage table (with
    XLA compile, run time and error per stage when it was verified); the explorer shows more."""
    scope = "rl-" + uuid.uuid4().hex[:10]
    st = ex.stages
    stages = [{"index": s.index, "name": s.name, "pipeline": s.pipeline,
               "unavailable": s.unavailable, "changed": bool(s.changed), "ops": s.ops,
               "seconds": s.seconds} for s in st.stages]
    v = None if ex.verification is None else verification_entry(ex.verification)
    facts = [f"optimize={st.optimize}", f"granularity={st.granularity}", f"target={st.target}"]
    if ex.compiled is not None:
        facts.append(f"XLA compile {ex.compiled.compile_seconds * 1e3:.1f} ms on "
                     f"{ex.compiled.device}")
        facts += ex.compiled.notes
    if ex.run_seconds is not None:
        facts.append(f"first run {ex.run_seconds * 1e3:.2f} ms")
    return (f'<div class="reactant-lab-report" id="{scope}"><style>{scoped_css(scope)}</style>'
            f"<p><strong>{esc(ex.traced.fn_name)}</strong> "
            f'<span class="meta">{esc(" · ".join(facts))}</span></p>'
            f"{stage_table_html(stages, v)}</div>")
