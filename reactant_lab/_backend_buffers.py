"""Result buffers kept between calls: XLA writes a large result into the last call's buffer.

XLA's CPU client allocates every result anew with the C library's ``malloc``, on the thread that
runs the executable, and frees it when the result dies. Past 32 MiB always, and from a few MiB
up at times (it depends on what the thread's heap held before), that memory comes from the
kernel afresh on each call (a thread's heap grown with ``mprotect``, or an ``mmap``), and the
executable faults in every page of it as it writes: a 4M-element float64 result costs ~7,800
page faults, 5-20 ms on a call whose arithmetic takes 2-3 ms (``benchmarks/in_place_floor.py``,
``benchmarks/kept_buffers.py``). A NumPy kernel's updated array is such a result, copied into
the caller's array and dropped on every call.

So a module can take, for each of those results, one more argument that it never reads, donated
to that result (``tf.aliasing_output``): XLA then writes the result into the buffer handed in. The
first call hands in a new buffer; each later call a result of a call before, once nothing else
holds it (the caller's copy of it has been made and let go: a reference count, and XLA's own
refusal to donate a buffer a NumPy view still reads). Those buffers are the process's, by
device, shape and dtype (``_Pool``): every executable keeping a result of that kind takes them,
preferring the one that starts where the caller's array it is traded into does in its page. The
memory stays allocated between calls, while an executable keeping such results lives, up to
``KEPT_BYTES_LIMIT`` in the process.

Only backend and its private modules import this module.
"""

from __future__ import annotations

import math
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from reactant_lab._backend_ir import Aval

KEPT_BYTES_LIMIT = 1 << 30
"""Bytes of kept buffers held at once in the process, every executable's together: a call whose
results would go past it does not keep them (its executable's next call allocates anew)."""

PAGE = 4096

_Key = tuple[str, str, tuple[int, ...], str]
"""(client, device, shape, dtype) of a kept buffer."""


class _Pool:
    """The process's kept buffers free between calls, by client, device, shape and dtype: any
    executable keeping a result of that kind takes one for its next call. Two executables of
    one kernel (two presets), or two kernels updating arrays of one shape, then write into the
    same buffers, whose pages keep trading with the caller's arrays at the same offsets
    (``host_memory.swap_pages``); each executable keeping its own, the caller's fresh arrays
    could match only one's. At most as many free buffers of a kind as the live executables keep
    results of it, ``KEPT_BYTES_LIMIT`` in all; a kind's go when its last executable does."""

    lock = threading.Lock()
    free: ClassVar[dict[_Key, list[tuple[Any, int]]]] = {}
    """Kind -> (buffer, where in its page it starts), the most recently kept last."""
    users: ClassVar[dict[tuple[str, tuple[int, ...], str], int]] = {}
    """(device, shape, dtype) -> results of that kind the live executables keep."""
    total = 0
    """Bytes of the free buffers."""


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    return math.prod(shape) * np.dtype(dtype).itemsize


class KeptBuffers:
    """The buffers of one executable's kept results, taken from and given back to the
    process's pool (``_Pool``), per client it runs on (the device's, and the twin of guarded
    calls)."""

    def __init__(self, kept: Sequence[int], avals: Sequence[Aval], device: str):
        self.kept = tuple(kept)
        """The results written into a buffer handed in, in the order of the donor arguments
        (the module's last ones)."""
        self.avals = tuple(avals)
        """(shape, dtype, weak_type) of each of those results."""
        self._kinds = [(device, tuple(shape), np.dtype(dtype).str) for shape, dtype, _ in avals]
        _settle()
        with _Pool.lock:
            for kind in self._kinds:
                _Pool.users[kind] = _Pool.users.get(kind, 0) + 1
        weakref.finalize(self, _leave, list(self._kinds))

    def donors(self, client: str, make: Callable[[Aval], Any],
               offsets: Sequence[int | None] | None = None) -> list[Any]:
        """The buffers to hand in on ``client``: free ones of the pool that nothing else holds,
        each at ``offsets[i]`` in its page where the pool has one there (the page offset of
        the caller's array result i is written into), else new ones (``make(aval)``)."""
        _settle()
        bufs = []
        for i, (aval, kind) in enumerate(zip(self.avals, self._kinds, strict=True)):
            want = offsets[i] if offsets is not None else None
            buf = _take((client, *kind), want)
            bufs.append(make(aval) if buf is None else buf)
        return bufs

    def keep(self, client: str, outs: Sequence[Any]) -> None:
        """Give a call's kept results (on ``client``) to the pool for a later call's donors,
        unless it holds as many of their kind already, or ``KEPT_BYTES_LIMIT`` in all."""
        _settle()
        for k, kind in zip(self.kept, self._kinds, strict=True):
            buf = outs[k]
            try:
                at = buf.unsafe_buffer_pointer() % PAGE
            except Exception:  # a platform that gives no address: any offset will do
                at = -1
            nbytes = _nbytes(kind[1], kind[2])
            with _Pool.lock:
                free = _Pool.free.setdefault((client, *kind), [])
                if (len(free) < _Pool.users.get(kind, 0)
                        and _Pool.total + nbytes <= KEPT_BYTES_LIMIT):
                    free.append((buf, at))
                    _Pool.total += nbytes


def _take(key: _Key, want: int | None) -> Any | None:
    """A free buffer of ``key``'s kind that nothing else holds, at ``want`` in its page if the
    pool has one there; None when it has none."""
    nbytes = _nbytes(key[2], key[3])
    while True:
        with _Pool.lock:
            free = _Pool.free.get(key)
            if not free:
                return None
            at = next((i for i in range(len(free) - 1, -1, -1) if free[i][1] == want), -1)
            entry = free.pop(at)
            _Pool.total -= nbytes
        if _unheld(entry):
            return entry[0]


_LEFT: list[list[tuple[str, tuple[int, ...], str]]] = []
"""The kinds of executables gone whose departure the pool has not settled yet (``_leave``)."""


def _leave(kinds: list[tuple[str, tuple[int, ...], str]]) -> None:
    """An executable is gone (its KeptBuffers' finalizer). The garbage collector runs it
    wherever an allocation triggers a collection, inside ``_Pool.lock``'s critical sections
    too, where taking the lock would wait on itself for ever (a kernel's calls, made while
    other kernels' jitted functions were being collected, hung so): it only notes the
    departure, settled (``_settle``) before the pool is next used."""
    _LEFT.append(kinds)  # atomic: takes no lock


def _settle() -> None:
    """Settle the departures ``_leave`` noted: their kinds keep as many free buffers as the
    live executables keep results of them. Called outside the lock."""
    while _LEFT:
        try:
            kinds = _LEFT.pop()
        except IndexError:  # another thread settled it
            return
        with _Pool.lock:
            for kind in kinds:
                users = _Pool.users[kind] = _Pool.users[kind] - 1
                if users <= 0:
                    del _Pool.users[kind]
                for key in [key for key in _Pool.free if key[1:] == kind]:
                    free = _Pool.free[key]
                    while len(free) > max(users, 0):
                        free.pop(0)
                        _Pool.total -= _nbytes(kind[1], kind[2])
                    if not free:
                        del _Pool.free[key]


def held_bytes() -> int:
    """Bytes of kept buffers the process holds free between calls now."""
    _settle()
    return _Pool.total


def _references(entry: tuple[Any, int]) -> int:
    return sys.getrefcount(entry[0])


_HOLDERS = _references((object(), 0))
"""What ``_references`` counts for a buffer only its pool entry holds (the entry, the
call's argument: measured, as the count differs between Pythons)."""


def _unheld(entry: tuple[Any, int]) -> bool:
    """Whether only the pool entry ``entry`` holds its buffer, not given up."""
    return _references(entry) <= _HOLDERS and not entry[0].is_deleted()


def aligned_empty(aval: Aval) -> np.ndarray:
    """An uninitialized NumPy array of ``aval`` whose data starts on a 64-byte boundary (XLA's
    CPU client then takes it without a copy)."""
    shape, dtype, _ = aval
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    raw = np.empty(size + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start:start + size].view(dtype).reshape(shape)
