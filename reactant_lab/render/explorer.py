"""What ``Exploration``'s viewing methods delegate to: graphs of a stage, payload, report."""

from __future__ import annotations

from typing import Any

from reactant_lab.analysis.graph import MAX_OPS, Dataflow, dataflow, signature_of
from reactant_lab.render.payload import PayloadOptions, build_payload
from reactant_lab.render.report import report_html


def stage_graph(ex: Any, stage: int | str = -1, max_ops: int = MAX_OPS,
                result: str | int | None = None) -> Dataflow:
    """Dataflow graph of one stage's ``main`` of an Exploration."""
    s = ex.stages[stage]
    title = f"{ex.traced.fn_name} · stage {s.index}: {s.name}"
    if ex.from_text:  # the signature comes from the module itself
        return dataflow(s.ir, max_ops=max_ops, result=result, title=title)
    compiled = ex.compiled
    sig = signature_of(ex.traced, donated=bool(getattr(compiled, "donate", False)))
    return dataflow(s.ir, sig, max_ops=max_ops, result=result, title=title)


def exploration_payload(ex: Any, meta: dict[str, Any] | None = None,
                        run: dict[str, Any] | None = None,
                        options: PayloadOptions | None = None) -> dict[str, Any]:
    """The explorer payload of an Exploration (``run`` adds measured run times)."""
    timing = {"first_call_seconds": ex.run_seconds} if ex.run_seconds is not None else {}
    timing.update(run or {})
    return build_payload(ex.stages, traced=None if ex.from_text else ex.traced,
                         compiled=ex.compiled,
                         run=timing or None, meta=meta, options=options)


def exploration_html(ex: Any, meta: dict[str, Any] | None = None,
                     run: dict[str, Any] | None = None,
                     options: PayloadOptions | None = None) -> str:
    """The self-contained HTML report of an Exploration."""
    return report_html(exploration_payload(ex, meta, run, options))
