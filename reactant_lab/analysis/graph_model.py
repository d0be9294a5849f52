"""The dataflow graph of a module's ``main`` as data for the explorer's interactive graph: every
argument, op and result with its SSA name, op name, attributes, types, IR line and Python source
line, and the producers of the values it uses. The front end lays it out, folds constants,
collapses regions, slices and searches it; nothing here draws."""

from __future__ import annotations

import os
import re
from typing import Any

from reactant_lab.analysis.graph import Signature, _Graph, signature_from_ir
from reactant_lab.analysis.mlir_func import Op, ParsedFunc, parse_function
from reactant_lab.analysis.provenance import op_sources
from reactant_lab.errors import AnalysisError

MODEL_MAX_OPS = 10_000
"""Functions with more ops get no model (the payload would grow past a few MB): the explorer
shows the summary graph then."""
CALLEE_NODES = 5_000
"""At most this many nodes of called functions' bodies (each call site its own copy)."""
CALL_DEPTH = 4
"""Calls nested deeper than this stay closed boxes without a body."""
ATTRS_MAX = 400
"""Attribute text longer than this is cut (a dense constant can be megabytes)."""

_CELL = re.compile(r"ipykernel_\d+|<ipython-input-")
_LOC_ALIAS_LINE = re.compile(r"^\s*#loc\w*\s*=\s*loc\(.*$")
_RESULTS = re.compile(r"^\s*(%[A-Za-z0-9$._-]+(?::\d+)?(?:\s*,\s*%[A-Za-z0-9$._-]+(?::\d+)?)*)"
                      r"\s*=\s*")
_SSA_USE = re.compile(r"%[A-Za-z0-9$._-]+(?:#\d+|:\d+)?")
_OPERANDS = re.compile(r"^\s*(?:%[A-Za-z0-9$._#-]+(?::\d+)?\s*,?\s*)+")


def graph_model(text: str, signature: Signature | None = None, *,
                max_ops: int = MODEL_MAX_OPS) -> dict[str, Any] | None:
    """The model of ``main`` in module ``text`` (see ``GraphModel`` in the explorer's schema), or
    None past ``max_ops`` ops. Raises AnalysisError when ``main`` cannot be parsed."""
    func = parse_function(text)
    if len(func.ops) > max_ops:
        return None
    sig = signature or signature_from_ir(func)
    g = _Graph(func, sig)
    stripped = [line for line in text.splitlines() if not _LOC_ALIAS_LINE.match(line)]
    sources = ({line: f"{_shown_file(src.file)}:{src.line}:{src.col}"
                for line, src in op_sources(text).items()} if " loc(" in text else {})
    index: dict[str, int] = {}
    nodes: list[dict[str, Any]] = []
    used = {src[:-5] if src.endswith(".args") else src for op in func.ops for src in op.inputs}
    used |= {r.source for r in func.results if r.source}
    for a in sig.args:
        arg = g._arg_node(a, f"arg{a.index}" in used)
        index[arg.id] = len(nodes)
        fa = func.args[a.index] if a.index < len(func.args) else None
        nodes.append({"id": arg.id, "kind": "arg", "name": a.path, "ssa": fa.name if fa else "",
                      "type": fa.type if fa else a.type, "in": [], "marks": list(arg.marks)})
    for op in func.ops:
        index[op.id] = len(nodes)
        nodes.append(_op_node(op, stripped, sources, g))
    for op, entry in zip(func.ops, nodes[len(nodes) - len(func.ops):], strict=True):
        entry["in"] = [index[s[:-5] if s.endswith(".args") else s] for s in op.inputs
                      if (s[:-5] if s.endswith(".args") else s) in index]
        if op.parent is not None and op.parent in index:
            entry["parent"] = index[op.parent]
            entry["region"] = op.region
    for n, r in enumerate(sig.results):
        res = g._result_node(n, r)
        src = g.source(r)
        nodes.append({"id": res.id, "kind": "result", "name": r.path, "ssa": "",
                      "type": r.type, "in": [index[src]] if src is not None and src in index
                      else [], "marks": list(res.marks)})
    _add_callees(text, nodes, stripped, sources)
    return {"ops": len(func.ops), "nodes": nodes}


def _add_callees(text: str, nodes: list[dict[str, Any]], stripped: list[str],
                 sources: dict[int, str]) -> None:
    """Give each ``func.call`` node its callee's body as its one region (ops, then a
    ``func.return``), appended after the nodes; nested calls too, down to CALL_DEPTH, while the
    nodes added stay within CALLEE_NODES."""
    funcs: dict[str, tuple[ParsedFunc, _Graph] | None] = {}
    depth = dict.fromkeys(range(len(nodes)), 0)
    added = 0
    k = 0
    while k < len(nodes):  # nodes are appended as calls are expanded: nested calls come later
        call, node = k, nodes[k]
        k += 1
        callee = _callee(node)
        if callee is None or depth.get(call, 0) >= CALL_DEPTH:
            continue
        if callee not in funcs:
            try:
                f = parse_function(text, callee)
                funcs[callee] = (f, _Graph(f, signature_from_ir(f)))
            except AnalysisError:
                funcs[callee] = None
        found = funcs[callee]
        if found is None or added + len(found[0].ops) + 1 > CALLEE_NODES:
            continue
        f, g = found
        base = len(nodes)
        local = {op.id: base + j for j, op in enumerate(f.ops)}

        def resolve(src: str, call: int = call, local: dict[str, int] = local) -> int | None:
            src = src[:-5] if src.endswith(".args") else src
            return call if src.startswith("arg") else local.get(src)

        for op in f.ops:
            entry = _op_node(op, stripped, sources, g)
            entry["id"] = f"{node['id']}/{op.id}"
            entry["in"] = [r for r in map(resolve, op.inputs) if r is not None]
            inner = op.parent is not None and op.parent in local
            entry["parent"] = local[op.parent] if inner and op.parent else call
            entry["region"] = op.region if inner else 0
            depth[len(nodes)] = depth.get(call, 0) + 1
            nodes.append(entry)
        nodes.append({"id": f"{node['id']}/return", "kind": "op", "op": "func.return", "ssa": "",
                      "type": ", ".join(r.type for r in f.results), "attrs": "",
                      "in": [r for r in (resolve(x.source) for x in f.results if x.source)
                             if r is not None], "parent": call, "region": 0})
        node["regions"] = [f"@{callee}"]
        added += len(f.ops) + 1


_ENZYME_CALLERS = ("enzyme.autodiff", "enzyme.fwddiff", "enzyme.batch")
_FN_ATTR = re.compile(r"\bfn = @([\w$.-]+)")


def _callee(node: dict[str, Any]) -> str | None:
    """The function a node calls: a ``func.call``'s callee, or the function an Enzyme op
    differentiates or batches (its ``fn`` attribute), whose body then shows as its region."""
    name = node.get("op", "")
    if name.startswith("func.call @"):
        return str(name[len("func.call @"):])
    if name in _ENZYME_CALLERS and (m := _FN_ATTR.search(node.get("attrs", ""))):
        return m.group(1)
    return None


def _shown_file(path: str) -> str:
    """A source file as the model names it, with no path of this machine (payloads are saved in
    notebooks and reports): relative to the working directory when inside it, ``cell`` for a
    notebook cell, else the file's name."""
    if _CELL.search(path):
        return "cell"
    if os.path.isabs(path):
        rel = os.path.relpath(path, os.getcwd()) if path.startswith(os.getcwd() + os.sep) else None
        return rel or os.path.basename(path)
    return path


def _op_node(op: Op, stripped: list[str], sources: dict[int, str], g: _Graph) -> dict[str, Any]:
    line = stripped[op.line - 1] if 0 < op.line <= len(stripped) else ""
    m = _RESULTS.match(line)
    ssa = ", ".join(p.strip() for p in m.group(1).split(",")) if m else ""
    node: dict[str, Any] = {"id": op.id, "kind": "op", "op": op.name, "ssa": ssa,
                            "type": op.type, "attrs": _attrs(line, m, op.name), "line": op.line}
    if op.line in sources:
        node["src"] = sources[op.line]
    if op.id in g.labels:
        stmt = g.regions.get(op.id)
        node["regions"] = list(stmt.region_labels(g.labels[op.id]) if stmt
                               else g.labels[op.id])
        if stmt:
            node["title"] = stmt.title
    return node


def _attrs(line: str, m: re.Match[str] | None, name: str) -> str:
    """The op's attributes as printed: the text after its name and operands, before the type."""
    rest = line[m.end():] if m else line.lstrip()
    short = name.split(" ", 1)[0]
    at = rest.find(short.split(".")[-1])
    rest = rest[at + len(short.split(".")[-1]):] if at >= 0 else rest
    rest = rest.lstrip('"').split(" loc(", 1)[0]
    if " : " in rest:
        rest = rest.rsplit(" : ", 1)[0]
    rest = _OPERANDS.sub("", rest).strip().rstrip("({").strip()
    if rest.startswith("(") and rest.find(")") >= 0 and "%" in rest[:rest.find(")")]:
        rest = rest[rest.find(")") + 1:].strip()  # generic form: ("op"(%a, %b) {attrs})
    rest = _SSA_USE.sub("", rest)
    rest = re.sub(r"\(\s*\)", "", re.sub(r"(,\s*)+(?=[,)\]]|$)", "", rest))
    rest = re.sub(r"^\s*,\s*", "", rest).strip()
    return rest if len(rest) <= ATTRS_MAX else rest[:ATTRS_MAX - 1] + "…"
