"""The dataflow graph of a module's ``main`` as data for the explorer's interactive graph: every
argument, op and result with its SSA name, op name, attributes, types, IR line and Python source
line, and the producers of the values it uses. The front end lays it out, folds constants,
collapses regions, slices and searches it; nothing here draws."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from typing import Any

from reactant_lab.analysis.collectives import Collective
from reactant_lab.analysis.graph import Signature, _Graph, signature_from_ir
from reactant_lab.analysis.mlir_func import Op, ParsedFunc, parse_function
from reactant_lab.analysis.precision import precision_text
from reactant_lab.analysis.provenance import is_library_file, op_sources
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
_MESH = re.compile(r"^\s*sdy\.mesh\s+@([\w$.-]+)\s*=\s*<\s*\[([^\]]*)\]")
_SHARDING_ATTR = re.compile(r"\bsdy\.sharding\s*=\s*#sdy\.sharding(_per_value)?<")
_MHLO_SHARDING = re.compile(r'\bmhlo\.sharding\s*=\s*"((?:[^"\\]|\\.)*)"')
_SDY_OP_SHARDING = re.compile(r"\s<(?=@|mesh<)")
_ITER_ARGS = re.compile(r"(%[A-Za-z0-9$._-]+)\s*=\s*%")
"""A while's block argument and its initial value, as printed: ``%iterArg_1 = %arg0``."""
_MAIN = re.compile(r"^\s*func\.func\s+(?:public\s+|private\s+)?@main\(")
COLLECTIVE_OPS = frozenset({
    "sdy.reshard", "sdy.all_gather", "sdy.all_reduce", "sdy.all_slice", "sdy.all_to_all",
    "sdy.collective_permute", "sdy.reduce_scatter", "stablehlo.all_reduce",
    "stablehlo.all_gather", "stablehlo.reduce_scatter", "stablehlo.all_to_all",
    "stablehlo.collective_permute", "stablehlo.collective_broadcast"})
"""Ops that move data between devices when written in the module itself (Shardy's explicit
collectives and reshards, StableHLO's collectives): marked ``collective`` in the model."""


def graph_model(text: str, signature: Signature | None = None, *,
                max_ops: int = MODEL_MAX_OPS, platform: str | None = None
                ) -> dict[str, Any] | None:
    """The model of ``main`` in module ``text`` (see ``GraphModel`` in the explorer's schema), or
    None past ``max_ops`` ops; ``platform`` (the target) says what a dot's DEFAULT precision
    computes there. Raises AnalysisError when ``main`` cannot be parsed."""
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
    meshes = _meshes(stripped)
    for a in sig.args:
        arg = g._arg_node(a, f"arg{a.index}" in used)
        index[arg.id] = len(nodes)
        fa = func.args[a.index] if a.index < len(func.args) else None
        nodes.append({"id": arg.id, "kind": "arg", "name": sig.name_of(a.path), "path": a.path,
                      "ssa": fa.name if fa else "",
                      "type": fa.type if fa else a.type, "in": [], "marks": list(arg.marks),
                      **_sharded(fa.attrs if fa else "", len(meshes))})
    for op in func.ops:
        index[op.id] = len(nodes)
        nodes.append(_op_node(op, stripped, sources, g, len(meshes), platform))
    for op, entry in zip(func.ops, nodes[len(nodes) - len(func.ops):], strict=True):
        entry["in"] = [index[s[:-5] if s.endswith(".args") else s] for s in op.inputs
                      if (s[:-5] if s.endswith(".args") else s) in index]
        if op.parent is not None and op.parent in index:
            entry["parent"] = index[op.parent]
            entry["region"] = op.region
    result_attrs = _result_attrs(stripped)
    for n, r in enumerate(sig.results):
        res = g._result_node(n, r)
        src = g.source(r)
        attrs = result_attrs[r.index] if r.index is not None and r.index < len(result_attrs) \
            else ""
        nodes.append({"id": res.id, "kind": "result", "name": sig.name_of(r.path), "path": r.path,
                      "ssa": "",
                      "type": r.type, "in": [index[src]] if src is not None and src in index
                      else [], "marks": list(res.marks), **_sharded(attrs, len(meshes))})
    _add_callees(text, nodes, stripped, sources, len(meshes), platform)
    model: dict[str, Any] = {"ops": len(func.ops), "nodes": nodes}
    if meshes:
        model["mesh"] = _mesh_text(meshes)
    return model


def mark_collectives(model: dict[str, Any], found: Sequence[Collective]) -> list[Collective]:
    """Give each op node of ``model`` the collectives XLA's partitioner inserted for it (its
    ``collectives``: one ``Collective.describe()`` line each), matched by the Python source of
    the collective's metadata (its innermost user-code frame) and, among the ops of that source
    position, by op name (``jit(f)/dot_general`` -> ``stablehlo.dot_general``; ``reduce_sum``
    -> ``stablehlo.reduce``; else all of them). Returns the collectives matched to no node."""
    nodes = model["nodes"]
    at: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        if n["kind"] == "op" and n.get("src"):
            at.setdefault(n["src"], []).append(i)
    unmatched = []
    for c in found:
        key = collective_source(c)
        candidates = at.get(key, []) if key else []
        if not candidates:
            unmatched.append(c)
            continue
        short = c.op_name.rsplit("/", 1)[-1]
        chosen = ([i for i in candidates if nodes[i]["op"].rsplit(".", 1)[-1] == short] or
                  [i for i in candidates
                   if nodes[i]["op"].rsplit(".", 1)[-1] == short.split("_", 1)[0]] or candidates)
        for i in chosen:
            nodes[i].setdefault("collectives", []).append(c.describe())
    return unmatched


def collective_source(c: Collective) -> str | None:
    """A collective's Python source as the model's ``src`` writes it (file:line:col of its
    innermost user-code frame), or None when its metadata names none."""
    user = next((f for f in c.frames if f[0] and not is_library_file(f[0])), None)
    return None if user is None else f"{_shown_file(user[0])}:{user[1]}:{user[2]}"


def mesh_of(text: str) -> str:
    """The mesh of module ``text`` as the model's ``mesh`` writes it (``data=2, model=4``;
    ``name: ...`` per mesh when there are several), '' when it has none."""
    return _mesh_text(_meshes(text.splitlines()))


def _mesh_text(meshes: dict[str, str]) -> str:
    return "; ".join(axes if len(meshes) == 1 else f"{name}: {axes}"
                     for name, axes in meshes.items())


def _meshes(lines: list[str]) -> dict[str, str]:
    """The module's ``sdy.mesh`` ops: name -> ``axis=size, ...`` (quotes dropped)."""
    out: dict[str, str] = {}
    for line in lines:
        m = _MESH.match(line)
        if m is not None:
            out[m.group(1)] = ", ".join(p.strip().replace('"', "")
                                        for p in m.group(2).split(",") if p.strip())
        elif _MAIN.match(line):
            break
    return out


def _sharded(text: str, meshes: int) -> dict[str, str]:
    """``{"sharding": ...}`` for an attribute dictionary or op line carrying a Shardy (or
    mhlo) sharding, else {}."""
    found = sharding_of(text, meshes)
    return {"sharding": found} if found else {}


def sharding_of(text: str, meshes: int = 1) -> str:
    """The sharding an op line or attribute dictionary gives its value(s), in Shardy's notation
    without quotes, one ``[{axes}, ...]`` per value joined by ``'; '`` (the mesh named only when
    the module has several); an ``mhlo.sharding`` string as written; '' when it has none."""
    m = _SHARDING_ATTR.search(text)
    if m is not None:
        inner = _bracketed(text, m.end() - 1)
        values = _split_top(inner[1:-1].strip()[1:-1]) if m.group(1) else [inner]
        return "; ".join(_one_sharding(v, meshes) for v in values)
    m = _MHLO_SHARDING.search(text)
    if m is not None:
        return m.group(1)
    m = _SDY_OP_SHARDING.search(text)  # sdy.sharding_constraint / sdy.reshard %x <@mesh, [...]>
    if m is not None and re.match(r"^\s*(?:%\S+\s*=\s*)?sdy\.\w+", text):
        return _one_sharding(_bracketed(text, m.end() - 1), meshes)
    return ""


def _without_sharding(line: str) -> str:
    """An op line without its ``sdy.sharding = ...`` attribute (the model gives it apart)."""
    m = _SHARDING_ATTR.search(line)
    if m is None:
        return line
    end = m.end() - 1 + len(_bracketed(line, m.end() - 1))
    line = line[:m.start()] + line[end:]
    return re.sub(r"\{\s*,?\s*\}", "", re.sub(r",\s*(?=[,}])|(?<=\{)\s*,", "", line))


def _one_sharding(text: str, meshes: int) -> str:
    """``<@mesh, [{"data"}, {}]>`` -> ``[{data}, {}]`` (``@mesh: [...]`` with several meshes;
    an inline ``mesh<...>`` is dropped)."""
    body = text.strip()
    body = body[1:-1].strip() if body.startswith("<") and body.endswith(">") else body
    name = ""
    if body.startswith("@"):
        name, _, body = body.partition(",")
    elif body.startswith("mesh<"):
        body = body[len(_bracketed(body, 4)) + 4:].lstrip(", ")
    body = body.strip().replace('"', "")
    return f"{name}: {body}" if name and meshes > 1 else body


def _scan(text: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, bracket depth after it) of each character of ``text`` from ``start``
    outside strings (``<>``, ``[]``, ``{}`` and ``()`` all count)."""
    depth, quoted = 0, False
    for i in range(start, len(text)):
        ch = text[i]
        if quoted:
            quoted = ch != '"' or text[i - 1] == "\\"
        elif ch == '"':
            quoted = True
        else:
            depth += (ch in "<[{(") - (ch in ">]})")
            yield i, ch, depth


def _bracketed(text: str, start: int) -> str:
    """The text from the ``<`` at ``start`` to its matching ``>`` (``[]``, ``{}``, ``()`` and
    strings inside skipped)."""
    end = next((i for i, ch, depth in _scan(text, start) if depth == 0 and ch in ">]})"), None)
    return text[start:] if end is None else text[start:end + 1]


def _split_top(text: str) -> list[str]:
    """``text`` split at its commas outside brackets and strings."""
    cuts = [i for i, ch, depth in _scan(text) if ch == "," and depth == 0]
    parts = [text[a + 1:b] for a, b in zip([-1, *cuts], [*cuts, len(text)], strict=True)]
    return [p.strip() for p in (parts if parts[-1].strip() else parts[:-1])]


def _result_attrs(lines: list[str]) -> list[str]:
    """The attribute text of each result of ``main`` (``{jax.result_info = ..., sdy.sharding =
    ...}``), in order; [] when main's line is not found."""
    line = next((x for x in lines if _MAIN.match(x)), None)
    if line is None:
        return []
    args = _bracketed(line, line.index("@main(") + 5)
    rest = line[line.index("@main(") + 5 + len(args):]
    if not rest.lstrip().startswith("->"):
        return []
    rest = rest.lstrip()[2:].strip()
    results = _bracketed(rest, 0)[1:-1] if rest.startswith("(") else rest.split(" {", 1)[0]
    return _split_top(results)


def _add_callees(text: str, nodes: list[dict[str, Any]], stripped: list[str],
                 sources: dict[int, str], meshes: int = 0, platform: str | None = None) -> None:
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
            entry = _op_node(op, stripped, sources, g, meshes, platform)
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


def _op_node(op: Op, stripped: list[str], sources: dict[int, str], g: _Graph,
             meshes: int = 0, platform: str | None = None) -> dict[str, Any]:
    line = stripped[op.line - 1] if 0 < op.line <= len(stripped) else ""
    m = _RESULTS.match(line)
    ssa = ", ".join(p.strip() for p in m.group(1).split(",")) if m else ""
    sharded = _sharded(line, meshes) if meshes else {}
    attrs = _attrs(_without_sharding(line) if sharded else line, m, op.name)
    node: dict[str, Any] = {"id": op.id, "kind": "op", "op": op.name, "ssa": ssa,
                            "type": op.type, "attrs": attrs, "line": op.line, **sharded}
    if op.name in COLLECTIVE_OPS:
        node["marks"] = ["collective"]
    precision = precision_text(line, platform)
    if precision is not None:
        node["precision"] = precision
    if op.line in sources:
        node["src"] = sources[op.line]
    if op.id in g.labels:
        stmt = g.regions.get(op.id)
        node["regions"] = list(stmt.region_labels(g.labels[op.id]) if stmt
                               else g.labels[op.id])
        if stmt:
            node["title"] = stmt.title
    if op.id in g.carried:
        node["carried"] = list(g.carried[op.id])
        iter_args = _ITER_ARGS.findall(line.split("(", 1)[1]) if op.name == "stablehlo.while" \
            and "(" in line else []
        if len(iter_args) == len(g.carried[op.id]):
            node["iter_args"] = iter_args
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
