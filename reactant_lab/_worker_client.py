"""The parent's side of the worker process (_pass_worker.py): start it, ask it, restart it.

A worker starts on first use; each request's answer comes with what the worker printed; a crash
becomes WorkerCrashed, and the next request starts a new worker.

Only backend and its private modules import this module.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO

from reactant_lab import _pass_worker
from reactant_lab._pass_worker import (
    COMPILE,
    CompileOutcome,
    Outcome,
    decode_frame,
    encode_frame,
    text_field,
    write_all,
)


class WorkerCrashed(Exception):
    """The worker died while running a request."""

    def __init__(self, returncode: int, output: str, name: str = "pass worker"):
        self.returncode = returncode
        self.signal = signal_name(returncode)
        self.output = output
        super().__init__(f"the {name} died ({self.signal})")


class WorkerTimedOut(Exception):
    """A request ran past its time limit; the worker running it was stopped."""

    def __init__(self, seconds: float, limit: float, output: str, name: str = "pass worker"):
        self.seconds = seconds
        self.limit = limit
        self.output = output
        super().__init__(f"the {name} ran for {seconds:.0f} s, past its limit of {limit:g} s, "
                         "and was stopped")


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

    def __init__(self, name: str = "pass worker", env: dict[str, str] | None = None):
        self.name = name
        """What the worker is called in messages ('pass worker', 'compile worker')."""
        self.env = dict(env or {})
        """Environment variables set for the worker on top of this process's."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._output: IO[bytes] | None = None
        self._owner = 0
        self._lock = threading.Lock()
        atexit.register(self.close)

    def run(self, mode: str, text: str, pipeline: str, *,
            on_wait: Callable[[float], None] | None = None, poll: float = 0.5,
            timeout: float | None = None) -> Outcome:
        """Run one pipeline in the worker. ``on_wait(seconds)`` is called about every ``poll``
        seconds while it runs. Raises WorkerCrashed if the worker dies, WorkerTimedOut when it
        runs past ``timeout`` seconds (None: no limit); any exception (Ctrl-C included) while
        waiting stops the worker, and the next call starts a new one."""
        (status, out, entry), output = self._exchange([mode, text, pipeline], on_wait, poll,
                                                      timeout)
        return Outcome(text_field(status), text_field(out), text_field(entry), output)

    def compile(self, text: str | bytes, options: bytes, device_ids: Sequence[int],
                num_devices: int, *, on_wait: Callable[[float], None] | None = None,
                poll: float = 0.5) -> CompileOutcome:
        """Compile module text with XLA:CPU in the worker (as ``run`` does a pipeline);
        ``options`` is a serialized CompileOptions, ``device_ids`` the executable's devices."""
        request = [COMPILE, text, options, str(num_devices), ",".join(map(str, device_ids))]
        (status, message, executable), output = self._exchange(request, on_wait, poll, None)
        return CompileOutcome(text_field(status), text_field(message), executable, output)

    def _exchange(self, fields: Sequence[str | bytes], on_wait: Callable[[float], None] | None,
                  poll: float, timeout: float | None) -> tuple[list[bytes], str]:
        """Send one request; return the answer's fields and what the worker printed."""
        request = encode_frame(fields)
        with self._lock:
            proc = self._ready()
            for attempt in (0, 1):
                try:
                    write_all(_fd(proc.stdin), request)
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
            return self._answer(proc, on_wait, poll, timeout)

    def _answer(self, proc: subprocess.Popen[bytes], on_wait: Callable[[float], None] | None,
                poll: float, timeout: float | None) -> tuple[list[bytes], str]:
        try:
            fields = _await_frame(_fd(proc.stdout), on_wait, poll, timeout)
        except _Late as late:
            self._stop_keeping_output()  # then read all it wrote, then close the file
            output = self._take_output()
            self._stop()
            raise WorkerTimedOut(late.seconds, late.limit, output, self.name) from None
        except BaseException:
            self._stop()
            raise
        output = self._take_output()
        if fields is None:
            returncode = proc.wait()
            self._stop()
            raise WorkerCrashed(returncode, output, self.name)
        return fields, output

    def _ready(self) -> subprocess.Popen[bytes]:
        if self._owner != os.getpid():  # a forked child must not share its parent's worker
            self._proc, self._output = None, None
        if self._proc is not None and self._proc.poll() is not None:
            self._stop()
        if self._proc is None:
            self._proc = self._start()
        return self._proc

    def _start(self) -> subprocess.Popen[bytes]:
        import fcntl  # POSIX only; backend runs passes in-process elsewhere

        # The file lives as long as the worker (closed in _stop), not a with-block.
        self._output = tempfile.TemporaryFile(prefix="reactant_lab_passes_")  # noqa: SIM115
        fd = self._output.fileno()
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        # -P: the script's folder (the package) must not shadow top-level modules on sys.path.
        proc = subprocess.Popen(
            [sys.executable, "-P", os.path.abspath(_pass_worker.__file__), str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._output,
            start_new_session=True, env={**os.environ, **self.env})
        self._owner = os.getpid()
        return proc

    def _take_output(self) -> str:
        """What the worker wrote since the last call (its last megabyte), emptying the file."""
        if self._output is None:
            return ""
        fd = self._output.fileno()
        size = os.fstat(fd).st_size
        data = os.pread(fd, _OUTPUT_CAP, max(0, size - _OUTPUT_CAP))
        os.ftruncate(fd, 0)
        return data.decode("utf-8", "replace")

    def _stop_keeping_output(self) -> None:
        """Kill the worker but keep its output file until it is read (then closed)."""
        proc, self._proc = self._proc, None
        self._kill(proc)

    def _stop(self) -> None:
        proc, output = self._proc, self._output
        self._proc, self._output = None, None
        self._kill(proc)
        if output is not None:
            output.close()

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes] | None) -> None:
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()

    @property
    def pid(self) -> int | None:
        """The worker's process id, or None when none is running."""
        return self._proc.pid if self._proc is not None and self._owner == os.getpid() else None

    def close(self) -> None:
        """Stop the worker (if this process started it)."""
        if self._owner == os.getpid():
            self._stop()


class _Late(Exception):
    def __init__(self, seconds: float, limit: float):
        self.seconds, self.limit = seconds, limit


def _await_frame(fd: int, on_wait: Callable[[float], None] | None, poll: float,
                 timeout: float | None = None) -> list[bytes] | None:
    """Read one frame from ``fd``, calling ``on_wait`` while nothing arrives; None at EOF.
    Raises _Late when nothing complete arrived within ``timeout`` seconds."""
    buffer, start = bytearray(), time.monotonic()
    poller = select.poll()  # not select.select: it fails on descriptors above 1023
    poller.register(fd, select.POLLIN)
    while True:
        waited = time.monotonic() - start
        if timeout is not None and waited >= timeout:
            raise _Late(waited, timeout)
        wait = poll if timeout is None else min(poll, timeout - waited)
        if not poller.poll(max(wait, 0.0) * 1000):
            if on_wait is not None:
                on_wait(time.monotonic() - start)
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return None
        buffer += chunk
        if (fields := decode_frame(buffer)) is not None:
            return fields


def _fd(pipe: IO[bytes] | None) -> int:
    """The descriptor of one of the worker's pipes (stdin and stdout are pipes from its start)."""
    if pipe is None:
        raise RuntimeError("the worker process was started without its pipes")
    return pipe.fileno()
