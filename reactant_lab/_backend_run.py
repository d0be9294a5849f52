"""Running a compiled call where Ctrl-C and a time limit reach the caller (backend's ``guarded``).

XLA cannot stop a computation once it runs, and jaxlib 0.10.2's XLA:CPU client gives Python no
chance to: a computation its cost model calls cheap (under 1,000 flops, which a loop body
counted once often is) runs inline on the calling thread, where Python's signal handlers wait
until it returns; any other runs on the client's threads, chained after the one before it, so
one that never ends holds up every later computation of the process, JAX's own included. A
call that may not end (``long_loop``) or has a time limit therefore runs on a runner thread
while the caller waits in slices that Ctrl-C, SIGALRM and the limit interrupt. On the CPU the
runner runs a twin of the executable loaded into a synchronous XLA:CPU client of its own
(``twin``), which runs everything inline on the runner: a computation left running there keeps
that thread, a core (its priority lowered) and its buffers until the process ends, and nothing
that JAX's client or a later call needs. At most ``MAX_LEFT_RUNNING`` are left running;
beyond that a guarded call is refused until the process restarts.

Handing a call to the runner and back through locks costs two thread wake-ups (76 us here, on
2 vCPUs), a third of a 0.2 ms call. A caller whose previous call was short (``spin_budget``)
spins for the result instead, and the runner for the next call after one, each for a bounded
time with the GIL released (``_handoff.c``, built by ``_native``; without a C compiler the locks
alone hand over, as before).

Only backend and its private modules import this module.
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import functools
import os
import queue
import re
import sys
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

import jax

from reactant_lab import _native
from reactant_lab._backend_ir import Aval
from reactant_lab.errors import CallInterruptedError, CallTimeoutError, LeftRunningError

LONG_TRIPS = 1 << 20
"""A while loop XLA knows to run this many times or more counts as one that may run long."""
MAX_LEFT_RUNNING = 4
"""How many interrupted computations may be left running before guarded calls are refused."""
WAIT_SLICE = 0.1
"""Seconds the caller waits at a time: the longest a signal waits where a lock's wait is not
interrupted by one (Windows)."""
SPIN_UNDER = 1e-3
"""Seconds: a guarded call whose previous call took less is waited for spinning
(``spin_budget``); a longer one blocks at once, leaving both cores to XLA's threads."""
RUNNER_SPIN = 2e-4
"""Seconds the runner spins for the next call after a call whose caller spun: the caller's own
work between two calls (the write-back, its loop) fits in it."""

_WHILE = re.compile(r"\swhile\([^()]*\), condition=")
_TRIPS = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_OP_NAME = re.compile(r'op_name="([^"]*)"')


def long_loop(hlo_text: str, skip: Collection[str] = ()) -> str | None:
    """A description of the first while loop of XLA's optimized HLO whose trip count XLA could
    not tell, or is ``LONG_TRIPS`` or more (e.g. "the loop `while a[0] >= 0`"), preferring one
    that names the user's code; None when every loop has a known, smaller trip count. Loops
    named in ``skip`` (their source text, shown to end sooner) are left out."""
    found = []
    for line in hlo_text.splitlines():
        if not _WHILE.search(line):
            continue
        trips = _TRIPS.search(line)
        if trips is not None and int(trips.group(1)) < LONG_TRIPS:
            continue
        name = _OP_NAME.search(line)
        op = name.group(1).rsplit("/", 1)[-1].strip() if name is not None else ""
        if op and op in skip:
            continue
        what = f"the loop `{op}`" if op and op != "while" else "a while loop"
        found.append(what if trips is None else f"{what} ({int(trips.group(1)):,} iterations)")
    # the first that names the user's code, else the first (a loop XLA made names none)
    return next((w for w in found if w.startswith("the loop")), found[0] if found else None)


@functools.cache
def twin_client() -> Any:
    """The synchronous XLA:CPU client guarded calls run on (made on first use)."""
    from jaxlib import xla_client

    return xla_client.make_cpu_client(asynchronous=False, num_devices=1)


def twin(serialized: bytes, options: Any) -> Any:
    """An executable serialized from JAX's CPU client, loaded into ``twin_client``."""
    from jaxlib import xla_client

    client = twin_client()
    return client.deserialize_executable(
        serialized, xla_client.DeviceList((client.devices()[0],)), options)


def placer(device: Any) -> Callable[[Any, Aval], Any]:
    """``put(value, (shape, dtype, weak_type))``: a NumPy array (of that shape and dtype) as
    an array on ``device``, by jaxlib's ``batched_device_put`` (7 us here, where
    ``jax.device_put`` takes 70-90 us for the same), else by ``jax.device_put`` (which keeps
    64-bit types only under JAX's 64-bit flag). The one use of ``batched_device_put`` and
    ``jax.core.ShapedArray`` (docs/architecture.md)."""
    from jaxlib import xla_client

    put = getattr(xla_client, "batched_device_put", None)
    shaped = getattr(jax.core, "ShapedArray", None)
    if put is None or shaped is None:  # pragma: no cover - another jaxlib
        return lambda value, _: jax.device_put(value, device)
    sharding = jax.sharding.SingleDeviceSharding(device)

    def place(value: Any, aval: Aval) -> Any:  # 64-bit types kept: the values are final
        return put(shaped(aval[0], aval[1]), sharding, [value], [device], True,
                   enable_x64=True)

    return place


def spin_budget(last: float | None) -> float:
    """Seconds a caller spins for a guarded call whose previous call took ``last`` seconds
    (None: none yet): twice that and 50 us when it is under ``SPIN_UNDER``, else 0. A call
    that takes longer than that is then waited for as any other, through its lock."""
    return 2 * last + 5e-5 if last is not None and last < SPIN_UNDER else 0.0


@functools.cache
def _handoff() -> Any | None:
    """``_handoff.c``, loaded (built on first use), or None where it cannot be."""
    try:
        lib = _native.library("_handoff.c", "reactant_lab's spinning call handoff",
                              "without it, guarded calls are handed over through locks alone "
                              "(about 0.08 ms more each), with the same results")
    except _native.NativeUnavailable:
        return None
    for fn in (lib.rl_post_and_spin, lib.rl_end_and_spin):
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    return lib


class _Job:
    """One guarded call: the work, and how it ended."""

    def __init__(self, work: Callable[[], Any], name: str = "", loop: str | None = None,
                 where: str | None = None, spin: float = 0.0):
        self.work = work
        self.spin = spin
        """Seconds the caller spins for the result (``spin_budget``); 0: it blocks at once."""
        self.number = 0
        """Its number among the calls of its runner (``_Runner.words``)."""
        self.name, self.loop, self.where = name, loop, where
        """The function called, its loop that may not end, and where it runs (None: a thread
        of this process; else the device, whose later computations wait for it)."""
        self.since = 0.0
        """When the caller stopped waiting (``_leave``; ``time.monotonic``)."""
        self.done = _thread.allocate_lock()
        self.done.acquire()  # released by the runner when the work has ended
        self.result: Any = None
        self.error: BaseException | None = None
        self.lock = threading.Lock()
        self.finished = False
        self.left = False
        """The caller stopped waiting while it ran: the runner drops it when it ends."""


class _Runner(threading.Thread):
    """A thread that runs guarded calls one after another until one is left running."""

    def __init__(self) -> None:
        super().__init__(name="reactant_lab-runner", daemon=True)
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.words = (ctypes.c_int64 * 2)()
        """The number of the last call posted to it (written by the caller) and of the last it
        ended (by the runner): what the two spin on (``_handoff.c``)."""
        self.posted = 0
        """The number of the last call posted (its callers take it one at a time: ``_IDLE``)."""
        self.spinning = False
        """Whether it may be spinning for the next call (the last one's caller spun)."""

    def run(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                job.result = job.work()
            except BaseException as exc:  # handed to the caller, whatever it is
                job.error = exc
            with job.lock:
                job.finished, left = True, job.left
            if left:  # it ended after all; this thread runs at the lowest priority now
                _LEFT.discard(job)
                return
            _IDLE.append(self)  # before the caller goes on: its next call may take it
            job.done.release()
            handoff = _handoff() if job.spin else None
            if handoff is not None:  # the next call is likely near: spin for it a while
                handoff.rl_end_and_spin(ctypes.addressof(self.words), job.number,
                                        int(min(job.spin, RUNNER_SPIN) * 1e9))


_IDLE: list[_Runner] = []
_LEFT: set[_Job] = set()


def left_running() -> int:
    """How many interrupted computations still run in this process."""
    return len(_LEFT)


LEFT = _LEFT
"""The interrupted computations that still run (empty almost always: a caller's hot path
tests it before ``refuse_if_busy``)."""


def refuse_if_busy(where: str, name: str) -> None:
    """Raise LeftRunningError when an interrupted computation still runs on the device
    ``where``: the device runs its computations one after another, so a call there would wait
    for it without end, inside XLA where neither Ctrl-C nor a time limit reach the caller."""
    for job in list(_LEFT):
        if job.where == where:
            raise LeftRunningError(_busy(name, job))


def run_guarded(work: Callable[[], Any], *, limit: float | None, name: str, loop: str | None,
                where: str | None, spin: float = 0.0) -> Any:
    """``work()`` on a runner thread, the caller waiting where Ctrl-C (and any signal handler
    that raises) and ``limit`` (seconds) stop it, after spinning for it up to ``spin`` seconds
    (``spin_budget``; signals are seen once that ends). ``name``, ``loop`` (``long_loop``'s
    words) and ``where`` (None: a thread of this process; else the device that keeps computing)
    go into the error: CallTimeoutError, CallInterruptedError for a KeyboardInterrupt, the
    handler's own exception otherwise."""
    if len(_LEFT) >= MAX_LEFT_RUNNING:
        raise LeftRunningError(_refusal(name))
    if limit is not None:
        spin = min(spin, limit)
    job = _Job(work, name, loop, where, spin)
    try:
        runner = _IDLE.pop()
    except IndexError:
        runner = _Runner()
        runner.start()
    start = time.perf_counter()
    try:
        late = not (_post(runner, job) or _wait(job.done, limit, start))
    except BaseException as exc:
        left = _leave(job, runner)
        if not isinstance(exc, KeyboardInterrupt) or isinstance(exc, CallInterruptedError):
            raise
        seconds = time.perf_counter() - start
        raise CallInterruptedError(
            _interrupted(name, seconds, loop, left, where), fn_name=name, seconds=seconds,
            left_running=left) from None
    if late:
        left = _leave(job, runner)
        seconds = time.perf_counter() - start
        assert limit is not None  # only a limit makes a wait late
        raise CallTimeoutError(_late(name, limit, loop, left, where), fn_name=name, limit=limit,
                               seconds=seconds, left_running=left)
    if job.error is not None:
        raise job.error
    return job.result


def _post(runner: _Runner, job: _Job) -> bool:
    """Give ``job`` to ``runner`` and spin up to ``job.spin`` seconds for it to end; True when
    it has (False at once when the caller does not spin)."""
    runner.posted += 1
    job.number = runner.posted
    runner.jobs.put(job)
    handoff = _handoff() if job.spin or runner.spinning else None
    runner.spinning = job.spin > 0
    if handoff is None:
        return False
    return bool(handoff.rl_post_and_spin(ctypes.addressof(runner.words), job.number,
                                         int(job.spin * 1e9)))


def _wait(done: Any, limit: float | None, start: float) -> bool:
    """Wait for ``done`` in slices; False when ``limit`` seconds passed first."""
    while True:
        slice_ = WAIT_SLICE
        if limit is not None:
            slice_ = min(slice_, limit - (time.perf_counter() - start))
            if slice_ <= 0:
                return bool(done.acquire(blocking=False))
        if done.acquire(timeout=slice_):
            return True


def _leave(job: _Job, runner: _Runner) -> bool:
    """Stop waiting for ``job``; True when it is still running (it is then left running, its
    thread at the lowest priority), False when it ended meanwhile."""
    with job.lock:
        if job.finished:
            return False
        job.left = True
        job.since = time.monotonic()
    _LEFT.add(job)
    if sys.platform.startswith("linux") and runner.native_id is not None:
        with contextlib.suppress(OSError):  # the thread's own nice value (Linux only)
            os.setpriority(os.PRIO_PROCESS, runner.native_id, 19)
    return True


def _aftermath(left: bool, where: str | None) -> str:
    if not left:
        return "It had just ended; nothing is left running."
    if where is not None:
        return (f"XLA cannot stop a running computation: it goes on on {where}, and later "
                "computations there wait for it; restart the process (the notebook kernel) to "
                "use the device again.")
    n = len(_LEFT)
    return (f"XLA cannot stop a running computation: it goes on on a background thread of this "
            f"process (one core, at the lowest priority) until the process ends; {n} "
            f"interrupted computation{'s' if n != 1 else ''} now run{'s' if n == 1 else ''}, and "
            f"at {MAX_LEFT_RUNNING} no more guarded calls are started: restart the process (the "
            "notebook kernel) to end them.")


def _loop_clause(loop: str | None) -> str:
    return f" ({loop} may not end)" if loop else ""


def _late(name: str, limit: float, loop: str | None, left: bool, where: str | None) -> str:
    return (f"{name} ran past its time limit of {limit:g} s{_loop_clause(loop)}. The call was "
            f"stopped and the arguments are as they were before it. {_aftermath(left, where)} "
            "If the computation does end, give it longer (a larger timeout=); if it should "
            "have ended, check the loop's condition on these inputs.")


def _interrupted(name: str, seconds: float, loop: str | None, left: bool,
                 where: str | None) -> str:
    return (f"{name} was interrupted after {seconds:.1f} s{_loop_clause(loop)}. The call was "
            f"stopped and the arguments are as they were before it. {_aftermath(left, where)}")


def _busy(name: str, job: _Job) -> str:
    ago = time.monotonic() - job.since
    return (f"{name} was not run: {job.where} still runs the computation of {job.name}"
            f"{_loop_clause(job.loop)} that was stopped {ago:.0f} s ago. XLA cannot stop it, "
            f"and {job.where} runs its computations one after another, so this call could wait "
            "for it, where neither Ctrl-C nor a time limit reach it. Restart the process (the "
            "notebook kernel) to use the device again; if that computation does end, the "
            "device is free again once it has.")


def _refusal(name: str) -> str:
    return (f"{name} was not run: {len(_LEFT)} interrupted computations still run in this "
            f"process (at most {MAX_LEFT_RUNNING}), each keeping a core and its memory, and XLA "
            "cannot stop them. Restart the process (the notebook kernel) to end them; calls "
            "without a time limit and without a loop XLA cannot bound still run.")
