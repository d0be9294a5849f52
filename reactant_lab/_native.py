"""reactant_lab's few C helpers: each a plain C file of this package (no Python or NumPy
headers), built once with the system C compiler into a per-user cache and loaded with
``ctypes``.

- ``_aligned_alloc.c``: the aligned NumPy allocator and the large write-backs of
  ``host_memory``;
- ``_handoff.c``: the spin-wait that hands a guarded call to its runner thread and back
  (``_backend_run``).

Without a C compiler, or where a library does not build or load, :func:`library` raises
:class:`NativeUnavailable` with the reason and what to do; each user goes on without that helper.
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

BUILD_SECONDS = 120
"""How long one build may take."""


class NativeUnavailable(Exception):
    """A helper library cannot be built or loaded here; the message says why and what to do."""


def library(source: str, what: str, without: str) -> ctypes.CDLL:
    """The library built from ``source`` (a C file of this package), loaded. ``what`` names it
    in errors ("reactant_lab's aligned NumPy allocator") and ``without`` says how things go on
    without it ("without it, compiled calls copy ..."). Built on first use, then reused from the cache
    (``REACTANT_LAB_CACHE``, else the user's cache); where the cache cannot be written, into a
    private temporary folder for this process. Raises NativeUnavailable."""
    path = Path(__file__).with_name(source)
    text = path.read_bytes()
    key = hashlib.sha256(text + sysconfig.get_platform().encode()).hexdigest()[:16]
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    target = cache_dir() / f"{path.stem.lstrip('_')}-{key}{suffix}"
    if not target.exists():
        target = _build_into(path, target, what, without)
    try:
        return ctypes.CDLL(str(target))
    except OSError as exc:  # a cached library that does not load (another platform)
        raise NativeUnavailable(f"loading {what} failed: {exc}") from exc


def cache_dir() -> Path:
    """Where built libraries are kept: ``REACTANT_LAB_CACHE``, else the user's cache."""
    if os.environ.get("REACTANT_LAB_CACHE"):
        return Path(os.environ["REACTANT_LAB_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "reactant_lab"


def compiler() -> list[str] | None:
    """The C compiler: Python's configured CC, else cc, gcc or clang; None when none is found."""
    configured = sysconfig.get_config_var("CC")
    if configured:
        words = shlex.split(str(configured))
        if words and shutil.which(words[0]):
            return words
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return [name]
    return None


def _build_into(source: Path, target: Path, what: str, without: str) -> Path:
    """Build ``source`` into ``target``, else into a private temporary folder; return where."""
    found = compiler()
    if found is None:
        raise NativeUnavailable(
            f"{what} is built with a C compiler, and none was found (cc, gcc, clang, or "
            f"Python's configured CC). Install one (e.g. Debian's gcc), or go on: {without}.")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _build(found, source, target, what)
    except OSError:  # a read-only cache: a folder only this user can write, for this process
        folder = tempfile.mkdtemp(prefix="reactant_lab-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)  # loaded until then
        target = Path(folder) / target.name
        try:
            _build(found, source, target, what)
        except OSError as exc:
            raise NativeUnavailable(
                f"building {what} failed: {exc}. Set REACTANT_LAB_CACHE to a writable "
                f"directory, or go on: {without}.") from exc
    return target


def _build(found: list[str], source: Path, target: Path, what: str) -> None:
    """Compile ``source`` into ``target``, atomically (a concurrent build of the same library
    finds one or the other)."""
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        built = Path(tmp) / target.name
        flags = ["-dynamiclib"] if sys.platform == "darwin" else ["-shared", "-fPIC"]
        try:
            done = subprocess.run([*found, "-O2", *flags, "-o", str(built), str(source)],
                                  capture_output=True, text=True, timeout=BUILD_SECONDS,
                                  check=False)
        except subprocess.TimeoutExpired as exc:
            raise NativeUnavailable(
                f"building {what} with {found[0]} took over {BUILD_SECONDS} s") from exc
        if done.returncode != 0:
            raise NativeUnavailable(
                f"building {what} with {found[0]} failed (exit {done.returncode}): "
                f"{done.stderr.strip()[-2000:]}")
        os.replace(built, target)
