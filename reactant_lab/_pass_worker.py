"""The native side of backend.py: run a pass pipeline, or an XLA:CPU compile, on module text in a
reusable worker process (a crash in C++ then kills the worker, not the caller) or, for passes on
request, in the calling process.

This file is the worker's program; _worker_client.py starts it and talks to it. Only backend and
its private modules import this module. Its top level needs the standard library only, so a worker
starts in milliseconds: enzyme-ad's extension is loaded from its file (without importing jax),
jax only when a request needs jaxlib's own PassManager (no enzyme-ad), and for a compile only
jaxlib's XLA client (a third of a second; all of jax when the module has custom calls, whose
targets jax registers with XLA).

Protocol: the parent writes a frame to the worker's stdin, either (mode, module text, pipeline),
answered by (status, text, entry name), or ("compile", module text, serialized CompileOptions,
device count, device ids), answered by (status, message, serialized executable). A frame is a
field count then, per field, a byte length and the bytes (text as UTF-8). Everything the worker
writes to fd 1 or 2 (MLIR's diagnostics, XLA's log, LLVM's last words) goes to a file the parent
reads after each request.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import functools
import importlib
import importlib.machinery
import importlib.util
import os
import signal
import struct
import sys
import tempfile
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

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
        out = module.operation.get_asm(enable_debug_info=True)
        if not isinstance(out, str):  # only binary=True gives bytes
            return Outcome("error", f"MLIR printed the module as {type(out).__name__}, not str")
        return Outcome("ok", out)


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


@dataclass(frozen=True)
class CompileOutcome:
    """What one XLA compile in the worker gave."""

    status: str
    """'ok'; 'failed' (XLA refused the module); 'error' (a Python error in the worker)."""
    message: str
    """XLA's error message when 'failed', a traceback when 'error', else empty."""
    executable: bytes = b""
    """The serialized executable when 'ok' (``deserialize_executable`` loads it)."""
    output: str = ""
    """What the worker wrote to fd 1 / 2 during the compile."""


COMPILE = "compile"
"""The first field of a compile request (a pass request starts with its mode)."""


def compile_native(text: bytes, options: bytes, num_devices: int,
                   device_ids: list[int]) -> CompileOutcome:
    """Compile module text for this machine's CPU with the serialized CompileOptions."""
    from jaxlib import xla_client

    if b"custom_call" in text:
        import jax  # noqa: F401 - registers jax's CPU custom-call targets (LAPACK, ...) with XLA
    client = _cpu_client(num_devices)
    by_id = {d.id: d for d in client.devices()}
    devices = xla_client.DeviceList(tuple(by_id[i] for i in device_ids))
    try:
        executable = client.compile_and_load(
            text, devices, xla_client.CompileOptions.ParseFromString(options))
    except Exception as exc:  # XLA's errors carry no stable type
        return CompileOutcome("failed", str(exc))
    data = executable.serialize()
    del executable
    _give_back_memory()
    return CompileOutcome("ok", "", data)


def _give_back_memory() -> None:
    """Return the compile's freed heap to the system: a large compile leaves hundreds of MB
    that glibc would otherwise keep for the idle worker."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)


@functools.cache
def _cpu_client(num_devices: int) -> Any:
    """jaxlib's CPU client with the caller's device count (device ids must match); Any because
    jaxlib ships no types for its XLA client."""
    from jaxlib import xla_client

    return xla_client.make_cpu_client(num_devices=num_devices)


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
            if not os.path.exists(path):
                continue
            loader = importlib.machinery.ExtensionFileLoader(_ENZYME_CALL, path)
            found = importlib.util.spec_from_file_location(_ENZYME_CALL, path, loader=loader)
            if found is not None:  # always so when a loader is given
                module = importlib.util.module_from_spec(found)
                loader.exec_module(module)
                sys.modules[_ENZYME_CALL] = module
                return module
    return importlib.import_module(_ENZYME_CALL)  # another layout: the slow way


# ---------------------------------------------------------------- frames

_COUNT = struct.Struct("<I")
_LENGTH = struct.Struct("<Q")


def encode_frame(fields: Sequence[str | bytes]) -> bytes:
    """One frame holding ``fields`` (text as UTF-8)."""
    parts = [_COUNT.pack(len(fields))]
    for field in fields:
        data = field.encode("utf-8", "surrogateescape") if isinstance(field, str) else field
        parts += [_LENGTH.pack(len(data)), data]
    return b"".join(parts)


def text_field(data: bytes) -> str:
    """A frame field holding text, as str."""
    return data.decode("utf-8", "surrogateescape")


def decode_frame(buffer: bytes | bytearray) -> list[bytes] | None:
    """The fields (bytes) of the frame at the start of ``buffer``, or None while incomplete."""
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
        fields.append(bytes(buffer[at:at + length]))
        at += length
    return fields


def _read_frame(fd: int) -> list[bytes] | None:
    """Block until a whole frame arrived on ``fd``; None at end of file."""
    buffer = bytearray()
    while (fields := decode_frame(buffer)) is None:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        buffer += chunk
    return fields


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# ---------------------------------------------------------------- the worker process


def _serve(requests: int, answers: int) -> None:
    """Answer requests until the parent closes the pipe."""
    while (fields := _read_frame(requests)) is not None:
        answer = _answer_request(fields)
        sys.stdout.flush()
        sys.stderr.flush()
        write_all(answers, encode_frame(answer))


def _answer_request(fields: list[bytes]) -> list[str | bytes]:
    if text_field(fields[0]) == COMPILE:
        _, source, options, count, ids = fields
        try:
            out = compile_native(source, options, int(count),
                                 [int(i) for i in text_field(ids).split(",")])
        except Exception:  # a bug or a broken installation: report it, stay alive
            out = CompileOutcome("error", traceback.format_exc())
        return [out.status, out.message, out.executable]
    mode, text, pipeline = (text_field(f) for f in fields)
    try:
        result = run_native(mode, text, pipeline)
    except Exception:  # a bug or a broken installation: report it, stay alive
        result = Outcome("error", traceback.format_exc())
    return [result.status, result.text, result.entry]


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


if __name__ == "__main__":
    _main()
