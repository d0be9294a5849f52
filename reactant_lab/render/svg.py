"""DOT -> SVG with the ``graphviz-pure`` binary (or Graphviz's ``dot``), cleaned for embedding."""

from __future__ import annotations

import base64
import re

from reactant_lab.render.highlight import esc
from reactant_lab.render.layout_adapter import lay_out

_PROLOGUE = re.compile(r"<\?xml[^>]*\?>|<!DOCTYPE[^>]*>|<!--.*?-->", re.DOTALL)
_XLINK_NS = re.compile(r'\s+xmlns:xlink="[^"]*"')


def render_svg(dot_source: str, timeout: float = 300.0) -> str:
    """Lay out DOT source and return the SVG text (without XML prologue or comments)."""
    return clean_svg(lay_out(dot_source, timeout))


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
