"""How reactant_lab's values look in a notebook: IPython HTML formatters for the values of the
lower layers (benchmark results, bisections, diffs, op tables, explorations), which may not import
the renderers themselves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactant_lab.analysis.diff import Diff
from reactant_lab.analysis.metrics import OpTable
from reactant_lab.bench import BenchResult
from reactant_lab.bisect import BisectResult
from reactant_lab.explore import Exploration
from reactant_lab.render.bench_chart import result_html
from reactant_lab.render.bisect_view import bisect_html
from reactant_lab.render.diff_html import diff_html
from reactant_lab.render.explorer import exploration_summary_html
from reactant_lab.render.tables import op_table_html

HTML_VIEWS: dict[type, Callable[..., str]] = {BenchResult: result_html, BisectResult: bisect_html,
                                               Diff: diff_html, OpTable: op_table_html,
                                               Exploration: exploration_summary_html}
"""Value type -> function giving its HTML view."""


def register(ipython: Any) -> None:
    """Show each value of HTML_VIEWS as HTML in ``ipython``'s rich output."""
    html = ipython.display_formatter.formatters["text/html"]
    for kind, view in HTML_VIEWS.items():
        html.for_type(kind, view)
