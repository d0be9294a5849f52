"""Dataflow graph of a module's ``main``: linear arguments -> ops -> linear results, with region
ops as clusters; past ``max_ops`` a summary of which results depend on which arguments."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reactant_lab.analysis.grouping import group_id, group_paths
from reactant_lab.analysis.mlir_func import Op, ParsedFunc, parse_function, split_types
from reactant_lab.errors import AnalysisError, GraphTooLargeError

MAX_OPS = 300
"""Above this many ops a full graph is unreadable (and slow to lay out): draw a summary."""
_LABEL_MAX = 60


@dataclass(frozen=True)
class ArgInfo:
    """What the caller knows about one linear argument."""

    index: int
    """Block-argument index (``%argN``)."""
    path: str
    """Where it sits in the call, e.g. ``args[0]['w']``."""
    type: str
    """Shape and dtype, e.g. ``float32[4,3]`` (or the MLIR type)."""
    mutated: bool = False
    """The function updates it in place (its new value is written back after a run)."""
    donated: bool = False
    """Its buffer is given to the executable (``tf.aliasing_output``)."""


@dataclass(frozen=True)
class ResultInfo:
    """What the caller knows about one linear result."""

    path: str
    """Where it sits in the result, e.g. ``result[1]['loss']``."""
    type: str
    """Shape and dtype."""
    index: int | None
    """Result index of ``main``; None when the module does not compute it (preserved)."""
    preserved_from: str | None = None
    """Path of the argument it is, returned unchanged (an alias, no copy)."""
    writes_back: str | None = None
    """Path of the mutated argument this result is written into, if any."""
    constant: bool = False
    """Computed while tracing, from constants alone: the module does not compute it (NumPy
    mode's large constant results, see ``trace.specs.Constant``)."""


@dataclass(frozen=True)
class Signature:
    """The call's linear arguments, linear results and skipped (static) arguments."""

    args: tuple[ArgInfo, ...]
    """Linear arguments in block-argument order."""
    results: tuple[ResultInfo, ...]
    """Linear results (computed and preserved)."""
    skipped: tuple[tuple[str, str], ...] = ()
    """(path, value) of each static argument baked into the module."""
    names: tuple[tuple[str, str], ...] = ()
    """(path, the name the user wrote) for each argument and result path the traced function
    names otherwise (``args[0]['w1']`` -> ``p['w1']``, ``result`` -> ``t``)."""

    def name_of(self, path: str) -> str:
        """The name the user wrote for argument or result ``path`` (the path itself when the
        function names it no otherwise)."""
        return self._name_map.get(path, path)

    @functools.cached_property
    def _name_map(self) -> dict[str, str]:
        return dict(self.names)


@dataclass(frozen=True)
class Node:
    """A node of the drawn graph."""

    id: str
    """Unique id (``arg0``, ``op12``, ``res1``, ``op5.args``)."""
    kind: str
    """'arg', 'result', 'op', 'region-args' or 'return'."""
    label: tuple[str, ...]
    """Lines of its label."""
    marks: tuple[str, ...] = ()
    """Any of 'mutated', 'donated', 'preserved', 'writes-back', 'unused'."""
    cluster: str | None = None
    """Id of the cluster it is drawn in."""


@dataclass(frozen=True)
class Edge:
    """A use of a value (or, in a summary, a dependence)."""

    src: str
    """Producer node id."""
    dst: str
    """Consumer node id."""
    label: str = ""
    """Edge label (op counts in a summary)."""
    kind: str = ""
    """'' for a use, 'alias' for a preserved result, 'depends' in a summary."""


@dataclass(frozen=True)
class Cluster:
    """A box around a region op and its regions."""

    id: str
    """Cluster id (``cluster_op5``, ``cluster_op5_r1``)."""
    label: str
    """Op name or region name."""
    parent: str | None
    """Enclosing cluster id."""


@dataclass(frozen=True)
class Dataflow:
    """A graph ready to lay out: nodes, edges, clusters, and what was left out."""

    title: str
    """Caption."""
    kind: str
    """'full', 'summary' (results x arguments) or 'slice' (what one result depends on)."""
    nodes: tuple[Node, ...]
    """All nodes."""
    edges: tuple[Edge, ...]
    """All edges."""
    clusters: tuple[Cluster, ...]
    """Region clusters (parents before children)."""
    skipped: tuple[str, ...]
    """'path = value' of each static argument."""
    ops: int
    """Number of ops in the function."""
    note: str = ""
    """Why this view was drawn (e.g. a summary past ``max_ops``)."""


def signature_of(traced: Any, donated: bool | Sequence[bool] = False) -> Signature:
    """The Signature of a ``Traced`` (``donated``: whether the executable donates buffers, or
    per linear argument whether it donates that one's)."""
    mutated = set(getattr(traced, "mutated", ()))
    n = len(traced.linear_args)
    if isinstance(donated, bool):
        mask = getattr(traced, "donation_mask", ()) or (False,) * n
        donated = [donated and bool(m) for m in mask]
    args = tuple(ArgInfo(a.index, a.path, _type_str(a.shape, a.dtype), a.path in mutated,
                         bool(donated[i])) for i, a in enumerate(traced.linear_args))
    results = tuple(ResultInfo(r.path, _type_str(r.shape, r.dtype), r.index, r.preserved_from,
                               _written_back(r.path, mutated), getattr(r, "constant", False))
                    for r in traced.linear_results)
    skipped = tuple((s.path, s.value_repr) for s in traced.skipped_args)
    return Signature(args, results, skipped, tuple(getattr(traced, "names", {}).items()))


def _type_str(shape: tuple[int, ...], dtype: Any) -> str:
    return f"{np.dtype(dtype).name}[{','.join(str(d) for d in shape)}]"


def _written_back(path: str, mutated: set[str]) -> str | None:
    """A ``resargs[...]`` / ``reskwargs[...]`` result carries a mutated argument's new value
    (Reactant's naming: ``res`` before the argument's path)."""
    target = path[len("res"):] if path.startswith(("resargs", "reskwargs")) else None
    return target if target in mutated else None


def signature_from_ir(func: ParsedFunc) -> Signature:
    """What the module itself says: argument names from locations, results from result_info."""
    args = tuple(ArgInfo(a.index, a.path or a.name, a.type) for a in func.args)
    results = tuple(ResultInfo(r.info or f"result#{r.index}", r.type, r.index)
                    for r in func.results)
    return Signature(args, results)


def _donated_in_ir(attrs: str) -> bool:
    return "tf.aliasing_output" in attrs or "jax.buffer_donor = true" in attrs


def dataflow(text: str, signature: Signature | None = None, *, max_ops: int = MAX_OPS,
             result: str | int | None = None, title: str = "") -> Dataflow:
    """The graph of ``main`` in module ``text``: full up to ``max_ops`` ops, else a summary;
    with ``result`` (a path or result index), the backward slice of that one result."""
    func = parse_function(text)
    sig = signature or signature_from_ir(func)
    g = _Graph(func, sig)
    if result is not None:
        res = g.find_result(result)
        keep = g.slice(res)
        n_ops = sum(1 for k in keep if k in g.ops)
        if n_ops > max_ops:
            raise GraphTooLargeError(
                f"the slice of {res.path} has {n_ops:,} ops, over max_ops={max_ops}; pass "
                f"max_ops={n_ops} to draw it anyway (layout time grows with the op count)")
        return g.full(title, keep, (res,), "slice",
                      f"ops {sig.name_of(res.path)} depends on ({n_ops} of {len(func.ops)})")
    if len(func.ops) > max_ops:
        return g.summary(title, max_ops)
    return g.full(title, None, sig.results, "full", "")


class _Graph:
    """A parsed function with the caller's signature, and the views drawn from them."""

    def __init__(self, func: ParsedFunc, sig: Signature):
        self.func, self.sig = func, sig
        self.ops: dict[str, Op] = {op.id: op for op in func.ops}
        self.children: dict[str, list[str]] = {}
        for op in func.ops:
            if op.parent:
                self.children.setdefault(op.parent, []).append(op.id)
        self.labels = dict(func.region_labels)
        self.skipped = tuple(f"{sig.name_of(p)} = {v}" for p, v in sig.skipped)
        self.regions = {k: r for k, loc in func.region_locs
                        if k in self.ops and (r := _statement(self.ops[k], loc)) is not None}
        """The region ops that are converted Python statements, by op id."""
        self.carried: dict[str, tuple[str | None, ...]] = {}
        """Per while / case op, the Python name of each of its results (None where not known):
        its statement's names, a while's operands that are arguments of the call named after
        them."""
        for op in func.ops:
            names = self._carried(op)
            if names is not None:
                self.carried[op.id] = names
                if op.id in self.regions:
                    self.regions[op.id] = dataclasses.replace(self.regions[op.id], names=names)

    def _carried(self, op: Op) -> tuple[str | None, ...] | None:
        stmt = self.regions.get(op.id)
        names = list(stmt.names) if stmt is not None and stmt.names else None
        if op.name == "stablehlo.while" and len(op.inputs) == len(split_types(op.type)):
            names = names or [None] * len(op.inputs)
            shown = {f"arg{a.index}": self.sig.name_of(a.path) for a in self.sig.args
                     if not a.path.startswith("%")}
            names = [n if n is not None else shown.get(src) for n, src in zip(
                names, op.inputs, strict=True)]
        return tuple(names) if names and any(n is not None for n in names) else None

    def find_result(self, result: str | int) -> ResultInfo:
        for r in self.sig.results:
            if result in (r.path, r.index) and not isinstance(result, bool):
                return r
        paths = ", ".join(r.path for r in self.sig.results)
        raise AnalysisError(f"no result {result!r}; results are: {paths or 'none'}")

    def source(self, res: ResultInfo) -> str | None:
        """Node producing a computed result, or the argument a preserved result aliases."""
        if res.index is None:
            arg = next((a for a in self.sig.args if a.path == res.preserved_from), None)
            return f"arg{arg.index}" if arg else None
        if res.index < len(self.func.results):
            return self.func.results[res.index].source
        return None

    def slice(self, res: ResultInfo) -> set[str]:
        """Ids of the ops and arguments ``res`` depends on (nested region bodies included)."""
        seen: set[str] = set()
        todo = [s for s in (self.source(res),) if s]
        while todo:
            n = todo.pop()
            if n.endswith(".args"):
                n = n[:-5]
            if n in seen:
                continue
            seen.add(n)
            if n in self.ops:
                todo.extend(self.ops[n].inputs)
                todo.extend(self.children.get(n, ()))
        return seen

    def _arg_node(self, a: ArgInfo, used: bool) -> Node:
        attrs = self.func.args[a.index].attrs if a.index < len(self.func.args) else ""
        marks = tuple(m for m, on in (("mutated", a.mutated),
                                      ("donated", a.donated or _donated_in_ir(attrs)),
                                      ("unused", not used)) if on)
        name = self.sig.name_of(a.path)
        return Node(f"arg{a.index}", "arg", (name, a.type, *(() if name == a.path else (a.path,))),
                    marks)

    def _result_node(self, n: int, r: ResultInfo, extra: tuple[str, ...] = ()) -> Node:
        marks = tuple(m for m, on in (("preserved", r.preserved_from is not None),
                                      ("writes-back", r.writes_back is not None),
                                      ("constant", r.constant)) if on)
        name = self.sig.name_of(r.path)
        label = (name, r.type, *(() if name == r.path else (r.path,)), *extra)
        if r.preserved_from:
            label += (f"alias of {self.sig.name_of(r.preserved_from)}",)
        if r.constant:
            label += ("constant, computed while tracing",)
        if r.writes_back:
            label += (f"written back to {self.sig.name_of(r.writes_back)}",)
        return Node(f"res{n}", "result", label, marks)

    def _cluster_of(self, op: Op) -> str | None:
        return f"cluster_{op.parent}_r{op.region}" if op.parent else None

    def full(self, title: str, keep: set[str] | None, results: tuple[ResultInfo, ...],
             kind: str, note: str) -> Dataflow:
        """Every op (of ``keep``, when given) with its uses; region ops as clusters."""
        nodes: list[Node] = []
        edges: dict[tuple[str, str], Edge] = {}
        clusters: list[Cluster] = []
        block_args: set[str] = set()
        for op in self.func.ops:
            if keep is not None and op.id not in keep:
                continue
            where: str | None = self._cluster_of(op)
            stmt = self.regions.get(op.id)
            if op.id in self.labels:
                own = f"cluster_{op.id}"
                clusters.append(Cluster(own, stmt.title if stmt else op.name, where))
                clusters += [Cluster(f"{own}_r{k}", label, own)
                             for k, label in enumerate(stmt.region_labels(self.labels[op.id])
                                                       if stmt else self.labels[op.id])]
                where = own
            is_return = op.parent is not None and op.name.endswith("return")
            nodes.append(Node(op.id, "return" if is_return else "op",
                              (op.name,) if is_return else (op.name, _short(op.type),
                                                            *(stmt.results() if stmt else ())),
                              cluster=where))
            for src in op.inputs:
                if src.endswith(".args"):
                    block_args.add(src)
                edges.setdefault((src, op.id), Edge(src, op.id))
        nodes += [Node(b, "region-args", ("block args", *(
                            self.regions[b[:-5]].block_args() if b[:-5] in self.regions else ())),
                       cluster=f"cluster_{b[:-5]}") for b in sorted(block_args)]
        for n, r in enumerate(results):
            res_src = self.source(r)
            if res_src:
                edges.setdefault((res_src, f"res{n}"), Edge(
                    res_src, f"res{n}", "alias, no copy" if r.index is None else "",
                    "alias" if r.index is None else ""))
        used = {e.src for e in edges.values()}
        args = [self._arg_node(a, f"arg{a.index}" in used) for a in self.sig.args
                if keep is None or f"arg{a.index}" in keep]
        res_nodes = [self._result_node(n, r) for n, r in enumerate(results)]
        return Dataflow(title, kind, tuple(args + nodes + res_nodes), tuple(edges.values()),
                        tuple(clusters), self.skipped, len(self.func.ops), note)

    def _arg_masks(self, bit_of: list[int]) -> dict[str, int]:
        """Per op, the bit set (``1 << bit_of[arg]``) of the arguments it depends on, nested
        bodies included."""
        masks: dict[str, int] = {f"arg{a.index}": 1 << bit_of[a.index] for a in self.func.args
                                 if a.index < len(bit_of)}
        changed = True
        while changed:  # region ops depend on their bodies, printed after them: iterate
            changed = False
            for op in self.func.ops:
                m = 0
                for src in op.inputs:
                    m |= masks.get(src[:-5] if src.endswith(".args") else src, 0)
                for child in self.children.get(op.id, ()):
                    m |= masks.get(child, 0)
                if masks.get(op.id) != m:
                    masks[op.id], changed = m, True
        return masks

    def summary(self, title: str, max_ops: int) -> Dataflow:
        """Results x arguments: an edge per dependence, labelled with the number of ops of the
        result's backward slice that depend on that argument. Past ``grouping.SUMMARY_NODES`` arguments
        (or results), those whose paths differ only in indices share a node."""
        arg_groups = group_paths([self.sig.name_of(a.path) for a in self.sig.args])
        res_groups = group_paths([self.sig.name_of(r.path) for r in self.sig.results])
        bit_of = [0] * len(self.func.args)
        for g, (_, members) in enumerate(arg_groups):
            for i in members:
                if i < len(bit_of):
                    bit_of[i] = g
        masks = self._arg_masks(bit_of)
        edges: list[Edge] = []
        res_nodes = [self._result_group(n, pattern, members, masks, bit_of, arg_groups, edges)
                     for n, (pattern, members) in enumerate(res_groups)]
        used = {e.src for e in edges}
        args = []
        for g, (pattern, members) in enumerate(arg_groups):
            gid = group_id("arg", g, arg_groups)
            if len(members) == 1:
                args.append(self._arg_node(self.sig.args[members[0]], gid in used))
            else:
                types = {self.sig.args[i].type for i in members}
                marks = {m for i in members for m in self._arg_node(self.sig.args[i], True).marks}
                args.append(Node(gid, "arg", (pattern, f"{len(members)} args",
                                              types.pop() if len(types) == 1 else "mixed types"),
                                 tuple(sorted(marks)) + (() if gid in used else ("unused",))))
        note = (f"{len(self.func.ops):,} ops, more than the {max_ops:,} drawn in full: this "
                "summary shows which results depend on which arguments; each edge counts the ops "
                "of the result's backward slice that depend on the argument.")
        return Dataflow(title, "summary", tuple(args + res_nodes), tuple(edges), (),
                        self.skipped, len(self.func.ops), note)


    def _result_group(self, n: int, pattern: str, members: list[int], masks: dict[str, int],
                      bit_of: list[int], arg_groups: list[tuple[str, list[int]]],
                      edges: list[Edge]) -> Node:
        """The node of a group of results; appends its edges (one per argument group)."""
        rid = f"res{members[0]}" if len(members) == 1 else f"res_group{n}"
        ops: set[str] = set()
        for k in members:
            r = self.sig.results[k]
            ops |= {o for o in self.slice(r) if o in self.ops}
            src = self.source(r)
            if r.index is None and src:
                edges.append(Edge(group_id("arg", bit_of[int(src[3:])], arg_groups), rid,
                                  "alias, no copy", "alias"))
        counts: dict[int, int] = {}
        for op_id in ops:
            m = masks.get(op_id, 0)
            while m:
                low = m & -m
                counts[low.bit_length() - 1] = counts.get(low.bit_length() - 1, 0) + 1
                m ^= low
        edges += [Edge(group_id("arg", g, arg_groups), rid, f"{c:,} ops", "depends")
                  for g, c in sorted(counts.items())]
        extra = (f"slice: {len(ops):,} ops",)
        if len(members) == 1:
            return self._result_node(members[0], self.sig.results[members[0]], extra)
        return Node(rid, "result", (pattern, f"{len(members)} results", *extra))


_SCOPE = re.compile(r"(?P<header>.*) @ (?P<file>[^\s\[\]]+):(?P<line>\d+) \[(?P<entries>.*)\]",
                    re.DOTALL)
"""The name of a converted statement's scope (``trace.control_flow.names``)."""
_LAX_NAMES = frozenset({"while", "cond", "switch"})
"""Names JAX gives a region op (the last part of its location's name)."""
_KIND_OF = {"stablehlo.while": "loop", "stablehlo.case": "if", "stablehlo.if": "if"}
_TENSOR = re.compile(r"tensor<((?:[\d?]+x)*)(.+)>")
_INT = re.compile(r"u?i(?:8|16|32|64)")
_SLASH = "\u2215"
_NAMES_SHOWN = 12


@dataclass(frozen=True)
class _Statement:
    """A region op made from a Python ``for`` / ``while`` / ``if`` (its location says so)."""

    kind: str
    """'loop' (a while op) or 'if' (a case: a branch or a conditional expression)."""
    title: str
    """Its header and line, e.g. ``for _ in range(steps) — line 12``."""
    names: tuple[str | None, ...]
    """Per operand (a while) or result (a case): the Python name of the value, or None where
    not known; () when the op's operands do not match what the statement carried."""

    def region_labels(self, labels: tuple[str, ...]) -> tuple[str, ...]:
        """A case's branches are (false, true): ``else`` and ``then``."""
        return ("else", "then") if self.kind == "if" and len(labels) == 2 else labels

    def block_args(self) -> tuple[str, ...]:
        """Label lines naming the block arguments (a while's operands)."""
        if self.kind == "if" or not self.names:
            return ()
        known = [n for n in self.names if n is not None]
        other = len(self.names) - len(known)
        if len(known) > _NAMES_SHOWN:
            known = [*known[:_NAMES_SHOWN - 1], f"… {len(known) - _NAMES_SHOWN + 1} more"]
        return (*([f"+{other} other"] if other else []), *known)

    def results(self) -> tuple[str, ...]:
        """A label line naming the Python variables among the op's results."""
        names = [n for n in self.names if n and "(" not in n]
        if not names:
            return ()
        shown = ", ".join(names[:_NAMES_SHOWN]) + (" …" if len(names) > _NAMES_SHOWN else "")
        return (_short(f"→ {shown}"),)


def _entry_type(mlir: str) -> str | None:
    """``tensor<8x8xf64>`` -> ``f64[8,8]`` (how ``names`` writes a type)."""
    m = _TENSOR.fullmatch(mlir.strip())
    if m is None:
        return None
    dims = [d for d in m.group(1).split("x") if d]
    return f"{m.group(2)}[{','.join(dims)}]"


def _matches(mlir: str, entry: str) -> bool:
    typ = _entry_type(mlir)
    if entry == "int":
        return typ is not None and typ.endswith("[]") and _INT.fullmatch(typ[:-2]) is not None
    return typ == entry


def _statement(op: Op, loc: str) -> _Statement | None:
    """What the location of region op ``op`` says of the statement it was made from: its
    header, line and carried values' names, these only where the op's types prove them (the
    last operands of a while, all results of a case, in order)."""
    parts = loc.split("/")
    kind = _KIND_OF.get(op.name)
    m = _SCOPE.fullmatch(parts[-2]) if len(parts) >= 2 and parts[-1] in _LAX_NAMES else None
    if m is None or kind is None:
        return None
    header = m.group("header").replace(_SLASH, "/")
    text = m.group("entries").strip()
    entries = [e.rsplit(":", 1) for e in text.split("; ")] if text else []
    types = split_types(op.type)
    names: tuple[str | None, ...] = ()
    fits = len(types) == len(entries) if kind == "if" else len(types) >= len(entries)
    if all(len(e) == 2 for e in entries) and fits and all(
            _matches(t, e[1]) for t, e in zip(types[len(types) - len(entries):], entries,
                                              strict=True)):
        names = (None,) * (len(types) - len(entries)) + tuple(
            e[0].replace(_SLASH, "/") or None for e in entries)
    return _Statement(kind, f"{header} — line {m.group('line')}", names)


def _short(text: str) -> str:
    return text if len(text) <= _LABEL_MAX else text[:_LABEL_MAX - 1] + "…"
