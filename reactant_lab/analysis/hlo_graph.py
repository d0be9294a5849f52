"""XLA's HLO as the explorer's interactive graph (the ``GraphModel`` of the payload): the entry
computation's parameters, instructions and results, each fusion a region op holding the
instructions it fused, a while loop its condition and body; each op with its Python source line,
and each fusion titled with the StableHLO ops (of the module XLA compiled) it was made from."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reactant_lab.analysis.graph_model import ATTRS_MAX, MODEL_MAX_OPS, _shown_file
from reactant_lab.analysis.hlo import hlo_opcode, hlo_shown, is_hlo
from reactant_lab.analysis.normalize import strip_locations
from reactant_lab.analysis.provenance import Source, op_frames, op_name, op_sources
from reactant_lab.errors import AnalysisError

_HEADER = re.compile(r"^(ENTRY\s+)?%([\w.$-]+)\s*\(")
_NAME = re.compile(r"^\s*(ROOT\s+)?%([\w.$-]+)\s*=\s*")
_USE = re.compile(r"%([\w.$-]+)")
_CALLED = re.compile(r"\b(calls|condition|body|true_computation|false_computation|"
                     r"branch_computations|to_apply)=(\{[^}]*\}|%[\w.$-]+)")
_APPLIED = frozenset({"call"})
"""Opcodes whose ``to_apply`` computation is drawn as their region (not a reduction's scalar
function): a call (XLA:CPU runs a small loop as one, ``xla_cpu_small_call``)."""
_REGIONS = {"fusion": ("fused",), "while": ("cond", "do"), "call": ("body",)}
"""Region labels per opcode; an opcode not listed labels its computations by attribute."""
_KINDS = {"broadcast": "broadcast_in_dim", "dot": "dot_general"}
"""HLO opcodes whose StableHLO op has another name (beyond ``-`` for ``_``)."""
_LABELS = {"calls": "fused", "condition": "cond", "body": "do", "true_computation": "then",
           "false_computation": "else", "to_apply": "body"}


@dataclass
class _Instruction:
    name: str
    opcode: str
    type: str
    operands: list[str]
    attrs: str
    line: int
    root: bool
    inside: str = ""
    """What its parentheses hold (a parameter's number, a constant's value)."""
    called: list[tuple[str, str]] = field(default_factory=list)
    """(region label, computation name) per computation it runs as a region."""


def _parse(text: str) -> tuple[dict[str, list[_Instruction]], str]:
    """The computations of HLO text (name -> instructions in order) and the entry's name."""
    computations: dict[str, list[_Instruction]] = {}
    entry, current = "", None
    for n, line in enumerate(hlo_shown(text), 1):
        head = _HEADER.match(line)
        if head and line.rstrip().endswith("{"):
            current = computations.setdefault(head.group(2), [])
            entry = head.group(2) if head.group(1) else entry
            continue
        if line.strip() == "}":
            current = None
            continue
        opcode = hlo_opcode(line) if current is not None else None
        named = _NAME.match(line)
        if opcode is None or named is None or current is None:
            continue
        current.append(_instruction(line, n, opcode, named))
    if not entry:
        raise AnalysisError("the HLO text has no ENTRY computation")
    return computations, entry


def _instruction(line: str, n: int, opcode: str, named: re.Match[str]) -> _Instruction:
    at = line.index(f" {opcode}(", named.end()) + 1
    shape = line[named.end():at].strip()
    depth, i = 0, at + len(opcode)
    while i < len(line):
        depth += {"(": 1, ")": -1}.get(line[i], 0)
        i += 1
        if depth == 0:
            break
    operands = _USE.findall(line[at + len(opcode):i])
    attrs = line[i:].lstrip(", ").strip()
    labels = _REGIONS.get(opcode)
    called: list[tuple[str, str]] = []
    for m in _CALLED.finditer(attrs):
        if m.group(1) == "to_apply" and opcode not in _APPLIED:
            continue
        names = _USE.findall(m.group(2))
        for k, name in enumerate(names):
            label = (f"branch {k}" if m.group(1) == "branch_computations"
                     else _LABELS.get(m.group(1), m.group(1)))
            called.append((label, name))
    if labels is not None and len(labels) == len(called):
        called = [(label, name) for label, (_, name) in zip(labels, called, strict=True)]
    clipped = attrs if len(attrs) <= ATTRS_MAX else attrs[:ATTRS_MAX - 1] + "…"
    return _Instruction(named.group(2), opcode, shape, operands, clipped, n,
                        bool(named.group(1)), line[at + len(opcode) + 1:i - 1], called)


class _Origins:
    """The StableHLO ops of the compiled module at each Python source position."""

    def __init__(self, stablehlo: str | None):
        self.at: dict[tuple[str, int, int], list[str]] = {}
        if not stablehlo:
            return
        shown = strip_locations(stablehlo).splitlines()
        for line, src in op_sources(stablehlo).items():
            if line <= len(shown):
                self.at.setdefault((src.file, src.line, src.col), []).append(
                    op_name(shown[line - 1]))

    def of(self, opcode: str, src: Source) -> list[str]:
        """The StableHLO ops of ``opcode``'s kind at ``src`` (``add`` -> ``stablehlo.add``)."""
        kinds = {opcode.replace("-", "_"), _KINDS.get(opcode, "")}
        return [name for name in self.at.get((src.file, src.line, src.col), [])
                if name.rsplit(".", 1)[-1] in kinds]


class _Builder:
    def __init__(self, text: str, computations: dict[str, list[_Instruction]],
                 origins: _Origins, max_ops: int):
        self.computations, self.origins, self.max_ops = computations, origins, max_ops
        self.sources: dict[int, Source] = {line: chains[0][0]
                                           for line, chains in op_frames(text).items()}
        self.nodes: list[dict[str, Any]] = []
        self.ops = 0

    def src(self, ins: _Instruction) -> str | None:
        s = self.sources.get(ins.line)
        return f"{_shown_file(s.file)}:{s.line}:{s.col}" if s is not None else None

    def add(self, comp: str, scope: dict[str, int], parent: int | None, region: int,
            depth: int) -> list[tuple[str, Source]]:
        """Add the instructions of computation ``comp`` (in region ``region`` of ``parent``);
        ``scope``: name -> node index of what its instructions use. Returns the (opcode,
        source) of every instruction added, nested ones included."""
        made: list[tuple[str, Source]] = []
        for ins in self.computations.get(comp, []):
            if ins.opcode == "parameter" and parent is not None:
                scope[ins.name] = parent  # a region's parameter: its region op provides it
                continue
            if ins.opcode == "parameter":  # the entry's: an argument, numbered already
                continue
            self.ops += 1
            if self.ops > self.max_ops:
                raise _TooLarge
            index = len(self.nodes)
            node: dict[str, Any] = {
                "id": f"op{index}", "kind": "op", "op": ins.opcode, "ssa": f"%{ins.name}",
                "type": ins.type, "attrs": ins.attrs, "line": ins.line,
                "in": [scope[u] for u in ins.operands if u in scope]}
            if parent is not None:
                node.update(parent=parent, region=region)
            src = self.src(ins)
            if src is not None:
                node["src"] = src
                made.append((ins.opcode, self.sources[ins.line]))
            self.nodes.append(node)
            scope[ins.name] = index
            if ins.called and depth < 4:
                node["regions"] = [label for label, _ in ins.called]
                inner: list[tuple[str, Source]] = []
                for k, (_, name) in enumerate(ins.called):
                    inner += self.add(name, dict(scope), index, k, depth + 1)
                if ins.opcode == "fusion" and inner:
                    node["title"] = self.title(inner)
                made += inner
        return made

    def title(self, fused: list[tuple[str, Source]]) -> str:
        """What a fusion was made from: the Python lines, and the StableHLO ops of its
        instructions' kinds at their sources (as many of each as it holds there, at most as
        many as there are): ``from k.py:31, 32: stablehlo.add ×4, stablehlo.multiply``."""
        counts: Counter[str] = Counter()
        for (opcode, src), k in Counter(fused).items():
            for name, m in Counter(self.origins.of(opcode, src)).items():
                counts[name] += min(k, m)
        if not counts:  # ops XLA made (copies, fusions of fusions): its own opcodes
            counts.update(opcode for opcode, _ in fused)
        ops = ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in counts.most_common())
        lines = sorted({(os.path.basename(_shown_file(s.file)), s.line) for _, s in fused})
        files = sorted({f for f, _ in lines})
        where = (f"{files[0]}:{', '.join(str(n) for _, n in lines)}" if len(files) == 1
                 else ", ".join(f"{f}:{n}" for f, n in lines))
        return f"from {where}: {ops}"  # the lines first: a box shows the title's start


class _TooLarge(Exception):
    pass


def hlo_graph_model(text: str, arg_names: Sequence[str] = (), result_names: Sequence[str] = (),
                    *, stablehlo: str | None = None,
                    max_ops: int = MODEL_MAX_OPS) -> dict[str, Any] | None:
    """The ``GraphModel`` of HLO text's entry computation, or None past ``max_ops``
    instructions. ``arg_names`` / ``result_names`` name the parameters and results (the call's
    paths) when there are as many; ``stablehlo``: the module XLA compiled (with locations), whose
    ops at each fused instruction's source title its fusion. Raises AnalysisError when ``text``
    is not HLO with an entry computation."""
    if not is_hlo(text):
        raise AnalysisError("not HLO text: it does not start with 'HloModule'")
    computations, entry = _parse(text)
    b = _Builder(text, computations, _Origins(stablehlo), max_ops)
    scope: dict[str, int] = {}
    params = sorted((ins for ins in computations[entry] if ins.opcode == "parameter"),
                    key=lambda ins: int(ins.inside) if ins.inside.isdigit() else 0)
    for k, ins in enumerate(params):
        name = arg_names[k] if len(arg_names) == len(params) else ins.name
        scope[ins.name] = len(b.nodes)
        b.nodes.append({"id": f"arg{k}", "kind": "arg", "name": name, "ssa": f"%{ins.name}",
                        "type": ins.type, "in": [], "marks": [], "line": ins.line})
    root = next((ins for ins in computations[entry] if ins.root), None)
    tuple_root = root is not None and root.opcode == "tuple"
    if tuple_root:
        computations[entry] = [ins for ins in computations[entry] if ins is not root]
    try:
        b.add(entry, scope, None, 0, 0)
    except _TooLarge:
        return None
    outputs = (root.operands if tuple_root else [root.name]) if root is not None else []
    types = _tuple_types(root.type) if tuple_root and root is not None else []
    for k, name in enumerate(outputs):
        producer = scope.get(name)
        b.nodes.append({
            "id": f"res{k}", "kind": "result",
            "name": result_names[k] if len(result_names) == len(outputs) else f"result[{k}]",
            "ssa": "", "type": types[k] if k < len(types) else (
                b.nodes[producer].get("type", "") if producer is not None else ""),
            "in": [producer] if producer is not None else [], "marks": []})
    return {"ops": b.ops, "nodes": b.nodes}


def _tuple_types(shape: str) -> list[str]:
    """The element types of a tuple shape ``(f32[4]{0}, s32[])``."""
    inner, out, depth, start = shape.strip()[1:-1], [], 0, 0
    for i, c in enumerate(inner):
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(c, 0)
        if c == "," and depth == 0:
            out.append(inner[start:i].strip())
            start = i + 1
    return [*out, inner[start:].strip()] if inner.strip() else out
