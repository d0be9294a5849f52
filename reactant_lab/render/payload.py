"""The explorer payload: one JSON-able dict holding every stage's IR (stored once), diffs, op
metrics, graphs, timings and the call's signature. The HTML report is built from it; the
notebook widget and MIME renderer read the same schema (docs/explorer-schema.md)."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reactant_lab import checks
from reactant_lab.analysis.collectives import CollectiveReport
from reactant_lab.analysis.diff import diff
from reactant_lab.analysis.graph import Signature, dataflow, signature_from_ir, signature_of
from reactant_lab.analysis.graph_diff import graph_diff_entry
from reactant_lab.analysis.graph_model import (
    collective_source,
    graph_model,
    mark_collectives,
    mesh_of,
)
from reactant_lab.analysis.hlo_graph import hlo_graph_model
from reactant_lab.analysis.metrics import op_table
from reactant_lab.analysis.mlir_func import parse_function
from reactant_lab.analysis.normalize import normalize, strip_locations
from reactant_lab.errors import AnalysisError, RenderError
from reactant_lab.render.cost_names import cost_names
from reactant_lab.render.diff_html import diff_html, diff_rows
from reactant_lab.render.graph_dot import to_dot
from reactant_lab.render.kernel_code import code_entry
from reactant_lab.render.source_map import provenance_entry
from reactant_lab.render.svg import render_svg
from reactant_lab.render.texts import TextStore
from reactant_lab.stages.presets import PRESETS
from reactant_lab.verify import REFERENCE_LABELS, SLOWER

if TYPE_CHECKING:
    from reactant_lab.compile import Compiled
    from reactant_lab.stages.kernels import CustomCallView
    from reactant_lab.stages.runner import Stage, StageTrace
    from reactant_lab.stages.xla import XlaStages
    from reactant_lab.trace import Traced
    from reactant_lab.verify import StageCheck, Verification

SCHEMA_VERSION = 1
"""Bumped on any incompatible change of the payload's layout."""
SCHEMA_PATH = Path(__file__).with_name("explorer.schema.json")
"""The payload's JSON Schema (draft 2020-12); the front end's types are generated from it."""
MIME_TYPE = "application/vnd.reactant-lab.explorer+json"
"""The MIME type a notebook bundle carries the payload under."""
UNIFIED_MAX = 262_144
"""A diff's unified HTML is kept too when its side-by-side HTML is at most this long."""
DIFF_ROWS = 200
"""A diff's HTML shows at most this many changed lines; ``rows`` always holds all of them."""


SVG_MODEL_NODES = 1_000
"""A graph whose model has at most this many nodes is laid out by the explorer itself (its cap
is 2,500 boxes, past which it shows the SVG while it waits): a notebook need not save its SVG."""


def notebook_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as a notebook saves it and the live widget gets it: what the explorer reads.
    Without the diffs' HTML (the explorer draws a diff from its ``rows``; the script-free HTML
    beside it in the display bundle is made from the whole payload) and without the SVG of a
    graph the explorer lays out from its ``model`` (at most SVG_MODEL_NODES nodes). Texts are
    stored once already (an identical stage shares its entry, a close one is a delta)."""
    def graph(g: dict[str, Any]) -> dict[str, Any]:
        model = g.get("model")
        if g.get("svg") and model is not None and len(model["nodes"]) <= SVG_MODEL_NODES:
            return {**g, "svg": None}
        return g

    return {**payload, "diffs": [{k: v for k, v in d.items() if k != "html"}
                                 for d in payload["diffs"]],
            "graphs": [graph(g) for g in payload["graphs"]]}


@dataclass(frozen=True)
class PayloadOptions:
    """What to compute for a payload, and how much."""

    max_ops: int = 300
    """Graphs of functions with more ops are drawn as summaries."""
    max_graphs: int = 8
    """At most this many graphs (first and last distinct stages first)."""
    pair_stages: int = 12
    """Diffs between all pairs of distinct stages when there are at most this many ..."""
    pair_lines: int = 5_000
    """... and no stage is longer than this; else only first vs last."""
    compress_over: int = 32_768
    """Texts longer than this are gzipped (or stored as a delta)."""
    svg: bool = True
    """Lay graphs out to SVG (needs graphviz-pure or dot); DOT source is always kept."""
    kernel_code: int = 32_768
    """At most this many characters of XLA:CPU's kernels' LLVM IR and assembly are kept,
    compressed (``xla.code``); a live explorer asks the kernel for the others."""

    def __post_init__(self) -> None:
        checks.count("PayloadOptions.kernel_code", self.kernel_code)
        for name in ("max_ops", "pair_stages", "pair_lines", "compress_over"):
            checks.count(f"PayloadOptions.{name}", getattr(self, name), minimum=1)
        checks.count("PayloadOptions.max_graphs", self.max_graphs)
        checks.flag("PayloadOptions.svg", self.svg)


def build_payload(stages: StageTrace, *, traced: Traced | None = None,
                  compiled: Compiled | None = None,
                  run: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
                  options: PayloadOptions | None = None,
                  verification: Verification | None = None) -> dict[str, Any]:
    """The payload of a StageTrace (with its Traced, Compiled, run timings and per-stage
    verification when known)."""
    opts = options or PayloadOptions()
    st = list(stages.stages)
    traced = traced if traced is not None else stages.traced
    texts = TextStore(opts.compress_over)
    xla = compiled.xla.reindexed(len(st)) if compiled is not None and compiled.xla else None
    every = st + list(xla.stages if xla is not None else ())
    structure = _structures(every)
    sig = _signature(st[0].ir, traced, compiled)
    table = op_table(every)
    report = compiled.collectives() if compiled is not None and _sharded(compiled) else None
    entries: list[dict[str, Any]] = []
    for s in every:  # an XLA stage is stored as a delta from the stage before it
        base = entries[-1]["text"] if s.index > len(st) else None
        entries.append(_stage_entry(s, texts, structure[s.index], table.stage_delta(s.index),
                                    base))
    payload: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "meta": {"function": traced.fn_name if traced is not None else "module",
                 "mode": traced.mode if traced is not None else None, "optimize": stages.optimize,
                 "granularity": stages.granularity, "target": stages.target,
                 "no_nan": bool(stages.no_nan), "exact": stages.pattern_choice.exact,
                 "presets": list(PRESETS), **(meta or {})},
        "signature": _sig_dict(sig, compiled.forwarded if compiled is not None else ()),
        "texts": texts.entries,
        "stages": entries,
        "diffs": _diffs(every, structure, opts, len(st)),
        "metrics": {"stages": list(table.stages), "ops": list(table.ops),
                    "counts": [list(r) for r in table.counts], "totals": list(table.totals)},
        "graphs": _graphs(st, structure[:len(st)], sig, payload_title(traced), opts,
                          _compiled_stage(st, compiled) if report else None, report,
                          stages.target) + _hlo_graph(xla, structure, sig, compiled),
        "xla": _xla(compiled, texts, report, mesh_of(st[-1].ir), xla,
                    entries[-1]["text"] if xla is not None else None),
        "run": run,
    }
    code = code_entry(xla, texts, opts.kernel_code) if xla is not None else None
    if code is not None and payload["xla"] is not None:
        payload["xla"]["code"] = code
    diffs = graph_diffs([g for g in payload["graphs"] if g["stage"] < len(st)])  # MLIR's
    if diffs:
        payload["graph_diffs"] = diffs
    calls = stages.custom_calls()
    if calls:
        payload["custom_calls"] = [custom_call_entry(v, texts) for v in calls]
    if verification is not None:
        payload["verification"] = verification_entry(verification)
    provenance = provenance_entry(every, traced)
    if provenance is not None:
        payload["provenance"] = provenance
    return payload


CONFIG_MAX = 4_096
"""A custom call's backend config is shown up to this many characters."""


def custom_call_entry(v: CustomCallView, texts: TextStore) -> dict[str, Any]:
    """One custom call as the explorer shows it: target, type, the stages that keep it, its
    backend config (a Mosaic kernel's fields, its body as MLIR when decoded)."""
    call, kernel = v.call, v.call.kernel
    config = call.backend_config if kernel is None else None
    return {"target": call.target, "type": call.type, "platform": call.platform,
            "has_side_effect": call.has_side_effect, "api_version": call.api_version,
            "stages": list(v.stages),
            "config": None if config is None else config[:CONFIG_MAX],
            "config_truncated": config is not None and len(config) > CONFIG_MAX,
            "kernel": None if kernel is None else {
                "name": kernel.name, "body_bytes": kernel.body_bytes,
                "fields": [list(f) for f in kernel.fields],
                "text": None if v.kernel_mlir is None else texts.add(v.kernel_mlir),
                "note": v.kernel_note}}


def verification_entry(v: Verification) -> dict[str, Any]:
    """The payload's ``verification``: the reference, the tolerance, one entry per stage, and
    which stage first went wrong and which first got more than SLOWER times slower."""
    wrong, slow = v.first_wrong, v.first_slower
    return {"reference": v.reference, "reference_label": REFERENCE_LABELS.get(v.reference,
                                                                              v.reference),
            "tolerance": v.tolerance, "repeat": v.repeat, "slower_factor": SLOWER,
            "first_wrong": None if wrong is None else wrong.index,
            "first_slower": None if slow is None else slow.index,
            "checks": [check_entry(c) for c in v.checks]}


def check_entry(c: StageCheck) -> dict[str, Any]:
    """One StageCheck as JSON (a figure that is not finite becomes null: JSON has no NaN)."""
    return {"index": c.index, "name": c.name, "compile_seconds": _finite(c.compile_seconds),
            "run_seconds": _finite(c.run_seconds), "max_abs": _finite(c.max_abs),
            "max_rel": _finite(c.max_rel), "ok": c.ok, "first_bad": c.first_bad,
            "error": c.error, "same_as": c.same_as, "slower": bool(c.slower)}


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def payload_title(traced: Traced | None) -> str:
    """Name shown for the function."""
    return traced.fn_name if traced is not None else "module"


def _structures(st: list[Stage]) -> list[int]:
    """Per stage, the index of the first stage with the same structure (normalized text)."""
    out: list[int] = []
    seen: dict[str, int] = {}
    for s in st:
        if out and not s.changed:
            out.append(out[-1])
            continue
        key = hashlib.sha1(normalize(s.ir).encode()).hexdigest()
        out.append(seen.setdefault(key, s.index))
    return out


def _signature(first_ir: str, traced: Traced | None, compiled: Compiled | None) -> Signature:
    if traced is not None:
        return signature_of(traced, donated=compiled.donated_args if compiled is not None
                            else False)
    try:
        return signature_from_ir(parse_function(first_ir))
    except AnalysisError:
        return Signature((), ())


def _sig_dict(sig: Signature, forwarded: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """The signature as the explorer shows it: the traced view (preserved_from, decided from the
    traced function) beside the view after the pipeline (preserved_after: results the passes
    reduced to an unchanged argument, which the executable neither computes nor donates)."""
    after = dict(forwarded)
    kept = set(after.values())
    return {"args": [{"index": a.index, "path": a.path, "type": a.type, "mutated": a.mutated,
                      "donated": a.donated and a.path not in kept} for a in sig.args],
            "results": [{"index": r.index, "path": r.path,
                         "type": r.type, "preserved_from": r.preserved_from,
                         "writes_back": r.writes_back, "preserved_after": after.get(r.path),
                         "constant": r.constant}
                        for r in sig.results],
            "skipped": [list(s) for s in sig.skipped],
            "names": dict(sig.names)}


def _stage_entry(s: Stage, texts: TextStore, structure: int, delta: dict[str, int],
                 base: int | None = None) -> dict[str, Any]:
    return {"index": s.index, "name": s.name, "group": s.group, "pipeline": s.pipeline,
            "seconds": s.seconds, "changed": bool(s.changed), "unavailable": s.unavailable,
            "ops": s.ops, "op_counts": dict(s.op_counts), "op_delta": delta,
            "text": texts.add(strip_locations(s.ir), base), "structure": structure}


def _diff_entry(a: Stage, b: Stage, kind: str) -> dict[str, Any]:
    d = diff(a, b)
    rows = d.added + d.removed + d.changed
    truncated = rows > DIFF_ROWS
    html = {"side-by-side": diff_html(d, "side-by-side",
                                      max_rows=DIFF_ROWS if truncated else None)}
    if not truncated and len(html["side-by-side"]) <= UNIFIED_MAX:
        html["unified"] = diff_html(d, "unified")
    return {"before": a.index, "after": b.index, "kind": kind, "empty": not d,
            "added": d.added, "removed": d.removed, "changed": d.changed,
            "summary": d.summary(), "html": html, "truncated": truncated,
            "rows": diff_rows(d, span_rows=DIFF_ROWS)}


def _diffs(st: list[Stage], structure: list[int], opts: PayloadOptions,
           paired: int | None = None) -> list[dict[str, Any]]:
    """Each stage against the one before, then pairs of distinct stages among the first
    ``paired`` (default: all): XLA's stages, from index ``paired`` on, are not compared with
    the MLIR ones (its first HLO is another IR than the StableHLO before it)."""
    out = []
    for s in st[1:]:
        if s.index == paired:
            continue
        prev = st[s.index - 1]
        if structure[s.index] == structure[prev.index]:
            out.append({"before": prev.index, "after": s.index, "kind": "previous",
                        "empty": True, "added": 0, "removed": 0, "changed": 0,
                        "summary": "no structural change", "html": None,
                        "truncated": False, "rows": []})
        else:
            out.append(_diff_entry(prev, s, "previous"))
    reps = sorted(set(structure[:paired]))
    longest = max(s.ir.count("\n") for s in st[:paired])
    if len(reps) <= opts.pair_stages and longest <= opts.pair_lines:
        pairs = [(a, b) for n, a in enumerate(reps) for b in reps[n + 1:]]
    else:
        pairs = [(reps[0], reps[-1])] if len(reps) > 1 else []
    consecutive = {(structure[s.index - 1], s.index) for s in st[1:paired]}
    out += [_diff_entry(st[a], st[b], "pair") for a, b in pairs if (a, b) not in consecutive]
    return out


def _sharded(compiled: Compiled) -> bool:
    return len(compiled.devices) > 1


def _compiled_stage(st: list[Stage], compiled: Compiled | None) -> int | None:
    """The index of the stage that was compiled (the last of that name)."""
    if compiled is None:
        return None
    return next((s.index for s in reversed(st) if s.name == compiled.stage), None)


def _graphs(st: list[Stage], structure: list[int], sig: Signature, name: str,
            opts: PayloadOptions, compiled_stage: int | None = None,
            report: CollectiveReport | None = None,
            platform: str | None = None) -> list[dict[str, Any]]:
    """The graphs of the first, last and some distinct stages between; the compiled stage's
    model marks the collectives ``report`` found in XLA's partitioned HLO; a dot's precision
    says what it computes on ``platform`` (the target)."""
    reps = sorted(set(structure))
    chosen = sorted({reps[0], reps[-1], *reps[1:-1][:max(opts.max_graphs - 2, 0)]})
    out = []
    for i in chosen:
        entry: dict[str, Any] = {"stage": i, "stages": [s.index for s in st
                                                        if structure[s.index] == i]}
        try:
            g = dataflow(st[i].ir, sig, max_ops=opts.max_ops,
                         title=f"{name} · stage {i}: {st[i].name}")
        except AnalysisError as exc:
            out.append({**entry, "kind": None, "error": str(exc)})
            continue
        # the note goes beside the picture (the explorer's caption, the report's paragraph)
        entry.update(kind=g.kind, ops=g.ops, note=g.note, dot=to_dot(g, note=False), svg=None,
                     error=None)
        model = graph_model(st[i].ir, sig, platform=platform)
        if model is not None:
            if report is not None and compiled_stage in entry["stages"]:
                mark_collectives(model, report.collectives)
            entry["model"] = model
        if opts.svg:
            try:
                entry["svg"] = render_svg(entry["dot"])
            except RenderError as exc:
                entry["error"] = str(exc)
        out.append(entry)
    return out


GRAPH_DIFF_NODES = 20_000
"""The graph diffs of a payload hold at most this many node matches in all (each pair's
``match`` has one per node of its later graph): consecutive graphs first, then first vs last,
then the other pairs."""


def graph_diffs(graphs: list[dict[str, Any]],
                budget: int = GRAPH_DIFF_NODES) -> list[dict[str, Any]]:
    """The payload's ``graph_diffs``: per pair of graphs with a model, which boxes the later
    one shares with the earlier, and which it added, removed or changed (``graph_diff``)."""
    models = sorted(((g["stage"], g["model"]) for g in graphs if g.get("model") is not None),
                    key=lambda sm: sm[0])
    n = len(models)
    pairs = [(k, k + 1) for k in range(n - 1)]
    pairs += [(0, n - 1)] if n > 2 else []
    pairs += [(i, j) for i in range(n) for j in range(i + 2, n) if (i, j) != (0, n - 1)]
    out = []
    for i, j in pairs:
        cost = len(models[j][1]["nodes"])
        if cost > budget:
            continue
        budget -= cost
        out.append(graph_diff_entry(models[i][0], models[j][0], models[i][1], models[j][1]))
    return out


HLO_GRAPH_OPS = 1_000
"""XLA's optimized HLO is drawn as a graph up to this many instructions."""


def _hlo_graph(xla: XlaStages | None, structure: list[int], sig: Signature,
               compiled: Compiled | None) -> list[dict[str, Any]]:
    """The graph of XLA's last stage, the optimized HLO (each fusion a region titled with the
    StableHLO ops and Python lines it came from), as a one-entry list; empty without XLA's
    stages or past HLO_GRAPH_OPS instructions."""
    if xla is None or compiled is None:
        return []
    final = xla.final
    entry: dict[str, Any] = {"stage": final.index, "kind": "full", "error": None,
                             "stages": [s.index for s in xla.stages
                                        if structure[s.index] == structure[final.index]]}
    try:
        model = hlo_graph_model(final.ir, [a.path for a in sig.args],
                                [r.path for r in sig.results if r.preserved_from is None],
                                stablehlo=compiled.as_text(debug_info=True),
                                max_ops=HLO_GRAPH_OPS)
    except AnalysisError as exc:
        return [{**entry, "kind": None, "error": str(exc)}]
    return [{**entry, "model": model}] if model is not None else []


def _xla(compiled: Compiled | None, texts: TextStore, report: CollectiveReport | None = None,
         mesh: str = "", xla: XlaStages | None = None,
         final: int | None = None) -> dict[str, Any] | None:
    """The payload's ``xla``; ``final``: the text id of XLA's last stage, which the optimized
    HLO (with its metadata) is stored as a delta from."""
    if compiled is None:
        return None
    cost = {k: float(v) for k, v in (compiled.cost_analysis() or {}).items()
            if isinstance(v, int | float)}
    entry = {"stage": compiled.stage, "device": compiled.placement,
            "compile_seconds": compiled.compile_seconds, "donate": any(compiled.donated_args),
            "hlo": texts.add(compiled.hlo_text(), final),
            "cost": cost, "cost_names": cost_names(cost),
            "memory": {k: int(v) for k, v in (compiled.memory_analysis() or {}).items()
                       if isinstance(v, int | float)}}
    if report is not None:
        entry["sharding"] = sharding_entry(report, mesh, [str(d) for d in compiled.devices])
    if compiled.notes:
        entry["notes"] = list(compiled.notes)
    if xla is not None:
        entry["passes"] = xla_passes_entry(xla)
    return entry


def xla_passes_entry(xla: XlaStages) -> dict[str, Any]:
    """The payload's ``xla.passes``: where XLA's stages start in the stage list, where the
    compile's time went, and every pass that ran with its runs, changes and time."""
    return {"first": xla.stages[0].index, "every_pass": xla.every_pass,
            "import_seconds": xla.import_seconds, "pass_seconds": xla.pass_seconds,
            "codegen_seconds": xla.codegen_seconds,
            "totals": [[t.name, t.runs, t.changed, t.seconds] for t in xla.totals()],
            "kernels": [name for name, _ in xla.kernels]}


def sharding_entry(report: CollectiveReport, mesh: str, devices: list[str]) -> dict[str, Any]:
    """The payload's ``xla.sharding``: partitions, mesh, devices, collectives, memory per
    device."""
    def one(c: Any) -> dict[str, Any]:
        src = collective_source(c)
        return {"op": c.op, "name": c.name, "shape": c.shape, "bytes": c.bytes,
                "devices": c.devices, "dimensions": list(c.dimensions),
                "asynchronous": c.asynchronous, "computation": c.computation,
                "op_name": c.op_name, "line": c.line, **({"src": src} if src else {})}

    return {"partitions": max(report.partitions, 1), "replicas": max(report.replicas, 1),
            "mesh": mesh, "devices": devices, "counts": report.counts, "bytes": report.bytes,
            "collectives": [one(c) for c in report.collectives],
            "memory_per_device": {k: int(v) for k, v in report.memory_per_device.items()
                                  if isinstance(v, int | float)}}
