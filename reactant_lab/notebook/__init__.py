"""Jupyter: the ``%%reactant_jit``, ``%reactant_jit``, ``%%reactant_mlir``, ``%reactant_bench`` and
``%reactant_bisect`` magics (``%load_ext reactant_lab``) and the explorer's display bundle."""

from __future__ import annotations

import os
import sys
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
    align_arrays(ipython)


def align_arrays(ipython: Any) -> None:
    """NumPy arrays the notebook creates from now on get 64-byte-aligned data
    (``rl.use_aligned_arrays``), so compiled calls read large inputs in place instead of copying
    them; kept on before each cell. Without a C compiler to build the allocator, a note on stderr
    says so and nothing else changes. ``rl.use_aligned_arrays(False)`` turns it off, and the
    environment variable ``REACTANT_LAB_ALIGNED_ARRAYS=0`` keeps it off."""
    from reactant_lab import host_memory

    if os.environ.get("REACTANT_LAB_ALIGNED_ARRAYS", "1") == "0":
        return
    try:
        host_memory.use_aligned_arrays()
    except host_memory.AlignedArraysUnavailable as exc:
        print(f"reactant_lab: NumPy arrays keep NumPy's allocator ({exc})", file=sys.stderr)
        return
    if _reapply not in ipython.events.callbacks["pre_run_cell"]:
        ipython.events.register("pre_run_cell", _reapply)


def _reapply(info: Any = None) -> None:
    from reactant_lab import host_memory

    host_memory.reapply()


def last_explorations() -> list[Exploration]:
    """The explorations the most recent magic showed (one per distinct call signature)."""
    from reactant_lab.notebook.magics import last_explorations as last

    return last()


def explorer_bundle(exploration: Exploration, **kwargs: Any) -> dict[str, Any]:
    """The explorer's display bundle of an Exploration (see ``display.explorer_bundle``)."""
    from reactant_lab.notebook.display import explorer_bundle as bundle

    return bundle(exploration, **kwargs)
