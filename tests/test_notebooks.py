"""The example notebooks run top to bottom in a fresh kernel (their own assertions check the values
they show), and the saved copies carry explorer outputs a reader can see without running them."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import jsonschema
import nbformat
import pytest

from reactant_lab.render.payload import MIME_TYPE, SCHEMA_PATH
from reactant_lab.render.texts import decode_text
from tests.conftest import child_env

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("notebook_refresh", ROOT / "notebooks" / "refresh.py")
refresh = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(refresh)

NOTEBOOKS = ["01_quickstart.ipynb", "02_numpy_kernels.ipynb", "03_pass_by_pass.ipynb",
             "04_benchmarking.ipynb", "05_enzyme_gradients.ipynb", "05_loops.ipynb",
             "06_sharding.ipynb", "07_accelerator.ipynb"]
MAX_BYTES = 2_000_000
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def outputs_of(cell) -> list:
    return cell.get("outputs", []) if cell.cell_type == "code" else []


def explorer_cells(nb) -> list:
    return [c for c in nb.cells if any(MIME_TYPE in o.get("data", {}) for o in outputs_of(c))]


def test_every_example_notebook_is_listed():
    assert refresh.NOTEBOOKS == NOTEBOOKS


def test_a_machine_without_tcp_sockets_runs_the_kernel_over_unix_sockets(tmp_path, monkeypatch):
    """A TPU machine of the test lab lets no process open a TCP socket; refresh.py (which saves
    notebook 07 from a TPU run) then reaches its kernel over Unix sockets, and the kernel opens
    no TCP socket of its own (ipykernel's pipe for forked subprocesses' output: libzmq aborted
    the kernel there)."""
    monkeypatch.setattr(refresh, "_transport", lambda: "ipc")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import numpy as np\nfrom ipykernel.kernelapp import IPKernelApp\n"
        "print(np.arange(4).sum() * 7, IPKernelApp.instance().iopub_thread._pipe_flag)")]
    nbformat.write(nb, tmp_path / "t.ipynb")
    done = refresh.execute(tmp_path / "t.ipynb", timeout=120, env=child_env())
    assert done.cells[0].outputs[0]["text"] == "42 False\n"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_top_to_bottom(name):
    nb = refresh.execute(ROOT / "notebooks" / name, env=child_env())
    errors = [o for c in nb.cells for o in outputs_of(c) if o.output_type == "error"]
    assert not errors
    magicked = [c for c in nb.cells if c.cell_type == "code" and "%%reactant_" in c.source]
    assert magicked and explorer_cells(nb) == magicked  # every magicked cell shows its explorer
    for cell in magicked:
        for o in outputs_of(cell):
            if MIME_TYPE in o.get("data", {}):
                assert set(o["data"]) - {WIDGET_MIME} == {MIME_TYPE, "text/html", "text/plain"}
                assert "<script" not in o["data"]["text/html"]
                assert o["data"][MIME_TYPE]["schema_version"] == 1
    # a cell's value is shown first, its explorers below it
    valued = [[("explorer" if MIME_TYPE in o.get("data", {}) else o.output_type)
               for o in outputs_of(c)] for c in magicked
              if any(o.output_type == "execute_result" for o in outputs_of(c))]
    assert all(kinds[0] == "execute_result" and set(kinds[1:]) == {"explorer"} for kinds in valued)
    assert valued or name != "01_quickstart.ipynb"
    assert refresh.local_paths(nb) == []


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_saved_notebook_shows_its_outputs_without_running(name):
    path = ROOT / "notebooks" / name
    assert path.stat().st_size < MAX_BYTES
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code)  # saved after a full run
    assert explorer_cells(nb)
    assert refresh.local_paths(nb) == []
    # SVG's namespace is a name, not a link; nothing else may point outside
    assert not re.search(r"https?://(?!www\.w3\.org/(2000/svg|1999/xlink)\b)", json.dumps(nb.cells))


def payloads_of(cell) -> list[dict]:
    return [o["data"][MIME_TYPE] for o in outputs_of(cell) if MIME_TYPE in o.get("data", {})]


@pytest.mark.parametrize(("function", "statement", "carried"), [
    ("jacobi_2d", "for _ in range(steps)", ("A", "B")),
    ("forward_substitution", "for i in range(x.shape[0])", ("x",)),
])
def test_saved_loops_notebook_shows_rolled_loops(function, statement, carried):
    nb = nbformat.read(ROOT / "notebooks" / "05_loops.ipynb", as_version=4)
    [cell] = [c for c in explorer_cells(nb) if f"def {function}(" in c.source]
    assert cell.source.startswith("%%reactant_jit --loops auto\n")
    [payload] = payloads_of(cell)
    jsonschema.validate(payload, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")),
                        cls=jsonschema.Draft202012Validator)
    assert payload["meta"]["function"] == function
    stages = payload["stages"]
    assert stages[0]["name"] == "traced"
    traced = decode_text(payload["texts"], stages[0]["text"])
    assert traced.count("stablehlo.while") == 1  # one loop, not one copy per iteration
    # the loop's line in the cell (the magic being line 1) labels its region in the graph,
    # whose block arguments name the carried Python variables
    line = next(k for k, text in enumerate(cell.source.splitlines(), 1) if statement in text)
    [graph] = [g for g in payload["graphs"] if 0 in g["stages"]]
    assert graph["kind"] == "full" and (graph.get("svg") or graph.get("model"))
    assert f"{statement} — line {line}" in graph["dot"]
    [args] = re.findall(r'label="(block args[^"]*)"', graph["dot"])
    assert set(carried) <= set(args.split("\\n"))
