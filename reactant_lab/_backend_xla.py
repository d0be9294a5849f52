"""XLA's own pipeline for backend: its dump options on one compile, the module after each HLO pass
read back, the dump removed.

XLA dumps through DebugOptions, which a compile's options carry (``env_option_overrides``, JAX's
``compiler_options``): nothing global is set, so no other compile dumps, and the directory (a
fresh one per compile: XLA numbers modules per process) is removed once read. The dump works
wherever the compile runs, here or in the compile worker (the options travel with it).

With ``xla_dump_hlo_pass_re`` matching every pass but not literally ``.*`` (which XLA reads as
"only passes that changed the module"), XLA prints the module after every pass of every pass
pipeline, so the whole list of passes that ran is known; a large module dumps only after the
passes that changed it. Each file's modification time says when XLA wrote it: the time between
two files is the time of the passes between them (and of XLA printing the module). On the CPU,
XLA also writes each kernel's LLVM IR.

Only backend and its private modules import this module.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

DIR_PREFIX = "reactant_lab_xla_"
"""Prefix of the temporary dump directories (each removed after its compile)."""
EVERY_PASS = ".+"
"""The pass regex that dumps after every pass (not ``.*``: see the module docstring)."""
CHANGED_PASSES = ".*"
"""The pass regex that dumps after the passes that changed the module only."""
EVERY_PASS_BYTES = 1 << 20
"""A module text of at least this many bytes dumps after changed passes only: XLA prints the
module after each of its ~150-200 passes, and that many copies of a large module cost more than
the compile."""

_IMPORTED = ".before_optimizations.txt"
_PASS_FILE = re.compile(r"\.(\d{4})\.([^.]+)\.after_(.+?)(?:\.before_(.+))?\.txt$")
_KERNEL = re.compile(r"^(?:__compute_module_)?(.+?)(?:_kernel_module)?\.ir-with-opt\.ll$")
_OBJECT = re.compile(r"^obj-file\.(?:__compute_module_)?(.+?)(?:_kernel_module)?\.o$")


@dataclass(frozen=True)
class DumpedPass:
    """The module XLA printed after one pass (or at the start of a pass pipeline)."""

    seq: int
    """XLA's running number of the dump."""
    pipeline: str
    """The pass pipeline it ran in."""
    after: str
    """The pass it followed; ``pipeline-start`` at the start of a pipeline."""
    before: str
    """The pass that runs next; ``pipeline-end`` at the end, '' when XLA does not say."""
    text: str = field(repr=False)
    """The HLO module text."""
    at_ns: int
    """When XLA wrote it (wall clock, ns)."""


@dataclass(frozen=True)
class XlaDump:
    """What XLA dumped for one compile."""

    every_pass: bool
    """Whether XLA printed the module after every pass (else after changed passes only)."""
    start_ns: int
    """When the compile was handed to XLA (wall clock, ns)."""
    end_ns: int
    """When it returned."""
    imported: str = field(repr=False)
    """The HLO module XLA began with (converted from StableHLO), '' when not dumped."""
    imported_ns: int
    """When it was written."""
    passes: tuple[DumpedPass, ...] = field(repr=False)
    """Every dump of a pass or a pipeline start, in order."""
    optimized_ns: int | None
    """When the optimized module was written (the end of XLA's HLO passes)."""
    kernels: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """(kernel name, its optimized LLVM IR) per kernel XLA:CPU emitted, in the order written;
    the name is that of the fusion or instruction it computes."""
    objects: tuple[tuple[str, bytes], ...] = field(default=(), repr=False)
    """(kernel name, the object code XLA:CPU compiled it to) per kernel."""


def options(directory: str, every_pass: bool) -> dict[str, str | bool]:
    """The DebugOptions (as compile option overrides) that dump this compile to ``directory``."""
    return {"xla_dump_to": directory,
            "xla_dump_hlo_pass_re": EVERY_PASS if every_pass else CHANGED_PASSES,
            "xla_dump_hlo_as_text": True}


class Capture:
    """One compile's dump: ``options`` to compile with, then ``read()`` (once)."""

    def __init__(self, directory: str, every_pass: bool):
        self.directory = directory
        self.every_pass = every_pass
        self.options = options(directory, every_pass)
        self.start_ns = time.time_ns()

    def read(self) -> XlaDump | None:
        """The dump of the compile that just ended, or None when XLA wrote none (an executable
        JAX took from its persistent compilation cache)."""
        return read_dump(self.directory, self.every_pass, self.start_ns, time.time_ns())


@contextlib.contextmanager
def capture(enabled: bool, module_bytes: int) -> Iterator[Capture | None]:
    """A Capture in a fresh temporary directory (None when not ``enabled``); the directory is
    removed on the way out, whatever happened."""
    if not enabled:
        yield None
        return
    directory = tempfile.mkdtemp(prefix=DIR_PREFIX)
    try:
        yield Capture(directory, module_bytes < EVERY_PASS_BYTES)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def read_dump(directory: str, every_pass: bool, start_ns: int, end_ns: int) -> XlaDump | None:
    """The dump in ``directory`` (of the last module XLA wrote there, should a retried compile
    have written two), or None when there is none."""
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    stamps = {n: os.stat(os.path.join(directory, n)).st_mtime_ns for n in names}
    starts = {n.removesuffix(_IMPORTED): stamps[n] for n in names if n.endswith(_IMPORTED)}
    if not starts:
        return None
    prefix = max(starts, key=lambda p: starts[p]) + "."  # module_0000.<module name>.
    passes, optimized_ns = [], None
    kernels: list[tuple[int, str, str]] = []
    objects: list[tuple[int, str, bytes]] = []
    for name in names:
        if not name.startswith(prefix):
            continue
        path, at = os.path.join(directory, name), stamps[name]
        p = _PASS_FILE.match(name, len(prefix) - 1)
        if p is not None:
            passes.append(DumpedPass(int(p.group(1)), p.group(2), p.group(3), p.group(4) or "",
                                     _read(path), at))
        elif name.endswith("after_optimizations.txt"):
            optimized_ns = at
        elif (k := _KERNEL.match(name[len(prefix):])):
            kernels.append((at, k.group(1), _read(path)))
        elif (o := _OBJECT.match(name[len(prefix):])):
            with open(path, "rb") as fh:
                objects.append((at, o.group(1), fh.read()))
    imported_ns = starts[prefix[:-1]]
    imported = _read(os.path.join(directory, prefix[:-1] + _IMPORTED))
    passes.sort(key=lambda d: d.seq)
    return XlaDump(every_pass=every_pass, start_ns=start_ns, end_ns=end_ns, imported=imported,
                   imported_ns=imported_ns, passes=tuple(passes), optimized_ns=optimized_ns,
                   kernels=tuple((name, text) for _, name, text in sorted(kernels)),
                   objects=tuple((name, data) for _, name, data in sorted(objects)))


_ALIAS = re.compile(r"^(#loc[\w$.-]*) = loc\((.*)\)$", re.M)
_REF = re.compile(r"#loc[\w$.-]*")
_NAMED = re.compile(r'^("(?:[^"\\]|\\.)*")(?:\((#loc[\w$.-]*)\))?$')
_CALL = re.compile(r"^callsite\((#loc[\w$.-]*) at (#loc[\w$.-]*)\)$")


def named_call_sites(text: str) -> str:
    """Module text in which each op location of the form ``callsite("op"(A) at B)`` (what
    inlining a call leaves) reads ``"op"(callsite(A at B))``: the same places, in the form XLA
    turns into an instruction's stack frames (at a bare call site it keeps the callee's name and
    no source line). The op's name stays what it was, and so does everything XLA compiles.
    Locations that other locations are built from are left alone: there a call site is already
    a chain of frames under an op's name (JAX's own form)."""
    if "callsite(" not in text:
        return text
    aliases = dict(_ALIAS.findall(text))
    nested = {ref for body in aliases.values() for ref in _REF.findall(body)}

    def rewrite(m: re.Match[str]) -> str:
        call = _CALL.match(m.group(2)) if m.group(1) not in nested else None
        named = _NAMED.match(aliases.get(call.group(1), "")) if call else None
        if call is None or named is None:
            return m.group(0)
        child = named.group(2)
        inner = f"callsite({child} at {call.group(2)})" if child else call.group(2)
        return f"{m.group(1)} = loc({named.group(1)}({inner}))"

    return _ALIAS.sub(rewrite, text)
