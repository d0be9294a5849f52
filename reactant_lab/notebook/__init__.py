"""Jupyter: the ``%%reactant_jit``, ``%reactant_jit``, ``%%reactant_mlir``, ``%reactant_bench`` and
``%reactant_bisect`` magics (``%load_ext reactant_lab``) and the explorer's display bundle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reactant_lab.explore import Exploration

__all__ = ["explorer_bundle", "last_explorations", "load_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext reactant_lab``: register the magics and the HTML views of results."""
    from reactant_lab.notebook.formatters import register
    from reactant_lab.notebook.magics import ReactantMagics

    ipython.register_magics(ReactantMagics)
    register(ipython)


def last_explorations() -> list[Exploration]:
    """The explorations the most recent magic showed (one per distinct call signature)."""
    from reactant_lab.notebook.magics import last_explorations as last

    return last()


def explorer_bundle(exploration: Exploration, **kwargs: Any) -> dict[str, Any]:
    """The explorer's display bundle of an Exploration (see ``display.explorer_bundle``)."""
    from reactant_lab.notebook.display import explorer_bundle as bundle

    return bundle(exploration, **kwargs)
