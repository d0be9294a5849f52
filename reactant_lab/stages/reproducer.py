"""Write what reproduces a failing pass: the input module, the pipeline, and a script rerunning it."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

PREFIX = "reactant_lab_repro_"
KEEP_NEWEST = 20
"""At most this many reproducer directories are kept under the reproducer root..."""
KEEP_BYTES = 200 * 2**20
"""...and at most this many bytes in all; older ones are deleted when a new one is written."""

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

    The directory is under ``$REACTANT_LAB_REPRO_DIR`` if set, else the system temp dir; older
    reproducers there beyond KEEP_NEWEST / KEEP_BYTES are deleted. Returns its path, or None if
    nothing could be written (the error is still raised without it).
    """
    return write_files({"input.mlir": ir, "pipeline.txt": pipeline + "\n",
                        "diagnostics.txt": diagnostics + "\n", "rerun.py": _SCRIPT})


def write_files(files: dict[str, str], kind: str = "") -> str | None:
    """``files`` (name -> text) in a fresh reproducer directory (``fresh_directory(kind)``),
    older ones pruned; its path, or None if nothing could be written."""
    try:
        where = fresh_directory(kind)
        for name, text in files.items():
            with open(os.path.join(where, name), "w", encoding="utf-8") as fh:
                fh.write(text)
    except OSError:
        return None
    prune(os.path.dirname(where), keep=where)
    return where


def fresh_directory(kind: str = "") -> str:
    """A new, empty reproducer directory (name ``PREFIX + kind + ...``) under
    ``$REACTANT_LAB_REPRO_DIR`` if set, else the system temp dir. Raises OSError."""
    root = os.environ.get("REACTANT_LAB_REPRO_DIR") or None
    if root:
        os.makedirs(root, exist_ok=True)
    return tempfile.mkdtemp(prefix=PREFIX + kind, dir=root)


def prune(root: str, keep: str) -> None:
    """Delete the oldest reproducer directories under ``root`` (never ``keep``) until at most
    KEEP_NEWEST remain, holding at most KEEP_BYTES."""
    found = []
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            if entry.name.startswith(PREFIX) and entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    found.append((entry.stat().st_mtime, _size(entry.path), entry.path))
    found.sort(reverse=True)
    total = 0
    for count, (_, size, path) in enumerate(found, 1):
        total += size
        if path != keep and (count > KEEP_NEWEST or total > KEEP_BYTES):
            shutil.rmtree(path, ignore_errors=True)


def _size(path: str) -> int:
    with os.scandir(path) as entries:
        return sum(e.stat().st_size for e in entries if e.is_file(follow_symlinks=False))
