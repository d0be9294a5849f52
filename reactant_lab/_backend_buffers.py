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
first call hands in a new buffer; each later call the result of the call before, once nothing
else holds it (the caller's copy of it has been made and let go: a reference count, and XLA's own
refusal to donate a buffer a NumPy view still reads). The memory stays allocated between calls,
as long as the executable lives, up to ``KEPT_BYTES_LIMIT`` in the process.

Only backend and its private modules import this module.
"""

from __future__ import annotations

import math
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from reactant_lab._backend_ir import Aval

KEPT_BYTES_LIMIT = 1 << 30
"""Bytes of kept buffers held at once in the process, every executable's together: a call whose
results would go past it does not keep them (its executable's next call allocates anew)."""


class _Held:
    """The bytes of kept buffers held in the process."""

    lock = threading.Lock()
    total = 0


class KeptBuffers:
    """The buffers of one executable's kept results, per client it runs on (the device's, and
    the twin of guarded calls)."""

    def __init__(self, kept: Sequence[int], avals: Sequence[Aval]):
        self.kept = tuple(kept)
        """The results written into a buffer handed in, in the order of the donor arguments
        (the module's last ones)."""
        self.avals = tuple(avals)
        """(shape, dtype, weak_type) of each of those results."""
        self.nbytes = sum(math.prod(shape) * np.dtype(dtype).itemsize
                          for shape, dtype, _ in self.avals)
        """Bytes of one set of kept buffers."""
        self._spare: dict[str, list[list[Any]]] = {}
        self._held = [0]  # this executable's share of _Held.total, given back when it dies
        weakref.finalize(self, _give_back, self._held)

    def donors(self, client: str, make: Callable[[Aval], Any]) -> list[Any]:
        """The buffers to hand in on ``client``: the last call's results when nothing else holds
        them, else new ones (``make(aval)``)."""
        spare = self._spare.setdefault(client, [])
        while spare:
            try:
                bufs = spare.pop()
            except IndexError:  # another thread took the last one
                break
            _count(self._held, -self.nbytes)
            if _unheld(bufs):
                return bufs
        return [make(aval) for aval in self.avals]

    def keep(self, client: str, outs: Sequence[Any]) -> None:
        """Keep a call's kept results (on ``client``) for a later call's donors, unless the
        process holds ``KEPT_BYTES_LIMIT`` of them already."""
        if _count(self._held, self.nbytes):
            self._spare.setdefault(client, []).append([outs[k] for k in self.kept])

    def release(self) -> None:
        """Let go of every kept buffer (the next call allocates anew)."""
        self._spare.clear()
        _give_back(self._held)


def _count(held: list[int], nbytes: int) -> bool:
    """Add ``nbytes`` (less than 0: take) to an executable's and the process's kept bytes;
    False (nothing added) when that would go past ``KEPT_BYTES_LIMIT``."""
    with _Held.lock:
        if nbytes > 0 and _Held.total + nbytes > KEPT_BYTES_LIMIT:
            return False
        _Held.total += nbytes
        held[0] += nbytes
        return True


def _give_back(held: list[int]) -> None:
    with _Held.lock:
        _Held.total -= held[0]
        held[0] = 0


def held_bytes() -> int:
    """Bytes of kept buffers the process holds now."""
    return _Held.total


def _references(bufs: list[Any]) -> list[int]:
    return [sys.getrefcount(b) for b in bufs]


_HOLDERS = _references([object()])[0]
"""What ``_references`` counts for a buffer only its list holds (the list, the comprehension's
variable, ``getrefcount``'s argument: measured, as the count differs between Pythons)."""


def _unheld(bufs: list[Any]) -> bool:
    """Whether only the list ``bufs`` holds each of its buffers, none of them given up."""
    return all(n <= _HOLDERS for n in _references(bufs)) and not any(
        b.is_deleted() for b in bufs)


def aligned_empty(aval: Aval) -> np.ndarray:
    """An uninitialized NumPy array of ``aval`` whose data starts on a 64-byte boundary (XLA's
    CPU client then takes it without a copy)."""
    shape, dtype, _ = aval
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    raw = np.empty(size + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start:start + size].view(dtype).reshape(shape)
