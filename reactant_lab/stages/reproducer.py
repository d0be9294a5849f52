"""Write what reproduces a failing pass: the input module, the pipeline, and a script rerunning it."""

from __future__ import annotations

import os
import tempfile

_SCRIPT = '''"""Rerun the pass that failed in reactant_lab: python rerun.py"""

import pathlib

import reactant_lab

here = pathlib.Path(__file__).resolve().parent
module = (here / "input.mlir").read_text()
pipeline = (here / "pipeline.txt").read_text().strip()
print(reactant_lab.run_pipeline(module, pipeline))
'''


def write_reproducer(ir: str, pipeline: str, diagnostics: str) -> str | None:
    """Write input.mlir, pipeline.txt, diagnostics.txt and rerun.py to a fresh directory.

    The directory is under ``$REACTANT_LAB_REPRO_DIR`` if set, else the system temp dir. Returns
    its path, or None if nothing could be written (the error is still raised without it).
    """
    root = os.environ.get("REACTANT_LAB_REPRO_DIR") or None
    try:
        if root:
            os.makedirs(root, exist_ok=True)
        where = tempfile.mkdtemp(prefix="reactant_lab_repro_", dir=root)
        files = {"input.mlir": ir, "pipeline.txt": pipeline + "\n",
                 "diagnostics.txt": diagnostics + "\n", "rerun.py": _SCRIPT}
        for name, text in files.items():
            with open(os.path.join(where, name), "w", encoding="utf-8") as fh:
                fh.write(text)
    except OSError:
        return None
    return where
