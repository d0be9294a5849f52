"""The self-contained HTML report, built from an explorer payload. Everything essential (stage
list, IR, diffs, graphs) is plain HTML; a small inline script adds a stage picker and unpacks
texts too large to embed uncompressed. No external resource is referenced. Without the script it
is also a fragment for a notebook's ``text/html`` output (``report_fragment``)."""

from __future__ import annotations

import json
import re
from typing import Any

from reactant_lab.errors import RenderError
from reactant_lab.render.assets import CSS, JS
from reactant_lab.render.highlight import esc, highlight, plain
from reactant_lab.render.payload import DIFF_ROWS
from reactant_lab.render.svg import img_tag
from reactant_lab.render.tables import op_table_html, signature_html, stage_table_html
from reactant_lab.render.texts import decode_text, pack

HIGHLIGHT_LINES = 3_000
"""Texts up to this many lines are syntax-highlighted; longer ones are shown plain."""
STATIC_BUDGET = 2_000_000
"""Characters of text embedded uncompressed in all; texts beyond it are unpacked by the script."""
TEXT_STATIC_MAX = 600_000
"""A text longer than this (about 6,000 lines) is only unpacked by the script."""
FRAGMENT_BUDGET = 400_000
"""Characters of text a script-free fragment embeds in all (the payload beside it holds all)."""
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'")


def report_html(payload: dict[str, Any], *, script: bool = True) -> str:
    """The report as one HTML document (``script=False``: no script at all; texts too large to
    embed uncompressed are then left out with a note)."""
    r = _Report(payload, script=script)
    meta = payload["meta"]
    title = f"reactant_lab · {meta['function']}"
    body = _body(payload, r)
    scripts = ""
    if script:
        data = {"stages": [{"index": s["index"], "name": s["name"], "changed": s["changed"]}
                           for s in payload["stages"]],
                "texts": {str(t): payload["texts"][t] for t in sorted(r.lazy_texts())},
                "diffs": r.lazy_diffs}
        scripts = (f'<script type="application/json" id="rl-data">{_json(data)}</script>'
                   f"<script>{JS}</script>")
    csp = CSP if script else CSP.replace("script-src 'unsafe-inline'", "script-src 'none'")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            f"{_TOGGLES}<main>{''.join(body)}</main>{scripts}</body></html>\n")


def report_fragment(payload: dict[str, Any], scope: str, *,
                    budget: int = FRAGMENT_BUDGET) -> str:
    """The report without a script as one ``<div id=scope>`` to embed in a page (a notebook's
    ``text/html`` output): its CSS applies inside the div only and its ids, anchors and toggles
    are prefixed with ``scope``, so several reports can share a page."""
    if not re.fullmatch(r"[A-Za-z][\w-]*", scope):
        raise RenderError(f"scope must be an HTML id (a letter, then letters, digits, - or _), "
                          f"not {scope!r}")
    r = _Report(payload, script=False, budget=budget)
    inner = f"{_TOGGLES}<main>{''.join(_body(payload, r))}</main>"
    inner = _ID_ATTR.sub(lambda m: f"{m.group(0)}{scope}-", inner)
    return (f'<div class="reactant-lab-report" id="{scope}"><style>{_scoped_css(scope)}</style>'
            f"{inner}</div>")


_TOGGLES = ('<input type="radio" name="layout" id="lay-sbs" class="toggle" checked>'
            '<input type="radio" name="layout" id="lay-uni" class="toggle">'
            '<input type="checkbox" id="hide-same" class="toggle">')
# Attributes naming an id or a radio group, as the report writes them (text content and other
# attribute values are escaped, so they never contain a bare `id="`).
_ID_ATTR = re.compile(r'\s(?:id|for|name)="|\shref="#')
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")


def _scoped_css(scope: str) -> str:
    """The report's CSS limited to ``#scope``: page-level rules apply to the div instead, and the
    toggles' ids carry the prefix."""
    def selector(sel: str) -> str:
        sel = re.sub(r"#(lay-sbs|lay-uni|hide-same)\b", rf"#{scope}-\1", sel.strip())
        if sel in (":root", "body"):
            return f"#{scope}"
        return f"#{scope} {sel}"

    return "".join(",".join(selector(s) for s in sels.split(",")) + "{" + rules + "}"
                   for sels, rules in _RULE.findall(CSS))


def _body(payload: dict[str, Any], r: _Report) -> list[str]:
    meta = payload["meta"]
    return [
        f"<header><h1>{esc(meta['function'])}</h1><p class=\"meta\">{r.meta_line()}</p></header>",
        '<nav class="toc"><a href="#signature">signature</a><a href="#stages">stages</a>'
        '<a href="#metrics">op metrics</a><a href="#stage-0">stage by stage</a>'
        '<a href="#compare">compare stages</a><a href="#xla">XLA HLO</a>'
        '<a href="#timing">timing</a></nav>',
        '<p class="toggles">diffs: <label for="lay-sbs">[side by side]</label> '
        '<label for="lay-uni">[unified]</label> &middot; <label for="hide-same">[hide / show '
        "unchanged stages]</label></p>",
        f'<section id="signature"><h2>Signature</h2>{signature_html(payload["signature"])}'
        "</section>",
        f'<section id="stages"><h2>Stages</h2>{stage_table_html(payload["stages"])}</section>',
        f'<section id="metrics"><h2>Op metrics</h2>{r.metrics()}</section>',
        *(r.stage(s) for s in payload["stages"]),
        r.compare(), r.xla(), r.timing()]


def _json(obj: Any) -> str:
    """JSON safe inside a <script> element."""
    return (json.dumps(obj, separators=(",", ":")).replace("<", "\\u003c")
            .replace(">", "\\u003e").replace("&", "\\u0026"))


class _Report:
    """Decides, text by text, what is embedded, and renders the sections."""

    def __init__(self, payload: dict[str, Any], *, script: bool = True,
                 budget: int | None = None):
        self.p = payload
        self.script = script
        self.first_use: dict[int, int] = {}
        for s in payload["stages"]:
            self.first_use.setdefault(s["text"], s["index"])
        self.budget = STATIC_BUDGET if budget is None else budget
        self._lazy: set[int] = set()
        self.lazy_diffs: dict[str, dict[str, Any]] = {}
        self.prev = {d["after"]: d for d in payload["diffs"] if d["kind"] == "previous"}

    def meta_line(self) -> str:
        m = self.p["meta"]
        parts = [f"optimize={m.get('optimize')}", f"granularity={m.get('granularity')}",
                 f"target={m.get('target')}"]
        if m.get("versions"):
            parts.append(", ".join(f"{k} {v}" for k, v in m["versions"].items()))
        return esc(" · ".join(str(p) for p in parts))

    def lazy_texts(self) -> set[int]:
        """Texts the script must unpack, with the texts their deltas are based on."""
        out, todo = set(), list(self._lazy)
        while todo:
            t = todo.pop()
            if t not in out:
                out.add(t)
                base = self.p["texts"][t].get("base")
                if base is not None:
                    todo.append(base)
        return out

    def text_block(self, tid: int, kind: str = "mlir") -> str:
        entry = self.p["texts"][tid]
        if entry["chars"] > min(self.budget, TEXT_STATIC_MAX):
            if not self.script:
                return (f'<p class="note">{entry["lines"]:,} lines: too long for this static '
                        "view (the explorer and Exploration.save_html show it).</p>")
            self._lazy.add(tid)
            return (f'<div class="lazy" data-lazy-text="{tid}" data-kind="{kind}"><p class="note">'
                    f"{entry['lines']:,} lines, stored compressed; shown when JavaScript is on."
                    "</p></div>")
        self.budget -= entry["chars"]
        text = decode_text(self.p["texts"], tid)
        if kind == "mlir" and entry["lines"] <= HIGHLIGHT_LINES:
            return highlight(text)
        return plain(text).replace('class="mlir"', f'class="{kind}"', 1)

    def diff(self, entry: dict[str, Any] | None) -> str:
        """A diff's HTML; for a long one, the first rows and a placeholder the script fills."""
        if entry is None:
            return ""
        if entry["html"] is None:
            return f'<p class="note">{esc(entry["summary"])}.</p>'
        html = entry["html"]
        if "unified" in html:
            return html["side-by-side"] + html["unified"]
        out = html["side-by-side"].replace('class="diff sbs"', 'class="diff sbs only"', 1)
        if entry.get("truncated") and not self.script:
            out += (f'<p class="note">The first {DIFF_ROWS} changed lines of '
                    f"{entry['added'] + entry['removed'] + entry['changed']:,}.</p>")
        elif entry.get("truncated"):
            k = len(self.lazy_diffs)
            texts = [self.p["stages"][entry[side]]["text"] for side in ("before", "after")]
            self.lazy_diffs[str(k)] = {"a": texts[0], "b": texts[1],
                                       "rows": pack(json.dumps(entry["rows"]).encode())}
            self._lazy.update(texts)
            out += (f'<div class="lazy" data-lazy-diff="{k}"><p class="note">All '
                    f"{entry['added'] + entry['removed'] + entry['changed']:,} changed lines are "
                    "shown when JavaScript is on.</p></div>")
        return out

    def metrics(self) -> str:
        m = self.p["metrics"]
        from reactant_lab.analysis.metrics import OpTable

        return op_table_html(OpTable(tuple(m["stages"]), tuple(m["ops"]),
                                     tuple(tuple(r) for r in m["counts"]), tuple(m["totals"])))

    def stage(self, s: dict[str, Any]) -> str:
        i = s["index"]
        cls = "changed" if s["changed"] or i == 0 else "unchanged"
        head = (f'<section id="stage-{i}" class="stage {cls}"><h2>{i} &middot; '
                f'{esc(s["name"])}</h2><p class="meta">{s["ops"]} ops &middot; '
                f'{s["seconds"] * 1e3:.1f} ms' + (" &middot; unchanged" if cls == "unchanged"
                                                   else "") + "</p>")
        passes = (f"<details><summary>passes</summary><code>{esc(s['pipeline'])}</code>"
                  "</details>" if s["pipeline"] else "")
        diff = (f"<h3>Diff against stage {i - 1}</h3>{self.diff(self.prev.get(i))}"
                if i else "")
        return (head + passes + diff + f"<h3>Dataflow graph</h3>{self.graph(i)}"
                + f"<h3>IR</h3>{self.ir(s)}</section>")

    def ir(self, s: dict[str, Any]) -> str:
        first = self.first_use[s["text"]]
        if first != s["index"]:
            return (f'<p class="note">Same text as <a href="#stage-{first}">stage {first}</a>.'
                    "</p>")
        entry = self.p["texts"][s["text"]]
        return (f"<details open><summary>{entry['lines']:,} lines</summary>"
                f"{self.text_block(s['text'])}</details>")

    def graph(self, i: int) -> str:
        g = next((g for g in self.p["graphs"] if i in g["stages"]), None)
        if g is None:
            return '<p class="note">No graph drawn for this stage (see max_graphs).</p>'
        if g["stage"] != i:
            return (f'<p class="note">Same structure as <a href="#stage-{g["stage"]}">stage '
                    f'{g["stage"]}</a>: see its graph.</p>')
        out = [f'<p class="note">{esc(g["note"])}</p>'] if g.get("note") else []
        if g.get("svg"):
            out.append(img_tag(g["svg"], f"dataflow graph of stage {i}"))
        if g.get("error"):
            out.append(f'<p class="note">{esc(g["error"])}</p>')
        if g.get("dot"):
            out.append(f"<details><summary>DOT source</summary><pre>{esc(g['dot'])}</pre>"
                       "</details>")
        return "".join(out)

    def compare(self) -> str:
        pairs = [d for d in self.p["diffs"] if d["kind"] == "pair"]
        links = "".join(
            f"<details><summary>stage {d['before']} &rarr; stage {d['after']}: "
            f"{esc(d['summary'])}</summary>{self.diff(d)}</details>" for d in pairs)
        return (f'<section id="compare"><h2>Compare stages</h2><p class="note">Diffs between '
                "distinct stages (each stage against the one before is in its section).</p>"
                f"{links or '<p>Only one distinct stage.</p>'}</section>")

    def xla(self) -> str:
        x = self.p.get("xla")
        if not x:
            return '<section id="xla"><h2>XLA</h2><p class="note">Not compiled.</p></section>'
        cost = "".join(f"<tr><th>{esc(k)}</th><td>{v:,.0f}</td></tr>" for k, v in x["cost"].items())
        mem = "".join(f"<tr><th>{esc(k)}</th><td>{v:,}</td></tr>" for k, v in x["memory"].items())
        return (f'<section id="xla"><h2>XLA optimized HLO</h2><p class="meta">stage '
                f'{esc(x["stage"])} compiled for {esc(x["device"])} in '
                f'{x["compile_seconds"] * 1e3:.1f} ms</p><table>{cost}{mem}</table>'
                f'{self.text_block(x["hlo"], "hlo")}</section>')

    def timing(self) -> str:
        rows = [("stages (passes)", sum(s["seconds"] for s in self.p["stages"][1:]))]
        if self.p["stages"]:
            rows.insert(0, ("trace and lower", self.p["stages"][0]["seconds"]))
        if self.p.get("xla"):
            rows.append(("XLA compile", self.p["xla"]["compile_seconds"]))
        run = self.p.get("run") or {}
        rows += [(esc(k.replace("_", " ")), v) for k, v in run.items()
                 if k.endswith("seconds") and isinstance(v, int | float)]
        body = "".join(f"<tr><th>{k}</th><td>{_time(v)}</td></tr>" for k, v in rows)
        extra = "".join(f"<tr><th>{esc(k.replace('_', ' '))}</th><td>{esc(str(v))}</td></tr>"
                        for k, v in run.items() if not k.endswith("seconds"))
        return f'<section id="timing"><h2>Timing</h2><table>{body}{extra}</table></section>'


def _time(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:,.2f} ms"


def save_report(payload: dict[str, Any], path: str) -> str:
    """Write the report to ``path``; returns the path."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(report_html(payload))
    return path
