"""The 64-byte-aligned NumPy allocator (``rl.use_aligned_arrays``): every way NumPy makes an
array gets aligned data with the same values as NumPy's own allocator gives, memory made by one
allocator is freed by it after switching, a compiled call reads an aligned input where it lies,
and without a C compiler the allocator is refused with the reason while NumPy goes on as before."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading

import jax
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend, host_memory
from tests.conftest import assert_close, child_env, float_rtol

pytestmark = pytest.mark.skipif(host_memory.available() is not None,
                                reason=f"aligned allocator unavailable: {host_memory.available()}")


@pytest.fixture
def aligned():
    """The allocator on for one test, NumPy's own afterwards (whatever the test did)."""
    was = rl.use_aligned_arrays()
    yield
    rl.use_aligned_arrays(was)


def _made(rng) -> dict[str, np.ndarray]:
    """Arrays made every way NumPy makes one, from the same random draws."""
    x = rng.standard_normal((300, 70))
    grown = np.arange(10.0)
    grown.resize(70_000, refcheck=False)  # realloc: the old values kept, the rest zeros
    large = np.arange(70_000.0)  # to a block of a MiB or more (its data a page offset in)
    large.resize(400_000, refcheck=False)
    shrunk = np.arange(400_000.0)  # and back
    shrunk.resize(70_000, refcheck=False)
    return {
        "grown past a MiB": large,
        "shrunk below a MiB": shrunk,
        "empty-filled": np.full((123, 45), 2.5),
        "zeros": np.zeros(3_000_000),  # 24 MB: calloc's lazily zeroed pages
        "ones": np.ones((7, 9), np.float32),
        "arange": np.arange(1_000_003, dtype=np.int64),
        "copy": x.copy(),
        "ufunc": np.sin(x) * 3 + x,
        "reduction": x.sum(axis=0),
        "matmul": x.T @ x,
        "concatenate": np.concatenate([x, x[:5]]),
        "fancy": x[[3, 1, 4, 1, 5]],
        "from list": np.array([[1, 2, 3], [4, 5, 6]], np.int16),
        "fromiter": np.fromiter((i * 0.5 for i in range(50_001)), float),  # grows by realloc
        "resized": grown,
        "astype": x.astype(np.float32),
        "sorted": np.sort(x, axis=0),
        "bool": x > 0,
        "complex": x[:, :10] + 1j * x[:, 10:20],
        "empty size": np.empty((0, 4)),
    }


def test_every_way_of_making_an_array_is_aligned_and_equal_to_numpys(aligned, rng):
    seed = rng.integers(2**32)
    with rl.aligned_arrays(False):  # a no-op: the allocator stays on
        pass
    assert host_memory.active()
    ours = _made(np.random.default_rng(seed))
    rl.use_aligned_arrays(False)
    theirs = _made(np.random.default_rng(seed))
    assert not host_memory.active()
    for name, array in ours.items():
        assert rl.is_aligned(array), name
        np.testing.assert_array_equal(array, theirs[name], err_msg=name)
        assert array.dtype == theirs[name].dtype
    assert np.get_include()  # NumPy itself still works after switching back
    assert not np.any(ours["zeros"]) and ours["resized"][10:].sum() == 0
    np.testing.assert_array_equal(ours["resized"][:10], np.arange(10.0))


def test_memory_is_freed_by_the_allocator_that_made_it_after_switching(numpys):
    rl.use_aligned_arrays()
    try:
        mine = [np.full(n, 1.5) for n in (1, 100, 100_000, 2_000_000)]
        rl.use_aligned_arrays(False)
        theirs = [np.full(n, 2.5) for n in (1, 100, 100_000, 2_000_000)]
        rl.use_aligned_arrays()
        for a in mine:  # grown and shrunk by the allocator that made it, under the other
            a.resize(a.size * 3, refcheck=False)
        rl.use_aligned_arrays(False)
        for a in theirs:
            a.resize(a.size * 3, refcheck=False)
        assert all(rl.is_aligned(a) and a[0] == 1.5 for a in mine)
        del mine, theirs
        gc.collect()
    finally:
        rl.use_aligned_arrays(False)


@pytest.fixture
def numpys():
    """NumPy's own allocator for one test, whatever was on before (restored after)."""
    was = rl.use_aligned_arrays(False)
    yield
    rl.use_aligned_arrays(was)


def test_the_context_manager_restores_the_allocator_before_it(numpys):
    assert not host_memory.active()
    with rl.aligned_arrays():
        assert host_memory.active()
        inside = np.ones(1000)
        with rl.aligned_arrays():
            assert host_memory.active()
        assert host_memory.active()  # the inner block restored the outer one's
    assert not host_memory.active()
    assert rl.is_aligned(inside) and inside.sum() == 1000


def test_other_threads_keep_numpys_allocator(aligned):
    seen = []
    thread = threading.Thread(target=lambda: seen.append(host_memory.active()))
    thread.start()
    thread.join()
    assert seen == [False] and host_memory.active()


@pytest.mark.cpu_only("only the CPU client reads host memory in place (an accelerator copies it)")
def test_xla_reads_an_aligned_array_where_it_lies(aligned, rng):
    # What the allocator is for: XLA's CPU client uses a 64-byte-aligned NumPy array as the
    # buffer itself, and copies a 16-byte-aligned one (NumPy's own allocator).
    x = rng.standard_normal(1 << 20)
    assert rl.is_aligned(x)
    off = np.empty(x.size + 2)[2:]  # 16 bytes past a 64-byte boundary
    off[...] = x
    assert not rl.is_aligned(off)
    with backend.x64_scope(True):  # float64 kept as it is
        assert jax.device_put(x).unsafe_buffer_pointer() == x.ctypes.data
        assert jax.device_put(off).unsafe_buffer_pointer() != off.ctypes.data


def _axpy_in_place(a, x, y):
    y += a * x
    return y.sum()


def test_a_compiled_update_of_aligned_arrays_equals_numpys(aligned, rng):
    # 8 MB arrays, made aligned: y is read in place, not donated (donate='auto'), updated in the
    # caller's array; the same call on NumPy's own arrays gives the same values.
    jf = rl.jit(_axpy_in_place)
    for _ in range(3):
        x, y = rng.standard_normal(1 << 20), rng.standard_normal(1 << 20)
        want_y = y + 1.5 * x
        want_sum = want_y.sum()
        got = jf(1.5, x, y)
        assert_close(y, want_y, float_rtol(np.float64, 1e-14))  # XLA may fuse an FMA
        assert got == pytest.approx(want_sum, rel=1e-12)
        np.testing.assert_array_equal(x, x.copy())
    assert jf.last.compiled.donated_args == (False, False)
    rl.use_aligned_arrays(False)
    x, y = rng.standard_normal(1 << 20), rng.standard_normal(1 << 20)
    y_unaligned = np.empty(y.size + 2)[2:]
    y_unaligned[...] = y
    jf(1.5, x, y_unaligned)
    assert_close(y_unaligned, y + 1.5 * x, float_rtol(np.float64, 1e-14))


def test_without_a_c_compiler_the_allocator_is_refused_with_the_reason(tmp_path):
    script = textwrap.dedent("""
        import numpy as np
        import reactant_lab as rl
        try:
            rl.use_aligned_arrays()
        except rl.AlignedArraysUnavailable as exc:
            print("refused:", exc)
        from numpy._core import multiarray
        print("handler:", multiarray.get_handler_name())
        print("sum:", np.arange(10.0).sum())
    """)
    env = child_env(REACTANT_LAB_CACHE=str(tmp_path / "cache"), PATH=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300, check=True)
    out = done.stdout
    assert "refused:" in out and "C compiler" in out and "Install one" in out, out
    assert "handler: default_allocator" in out and "sum: 45.0" in out


def test_the_library_is_built_once_into_the_cache(tmp_path):
    script = ("import reactant_lab as rl, numpy as np; rl.use_aligned_arrays(); "
              "print(rl.is_aligned(np.ones(5)))")
    env = child_env(REACTANT_LAB_CACHE=str(tmp_path))
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=env, timeout=300, check=True)
        assert done.stdout.strip() == "True"
        assert len(list(tmp_path.glob("aligned_alloc-*"))) == 1  # no leftover build folders


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="Linux's /proc only")
def test_freed_arrays_give_their_memory_back(aligned):
    # 2 GB made and dropped one 1 MB array at a time (and 200 grown by realloc): a leak of each
    # block would keep them; the resident size stays within a few arrays of where it started.
    for _ in range(50):
        np.ones(1 << 17)  # warm the C library's free lists
    before = _resident_bytes()
    for i in range(2000):
        a = np.full(1 << 17, float(i))
        if i % 10 == 0:
            a.resize(1 << 18, refcheck=False)
        assert a[0] == i
        del a
    assert _resident_bytes() - before < 64 << 20


def test_an_unwritable_cache_builds_into_a_private_temporary_folder(tmp_path):
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    script = ("import reactant_lab as rl, numpy as np; from reactant_lab import host_memory; "
              "rl.use_aligned_arrays(); print(rl.is_aligned(np.ones(5)), "
              "host_memory._Once.installed.library._name)")
    env = child_env(REACTANT_LAB_CACHE=str(blocker / "cache"))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300, check=True)
    aligned, library = done.stdout.split()
    assert aligned == "True" and "reactant_lab-" in library and str(blocker) not in library


def test_stream_copy_writes_every_byte_at_any_offset_and_refuses_what_it_cannot_copy(rng):
    """The non-temporal copy of a large write-back: every byte of the target, whatever the
    start addresses (its head and tail are copied apart from the 64-byte blocks); arrays that
    are not C-contiguous, of other shapes or dtypes, or that overlap are left to NumPy."""
    if host_memory.available() is not None:
        pytest.skip(host_memory.available())
    raw = rng.integers(0, 256, 4096 + 300, dtype=np.uint8)
    for _ in range(30):
        n, start, at = int(rng.integers(0, 4097)), *(int(v) for v in rng.integers(0, 301, 2))
        target = np.zeros(4096 + 300, np.uint8)
        before = target.copy()
        assert host_memory.stream_copy(target[at:at + n], raw[start:start + n])
        before[at:at + n] = raw[start:start + n]
        np.testing.assert_array_equal(target, before)  # and nothing outside it
    x = rng.standard_normal((300, 70))
    y = np.zeros_like(x)
    assert host_memory.stream_copy(y, x) and np.array_equal(y, x)
    for target, source in ((np.zeros((70, 300)).T, x), (np.zeros_like(x), x.T.copy().T),
                           (np.zeros(x.size), x), (np.zeros(x.shape, np.float32), x),
                           (x[1:], x[:-1])):
        kept = target.copy()
        assert not host_memory.stream_copy(target, source)
        np.testing.assert_array_equal(target, kept)


PAGE = os.sysconf("SC_PAGESIZE") if hasattr(os, "sysconf") else 4096
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="memory pages trade places on Linux only (mremap)")


def _in_page_at(nbytes: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """A uint8 array of its own memory (NumPy's default allocator), and a view of ``nbytes``
    of it starting ``offset`` bytes into a page, with a page to spare at either side."""
    raw = np.zeros(nbytes + 4 * PAGE, np.uint8)
    start = (-raw.ctypes.data) % PAGE + PAGE + offset
    return raw, raw[start:start + nbytes]


def _maps() -> int:
    with open("/proc/self/maps") as maps:
        return sum(1 for _ in maps)


@linux_only
def test_swap_pages_writes_every_byte_at_any_offset_and_nothing_else(rng, monkeypatch):
    """The write-back of a result nothing else reads: the whole pages inside the target trade
    places with the spare's, the partial ones at either end are copied; every byte of the
    target gets the spare's value, and the bytes around it (other arrays' memory in its first
    and last pages) keep theirs. Views of the target see the new values."""
    monkeypatch.setattr(host_memory, "SWAP_MIN_BYTES", 2 * PAGE)
    for trial in range(40):
        offset = int(rng.integers(0, PAGE // 64)) * 64 if trial % 4 else 0
        nbytes = int(rng.integers(2 * PAGE, 9 * PAGE)) // 8 * 8 if trial % 3 else 8 * PAGE
        raw, target = _in_page_at(nbytes, offset)
        raw[:] = rng.integers(0, 256, raw.size, dtype=np.uint8)
        _, spare = _in_page_at(nbytes, offset)
        spare[:] = rng.integers(0, 256, nbytes, dtype=np.uint8)
        want, new = raw.copy(), spare.copy()
        view = target[PAGE + 8:PAGE + 72]
        assert host_memory.swap_pages(target.view(np.float64), spare.view(np.float64))
        want[target.ctypes.data - raw.ctypes.data:][:nbytes] = new
        np.testing.assert_array_equal(raw, want)
        np.testing.assert_array_equal(view, new[PAGE + 8:PAGE + 72])


@linux_only
def test_trading_pages_again_and_again_keeps_the_process_mappings_and_stops_at_a_limit(
        rng, monkeypatch):
    """An array updated call after call trades pages with the same kept buffer: the process's
    memory mappings stay as many. Should trades split them past the limit (``_Mappings``),
    trading stops and every write-back is a copy, still right."""
    monkeypatch.setattr(host_memory, "SWAP_MIN_BYTES", 2 * PAGE)
    _, target = _in_page_at(64 * PAGE, 64)
    _, spare = _in_page_at(64 * PAGE, 64)
    counts = []
    for _ in range(300):
        new = rng.integers(0, 256, target.size, dtype=np.uint8)
        spare[:] = new
        assert host_memory.swap_pages(target, spare)
        np.testing.assert_array_equal(target, new)
        counts.append(_maps())
    assert max(counts[50:]) <= counts[50] + 2
    monkeypatch.setattr(host_memory._Mappings, "ceiling", _maps() - 1)
    monkeypatch.setattr(host_memory._Mappings, "trades", 0)
    monkeypatch.setattr(host_memory._Mappings, "stopped", False)
    spare[:], before = 7, target.copy()
    assert not host_memory.swap_pages(target, spare) and host_memory._Mappings.stopped
    np.testing.assert_array_equal(target, before)


@linux_only
def test_swap_pages_refuses_memory_that_is_not_mallocs_and_what_it_cannot_trade(
        rng, tmp_path, monkeypatch):
    """Refused, nothing changed (the caller copies): a memory-mapped file (its pages are the
    file's), a buffer NumPy does not own, different offsets within a page, less than
    SWAP_MIN_BYTES, arrays that are not C-contiguous, read-only or overlapping, other
    shapes or dtypes, and every trade while REACTANT_LAB_NO_PAGE_SWAP is set."""
    n = host_memory.SWAP_MIN_BYTES // 8 + 1000
    spare_raw = np.zeros(n + 3 * PAGE // 8)
    spare = spare_raw[(-spare_raw.ctypes.data) % PAGE // 8:][:n]
    spare[:] = rng.standard_normal(n)
    mapped = np.memmap(tmp_path / "file", dtype=np.float64, mode="w+", shape=(n,))
    mapped[:] = 1.0
    foreign = np.frombuffer(bytearray(8 * n + PAGE), np.float64, n)
    raw = np.zeros(n + 3 * PAGE // 8)
    same = raw[(-raw.ctypes.data) % PAGE // 8:][:n]
    shifted = raw[(-raw.ctypes.data) % PAGE // 8 + 1:][:n]
    small = same[:2 * PAGE // 8]
    frozen = same.copy()
    frozen.flags.writeable = False
    refused = [(mapped, spare), (foreign, spare), (shifted, spare), (small, spare[:small.size]),
               (same.reshape(-1, 8)[:, ::2], spare.reshape(-1, 8)[:, ::2]), (frozen, spare),
               (same.reshape(-1, 8), spare), (same.astype(np.float32), spare.astype(np.float32)
                                              .view(np.float64)[:n // 2].view(np.float32)),
               (spare_raw[:n], spare)]
    for target, source in refused:
        before, kept = np.array(target), np.array(source)
        assert not host_memory.swap_pages(target, source)
        np.testing.assert_array_equal(target, before)
        np.testing.assert_array_equal(source, kept)
    mapped.flush()
    assert np.all(np.fromfile(tmp_path / "file", np.float64) == 1.0)
    monkeypatch.setenv(host_memory.NO_SWAP_VAR, "1")
    assert not host_memory.swap_pages(same, spare)
    monkeypatch.delenv(host_memory.NO_SWAP_VAR)
    new = spare.copy()
    assert host_memory.swap_pages(same, spare)
    np.testing.assert_array_equal(same, new)


@linux_only
def test_a_large_write_back_trades_pages_and_every_call_writes_numpys_values(aligned, rng,
                                                                             monkeypatch):
    """A kernel's large updated arrays are computed into kept buffers nothing else reads: the
    write-back offers their pages to trade places with the caller's arrays' instead of being
    copied, and call after call (a kept buffer then holding a caller's old pages) the arrays
    hold NumPy's values; a result handed back keeps its values through the calls after it."""
    def clip_twice(a, b):
        np.clip(a, -0.5, 0.5, out=a)
        b *= 2.0
        return b.copy()

    offered = []
    swap = host_memory.swap_pages

    def spy(target, spare):
        offered.append(target.nbytes)
        return swap(target, spare)

    monkeypatch.setattr(host_memory, "swap_pages", spy)
    jf = rl.jit(clip_twice)
    results = []
    for _ in range(4):
        a, b = rng.standard_normal((1024, 700)), rng.standard_normal((1024, 700))
        want_a, want_b = a.copy(), b.copy()
        want = clip_twice(want_a, want_b)
        got = jf(a, b)
        np.testing.assert_array_equal(a, want_a)
        np.testing.assert_array_equal(b, want_b)
        np.testing.assert_array_equal(got, want)
        results.append((got, want))
    for got, want in results:
        np.testing.assert_array_equal(got, want)
    assert jf.last.compiled.kept == ("args[0]", "args[1]")
    assert len(offered) == 8 and set(offered) == {a.nbytes}


def _four_updates(a, b, c, d):
    a[a < 0] = 0.0
    b += 1.0
    np.clip(c, -0.5, 0.5, out=c)
    d *= 2.0


def _one_update(a):
    a[a > 0.5] = 1.0


@linux_only
def test_kernels_updating_arrays_of_one_shape_share_kept_buffers_and_every_array_trades(
        aligned, rng, monkeypatch):
    """A kernel updating four arrays of one shape under two presets, and another kernel
    updating one of that shape, take their kept buffers from one pool: after the first calls
    every write-back trades its pages (none is copied for a buffer elsewhere in its page than
    the caller's array), and every array holds NumPy's values."""
    traded = []
    swap = host_memory.swap_pages

    def spy(target, spare):
        traded.append(swap(target, spare))
        return traded[-1]

    monkeypatch.setattr(host_memory, "swap_pages", spy)
    shape = (1000, 700 + int(rng.integers(0, 50)))  # 5.6 MB or more of float64: kept
    calls = [(rl.jit(_four_updates), 4), (rl.jit(_four_updates, optimize="none"), 4),
             (rl.jit(_one_update), 1)]
    for rounds in range(4):
        if rounds == 2:
            traded.clear()
        for jf, n in calls:
            args = [rng.standard_normal(shape) for _ in range(n)]
            want = [x.copy() for x in args]
            (_four_updates if n == 4 else _one_update)(*want)
            jf(*args)
            for k, (x, y) in enumerate(zip(args, want, strict=True)):
                np.testing.assert_array_equal(x, y, err_msg=f"argument {k}")
    assert all(jf.last.compiled.kept for jf, _ in calls)
    assert traded == [True] * 18


@linux_only
def test_arrays_of_a_size_start_where_the_spares_offered_for_it_do_in_turn(
        aligned, rng, monkeypatch):
    """A kept buffer of XLA's in the C library's heap may start anywhere in its page: refused
    a trade for that, the allocator starts the next arrays of the target's size where the
    spare does, and those trade. Several spares of one size (a kernel updating several arrays
    of it) have their offsets taken in turn by successive arrays; a spare no longer offered
    drops out."""
    for name, value in (("seen", {}), ("offers", {}), ("chosen", {})):
        monkeypatch.setattr(host_memory._Offsets, name, value)
    n = host_memory.SWAP_MIN_BYTES // 8 + int(rng.integers(1, 500))
    raw = np.zeros(n + 3 * PAGE // 8)

    def spare_at(offset):
        return raw[((-raw.ctypes.data + offset) % PAGE) // 8:][:n]

    first = rng.standard_normal(n)  # the allocator's: 64 bytes into its page
    assert first.ctypes.data % PAGE == 64
    spare = spare_at(448)
    assert not host_memory.swap_pages(first, spare)
    fresh = np.empty(n)
    assert fresh.ctypes.data % PAGE == 448
    spare[:] = rng.standard_normal(n)
    want = spare.copy()
    assert host_memory.swap_pages(fresh, spare)
    np.testing.assert_array_equal(fresh, want)
    other = np.zeros(n + PAGE // 8)  # a second spare, apart from the first
    other = other[((-other.ctypes.data + 1024) % PAGE) // 8:][:n]
    assert not host_memory.swap_pages(np.empty(n), other)
    starts = sorted(np.empty(n).ctypes.data % PAGE for _ in range(4))
    assert starts == [448, 448, 1024, 1024]  # both, in turn
    for _ in range(host_memory._Offsets.WINDOW + 12):  # the first spare no longer offered
        host_memory.swap_pages(np.empty(n), other)
    assert {np.empty(n).ctypes.data % PAGE for _ in range(4)} == {1024}
    assert np.empty(n + 1).ctypes.data % PAGE == 64  # other sizes keep the default
