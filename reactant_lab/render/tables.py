"""HTML tables: stages, op metrics across stages, the call's signature."""

from __future__ import annotations

import re
from typing import Any

from reactant_lab import checks
from reactant_lab.analysis.metrics import OpTable
from reactant_lab.render.highlight import esc


def op_table_html(t: OpTable) -> str:
    """Rows are op names, columns stages; a cell whose count changed says by how much."""
    checks.instance("t", t, OpTable, "an OpTable from rl.analysis.op_table(ex.stages)")
    head = "".join(f'<th title="{esc(s)}"><a href="#stage-{i}">{i}</a></th>'
                   for i, s in enumerate(t.stages))
    rows = []
    for r, op in enumerate(t.ops):
        cells = []
        for col, n in enumerate(t.counts[r]):
            d = t.delta(r, col)
            cls = ' class="up"' if d > 0 else (' class="down"' if d < 0 else "")
            cells.append(f"<td{cls}>{n}" + (f" <small>{d:+d}</small>" if d else "") + "</td>")
        rows.append(f"<tr><th>{esc(op)}</th>{''.join(cells)}</tr>")
    totals = "".join(f"<td>{n}</td>" for n in t.totals)
    legend = "".join(f"<li>{i}: {esc(s)}</li>" for i, s in enumerate(t.stages))
    return (f'<table class="ops"><thead><tr><th>op \\ stage</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody><tfoot><tr><th>total</th>{totals}</tr></tfoot>"
            f'</table><ul class="stage-key">{legend}</ul>')


def stage_table_html(stages: list[dict[str, Any]],
                     verification: dict[str, Any] | None = None) -> str:
    """The stage list of a payload: name, passes, changed marker, ops, change in ops, time; with
    the payload's ``verification``, XLA compile, run time and error per stage too, the first
    stage that went wrong (or got slower) marked, and a note saying why."""
    checks = {c["index"]: c for c in (verification or {}).get("checks", [])}
    notes = stage_notes(stages)
    mark_of = {i: k + 1 for k, (_, where) in enumerate(notes) for i in where}
    rows = []
    prev_ops = None
    listed: dict[str, int] = {}
    for s in stages:
        delta = "" if prev_ops is None else f"{s['ops'] - prev_ops:+d}"
        prev_ops = s["ops"]
        mark = ('<span class="chg">changed</span>' if s["changed"] else
                '<span class="same">unchanged</span>')
        passes = (f"<details><summary>{esc(_short(s['pipeline']))}</summary><code>"
                  f"{_patterns_once(s['pipeline'], s['index'], listed)}</code></details>"
                  if s["pipeline"] else "")
        k = mark_of.get(s["index"])
        note = (f' <a class="note-mark" href="#pass-note-{k}" title="{_NOTE_TITLE}">&#9888;'
                f"<sup>{k}</sup></a>" if k else "")
        cls = "changed" if s["changed"] else "unchanged"
        cells = (_verify_cells(verification, checks.get(s["index"]))
                 if verification is not None else "")
        if verification is not None:
            cls += _first_marks(verification, s["index"])
        rows.append(f'<tr class="{cls}"><td>{s["index"]}</td><td><a href="#stage-{s["index"]}">'
                    f'{esc(s["name"])}</a></td><td>{passes}{note}</td><td>{mark}</td>'
                    f'<td>{s["ops"]}</td><td>{delta}</td><td>{s["seconds"] * 1e3:.1f}</td>'
                    f"{cells}</tr>")
    extra = ("<th>XLA compile</th><th>run</th><th>error</th>" if verification is not None
             else "")
    return ('<table class="stages"><thead><tr><th>#</th><th>stage</th><th>passes</th>'
            f'<th>IR</th><th>ops</th><th>&Delta;ops</th><th>ms</th>{extra}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>" + _notes_html(notes, stages)
            + (verification_note_html(verification) if verification is not None else ""))


_NOTE_TITLE = "some of this stage&#39;s passes or patterns did not run as listed: see the note"
_PATTERN_LIST = re.compile(r"patterns=([^}]*)")


def _patterns_once(pipeline: str, index: int, listed: dict[str, int]) -> str:
    """``pipeline`` as HTML, each pattern list (``patterns=...``: Reactant's runs to about 190
    patterns, 4.5 KB of HTML) written out at the first stage that runs it and named by that
    stage in the later ones (``listed``: each list seen so far and its stage): a preset runs the
    same list in three or four stages."""
    out, at = [], 0
    for m in _PATTERN_LIST.finditer(pipeline):
        first = listed.setdefault(m.group(1), index)
        out.append(esc(pipeline[at:m.start(1)]))
        out.append(esc(m.group(1)) if first == index else
                   f'<i>the {m.group(1).count(";") + 1} patterns of <a href="#stage-{first}">'
                   f"stage {first}</a></i>")
        at = m.end(1)
    out.append(esc(pipeline[at:]))
    return "".join(out)


def stage_notes(stages: list[dict[str, Any]]) -> list[tuple[str, list[int]]]:
    """Each distinct note of the stages (``unavailable``: passes or patterns left out or run
    another way) once, with the stages it applies to, in order."""
    shared: dict[str, list[int]] = {}
    for s in stages:
        if s.get("unavailable"):
            shared.setdefault(s["unavailable"], []).append(s["index"])
    return list(shared.items())


def _notes_html(notes: list[tuple[str, list[int]]], stages: list[dict[str, Any]]) -> str:
    """The stages' notes as footnotes under the table, one per distinct note."""
    if not notes:
        return ""
    names = {s["index"]: s["name"] for s in stages}
    items = "".join(
        f'<li id="pass-note-{k}"><span class="note-where">&#9888;<sup>{k}</sup> stage'
        f"{'s' if len(where) > 1 else ''} {', '.join(f'{i} {esc(names[i])}' for i in where)}:"
        f"</span> {esc(note)}</li>" for k, (note, where) in enumerate(notes, start=1))
    return f'<ol class="stage-notes">{items}</ol>'


def _first_marks(v: dict[str, Any], index: int) -> str:
    return ((" first-wrong" if v["first_wrong"] == index else "")
            + (" first-slower" if v["first_slower"] == index else ""))


def _seconds(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s * 1e6:,.1f} µs" if s < 1e-3 else f"{s * 1e3:,.2f} ms"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2g}"


def _verify_cells(v: dict[str, Any], c: dict[str, Any] | None) -> str:
    if c is None:
        return "<td>-</td><td>-</td><td>-</td>"
    if c["error"]:
        verdict, title = '<span class="bad">failed</span>', c["error"]
    elif c["ok"] is False:
        verdict = f'<span class="bad">&#10007; {_num(c["max_abs"])}</span>'
        title = f"{c['first_bad']} (tolerance: {v['tolerance']})"
    elif c["ok"]:
        verdict, title = "ok", f"max abs {_num(c['max_abs'])}, max rel {_num(c['max_rel'])}"
    else:
        verdict, title = "-", ""
    slow = ' class="slow"' if c["slower"] else ""
    return (f'<td>{_seconds(c["compile_seconds"])}</td><td{slow}>{_seconds(c["run_seconds"])}'
            f'</td><td title="{esc(title)}">{verdict}</td>')


def verification_note_html(v: dict[str, Any]) -> str:
    """What the stages were verified against, and the first stage that went wrong or got more
    than ``slower_factor`` times slower, with why."""
    by_index = {c["index"]: c for c in v["checks"]}
    parts = [f"Verified against {esc(v['reference_label'])}; run times are medians of "
             f"{v['repeat']} samples; tolerance: {esc(v['tolerance'])}."]
    wrong, slow = by_index.get(v["first_wrong"]), by_index.get(v["first_slower"])
    if wrong is not None:
        why = wrong["error"] or wrong["first_bad"] or "values differ"
        parts.append(f'<strong class="bad">First stage that went wrong: {wrong["index"]} '
                     f'{esc(wrong["name"])}</strong>: {esc(why)}')
    if slow is not None:
        parts.append(f'<strong class="slow">First stage more than {v["slower_factor"]:g}x '
                     f'slower: {slow["index"]} {esc(slow["name"])}</strong> '
                     f'({_seconds(slow["run_seconds"])})')
    if wrong is None and slow is None:
        parts.append("Every stage that ran matches the reference.")
    return '<div class="verify-note">' + "<br>".join(parts) + "</div>"


def _short(pipeline: str, limit: int = 80) -> str:
    names = [p.split("{")[0] for p in _top_level(pipeline)]
    text = ", ".join(names)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _top_level(pipeline: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in pipeline:
        depth += (ch in "{(") - (ch in "})")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    return [*parts, "".join(cur)] if cur or parts else []


def signature_html(sig: dict[str, Any]) -> str:
    """Linear arguments (with donated / mutated marks), static arguments, linear results, each
    by the name the function gives it (``p['w1']``) and its path in the call."""
    names = sig.get("names") or {}
    args = "".join(
        f"<tr><td>%arg{a['index']}</td><td><code>{esc(names.get(a['path'], a['path']))}</code>"
        f"</td><td><code>{esc(a['path'])}</code></td><td>{esc(a['type'])}</td>"
        f"<td>{_marks(a)}</td></tr>" for a in sig["args"])
    results = "".join(
        f"<tr><td>{'' if r['index'] is None else r['index']}</td><td><code>"
        f"{esc(names.get(r['path'], r['path']))}</code></td><td><code>{esc(r['path'])}</code>"
        f"</td><td>{esc(r['type'])}</td><td>{_result_marks(r, names)}</td></tr>"
        for r in sig["results"])
    skipped = "".join(f"<li><code>{esc(names.get(p, p))}</code> = <code>{esc(v)}</code>"
                      + (f" ({esc(p)})" if p in names else "") + "</li>"
                      for p, v in sig["skipped"])
    return ('<table class="sig"><thead><tr><th></th><th>linear argument</th><th>path</th>'
            f"<th>type</th><th></th></tr></thead><tbody>{args}</tbody></table>"
            + (f'<p>Static (skipped) arguments, baked in:</p><ul>{skipped}</ul>' if skipped
               else "")
            + '<table class="sig"><thead><tr><th>#</th><th>linear result</th><th>path</th>'
            f"<th>type</th><th></th></tr></thead><tbody>{results}</tbody></table>")


def _marks(a: dict[str, Any]) -> str:
    return " ".join(f'<span class="mark {m}">{m}</span>' for m in ("mutated", "donated") if a[m])


def _result_marks(r: dict[str, Any], names: dict[str, str]) -> str:
    def shown(path: str) -> str:
        return f"{names[path]} ({path})" if path in names else path

    out = []
    if r["preserved_from"]:
        out.append(f'<span class="mark preserved">alias of {esc(shown(r["preserved_from"]))}'
                   "</span>")
    if r["writes_back"]:
        out.append(f'<span class="mark mutated">written back to {esc(shown(r["writes_back"]))}'
                   "</span>")
    if r.get("constant"):
        out.append('<span class="mark preserved">constant, computed while tracing</span>')
    return " ".join(out)
