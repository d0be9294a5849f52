"""The acceptance run in a real JupyterLab: ``%load_ext reactant_lab``, then ``%%reactant_jit``
cells defining and calling an MLP (JAX) and a NumPy stencil updated in place; each shows its
explorer below its value, and the notebook's own checks (plain run vs magicked run) print True."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.browser.conftest import open_in_lab, wait_for_kernel_idle, write_notebook

SETUP = """%load_ext reactant_lab
import numpy as np
import jax.numpy as jnp
rng = np.random.default_rng()"""
MLP = """def dense(p, h):
    return jnp.tanh(h @ p["w"] + p["b"])

def mlp(params, x):
    for p in params:
        x = dense(p, x)
    return jnp.mean(x ** 2)
"""
DATA = """sizes = [6, 12, 3]
params = [{"w": rng.standard_normal((m, n)).astype(np.float32),
           "b": rng.standard_normal(n).astype(np.float32)} for m, n in zip(sizes, sizes[1:])]
x = rng.standard_normal((10, 6)).astype(np.float32)
""" + MLP + "expected = mlp(params, x)"
STENCIL = """def jacobi(tsteps, A, B):
    for _ in range(tsteps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
"""
STENCIL_DATA = """A0, B0 = rng.random((16, 16)), rng.random((16, 16))
""" + STENCIL + """A_ref, B_ref = A0.copy(), B0.copy()
jacobi(4, A_ref, B_ref)"""
CELLS = [
    SETUP,
    DATA,
    "%%reactant_jit\n" + MLP + "\nloss = mlp(params, x)\nloss",
    'print("MLP same value:", bool(np.allclose(loss, expected, rtol=1e-5, atol=1e-6)))',
    STENCIL_DATA,
    "%%reactant_jit\n" + STENCIL + "\nA, B = A0.copy(), B0.copy()\nids = (id(A), id(B))\n"
    "jacobi(4, A, B)",
    'print("NumPy same arrays:", ids == (id(A), id(B)) and bool(np.allclose(A, A_ref, '
    'rtol=1e-12)) and bool(np.allclose(B, B_ref, rtol=1e-12)))',
]
MLP_CELL, MLP_CHECK, STENCIL_CELL, STENCIL_CHECK = 2, 3, 5, 6


def _run_all(page: Any) -> None:
    """Run > Run All Cells, until the first cell has started (a menu click can be lost while
    JupyterLab is still settling)."""
    prompt = page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputPrompt")
    for _ in range(5):
        page.locator(".jp-Notebook").first.click()
        page.locator('.lm-MenuBar-itemLabel:text-is("Run")').click()
        page.locator('.lm-Menu-itemLabel:text-is("Run All Cells")').click()
        for _ in range(40):
            if any(ch in prompt.inner_text() for ch in "*0123456789"):
                return
            page.wait_for_timeout(250)
    pytest.fail("JupyterLab did not start running the notebook's cells")


def _output(page: Any, cell: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-OutputArea")


@pytest.fixture
def magic_notebook(jupyterlab_server: Any, lab_page: Any) -> Iterator[str]:
    """The notebook, written into the server's root; afterwards its kernel is shut down (its tab
    is closed with the page's documents, see ``open_in_lab``)."""
    name = "magic_acceptance.ipynb"
    write_notebook(Path(jupyterlab_server.root) / name,
                   [nbformat.v4.new_code_cell(source) for source in CELLS])
    try:
        yield name
    finally:
        for session in jupyterlab_server.api("api/sessions"):
            if session.get("path", "").endswith(name):
                _delete(f"{jupyterlab_server.url}/api/sessions/{session['id']}")


def _delete(url: str) -> None:
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=30).close()
    except urllib.error.HTTPError as exc:
        if exc.code != 404:  # nothing saved is fine
            raise


def test_reactant_jit_cells_show_explorers_and_compute_plain_values(
        lab_page: Any, jupyterlab_server: Any, magic_notebook: str, artifacts_dir: Path):
    page = lab_page
    open_in_lab(page, jupyterlab_server, magic_notebook)
    wait_for_kernel_idle(page)
    _run_all(page)
    check = _output(page, STENCIL_CHECK)
    check.get_by_text("NumPy same arrays:").wait_for(timeout=240_000)
    wait_for_kernel_idle(page)

    assert "MLP same value: True" in _output(page, MLP_CHECK).inner_text()
    assert "NumPy same arrays: True" in check.inner_text()
    for cell, function in ((MLP_CELL, "mlp"), (STENCIL_CELL, "jacobi")):
        out = _output(page, cell)
        text = out.inner_text()
        assert "Error" not in text and "Traceback" not in text
        for stage in ("optimize+sroa", "jit lowering"):  # the explorer's stage list
            out.get_by_text(stage).first.wait_for(timeout=60_000)
        assert function in text
    # the live explorer (its controls re-run without re-running the cell), below the value
    _output(page, MLP_CELL).get_by_role("button", name="re-run").wait_for(timeout=60_000)
    value = _output(page, MLP_CELL).locator(".jp-OutputArea-child").first
    # the first output is the cell's value (its "[N]:" prompt), the explorer comes after it
    assert re.match(r"(Out)?\[\d+\]:", value.inner_text().strip()), value.inner_text()
    assert "optimize+sroa" not in value.inner_text()
    _output(page, MLP_CELL).screenshot(path=str(artifacts_dir / "magic-mlp-explorer.png"))
    _output(page, STENCIL_CELL).screenshot(path=str(artifacts_dir / "magic-numpy-explorer.png"))
    assert not page.errors, page.errors
