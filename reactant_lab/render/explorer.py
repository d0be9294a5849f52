"""Views of an ``Exploration``: a stage's dataflow graph (DOT, SVG), the explorer payload, the
HTML report. Functions that take the exploration: the explore layer below knows nothing of
rendering."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from reactant_lab import checks
from reactant_lab.analysis.graph import MAX_OPS, Dataflow, Signature, dataflow, signature_of
from reactant_lab.analysis.graph_model import MODEL_MAX_OPS, graph_model
from reactant_lab.explore import Exploration
from reactant_lab.render.graph_dot import to_dot
from reactant_lab.render.payload import PayloadOptions, build_payload
from reactant_lab.render.report import report_html
from reactant_lab.render.svg import render_svg

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


def _signature(ex: Exploration) -> Signature | None:
    """The call's signature; None for module text (the module itself says it)."""
    if ex.from_text:
        return None
    compiled = ex.compiled
    return signature_of(ex.traced, donated=compiled.donated_args if compiled is not None
                        else False)


def stage_graph(ex: Exploration, stage: int | str = -1, max_ops: int = MAX_OPS,
                result: str | int | None = None) -> Dataflow:
    """Dataflow graph of one stage's ``main`` of an Exploration."""
    _exploration(ex)
    checks.count("max_ops", max_ops, minimum=1)
    s = ex.stages[stage]
    title = f"{ex.traced.fn_name} · stage {s.index}: {s.name}"
    return dataflow(s.ir, _signature(ex), max_ops=max_ops, result=result, title=title)


def stage_model(ex: Exploration, stage: int | str = -1, *,
                max_ops: int = MODEL_MAX_OPS) -> dict[str, Any] | None:
    """The explorer's graph model of one stage's ``main`` (every argument, op and result; see
    ``GraphModel`` in the explorer's schema), or None past ``max_ops`` ops."""
    _exploration(ex)
    checks.count("max_ops", max_ops, minimum=1)
    return graph_model(ex.stages[stage].ir, _signature(ex), max_ops=max_ops,
                       platform=ex.stages.target)


def graph_dot(ex: Exploration, stage: int | str = -1, *, max_ops: int = 300,
              result: str | int | None = None) -> str:
    """DOT source of the dataflow graph of a stage's ``main``: a summary of which results
    depend on which arguments past ``max_ops`` ops; ``result=PATH`` draws one result's slice."""
    g = stage_graph(ex, stage, max_ops, result)
    hint = (f"max_ops={g.ops} draws it in full; result=PATH draws one result's slice"
            if g.kind == "summary" else "")
    return to_dot(g, hint=hint)


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
