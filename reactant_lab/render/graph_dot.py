"""A Dataflow as Graphviz DOT source: styled nodes, region clusters, a legend, static args."""

from __future__ import annotations

import re

import graphviz

from reactant_lab.analysis.graph import Cluster, Dataflow, Node

_FONT = {"fontname": "Helvetica", "fontsize": "10"}
_NODE_STYLE = {
    "arg": {"shape": "box", "style": "rounded,filled", "fillcolor": "#dbeafe", "color": "#1d4ed8"},
    "result": {"shape": "box", "style": "rounded,filled", "fillcolor": "#dcfce7",
               "color": "#15803d"},
    "op": {"shape": "box", "style": "filled", "fillcolor": "#ffffff", "color": "#9ca3af"},
    "return": {"shape": "box", "style": "rounded", "color": "#9ca3af", "fontsize": "8"},
    "region-args": {"shape": "ellipse", "color": "#9ca3af", "fontsize": "8"},
}
_MARK_STYLE = {
    "mutated": {"fillcolor": "#fed7aa", "color": "#c2410c", "penwidth": "2"},
    "writes-back": {"fillcolor": "#fed7aa", "color": "#c2410c", "penwidth": "2"},
    "donated": {"style": "rounded,filled,dashed", "penwidth": "2"},
    "preserved": {"fillcolor": "#f3f4f6", "style": "rounded,filled,dashed"},
    "unused": {"fontcolor": "#9ca3af", "color": "#d1d5db"},
}
_LEGEND = (
    ("arg", (), "linear argument"),
    ("arg", ("mutated",), "mutated argument"),
    ("arg", ("donated",), "donated argument"),
    ("result", (), "linear result"),
    ("result", ("preserved",), "preserved result (alias)"),
    ("result", ("writes-back",), "written back to an argument"),
)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _literal(text: str) -> str:
    """One label line with no special meaning left: backslashes doubled, entities escaped,
    control characters (invalid in SVG's XML) shown as ``\\xNN``."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)
    escaped: str = graphviz.escape(text)
    return escaped.replace("&", "&amp;")


def label(lines: tuple[str, ...] | list[str]) -> str:
    """A DOT label of literal lines: backslashes, entities and <...> lose their special meaning."""
    # a graphviz.NoHtml (a str), so that Graphviz never reads the label as an HTML-like one
    literal: str = graphviz.nohtml("\\n".join(_literal(line) for line in lines))
    return literal


def _attrs(node: Node) -> dict[str, str]:
    attrs = dict(_NODE_STYLE[node.kind])
    for mark in node.marks:
        attrs.update(_MARK_STYLE.get(mark, {}))
    return attrs


def _classes(node: Node) -> str:
    """The SVG classes of a node (its kind and marks): the explorer colours the picture by them
    in the page's theme."""
    return " ".join([node.kind, *(f"m-{m}" for m in node.marks)])


def to_dot(g: Dataflow, *, note: bool = True, hint: str = "") -> str:
    """DOT source of a dataflow graph; the graph's note (why a summary) under its title unless
    ``note=False`` (the explorer says it in its caption), then ``hint``."""
    caption = [g.title, *([g.note] if note and g.note else []), *([hint] if hint else [])]
    dot = graphviz.Digraph("dataflow", graph_attr={"rankdir": "TB", "labelloc": "t",
                                                    "label": label(caption),
                                                    "newrank": "true", **_FONT},
                           node_attr=dict(_FONT), edge_attr={"fontsize": "9",
                                                             "fontname": "Helvetica"})
    by_cluster: dict[str | None, list[Node]] = {}
    for node in g.nodes:
        by_cluster.setdefault(node.cluster, []).append(node)
    children: dict[str | None, list[Cluster]] = {}
    for c in g.clusters:
        children.setdefault(c.parent, []).append(c)
    _fill(dot, None, by_cluster, children)
    for e in g.edges:
        style = {"alias": {"style": "dashed", "color": "#6b7280"},
                 "depends": {"color": "#2563eb"}}.get(e.kind, {})
        if e.kind:
            style["class"] = e.kind
        dot.edge(e.src, e.dst, label=label([e.label]) if e.label else None, **style)
    _legend(dot, g)
    if g.skipped:
        dot.node("static_args", label([f"static (skipped) args, {len(g.skipped)}:",
                                       *g.skipped[:20]] + (["…"] if len(g.skipped) > 20 else [])),
                 shape="note", color="#9ca3af", fontsize="9", **{"class": "static"})
    source: str = dot.source
    return source


def _fill(dot: graphviz.Digraph, cluster: str | None, by_cluster: dict[str | None, list[Node]],
          children: dict[str | None, list[Cluster]]) -> None:
    for node in by_cluster.get(cluster, ()):
        dot.node(node.id, label(node.label), **_attrs(node), **{"class": _classes(node)})
    for c in children.get(cluster, ()):
        with dot.subgraph(name=c.id) as sub:
            sub.attr(label=label([c.label]), style="rounded,dashed", color="#9ca3af",
                     fontsize="9", **{"class": "region"})
            _fill(sub, c.id, by_cluster, children)


def _legend(dot: graphviz.Digraph, g: Dataflow) -> None:
    """A legend with the kinds of node this graph has (plain arguments and results always)."""
    present = {(n.kind, m) for n in g.nodes for m in n.marks}
    with dot.subgraph(name="cluster_legend") as leg:
        leg.attr(label="legend", style="rounded", color="#d1d5db", fontsize="9",
                 **{"class": "legend"})
        for k, (kind, marks, text) in enumerate(_LEGEND):
            if marks and (kind, marks[0]) not in present:
                continue
            node = Node("", kind, (), marks)
            leg.node(f"legend_{k}", label([text]), **_attrs(node), fontsize="9",
                     **{"class": _classes(node)})
