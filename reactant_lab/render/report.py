"""The self-contained HTML report of an explorer payload: the explorer itself (the front end the
notebook widget and JupyterLab show, built with the package) drawn from the payload, which the
page carries inline, and a script-free rendering of the same (stage list, IR, diffs, graphs as
plain HTML) for viewers that run no JavaScript. It references no external resource, and its CSP
allows only its own inline script and styles, by hash. The script-free rendering alone is also a
fragment for a notebook's ``text/html`` output (``report_fragment``)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from reactant_lab.errors import RenderError
from reactant_lab.render.assets import CSS, PAGE_CSS
from reactant_lab.render.cost_names import cost_name, ordered_cost
from reactant_lab.render.custom_calls_html import custom_calls_section
from reactant_lab.render.highlight import esc, highlight, plain
from reactant_lab.render.payload import DIFF_ROWS
from reactant_lab.render.svg import img_tag
from reactant_lab.render.tables import op_table_html, signature_html, stage_table_html
from reactant_lab.render.texts import decode_text

HIGHLIGHT_LINES = 3_000
"""Texts up to this many lines are syntax-highlighted; longer ones are shown plain."""
STATIC_BUDGET = 2_000_000
"""Characters of text the script-free rendering of a report embeds in all (the explorer shows
every text from the payload)."""
TEXT_STATIC_MAX = 600_000
"""A text longer than this (about 6,000 lines) is left out of the script-free rendering."""
FRAGMENT_BUDGET = 120_000
"""Characters of text a script-free fragment embeds in all (the payload beside it holds all)."""
FRAGMENT_SVG = 80_000
"""A graph's SVG longer than this is left out of a fragment (its graph is in the payload)."""
FRAGMENT_LINE = 240
"""A fragment shows this many characters of a longer line (a large constant: ``dense<...>``)
and says how many it left out."""
EXPLORER_JS = Path(__file__).with_name("static") / "explorer.js"
"""The explorer's front end for the report (labextension/src/report.ts, built with the package)."""
EXPLORER_CSS = Path(__file__).with_name("static") / "explorer.css"
"""The explorer's stylesheet (labextension/src/explorer/style.ts, built with the package)."""
EXPLORER_STYLE_ID = "reactant-lab-explorer-style"
"""The id the explorer looks for before installing its stylesheet itself."""
STATIC_ID = "rl-static"
"""The id of the report's script-free rendering (hidden once the explorer is drawn)."""


def explorer_front_end() -> tuple[str, str]:
    """The explorer's script and stylesheet for the report; a clear error when the package was
    installed without them."""
    if not (EXPLORER_JS.is_file() and EXPLORER_CSS.is_file()):
        raise RenderError(
            f"the explorer's front end ({EXPLORER_JS.name}, {EXPLORER_CSS.name}) is missing from "
            "this installation of reactant_lab: it is built when the package is installed. "
            "Reinstall reactant_lab (pip install --force-reinstall reactant_lab, or pip install "
            "-e . in a checkout; building it needs Node.js 20 or newer), or write the report "
            "without it: report_html(payload, script=False)")
    js, css = (p.read_text(encoding="utf-8") for p in (EXPLORER_JS, EXPLORER_CSS))
    if re.search(r"</script|<!--|<script", js, re.IGNORECASE) or "</style" in css.lower():
        raise RenderError(f"{EXPLORER_JS.name} or {EXPLORER_CSS.name} holds a sequence that "
                          "would end its element early; rebuild the front end")
    return js, css


def content_security_policy(scripts: list[str], styles: list[str]) -> str:
    """A CSP that allows exactly these inline scripts and styles (by hash) and ``data:``
    images, and nothing else: no network, no other script, no plugin, no form target."""
    def hashes(texts: list[str]) -> str:
        return " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(t.encode()).digest()).decode()}'"
                        for t in texts) or "'none'"

    return (f"default-src 'none'; script-src {hashes(scripts)}; style-src {hashes(styles)}; "
            "img-src data:; base-uri 'none'; form-action 'none'")


def report_html(payload: dict[str, Any], *, script: bool = True) -> str:
    """The report as one HTML document: the explorer, drawn from the payload inline, and a
    script-free rendering that shows when JavaScript does not run (``script=False``: only that
    rendering, and no script at all)."""
    title = f"reactant_lab · {payload['meta']['function']}"
    r = _Report(payload, explorer=script)
    body = (f'<div class="reactant-lab-report" id="{STATIC_ID}">{_TOGGLES}'
            f"<main>{''.join(_body(payload, r))}</main></div>")
    page_css = PAGE_CSS + scoped_css(STATIC_ID, prefix_ids=False)
    head, scripts, styles = f"<style>{page_css}</style>", [], [page_css]
    if script:
        js, css = explorer_front_end()
        scripts, styles = [js], [page_css, css]
        head += f'<style id="{EXPLORER_STYLE_ID}">{css}</style>'
        # Before the script-free rendering: the explorer is drawn before that is laid out.
        body = (f'<script type="application/json" class="reactant-lab-payload">'
                f"{_json(embedded_payload(payload))}</script><script>{js}</script>{body}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta http-equiv="Content-Security-Policy" '
            f'content="{content_security_policy(scripts, styles)}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title>{head}</head><body>{body}</body></html>\n")


def embedded_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as a report carries it for its explorer: without the diffs' HTML, which the
    explorer does not read and the page's script-free rendering already holds."""
    return {**payload, "diffs": [{k: v for k, v in d.items() if k != "html"}
                                 for d in payload["diffs"]]}


def report_fragment(payload: dict[str, Any], scope: str, *,
                    budget: int = FRAGMENT_BUDGET) -> str:
    """The report without a script, in brief, as one ``<div id=scope>`` to embed in a page (a
    notebook's ``text/html`` output, shown where the explorer is not installed: nbconvert,
    GitHub, VS Code): the signature, the stage table, the op metrics, the traced and the final
    IR (long lines, such as large constants, elided), the diff between them, the final stage's
    graph, XLA's figures and the timings; every stage, diff and graph is in the payload beside
    it. Its CSS applies inside the div only and its ids, anchors and toggles are prefixed with
    ``scope``, so several reports can share a page."""
    if not re.fullmatch(r"[A-Za-z][\w-]*", scope):
        raise RenderError(f"scope must be an HTML id (a letter, then letters, digits, - or _), "
                          f"not {scope!r}")
    r = _Report(payload, explorer=False, budget=budget, brief=True)
    inner = f"{_TOGGLES}<main>{''.join(_brief_body(payload, r))}</main>"
    inner = _ID_ATTR.sub(lambda m: f"{m.group(0)}{scope}-", inner)
    return (f'<div class="reactant-lab-report" id="{scope}"><style>{scoped_css(scope)}</style>'
            f"{inner}</div>")


_TOGGLES = ('<input type="radio" name="layout" id="lay-sbs" class="toggle" checked>'
            '<input type="radio" name="layout" id="lay-uni" class="toggle">'
            '<input type="checkbox" id="hide-same" class="toggle">')
# Attributes naming an id or a radio group, as the report writes them (text content and other
# attribute values are escaped, so they never contain a bare `id="`).
_ID_ATTR = re.compile(r'\s(?:id|for|name)="|\shref="#')
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")


def scoped_css(scope: str, *, prefix_ids: bool = True) -> str:
    """The report's CSS limited to ``#scope``: page-level rules apply to the div instead (so
    nothing of it touches the explorer beside it), and with ``prefix_ids`` the toggles' ids
    carry the prefix, as ``report_fragment`` writes them."""
    def selector(sel: str) -> str:
        sel = sel.strip()
        if prefix_ids:
            sel = re.sub(r"#(lay-sbs|lay-uni|hide-same)\b", rf"#{scope}-\1", sel)
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
        f'<section id="stages"><h2>Stages</h2>'
        f'{stage_table_html(payload["stages"], payload.get("verification"))}</section>',
        f'<section id="metrics"><h2>Op metrics</h2>{r.metrics()}</section>',
        *(r.stage(s) for s in payload["stages"]),
        r.compare(), r.custom_calls(), r.xla(), r.timing()]


def _brief_body(payload: dict[str, Any], r: _Report) -> list[str]:
    meta, stages = payload["meta"], payload["stages"]
    first, last = stages[0], stages[mlir_stages(payload) - 1]
    note = ('<p class="note">In brief: the traced and the final stage. The explorer (JupyterLab '
            "with reactant_lab installed) shows every stage, diff and graph, and "
            "reactant_lab.save_html writes them to a page.</p>")
    final = (r.brief_stage(last, "Final IR", graph=True) if last["index"] != first["index"]
             else "")
    return [
        f"<header><h1>{esc(meta['function'])}</h1><p class=\"meta\">{r.meta_line()}</p></header>",
        note,
        '<nav class="toc"><a href="#signature">signature</a><a href="#stages">stages</a>'
        '<a href="#metrics">op metrics</a><a href="#stage-0">traced</a>'
        f'<a href="#stage-{last["index"]}">final</a><a href="#xla">XLA</a>'
        '<a href="#timing">timing</a></nav>',
        f'<section id="signature"><h2>Signature</h2>{signature_html(payload["signature"])}'
        "</section>",
        f'<section id="stages"><h2>Stages</h2>'
        f'{stage_table_html(payload["stages"], payload.get("verification"))}</section>',
        f'<section id="metrics"><h2>Op metrics</h2>{r.metrics()}</section>',
        r.brief_stage(first, "Traced IR", graph=not final), r.first_last(), final,
        r.custom_calls(), r.xla(), r.timing()]


def _figure(v: float) -> str:
    """A cost figure: a count with thousands separators, a fraction with 3 digits."""
    return f"{v:,.0f}" if v == int(v) or abs(v) >= 100 else f"{v:.3g}"


def _json(obj: Any) -> str:
    """JSON safe inside a <script> element."""
    return (json.dumps(obj, separators=(",", ":")).replace("<", "\\u003c")
            .replace(">", "\\u003e").replace("&", "\\u0026"))


class _Report:
    """Decides, text by text, what is embedded, and renders the sections."""

    def __init__(self, payload: dict[str, Any], *, explorer: bool = True,
                 budget: int | None = None, brief: bool = False):
        self.p = payload
        self.explorer = explorer
        """Whether the explorer, which shows everything, is on the same page."""
        self.brief = brief
        """A notebook's fragment: long lines elided, no XLA HLO text."""
        self.first_use: dict[int, int] = {}
        for s in payload["stages"]:
            self.first_use.setdefault(s["text"], s["index"])
        self.budget = STATIC_BUDGET if budget is None else budget
        self.prev = {d["after"]: d for d in payload["diffs"] if d["kind"] == "previous"}
        self.xla_first = mlir_stages(payload) if (payload.get("xla") or {}).get("passes") \
            else None

    def meta_line(self) -> str:
        m = self.p["meta"]
        parts = [f"optimize={m.get('optimize')}", f"granularity={m.get('granularity')}",
                 f"target={m.get('target')}"]
        if m.get("versions"):
            parts.append(", ".join(f"{k} {v}" for k, v in m["versions"].items()))
        return esc(" · ".join(str(p) for p in parts))

    def where_all_is(self) -> str:
        """Where what this rendering leaves out can be seen."""
        return ("the explorer shows it when JavaScript runs" if self.explorer
                else "the explorer and reactant_lab.save_html show it")

    def text_block(self, tid: int, kind: str = "mlir") -> str:
        entry = self.p["texts"][tid]
        # a fragment elides long lines first (a large constant need not leave the module out)
        text = (_elide_long_lines(decode_text(self.p["texts"], tid))
                if self.brief and entry["chars"] <= TEXT_STATIC_MAX * 20 else None)
        if (entry["chars"] if text is None else len(text)) > min(self.budget, TEXT_STATIC_MAX):
            return (f'<p class="note">{entry["lines"]:,} lines: too long for this static view '
                    f"({self.where_all_is()}).</p>")
        if text is None:
            text = decode_text(self.p["texts"], tid)
        self.budget -= len(text)
        if kind == "mlir" and entry["lines"] <= HIGHLIGHT_LINES:
            return highlight(text)
        return plain(text).replace('class="mlir"', f'class="{kind}"', 1)

    def diff(self, entry: dict[str, Any] | None) -> str:
        """A diff's HTML (for a long one, its first rows and a note)."""
        if entry is None:
            return ""
        if entry["html"] is None:
            return f'<p class="note">{esc(entry["summary"])}.</p>'
        html: dict[str, str] = entry["html"]
        if "unified" in html and not self.brief:
            return html["side-by-side"] + html["unified"]
        out = html["side-by-side"].replace('class="diff sbs"', 'class="diff sbs only"', 1)
        if entry.get("truncated"):
            out += (f'<p class="note">The first {DIFF_ROWS} changed lines of '
                    f"{entry['added'] + entry['removed'] + entry['changed']:,} "
                    f"({self.where_all_is()}).</p>")
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
                if i and i != self.xla_first else "")
        if i and i == self.xla_first:
            diff = (f'<p class="note">XLA\'s first HLO, converted from the StableHLO of stage '
                    f"{i - 1}: another IR, compared with XLA's later stages only.</p>")
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

    def brief_stage(self, s: dict[str, Any], title: str, *, graph: bool) -> str:
        """A fragment's section of one stage: its IR, and its graph when ``graph``."""
        i = s["index"]
        entry = self.p["texts"][s["text"]]
        drawn = f"<h3>Dataflow graph</h3>{self.graph(i)}" if graph else ""
        return (f'<section id="stage-{i}" class="stage changed"><h2>{title}: {i} &middot; '
                f'{esc(s["name"])}</h2><p class="meta">{s["ops"]} ops</p>'
                f"<details open><summary>{entry['lines']:,} lines</summary>"
                f"{self.text_block(s['text'])}</details>{drawn}</section>")

    def first_last(self) -> str:
        """A fragment's diff between the traced and the final stage."""
        stages = self.p["stages"]
        a, b = stages[0]["structure"], stages[mlir_stages(self.p) - 1]["structure"]
        structure = {s["index"]: s["structure"] for s in stages}
        d = next((d for d in self.p["diffs"] if d["after"] == b
                  and structure[d["before"]] == a and d.get("html")), None)
        if a == b:
            body = '<p class="note">No structural change.</p>'
        elif d is None:
            body = f'<p class="note">Not in the payload ({self.where_all_is()}).</p>'
        else:
            body = f'<p class="note">{esc(d["summary"])}.</p>{self.diff(d)}'
        return (f'<section id="compare"><h2>Traced &rarr; final (stage {b})</h2>{body}'
                "</section>")

    def graph(self, i: int) -> str:
        g = next((g for g in self.p["graphs"] if i in g["stages"]), None)
        if g is None:
            return '<p class="note">No graph drawn for this stage (see max_graphs).</p>'
        out = []
        if g["stage"] != i:
            if not self.brief:  # a fragment shows one graph: that of this structure
                return (f'<p class="note">Same structure as <a href="#stage-{g["stage"]}">stage '
                        f'{g["stage"]}</a>: see its graph.</p>')
            out.append(f'<p class="note">Drawn for stage {g["stage"]}, of the same structure.'
                       "</p>")
        if g.get("note"):
            out.append(f'<p class="note">{esc(g["note"])}</p>')
        if g.get("svg") and self.brief and len(g["svg"]) > FRAGMENT_SVG:
            out.append(f'<p class="note">{g.get("ops") or 0:,} ops: too large a drawing for this '
                       f"static view ({self.where_all_is()}).</p>")
        elif g.get("svg"):
            out.append(img_tag(g["svg"], f"dataflow graph of stage {i}"))
        if g.get("error"):
            out.append(f'<p class="note">{esc(g["error"])}</p>')
        if g.get("dot") and not self.brief:
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

    def custom_calls(self) -> str:
        return custom_calls_section(self.p.get("custom_calls") or [], len(self.p["stages"]),
                                    self.text_block)

    def xla(self) -> str:
        x = self.p.get("xla")
        if not x:
            return '<section id="xla"><h2>XLA</h2><p class="note">Not compiled.</p></section>'
        cost = "".join(f'<tr><th title="{esc(k)}">{esc(cost_name(k))}</th><td>{_figure(v)}</td>'
                       "</tr>" for k, v in ordered_cost(x["cost"]).items())
        mem = "".join(f"<tr><th>{esc(k)}</th><td>{v:,}</td></tr>" for k, v in x["memory"].items())
        return (f'<section id="xla"><h2>XLA optimized HLO</h2><p class="meta">stage '
                f'{esc(x["stage"])} compiled for {esc(x["device"])} in '
                f'{x["compile_seconds"] * 1e3:.1f} ms</p>'
                + "".join(f'<p class="note">{esc(n)}</p>' for n in x.get("notes", ()))
                + f"<table>{cost}{mem}</table>" + _passes(x.get("passes"))
                + _partitioned(x.get("sharding"))
                + ("" if self.brief else self.text_block(x["hlo"], "hlo")) + "</section>")

    def timing(self) -> str:
        mlir = self.p["stages"][:mlir_stages(self.p)]
        rows = [("stages (passes)", sum(s["seconds"] for s in mlir[1:]))]
        if self.p["stages"]:
            rows.insert(0, ("trace and lower", self.p["stages"][0]["seconds"]))
        if self.p.get("xla"):
            rows.append(("XLA compile", self.p["xla"]["compile_seconds"]))
            passes = self.p["xla"].get("passes")
            if passes:
                rows += [("&nbsp;&nbsp;lowering to HLO", passes["import_seconds"]),
                         ("&nbsp;&nbsp;HLO passes", passes["pass_seconds"]),
                         ("&nbsp;&nbsp;code generation", passes["codegen_seconds"])]
        run = self.p.get("run") or {}
        rows += [(esc(k.replace("_", " ")), v) for k, v in run.items()
                 if k.endswith("seconds") and isinstance(v, int | float)]
        body = "".join(f"<tr><th>{k}</th><td>{_time(v)}</td></tr>" for k, v in rows)
        extra = "".join(f"<tr><th>{esc(k.replace('_', ' '))}</th><td>{esc(str(v))}</td></tr>"
                        for k, v in run.items() if not k.endswith("seconds"))
        return f'<section id="timing"><h2>Timing</h2><table>{body}{extra}</table></section>'


def mlir_stages(payload: dict[str, Any]) -> int:
    """How many of the payload's stages are MLIR's (XLA's own stages follow them)."""
    passes = (payload.get("xla") or {}).get("passes")
    return int(passes["first"]) if passes else len(payload["stages"])


PASS_ROWS = 12
"""XLA's slowest passes listed in the report."""


def _passes(passes: dict[str, Any] | None) -> str:
    """XLA's own stages in brief: where they are, how many passes changed the module, and the
    slowest passes with their runs ('' when the compile did not keep them)."""
    if not passes:
        return ""
    totals = passes["totals"]
    runs, changed = sum(t[1] for t in totals), sum(t[2] for t in totals)
    said = (f"{changed} of {runs} pass runs changed the module" if passes["every_pass"]
            else f"{changed} pass runs changed the module (the others of this large module "
            "are not listed)")
    rows = "".join(f"<tr><td>{esc(t[0])}</td><td>{t[1]}</td><td>{t[2]}</td>"
                   f"<td>{_time(t[3])}</td></tr>" for t in totals[:PASS_ROWS])
    return (f'<p class="note">XLA\'s own stages follow the MLIR ones, from <a href="#stage-'
            f'{passes["first"]}">stage {passes["first"]}</a>: {said}; printing the module after '
            "each pass is in their times.</p><table><tr><th>slowest passes</th><th>runs</th>"
            f"<th>changed</th><th>time</th></tr>{rows}</table>")


def _partitioned(sh: dict[str, Any] | None) -> str:
    """The partitioned executable: devices and mesh, collectives counted and listed, memory
    per device ('' for one device)."""
    if not sh:
        return ""
    counts = ", ".join(f"{n} {op}" for op, n in sh["counts"].items()) or "no collectives"
    mesh = f' (mesh {esc(sh["mesh"])})' if sh["mesh"] else ""
    rows = "".join(
        f'<tr><td>{esc(c["op"])}</td><td>{esc(c["shape"])}</td><td>{c["bytes"]:,}</td>'
        f'<td>{esc(c["devices"])}</td><td>{esc(c.get("src") or c["op_name"] or "-")}</td>'
        f'<td>{esc(c["computation"])}</td></tr>' for c in sh["collectives"])
    listed = ("<table><tr><th>collective</th><th>shape per device</th><th>bytes</th>"
              f"<th>devices</th><th>source</th><th>computation</th></tr>{rows}</table>"
              if rows else "")
    mem = "".join(f"<tr><th>{esc(k)}</th><td>{v:,}</td></tr>"
                  for k, v in sh["memory_per_device"].items())
    return (f'<h3>Partitioned over {sh["partitions"]} devices{mesh}</h3>'
            f'<p class="meta">{esc(counts)}; {sh["bytes"]:,} bytes per device</p>{listed}'
            f"<table><tr><th>memory per device</th><th>bytes</th></tr>{mem}</table>")


def _elide_long_lines(text: str) -> str:
    """``text`` with each line over FRAGMENT_LINE characters cut there, and a marker."""
    def cut(line: str) -> str:
        if len(line) <= FRAGMENT_LINE:
            return line
        return f"{line[:FRAGMENT_LINE]} … [{len(line) - FRAGMENT_LINE:,} characters elided]"

    return "\n".join(cut(line) for line in text.split("\n"))


def _time(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:,.2f} ms"
