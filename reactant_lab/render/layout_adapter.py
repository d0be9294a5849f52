"""The one place render runs another program: the ``graphviz-pure`` binary (or Graphviz's
``dot``) that lays DOT source out as SVG."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from reactant_lab.errors import RenderError


def graphviz_binary() -> str | None:
    """Path of the layout program: ``graphviz-pure`` (beside this Python, then on PATH), else
    Graphviz's ``dot``; None when neither is installed."""
    beside = os.path.join(os.path.dirname(sys.executable), "graphviz-pure")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("graphviz-pure") or shutil.which("dot")


def lay_out(dot_source: str, timeout: float = 300.0) -> str:
    """The layout program's raw SVG for ``dot_source``."""
    exe = graphviz_binary()
    if exe is None:
        raise RenderError("no Graphviz layout program found: pip install graphviz-pure "
                          "(a self-contained binary), or install Graphviz so that 'dot' is on "
                          "PATH; the DOT source is available without either")
    try:
        proc = subprocess.run([exe, "-Tsvg"], input=dot_source.encode(), capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RenderError(f"{os.path.basename(exe)} took over {timeout:.0f} s to lay out the "
                          "graph; draw a summary (lower max_ops) or one result's slice "
                          "(result=PATH)") from None
    if proc.returncode != 0:
        raise RenderError(f"{os.path.basename(exe)} failed (exit {proc.returncode}): "
                          f"{proc.stderr.decode(errors='replace').strip()[:2000]}")
    return proc.stdout.decode()
