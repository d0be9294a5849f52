"""HTML and SVG for a BenchResult: the table, and per-variant sample distributions on a log axis
beside each variant's roofline time floor."""

from __future__ import annotations

import base64
import html
import math
from typing import TYPE_CHECKING

from reactant_lab.timing import format_seconds

if TYPE_CHECKING:
    from reactant_lab.bench.result import BenchResult, BenchRow

_ROW_H, _LEFT, _WIDTH, _TOP = 26, 110, 560, 24


def chart_svg(result: BenchResult) -> str:
    """Strip chart: one row per variant (samples as dots, IQR box, median bar) and a dashed
    mark at the time floor the roofline allows for that variant's work."""
    rows = result.rows
    values = [s for r in rows for s in r.samples_s if s > 0]
    floors = [f for r in rows if (f := _floor(result, r)) is not None and f > 0]
    lo, hi = min(values + floors, default=1e-6), max(values + floors, default=1e-3)
    lo, hi = math.log10(lo) - 0.05, math.log10(hi) + 0.05

    def x(seconds: float) -> float:
        return _LEFT + (math.log10(max(seconds, 1e-15)) - lo) / (hi - lo) * (_WIDTH - _LEFT - 10)

    height = _TOP + _ROW_H * len(rows) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
             'font-family="sans-serif" font-size="11">',
             f'<text x="4" y="14" font-weight="bold">{html.escape(result.fn_name)} on '
             f'{html.escape(result.device)}: seconds per call (log scale)</text>']
    for i, r in enumerate(rows):
        y = _TOP + i * _ROW_H + _ROW_H / 2
        parts.append(f'<text x="4" y="{y + 4:.1f}">{html.escape(r.name)}</text>')
        q = sorted(r.samples_s)
        q1, q3 = q[len(q) // 4], q[(3 * len(q)) // 4]
        parts.append(f'<rect x="{x(q1):.1f}" y="{y - 7:.1f}" width="{max(1.0, x(q3) - x(q1)):.1f}"'
                     ' height="14" fill="#cfe3f7" stroke="#4a86c5"/>')
        parts += [f'<circle cx="{x(s):.1f}" cy="{y:.1f}" r="1.5" fill="#355d8a" '
                  'fill-opacity="0.5"/>' for s in r.samples_s]
        parts.append(f'<line x1="{x(r.median_s):.1f}" x2="{x(r.median_s):.1f}" y1="{y - 9:.1f}" '
                     f'y2="{y + 9:.1f}" stroke="#c0392b" stroke-width="2"/>')
        floor = _floor(result, r)
        if floor:
            parts.append(f'<line x1="{x(floor):.1f}" x2="{x(floor):.1f}" y1="{y - 11:.1f}" '
                         f'y2="{y + 11:.1f}" stroke="#27ae60" stroke-dasharray="3,2"/>')
    axis_y = _TOP + _ROW_H * len(rows) + 4
    for decade in range(math.ceil(lo), math.floor(hi) + 1):
        gx = x(10.0**decade)
        parts.append(f'<line x1="{gx:.1f}" x2="{gx:.1f}" y1="{_TOP}" y2="{axis_y}" '
                     'stroke="#ddd"/>')
        parts.append(f'<text x="{gx:.1f}" y="{axis_y + 12}" text-anchor="middle">'
                     f'{html.escape(format_seconds(10.0**decade))}</text>')
    parts.append(f'<text x="{_LEFT}" y="{height - 2}" fill="#555">red: median, box: IQR, '
                 'green dashed: roofline floor</text></svg>')
    return "".join(parts)


def _floor(result: BenchResult, row: BenchRow) -> float | None:
    if result.roofline is None:
        return None
    return result.roofline.floor_s(row.flops, row.bytes_accessed, result.compute_dtype)


def svg_data_uri(svg: str) -> str:
    """An ``<img>``-ready data URI (JupyterLab's sanitizer strips inline ``<svg>``)."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode("ascii")


def result_html(result: BenchResult) -> str:
    """The table as HTML (each ratio as "N× faster / slower than" the baseline), what the
    columns mean, the skipped variants' reasons whole, and the chart as an embedded image."""
    # bench imports JAX; importing render must not, and a BenchResult means bench is loaded
    from reactant_lab.bench.result import NOISY_NOTE, transfer_cell, versus

    esc = html.escape
    copies = result.has_transfers
    head = ["variant", "median", "IQR", "min", "compile", f"vs {result.reference or 'baseline'}",
            "GFLOP/s", "GB/s", "roofline", *(("to device", "from device") if copies else ())]
    body = []
    for r in result.rows:
        over = r.roofline_fraction is not None and r.roofline_fraction > 1
        cells = [r.name + (" (noisy)" if r.noisy else ""), format_seconds(r.median_s),
                 format_seconds(r.iqr_s), format_seconds(r.min_s),
                 format_seconds(r.compile_s) if r.compile_s is not None else "-",
                 versus(r.ratio, r.name, result.reference),
                 f"{r.gflops_per_s:.3g}" if r.gflops_per_s else "-",
                 f"{r.gb_per_s:.3g}" if r.gb_per_s else "-",
                 (f"{r.roofline_fraction:.1%}" + (" *" if over else ""))
                 if r.roofline_fraction is not None else "-",
                 *((transfer_cell(r.h2d_bytes, r.h2d_s), transfer_cell(r.d2h_bytes, r.d2h_s))
                   if copies else ())]
        flag = f' title="{esc(NOISY_NOTE)}" style="color:#b36b00"' if r.noisy else ""
        body.append(f"<tr{flag}>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    notes = [n for n in result.notes() if not n.startswith("skipped ")]
    skipped = "".join(f"<li><b>{esc(n)}</b>: {esc(w)}</li>" for n, w in result.skipped.items())
    return ('<div class="reactant-lab-bench"><table><thead><tr>'
            + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(body) + "</tbody></table>"
            + "".join(f"<p>{esc(n)}.</p>" for n in notes)
            + (f"<p>Not measured:</p><ul>{skipped}</ul>" if skipped else "")
            + f'<img alt="timing chart" src="{svg_data_uri(chart_svg(result))}"/></div>')
