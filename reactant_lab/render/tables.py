"""HTML tables: stages, op metrics across stages, the call's signature."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reactant_lab.render.highlight import esc

if TYPE_CHECKING:
    from reactant_lab.analysis.metrics import OpTable


def op_table_html(t: OpTable) -> str:
    """Rows are op names, columns stages; a cell whose count changed says by how much."""
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


def stage_table_html(stages: list[dict[str, Any]]) -> str:
    """The stage list of a payload: name, passes, changed marker, ops, change in ops, time."""
    rows = []
    prev_ops = None
    for s in stages:
        delta = "" if prev_ops is None else f"{s['ops'] - prev_ops:+d}"
        prev_ops = s["ops"]
        mark = ('<span class="chg">changed</span>' if s["changed"] else
                '<span class="same">unchanged</span>')
        passes = (f"<details><summary>{esc(_short(s['pipeline']))}</summary><code>"
                  f"{esc(s['pipeline'])}</code></details>" if s["pipeline"] else "")
        note = f'<div class="note">{esc(s["unavailable"])}</div>' if s["unavailable"] else ""
        cls = "changed" if s["changed"] else "unchanged"
        rows.append(f'<tr class="{cls}"><td>{s["index"]}</td><td><a href="#stage-{s["index"]}">'
                    f'{esc(s["name"])}</a></td><td>{passes}{note}</td><td>{mark}</td>'
                    f'<td>{s["ops"]}</td><td>{delta}</td><td>{s["seconds"] * 1e3:.1f}</td></tr>')
    return ('<table class="stages"><thead><tr><th>#</th><th>stage</th><th>passes</th>'
            '<th>IR</th><th>ops</th><th>&Delta;ops</th><th>ms</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


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
    """Linear arguments (with donated / mutated marks), static arguments, linear results."""
    args = "".join(
        f"<tr><td>%arg{a['index']}</td><td><code>{esc(a['path'])}</code></td>"
        f"<td>{esc(a['type'])}</td><td>{_marks(a)}</td></tr>" for a in sig["args"])
    results = "".join(
        f"<tr><td>{'' if r['index'] is None else r['index']}</td><td><code>{esc(r['path'])}"
        f"</code></td><td>{esc(r['type'])}</td><td>{_result_marks(r)}</td></tr>"
        for r in sig["results"])
    skipped = "".join(f"<li><code>{esc(p)}</code> = <code>{esc(v)}</code></li>"
                      for p, v in sig["skipped"])
    return ('<table class="sig"><thead><tr><th></th><th>linear argument</th><th>type</th>'
            f"<th></th></tr></thead><tbody>{args}</tbody></table>"
            + (f'<p>Static (skipped) arguments, baked in:</p><ul>{skipped}</ul>' if skipped
               else "")
            + '<table class="sig"><thead><tr><th>#</th><th>linear result</th><th>type</th>'
            f"<th></th></tr></thead><tbody>{results}</tbody></table>")


def _marks(a: dict[str, Any]) -> str:
    return " ".join(f'<span class="mark {m}">{m}</span>' for m in ("mutated", "donated") if a[m])


def _result_marks(r: dict[str, Any]) -> str:
    out = []
    if r["preserved_from"]:
        out.append(f'<span class="mark preserved">alias of {esc(r["preserved_from"])}</span>')
    if r["writes_back"]:
        out.append(f'<span class="mark mutated">written back to {esc(r["writes_back"])}</span>')
    return " ".join(out)
