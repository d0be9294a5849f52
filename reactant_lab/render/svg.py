"""DOT -> SVG with the ``graphviz-pure`` binary (or Graphviz's ``dot``), cleaned for embedding."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys

from reactant_lab.errors import RenderError
from reactant_lab.render.highlight import esc

_PROLOGUE = re.compile(r"<\?xml[^>]*\?>|<!DOCTYPE[^>]*>|<!--.*?-->", re.DOTALL)
_XLINK_NS = re.compile(r'\s+xmlns:xlink="[^"]*"')


def graphviz_binary() -> str | None:
    """Path of the layout program: ``graphviz-pure`` (beside this Python, then on PATH), else
    Graphviz's ``dot``; None when neither is installed."""
    beside = os.path.join(os.path.dirname(sys.executable), "graphviz-pure")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("graphviz-pure") or shutil.which("dot")


def render_svg(dot_source: str, timeout: float = 300.0) -> str:
    """Lay out DOT source and return the SVG text (without XML prologue or comments)."""
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
    return clean_svg(proc.stdout.decode())


def clean_svg(svg: str) -> str:
    """Drop the XML prologue, DOCTYPE (which names an external DTD) and comments, and the xlink
    namespace when unused, so the SVG names no external resource."""
    svg = _PROLOGUE.sub("", svg).strip()
    if "xlink:" not in svg.replace("xmlns:xlink", ""):
        svg = _XLINK_NS.sub("", svg)
    return svg + "\n"


def data_uri(svg: str) -> str:
    """``data:image/svg+xml;base64,...`` for an ``<img src>``."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def img_tag(svg: str, alt: str) -> str:
    """An ``<img>`` showing the SVG (JupyterLab's sanitizer strips inline ``<svg>``)."""
    return f'<img class="graph" alt="{esc(alt)}" src="{data_uri(svg)}">'
