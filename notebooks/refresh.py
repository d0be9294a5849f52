"""Run the example notebooks top to bottom with this Python's kernel and save them with their
outputs: ``python notebooks/refresh.py [NAME.ipynb ...]``.

Each notebook runs in a temporary directory (so nothing it writes lands here), the outputs are
checked to name no file of this machine, and cell timing metadata is left out. tests/
test_notebooks.py runs notebooks the same way, with ``execute``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
NOTEBOOKS = sorted(p.name for p in HERE.glob("[0-9][0-9]_*.ipynb"))
"""The example notebooks, in reading order."""
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
"""What a saved notebook asks for: the standard Python kernel."""
LOCAL_PATH = re.compile(r"(?<![\w.])(/(tmp|home|root|work|usr|opt|var|private|Users)/|"
                        r"[A-Za-z]:\\\\|site-packages|ipykernel_\d+)")
"""What an absolute path of the machine that ran the notebook looks like in its outputs."""


def _kernel(workdir: Path) -> KernelManager:
    """A kernel manager for this very Python (whatever kernels the user has installed)."""
    spec_dir = workdir / ".kernels" / "reactant-lab-python"
    spec_dir.mkdir(parents=True)
    transport = _transport()
    launch = ["-m", "ipykernel_launcher"] if transport == "tcp" else ["-c", _IPC_KERNEL]
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, *launch, "-f", "{connection_file}"],
        "display_name": "reactant_lab", "language": "python"}))
    specs = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)])
    km = KernelManager(kernel_name="reactant-lab-python", kernel_spec_manager=specs,
                       transport=transport)
    if km.transport == "ipc":  # the sockets' paths: in the temporary directory
        km.ip = str(workdir / "kernel-ipc")
    return km


_IPC_KERNEL = """
from ipykernel import iostream, kernelapp
class IOPubThread(iostream.IOPubThread):
    def __init__(self, socket, pipe=False, **kwargs):
        super().__init__(socket, pipe=False, **kwargs)
kernelapp.IOPubThread = IOPubThread
kernelapp.launch_new_instance()
"""
"""ipykernel over Unix sockets only. Its IOPub thread otherwise opens a TCP socket on 127.0.0.1
for forked subprocesses' output, and libzmq aborts the kernel where TCP is refused. Without that
pipe, a forked subprocess's prints go to the kernel's own stdout instead of the notebook."""


def _transport() -> str:
    """How the kernel is reached: 'tcp', or 'ipc' (Unix sockets) where this machine lets no
    process open a TCP socket (a TPU machine of the test lab: "Address family not supported by
    protocol")."""
    try:
        socket.socket().close()
    except OSError:
        return "ipc"
    return "tcp"


def execute(path: Path, timeout: int = 900,
            env: Mapping[str, str] | None = None) -> nbformat.NotebookNode:
    """The notebook at ``path`` run top to bottom in a temporary directory (raises
    ``nbclient.exceptions.CellExecutionError`` when a cell fails), its kernel in ``env`` (this
    process's environment when None)."""
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="reactant-lab-nb-") as tmp:
        workdir = Path(tmp)
        kernel_env = {**(os.environ if env is None else env),
                      "REACTANT_LAB_REPRO_DIR": str(workdir / "repro")}
        km = _kernel(workdir)
        try:
            # Widget state is not saved: once the kernel is gone the extension shows the
            # explorer from the payload saved beside the widget's view.
            NotebookClient(nb, km=km, timeout=timeout, record_timing=False,
                           store_widget_state=False,
                           resources={"metadata": {"path": str(workdir)}}).execute(env=kernel_env)
        finally:
            if km.has_kernel:
                km.shutdown_kernel(now=True)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    return nb


def local_paths(nb: nbformat.NotebookNode) -> list[str]:
    """Pieces of the notebook's outputs that look like absolute paths of this machine."""
    text = json.dumps([cell.get("outputs", []) for cell in nb.cells])
    return sorted({text[max(m.start() - 40, 0):m.end() + 40] for m in LOCAL_PATH.finditer(text)})


def main(names: list[str]) -> int:
    for name in names or NOTEBOOKS:
        path = HERE / name
        nb = execute(path)
        found = local_paths(nb)
        if found:
            print(f"{name}: outputs name local paths, not saved:\n  " + "\n  ".join(found))
            return 1
        tmp = path.with_suffix(".tmp")
        nbformat.write(nb, tmp)
        shutil.move(tmp, path)
        print(f"{name}: {path.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
