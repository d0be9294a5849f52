"""The native side of backend.py: run a pass pipeline on module text, in a reusable worker process
(a crash in C++ then kills the worker, not the caller) or, on request, in the calling process.

Only backend.py imports this module. Its top level needs the standard library only, so a worker
starts in milliseconds: enzyme-ad's extension is loaded from its file (without importing jax),
and jax only when a request needs jaxlib's own PassManager (no enzyme-ad).

Protocol: the parent writes a frame (mode, module text, pipeline) to the worker's stdin; the
worker answers a frame (status, text, entry name) on its original stdout. A frame is a field
count then, per field, a byte length and the UTF-8 bytes. Everything the worker writes to fd 1
or 2 (MLIR's diagnostics, LLVM's last words) goes to a file the parent reads after each request.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import functools
import importlib.machinery
import importlib.util
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import IO

# ---------------------------------------------------------------- what runs natively


@dataclass(frozen=True)
class Outcome:
    """What one native pipeline run gave."""

    status: str
    """'ok'; 'bad-pipeline' (it does not parse); 'bad-module' (the module text does not parse);
    'failed' (a pass failed); 'error' (a Python error in the worker)."""
    text: str
    """The new module text when 'ok', else the bindings' message (a traceback for 'error')."""
    entry: str = "main"
    """The entry function's name in ``text`` (enzyme-ad renames @main)."""
    diagnostics: str = ""
    """What MLIR wrote to fd 2 during the run."""


def run_native(mode: str, text: str, pipeline: str) -> Outcome:
    """Run ``pipeline`` on ``text`` with enzyme-ad (``mode='enzyme'``) or jaxlib's PassManager."""
    return _run_enzyme(text, pipeline) if mode == "enzyme" else _run_upstream(text, pipeline)


def _run_enzyme(text: str, pipeline: str) -> Outcome:
    try:
        name, out = enzyme_call().run_pass_pipeline(["main"], text, pipeline)
    except ValueError as exc:  # enzyme-ad reports every failure as ValueError
        message = str(exc).strip()
        if "Failed to parse module" in message:
            return Outcome("bad-module", message)
        if "Failed to parse pipeline" in message and "Pipeline failed" not in message:
            return Outcome("bad-pipeline", message)
        return Outcome("failed", message)
    return Outcome("ok", out, name)


def _run_upstream(text: str, pipeline: str) -> Outcome:
    from jax.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir, passmanager

    with jax_mlir.make_ir_context() as ctx:
        ctx.allow_unregistered_dialects = True
        try:
            pm = passmanager.PassManager.parse(f"builtin.module({pipeline})")
        except (ValueError, ir.MLIRError) as exc:
            return Outcome("bad-pipeline", str(exc))
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as exc:
            return Outcome("bad-module", str(exc))
        try:
            pm.run(module.operation)
        except ir.MLIRError as exc:
            return Outcome("failed", str(exc))
        return Outcome("ok", module.operation.get_asm(enable_debug_info=True))


def run_in_process(mode: str, text: str, pipeline: str) -> Outcome:
    """``run_native`` in this process, with what C++ writes to fd 2 as the diagnostics.

    fd 2 goes to a file that outlives a crash (named on stderr the first time), and faulthandler
    writes a crash's Python traceback to the real stderr: a fatal error is never swallowed.
    """
    path = _in_process_log()
    with open(path, "w+b") as log:
        saved = os.dup(2)
        ours = not faulthandler.is_enabled()
        if ours:
            faulthandler.enable(file=saved)
        os.dup2(log.fileno(), 2)
        try:
            out = run_native(mode, text, pipeline)
        finally:
            os.dup2(saved, 2)
            if ours:
                faulthandler.disable()
            os.close(saved)
        log.seek(0)
        return replace(out, diagnostics=log.read().decode("utf-8", "replace"))


@functools.cache
def _in_process_log() -> str:
    path = os.path.join(tempfile.gettempdir(), f"reactant_lab_inprocess_{os.getpid()}.log")
    print(f"reactant_lab: passes run in this process (REACTANT_LAB_INPROCESS_PASSES is set), so "
          f"a crash in C++ ends it; MLIR's output of the pass running then is in {path}",
          file=sys.stderr)
    atexit.register(_remove, path)
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


_ENZYME_CALL = "enzyme_ad.jax.enzyme_call"


def enzyme_call() -> ModuleType:
    """enzyme-ad's pass-running extension; loaded from its file when not imported yet, because
    importing ``enzyme_ad.jax`` imports jax (a second or more)."""
    if _ENZYME_CALL in sys.modules:
        return sys.modules[_ENZYME_CALL]
    spec = importlib.util.find_spec("enzyme_ad")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "jax", "enzyme_call" + suffix)
            if os.path.exists(path):
                loader = importlib.machinery.ExtensionFileLoader(_ENZYME_CALL, path)
                module = importlib.util.module_from_spec(
                    importlib.util.spec_from_file_location(_ENZYME_CALL, path, loader=loader))
                loader.exec_module(module)
                sys.modules[_ENZYME_CALL] = module
                return module
    from enzyme_ad.jax import enzyme_call as module  # another layout: the slow way

    return module


# ---------------------------------------------------------------- frames

_COUNT = struct.Struct("<I")
_LENGTH = struct.Struct("<Q")


def encode_frame(fields: list[str]) -> bytes:
    """One frame holding ``fields``."""
    parts = [_COUNT.pack(len(fields))]
    for field in fields:
        data = field.encode("utf-8", "surrogateescape")
        parts += [_LENGTH.pack(len(data)), data]
    return b"".join(parts)


def decode_frame(buffer: bytes | bytearray) -> list[str] | None:
    """The fields of the frame at the start of ``buffer``, or None while it is incomplete."""
    if len(buffer) < _COUNT.size:
        return None
    (count,), at, fields = _COUNT.unpack_from(buffer), _COUNT.size, []
    for _ in range(count):
        if len(buffer) < at + _LENGTH.size:
            return None
        (length,) = _LENGTH.unpack_from(buffer, at)
        at += _LENGTH.size
        if len(buffer) < at + length:
            return None
        fields.append(bytes(buffer[at:at + length]).decode("utf-8", "surrogateescape"))
        at += length
    return fields


def _read_frame(fd: int) -> list[str] | None:
    """Block until a whole frame arrived on ``fd``; None at end of file."""
    buffer = bytearray()
    while (fields := decode_frame(buffer)) is None:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        buffer += chunk
    return fields


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# ---------------------------------------------------------------- the worker process


def _serve(requests: int, answers: int) -> None:
    """Answer requests until the parent closes the pipe."""
    while (fields := _read_frame(requests)) is not None:
        mode, text, pipeline = fields
        try:
            out = run_native(mode, text, pipeline)
        except Exception:  # a bug or a broken installation: report it, stay alive
            out = Outcome("error", traceback.format_exc())
        sys.stderr.flush()
        _write_all(answers, encode_frame([out.status, out.text, out.entry]))


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this process when the parent dies (it may be busy in a long pass)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(0)


def _main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _die_with_parent(int(sys.argv[1]))
    answers = os.dup(1)
    os.dup2(2, 1)  # stray prints of C++ code must not corrupt the answers
    _serve(0, answers)


# ---------------------------------------------------------------- the parent's side


class WorkerCrashed(Exception):
    """The worker died while running a request."""

    def __init__(self, returncode: int, output: str):
        self.returncode = returncode
        self.signal = signal_name(returncode)
        self.output = output
        super().__init__(f"the pass worker died ({self.signal})")


def signal_name(returncode: int) -> str:
    """'SIGSEGV' for -11; 'exit status 3' for 3."""
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return signal.Signals(-returncode).name
        return f"signal {-returncode}"
    return f"exit status {returncode}"


_OUTPUT_CAP = 1 << 20


class PassWorker:
    """A worker process started on first use, reused across calls, restarted after a crash or
    an interruption, and killed when this process exits."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._output: IO[bytes] | None = None
        self._owner = 0
        self._lock = threading.Lock()
        atexit.register(self.close)

    def run(self, mode: str, text: str, pipeline: str, *,
            on_wait: Callable[[float], None] | None = None, poll: float = 0.5) -> Outcome:
        """Run one pipeline in the worker. ``on_wait(seconds)`` is called about every ``poll``
        seconds while it runs. Raises WorkerCrashed if the worker dies; any exception (Ctrl-C
        included) while waiting stops the worker, and the next call starts a new one."""
        request = encode_frame([mode, text, pipeline])
        with self._lock:
            proc = self._ready()
            for attempt in (0, 1):
                try:
                    _write_all(proc.stdin.fileno(), request)
                except BrokenPipeError:
                    if attempt:  # it dies on start: _answer reports how
                        break
                    self._stop()  # it died while idle: start another
                    proc = self._ready()
                    continue
                except BaseException:  # half a request was sent
                    self._stop()
                    raise
                break
            return self._answer(proc, on_wait, poll)

    def _answer(self, proc: subprocess.Popen, on_wait: Callable[[float], None] | None,
                poll: float) -> Outcome:
        try:
            fields = _await_frame(proc.stdout.fileno(), on_wait, poll)
        except BaseException:
            self._stop()
            raise
        output = self._take_output()
        if fields is None:
            returncode = proc.wait()
            self._stop()
            raise WorkerCrashed(returncode, output)
        status, text, entry = fields
        return Outcome(status, text, entry, output)

    def _ready(self) -> subprocess.Popen:
        if self._owner != os.getpid():  # a forked child must not share its parent's worker
            self._proc, self._output = None, None
        if self._proc is not None and self._proc.poll() is not None:
            self._stop()
        if self._proc is None:
            self._start()
        return self._proc

    def _start(self) -> None:
        import fcntl  # POSIX only; backend runs passes in-process elsewhere

        # The file lives as long as the worker (closed in _stop), not a with-block.
        self._output = tempfile.TemporaryFile(prefix="reactant_lab_passes_")  # noqa: SIM115
        fd = self._output.fileno()
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        # -P: the script's folder (the package) must not shadow top-level modules on sys.path.
        self._proc = subprocess.Popen(
            [sys.executable, "-P", os.path.abspath(__file__), str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._output,
            start_new_session=True)
        self._owner = os.getpid()

    def _take_output(self) -> str:
        """What the worker wrote since the last call (its last megabyte), emptying the file."""
        if self._output is None:
            return ""
        fd = self._output.fileno()
        size = os.fstat(fd).st_size
        data = os.pread(fd, _OUTPUT_CAP, max(0, size - _OUTPUT_CAP))
        os.ftruncate(fd, 0)
        return data.decode("utf-8", "replace")

    def _stop(self) -> None:
        proc, output = self._proc, self._output
        self._proc, self._output = None, None
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    pipe.close()
        if output is not None:
            output.close()

    @property
    def pid(self) -> int | None:
        """The worker's process id, or None when none is running."""
        return self._proc.pid if self._proc is not None and self._owner == os.getpid() else None

    def close(self) -> None:
        """Stop the worker (if this process started it)."""
        if self._owner == os.getpid():
            self._stop()


def _await_frame(fd: int, on_wait: Callable[[float], None] | None,
                 poll: float) -> list[str] | None:
    """Read one frame from ``fd``, calling ``on_wait`` while nothing arrives; None at EOF."""
    buffer, start = bytearray(), time.monotonic()
    poller = select.poll()  # not select.select: it fails on descriptors above 1023
    poller.register(fd, select.POLLIN)
    while True:
        if not poller.poll(poll * 1000):
            if on_wait is not None:
                on_wait(time.monotonic() - start)
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        buffer += chunk
        if (fields := decode_frame(buffer)) is not None:
            return fields


if __name__ == "__main__":
    _main()
