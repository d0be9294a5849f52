"""Which boxes of one stage's dataflow graph are the boxes of another's: the nodes of two graph
models (``graph_model``) matched, so that the explorer draws both stages as one graph, shared
boxes once, and marks what was added, removed or changed between them.

SSA names and line numbers change from stage to stage, so nodes match by what they compute:
arguments and results by their path; an op by its name, attributes, type and sharding, where its
operands are the matches of the other's operands (in order) and it sits in the match of the
other's region op (an exact match: unchanged). An op left over matches one of the same name whose
operands (or, failing that, Python source position) are the same (changed: its attributes,
type or some operand differ), and last an operand left over matches the same operand of its
user's match. What is left is added (only in the later graph) or removed (only in the
earlier one)."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

Node = dict[str, Any]


@dataclass(frozen=True)
class GraphDiff:
    """How graph model ``after``'s nodes match graph model ``before``'s."""

    match: tuple[int, ...]
    """Per node of ``after``: the index of its match among ``before``'s nodes, -1 when added."""
    changed: tuple[int, ...]
    """The nodes of ``after`` (indices) that match a node of ``before`` but differ from it: in
    attributes, type, sharding or operands."""
    removed: tuple[int, ...]
    """The nodes of ``before`` (indices) that match none of ``after``'s."""

    @property
    def added(self) -> tuple[int, ...]:
        """The nodes of ``after`` (indices) that match none of ``before``'s."""
        return tuple(i for i, m in enumerate(self.match) if m < 0)

    def summary(self) -> str:
        """``2 added, 1 removed, 3 changed`` (the counts that are not 0), or ``no box
        changed``."""
        parts = [f"{n} {what}" for n, what in ((len(self.added), "added"),
                                               (len(self.removed), "removed"),
                                               (len(self.changed), "changed")) if n]
        return ", ".join(parts) or "no box changed"


def _content(n: Node) -> tuple[Hashable, ...]:
    """What a node computes, apart from its operands (SSA names, lines and sources left out)."""
    if n["kind"] != "op":
        return (n["kind"], n.get("path", n.get("name", "")), n.get("type", ""))
    return ("op", n.get("op", ""), n.get("attrs", ""), n.get("type", ""), n.get("sharding", ""))


def _end(n: Node) -> tuple[str, str]:
    """An argument or result: by its path (its name in payloads without paths)."""
    return str(n["kind"]), str(n.get("path", n.get("name", "")))


def _place(n: Node) -> tuple[int, int]:
    return (n.get("parent", -1), n.get("region", 0))


class _Matcher:
    """The matching of ``after``'s nodes to ``before``'s, built phase by phase."""

    def __init__(self, before: Sequence[Node], after: Sequence[Node]):
        self.before, self.after = before, after
        self.to_before = [-1] * len(after)
        self.taken = [False] * len(before)
        self.users: list[list[int]] = [[] for _ in after]
        for i, n in enumerate(after):
            for s in n["in"]:
                if 0 <= s < len(after):
                    self.users[s].append(i)

    def pair(self, b: int, a: int) -> None:
        self.to_before[b] = a
        self.taken[a] = True

    def mapped(self, b: int) -> tuple[tuple[int, ...], tuple[int, int]]:
        """``after`` node ``b``'s operands and place as ``before``'s indices (-1: unmatched)."""
        n = self.after[b]
        ins = tuple(self.to_before[s] if 0 <= s < len(self.after) else -1 for s in n["in"])
        parent, region = _place(n)
        return ins, (self.to_before[parent] if parent >= 0 else -1, region)

    def index(self, key: Any) -> dict[Hashable, deque[int]]:
        """``before``'s op nodes by ``key(node)`` (None: left out), in order."""
        out: dict[Hashable, deque[int]] = defaultdict(deque)
        for a, n in enumerate(self.before):
            k = key(n) if n["kind"] == "op" else None
            if k is not None:
                out[k].append(a)
        return out

    def take(self, table: dict[Hashable, deque[int]], key: Hashable, b: int) -> bool:
        """Match ``b`` to the first node of ``table[key]`` not yet matched."""
        queue = table.get(key)
        while queue:
            a = queue.popleft()
            if not self.taken[a]:
                self.pair(b, a)
                return True
        return False


def graph_diff(before: Sequence[Node], after: Sequence[Node]) -> GraphDiff:
    """Match the nodes of graph model ``after`` (its ``nodes``) to those of ``before``."""
    m = _Matcher(before, after)
    ends = {_end(n): a for a, n in enumerate(before) if n["kind"] != "op"}
    for b, n in enumerate(after):
        a = ends.get(_end(n), -1) if n["kind"] != "op" else -1
        if a >= 0 and not m.taken[a]:
            m.pair(b, a)
    exact = m.index(lambda n: (_content(n), tuple(n["in"]), _place(n)))
    operands = m.index(lambda n: (n.get("op", ""), tuple(n["in"]), _place(n)))
    source = m.index(lambda n: (n.get("op", ""), n["src"], n.get("parent", -1))
                     if n.get("src") else None)
    moved = m.index(lambda n: (n.get("op", ""), n["src"]) if n.get("src") else None)
    for b, n in enumerate(after):
        if n["kind"] != "op" or m.to_before[b] >= 0:
            continue
        ins, place = m.mapped(b)
        op, src = n.get("op", ""), n.get("src")
        known = bool(ins) and -1 not in ins
        _ = (m.take(exact, (_content(n), ins, place), b)
             or (known and m.take(operands, (op, ins, place), b))
             or (src and (m.take(source, (op, src, place[0]), b)
                          or m.take(moved, (op, src), b))))
    for b in reversed(range(len(after))):  # left over: the same operand of its user's match
        if m.to_before[b] >= 0:
            continue
        for u in m.users[b]:
            a_user = m.to_before[u]
            if a_user < 0:
                continue
            k = after[u]["in"].index(b)
            ins = before[a_user]["in"]
            a = ins[k] if k < len(ins) else -1
            if a >= 0 and not m.taken[a] and before[a].get("op") == after[b].get("op") \
                    and before[a]["kind"] == after[b]["kind"]:
                m.pair(b, a)
                break
    changed = tuple(b for b, a in enumerate(m.to_before)
                    if a >= 0 and (_content(after[b]) != _content(before[a])
                                   or m.mapped(b) != (tuple(before[a]["in"]), _place(before[a]))))
    removed = tuple(a for a, t in enumerate(m.taken) if not t)
    return GraphDiff(tuple(m.to_before), changed, removed)


def graph_diff_entry(before_stage: int, after_stage: int, before: dict[str, Any],
                     after: dict[str, Any]) -> dict[str, Any]:
    """The payload's ``graph_diffs`` entry of two graph models (see ``GraphDiffEntry`` in the
    explorer's schema)."""
    d = graph_diff(before["nodes"], after["nodes"])
    return {"before": before_stage, "after": after_stage, "match": list(d.match),
            "changed": list(d.changed), "added": len(d.added), "removed": len(d.removed),
            "summary": d.summary()}
