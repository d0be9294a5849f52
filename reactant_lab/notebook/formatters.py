"""How reactant_lab's values look in a notebook: IPython HTML formatters for the values of the
lower layers (benchmark results, bisections, diffs, op tables), which may not import the
renderers themselves, and the explorer for an exploration (a cell ending with ``ex`` after
``ex = rl.explore(...)`` shows what ``%%reactant_jit`` shows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactant_lab.analysis.diff import Diff
from reactant_lab.analysis.metrics import OpTable
from reactant_lab.bench import BenchResult
from reactant_lab.bisect import BisectResult
from reactant_lab.errors import ReactantLabError
from reactant_lab.explore import Exploration
from reactant_lab.render.bench_chart import result_html
from reactant_lab.render.bisect_view import bisect_html
from reactant_lab.render.diff_html import diff_html
from reactant_lab.render.tables import op_table_html

HTML_VIEWS: dict[type, Callable[..., str]] = {BenchResult: result_html, BisectResult: bisect_html,
                                               Diff: diff_html, OpTable: op_table_html}
"""Value type -> function giving its HTML view."""


def exploration_view(ex: Exploration) -> tuple[dict[str, Any], dict[str, Any]] | dict[str, Any]:
    """An Exploration as a notebook shows the value: the live explorer widget, whose output also
    carries the static bundle that saved notebooks and other front ends show (the explorer's
    payload, a script-free HTML report, a text summary); the static bundle alone where the
    widget's front end was not built into this installation."""
    from IPython import get_ipython

    from reactant_lab.notebook.display import cell_file_labels, explorer_bundle
    from reactant_lab.notebook.widget import ExplorerWidget

    labels = cell_file_labels(get_ipython())
    try:
        widget = ExplorerWidget(ex, labels=labels)
    except ReactantLabError:  # the front end was not built into this installation
        return explorer_bundle(ex, labels=labels)
    shown = widget._repr_mimebundle_()
    return shown if shown is not None else explorer_bundle(ex, labels=labels)


BUNDLE_VIEWS: dict[type, Callable[[Any], Any]] = {Exploration: exploration_view}
"""Value type -> function giving its whole display bundle."""


def register(ipython: Any) -> None:
    """Show each value of HTML_VIEWS as HTML, and of BUNDLE_VIEWS as its bundle, in
    ``ipython``'s rich output."""
    html = ipython.display_formatter.formatters["text/html"]
    for kind, view in HTML_VIEWS.items():
        html.for_type(kind, view)
    bundles = ipython.display_formatter.mimebundle_formatter
    for kind, bundle in BUNDLE_VIEWS.items():
        bundles.for_type(kind, bundle)
