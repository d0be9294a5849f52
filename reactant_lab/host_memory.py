"""64-byte-aligned NumPy arrays, so that XLA uses them in place.

XLA's CPU client takes a NumPy array as an executable's input without copying it only when its
data starts on a 64-byte boundary; NumPy's own allocator aligns to 16 bytes (the C library's
``malloc``), so a compiled call copies each large input into an XLA buffer first (~6 ms per
32 MB here; a matrix-vector kernel spends most of its time on that copy). NumPy lets a program
choose the allocator of the arrays it creates from then on (NEP 49, ``PyDataMem_SetHandler``):
:func:`use_aligned_arrays` installs one whose data always starts on a 64-byte boundary, and
:func:`aligned_arrays` does so for a ``with`` block.

The allocator is four C functions (``_aligned_alloc.c``, the C library's ``malloc``, ``calloc``,
``realloc`` and ``free`` over-allocated by 72 bytes, a page more from a MiB up) built once with
the system C compiler into a per-user cache and loaded with ``ctypes`` (``_native``; the same
library has the non-temporal copy of :func:`stream_copy` and the page trade of
:func:`swap_pages`, for large write-backs); NumPy's handler capsule and its C-API entry are
reached through ``ctypes`` too, so nothing needs Python's or NumPy's headers. Without a C
compiler the allocator is unavailable (:class:`AlignedArraysUnavailable` says why) and everything
else works as before, with the copies.

NumPy keeps the allocator in a context variable of the thread that sets it: arrays created in
other threads, and before the call, keep NumPy's. Every array remembers the allocator that made
it and is freed by it, so switching back never frees memory with the wrong one.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import ClassVar

import numpy as np

from reactant_lab import _native, checks
from reactant_lab.errors import ReactantLabError

ALIGNMENT = 64
"""Bytes: the alignment XLA's CPU client needs to use a host array in place."""
HANDLER_NAME = "reactant_lab_aligned64"
"""The allocator's name, as ``numpy._core.multiarray.get_handler_name()`` reports it."""
_SOURCE = "_aligned_alloc.c"
_SET_HANDLER_SLOT = 304
"""``PyDataMem_SetHandler``'s index in NumPy's C-API table (since NumPy 1.22, in 2.x too)."""
IN_PLACE_MIN_BYTES = 4 << 20
"""From this size up, an aligned NumPy array a kernel updates is not donated (``donate='auto'``):
XLA reads it in place, and donating it would make JAX copy it first, since the caller keeps it.
Measured with ``benchmarks/donation.py`` (NumPy-speed kernels): updated arrays of 6-31 MiB ran
1.0-1.27x faster kept than donated, those under 1 MiB (stencils carried through loops) 0.95-0.99x,
1-2.3 MiB ones 0.93-1.07x."""


class AlignedArraysUnavailable(ReactantLabError, RuntimeError):
    """The aligned allocator cannot be built or installed here (no C compiler, an old NumPy)."""


class _Allocator(ctypes.Structure):
    _fields_ = [("ctx", ctypes.c_void_p), ("malloc", ctypes.c_void_p),
                ("calloc", ctypes.c_void_p), ("realloc", ctypes.c_void_p),
                ("free", ctypes.c_void_p)]


class _Handler(ctypes.Structure):  # NumPy's PyDataMem_Handler, version 1
    _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8),
                ("allocator", _Allocator)]


class _Context(ctypes.Structure):
    _fields_ = [("hugepages", ctypes.c_int)]


class _Installed:
    """The loaded library, the handler struct and its capsule: alive for the whole process,
    since every array the allocator made holds the capsule and is freed through it."""

    def __init__(self, library: ctypes.CDLL, set_handler: Callable[[int | None], int | None]):
        self.library = library
        self.context = _Context(hugepages=int(_numpy_hugepages()))
        self.handler = _Handler(name=HANDLER_NAME.encode(), version=1)
        self.handler.allocator = _Allocator(
            ctypes.addressof(self.context),
            *(ctypes.cast(getattr(library, f"rl_aligned_{f}"), ctypes.c_void_p).value
              for f in ("malloc", "calloc", "realloc", "free")))
        self.capsule_name = ctypes.create_string_buffer(b"mem_handler")
        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype = ctypes.py_object
        new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        self.capsule = new_capsule(ctypes.addressof(self.handler), self.capsule_name, None)
        self.set_handler = set_handler
        self.stream_copy = library.rl_stream_copy
        self.stream_copy.restype = None
        self.stream_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        self.swap_pages = library.rl_swap_pages
        self.swap_pages.restype = ctypes.c_int
        self.swap_pages.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        self.prefer_offsets = library.rl_prefer_offsets
        self.prefer_offsets.restype = None
        self.prefer_offsets.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint),
                                        ctypes.c_uint]


class _Once:
    """The process's one attempt to build and load the allocator: its result or its failure."""

    lock = threading.Lock()
    installed: _Installed | None = None
    failure: str | None = None
    wanted = False
    """The last ``use_aligned_arrays`` choice (``reapply`` keeps it)."""


def _numpy_hugepages() -> bool:
    """NumPy's own choice of transparent huge pages for large arrays (on for Linux >= 4.6)."""
    multiarray = _numpy_multiarray()
    get = getattr(multiarray, "_get_madvise_hugepage", None)
    return bool(get()) if get is not None else sys.platform.startswith("linux")


def _numpy_multiarray() -> ModuleType:
    try:
        from numpy._core import multiarray
    except ImportError:  # NumPy 1.x
        from numpy.core import multiarray  # type: ignore[no-redef]
    return multiarray


def _set_handler_function() -> Callable[[int | None], int | None]:
    multiarray = _numpy_multiarray()
    umath = sys.modules.get(multiarray.__name__.rsplit(".", 1)[0] + "._multiarray_umath")
    capsule = getattr(umath, "_ARRAY_API", None)
    if capsule is None or np.lib.NumpyVersion(np.__version__) < "1.22.0":
        raise AlignedArraysUnavailable(
            f"NumPy {np.__version__} has no allocator API (NEP 49 came with NumPy 1.22)")
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    table = ctypes.cast(get_pointer(capsule, None), ctypes.POINTER(ctypes.c_void_p))
    # PyObject *PyDataMem_SetHandler(PyObject *handler): NULL sets NumPy's default; returns a
    # new reference to the previous handler. The argument is passed as an address.
    return ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(table[_SET_HANDLER_SLOT])


def _install() -> _Installed:
    with _Once.lock:
        if _Once.installed is not None:
            return _Once.installed
        if _Once.failure is not None:
            raise AlignedArraysUnavailable(_Once.failure)
        try:
            _Once.installed = _Installed(
                _native.library(_SOURCE, "reactant_lab's aligned NumPy allocator",
                                "without it, compiled calls copy large NumPy inputs, with the "
                                "same results"), _set_handler_function())
        except _native.NativeUnavailable as exc:
            _Once.failure = str(exc)
            raise AlignedArraysUnavailable(_Once.failure) from exc
        except AlignedArraysUnavailable as exc:
            _Once.failure = str(exc)
            raise
        return _Once.installed


def _set(handler: object | None) -> object:
    """Make ``handler`` (a NumPy handler capsule; None: NumPy's default) the current one;
    return the previous one."""
    installed = _install()
    previous = installed.set_handler(None if handler is None else id(handler))
    if previous is None:
        raise AlignedArraysUnavailable("NumPy refused the allocator (PyDataMem_SetHandler)")
    old = ctypes.cast(previous, ctypes.py_object).value
    ctypes.pythonapi.Py_DecRef(ctypes.c_void_p(previous))  # the new reference it returned
    return old


def available() -> str | None:
    """None when the aligned allocator can be used here, else why not (builds it if needed)."""
    try:
        _install()
    except AlignedArraysUnavailable as exc:
        return str(exc)
    return None


def active() -> bool:
    """Whether NumPy arrays created now in this thread get 64-byte-aligned data."""
    return bool(_numpy_multiarray().get_handler_name() == HANDLER_NAME)


def use_aligned_arrays(on: bool = True) -> bool:
    """From now on (in this thread), NumPy arrays get data aligned to 64 bytes (``on``), or
    NumPy's own allocator again (``False``). Returns whether it was on before.

    Compiled calls then hand large NumPy inputs to XLA without copying them. Arrays created
    earlier keep their alignment (``is_aligned`` tells); ``np.array(x)`` copies one into an
    aligned array. Raises :class:`AlignedArraysUnavailable` (the allocator is built with the
    system C compiler on first use) if it cannot be installed; nothing changes then."""
    checks.flag("on", on)
    was = active()
    if on and not was:
        _set(_install().capsule)
    elif not on and was:
        _set(None)
    _Once.wanted = on
    return was


def reapply() -> None:
    """Install the allocator again if ``use_aligned_arrays()`` turned it on and it is not in
    use now: NumPy keeps it in a context variable, and some IPython kernels run each cell in a
    copy of the context the previous cell started from (the notebook extension calls this before
    each cell)."""
    if _Once.wanted and not active():
        with contextlib.suppress(AlignedArraysUnavailable):
            _set(_install().capsule)


@contextlib.contextmanager
def aligned_arrays(on: bool = True) -> Iterator[None]:
    """``with aligned_arrays():`` NumPy arrays created in the block (in this thread) get data
    aligned to 64 bytes; the allocator in use before comes back after it."""
    checks.flag("on", on)
    if not on:
        yield
        return
    previous = _set(_install().capsule)
    try:
        yield
    finally:
        _set(previous)


def read_in_place(value: object) -> bool:
    """Whether XLA's CPU client reads ``value`` where it lies, without a copy: a NumPy array in
    NumPy's (C) order whose data starts on a 64-byte boundary, of ``IN_PLACE_MIN_BYTES`` or more
    (smaller ones are cheap to copy either way)."""
    return (isinstance(value, np.ndarray) and value.nbytes >= IN_PLACE_MIN_BYTES
            and value.flags.c_contiguous and value.ctypes.data % ALIGNMENT == 0)


def is_aligned(array: np.ndarray) -> bool:
    """Whether ``array``'s data starts on a 64-byte boundary (XLA's CPU client can then use a
    C-contiguous array in place)."""
    checks.instance("array", array, np.ndarray, "a NumPy array")
    return array.ctypes.data % ALIGNMENT == 0


def stream_copy(target: np.ndarray, source: np.ndarray) -> bool:
    """``target[...] = source`` with non-temporal stores (``rl_stream_copy`` of
    ``_aligned_alloc.c``), for arrays of the same dtype and shape, both C-contiguous and apart;
    returns False, having copied nothing, when they are not or the library cannot be had here
    (the caller then assigns). For large copies only: the target's lines end up out of the
    cache. Two threads each copying half (``compile.copy_into``) copied 32 MB in 3.2 ms and
    128 MB in 8.4 ms, where ``np.copyto`` took 4.2 and 19 ms (``benchmarks/in_place_floor.py``)."""
    if not (target.dtype == source.dtype and target.shape == source.shape
            and target.flags.c_contiguous and source.flags.c_contiguous
            and target.flags.writeable and not np.may_share_memory(target, source)):
        return False
    try:
        copy = _install().stream_copy
    except AlignedArraysUnavailable:
        return False
    copy(target.ctypes.data, source.ctypes.data, target.nbytes)  # ctypes lets go of the GIL
    return True


NO_SWAP_VAR = "REACTANT_LAB_NO_PAGE_SWAP"
"""Set (to anything but the empty string), :func:`swap_pages` never trades pages: every
write-back is a copy."""
SWAP_MIN_BYTES = 1 << 20
"""From this size up, :func:`swap_pages` trades pages rather than leave the copy to the caller."""
_PAGE = 4096
"""The page size ``_aligned_alloc.c`` places large arrays by (the kernel's may be larger: the
trade then checks its own)."""
_ALIGN = 64
"""Where in its page the allocator starts an array of ``SWAP_MIN_BYTES`` or more unless told
otherwise: where the C library's ``malloc`` puts a block it maps on its own."""
_MALLOC_HANDLERS = (HANDLER_NAME, "default_allocator")
"""NumPy allocators whose memory is the C library's ``malloc``'s: private to the process and
anonymous (not a file's, not shared), the only memory whose pages may trade places."""


class _Mappings:
    """Each page trade can split the process's memory mappings (a moved range stays a mapping of
    its own where the kernel does not merge it with its neighbours), and Linux caps their number
    (``vm.max_map_count``, 65,530 by default: past it, allocations fail). Every ``EVERY``-th
    trade counts them; from ``ceiling`` on (``SPARE`` more than at the first trade, at most half
    of Linux's limit) trading stops for the rest of the process."""

    EVERY = 64
    SPARE = 8192
    """Mappings the trades may add at most, over those the process had at its first trade."""
    lock = threading.Lock()
    trades = 0
    ceiling: int | None = None
    stopped = False

    @staticmethod
    def count() -> int:
        try:
            with open("/proc/self/maps", "rb") as maps:
                return sum(1 for _ in maps)
        except OSError:
            return 1 << 30  # cannot tell: stop

    @classmethod
    def allowed(cls) -> bool:
        """Whether the next trade may go ahead (counting the mappings when due)."""
        with cls.lock:
            if cls.stopped:
                return False
            due = cls.trades % cls.EVERY == 0
            cls.trades += 1
        if not due:
            return True
        now = cls.count()
        with cls.lock:
            if cls.ceiling is None:
                cls.ceiling = min(now + cls.SPARE, _max_map_count() // 2)
            cls.stopped = now >= cls.ceiling
            return not cls.stopped


class _Offsets:
    """Where in their pages large arrays of each size start (``rl_prefer_offsets``): where the
    spares offered for that size lately do (buffers of XLA's, kept and offered again call after
    call; in the C library's heap they start at any multiple of 64), taken in turn by
    successive arrays of that size, so that the caller's next fresh arrays trade with them: a
    kernel updating four arrays of one size, each with a buffer of its own at another offset,
    gets its four arrays at those four offsets (and ``compile`` gives each array the buffer at
    its offset). A spare not offered again within ``WINDOW`` offers of its size, plus four per
    spare still in use, drops out of the list."""

    WINDOW = 16
    SIZES = 16
    """Sizes followed at once (the allocator holds 8: the most recently offered)."""
    lock = threading.Lock()
    seen: ClassVar[dict[int, dict[int, int]]] = {}
    """Size -> {spare's address: the offer of that size it was last offered at}."""
    offers: ClassVar[dict[int, int]] = {}
    """Size -> offers of that size so far."""
    chosen: ClassVar[dict[int, tuple[int, ...]]] = {}
    """Size -> the offsets handed to the allocator for it."""

    @classmethod
    def offered(cls, installed: _Installed, nbytes: int, address: int) -> None:
        """A spare of ``nbytes`` at ``address`` offered for a trade (taken or refused)."""
        with cls.lock:
            count = cls.offers.pop(nbytes, 0) + 1
            cls.offers[nbytes] = count  # the most recent last
            seen = cls.seen.pop(nbytes, {})
            cls.seen[nbytes] = seen
            seen[address] = count
            window = cls.WINDOW + 4 * len(seen)
            for old in [a for a, at in seen.items() if count - at > window]:
                del seen[old]
            while len(cls.seen) > cls.SIZES:
                gone = next(iter(cls.seen))
                del cls.seen[gone], cls.offers[gone]
                cls.chosen.pop(gone, None)
            offsets = tuple(a % _PAGE for a in sorted(seen))[:8]
            if cls.chosen.get(nbytes, (_ALIGN,)) == offsets:
                return
            cls.chosen[nbytes] = offsets
        installed.prefer_offsets(nbytes, (ctypes.c_uint * len(offsets))(*offsets), len(offsets))


def _max_map_count() -> int:
    try:
        return int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return 65530


def _malloc_memory(array: np.ndarray) -> bool:
    """Whether ``array``'s data lies in memory one of ``_MALLOC_HANDLERS`` allocated (following
    a view to the array that owns the memory; anything else owning it, such as a memory-mapped
    file or a buffer of another library, is not)."""
    get = _numpy_multiarray().get_handler_name
    owner: object = array
    while isinstance(owner, np.ndarray):
        name = get(owner)
        if name is not None:
            return name in _MALLOC_HANDLERS
        owner = owner.base
    return False


def page_offset(value: object) -> int | None:
    """Where in its memory page a NumPy array's data starts (None for anything else): a kept
    buffer at that offset can trade pages with it (``swap_pages``)."""
    return value.ctypes.data % _PAGE if isinstance(value, np.ndarray) else None


def swap_pages(target: np.ndarray, spare: np.ndarray) -> bool:
    """``target[...] = spare`` without copying the middle: on Linux, the whole memory pages
    inside ``target`` trade places with ``spare``'s pages at the same offsets (``mremap``
    moves page table entries, not data), and the partial pages at either end are copied
    (``rl_swap_pages`` of ``_aligned_alloc.c``). ``spare``'s contents are lost: it must be a
    buffer nothing reads afterwards, such as a result computed only to be written back (a
    32 MB array took 0.3 ms where two threads copied it in 3.2 ms). Both C-contiguous, of one
    dtype and shape, apart, at least ``SWAP_MIN_BYTES``, at the same offset within a page
    (XLA's CPU buffers of a mapping of their own, and this module's aligned arrays of a MiB or
    more, start 64 bytes into one; arrays of ``target``'s size made later with this module's
    allocator start where the spares lately offered for that size do, in turn (``_Offsets``:
    the next call's fresh arrays of that size then trade with the same kept buffers), and
    ``target`` in memory of the C library's ``malloc`` (this module's allocator or NumPy's
    default; never a memory-mapped file, whose pages belong to the file). Returns False,
    having changed nothing, when any of that does not hold, the kernel refuses, or the trades
    have split the process's memory mappings too much already (``_Mappings``; the caller then
    copies)."""
    if not (sys.platform.startswith("linux") and not os.environ.get(NO_SWAP_VAR)
            and target.dtype == spare.dtype
            and target.shape == spare.shape and target.nbytes >= SWAP_MIN_BYTES
            and target.flags.c_contiguous and spare.flags.c_contiguous
            and target.flags.writeable and _malloc_memory(target)
            and not np.may_share_memory(target, spare)):
        return False
    try:
        installed = _install()
    except AlignedArraysUnavailable:
        return False
    start, address = target.ctypes.data, spare.ctypes.data
    _Offsets.offered(installed, target.nbytes, address)
    if start % _PAGE != address % _PAGE or not _Mappings.allowed():
        return False
    done = installed.swap_pages(start, address, target.nbytes)
    if done < 0:  # not seen: the kernel moved the pages out, then refused to move them back
        raise ReactantLabError(
            "reactant_lab could not put an updated array's memory pages back after the kernel "
            "refused to move a result's in (mremap): the array's middle now reads as zeros. "
            f"Set {NO_SWAP_VAR}=1 to copy results instead, and report this with "
            "your Linux version.")
    return bool(done)
