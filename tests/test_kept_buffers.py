"""Large updated arrays computed into result buffers kept between calls (compile.kept_results):
every call writes NumPy's values into the caller's arrays, whoever else holds a result."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import compile as rl_compile
from tests.conftest import assert_close

pytestmark = pytest.mark.cpu_only("result buffers are kept on the CPU only (an accelerator's "
                                  "allocator keeps its memory)")

BIG = (1024, 640)
"""5 MiB of float64: above KEPT_RESULT_MIN_BYTES."""


def _mask_update(a, b, m):
    a[m] = b[m] * 2 + 1
    np.clip(b, -1.0, 1.0, out=b)
    return a.sum()


def _inputs(rng, p=0.5):
    """Two large float64 arrays and a mask True with probability ``p``."""
    return rng.standard_normal(BIG), rng.standard_normal(BIG), rng.random(BIG) < p


def _check(jf, args):
    ref = [x.copy() for x in args]
    got = jf(*args)
    want = _mask_update(*ref)
    for k, (x, y) in enumerate(zip(args, ref, strict=True)):
        np.testing.assert_array_equal(x, y, err_msg=f"argument {k} after the call")
    assert_close(got, want, rtol=1e-12)


def test_large_updated_arrays_are_kept_and_every_call_writes_numpys_values(rng):
    assert np.prod(BIG) * 8 >= rl_compile.KEPT_RESULT_MIN_BYTES
    jf = rl.jit(_mask_update)
    for p in (0.5, 0.0, 1.0, 0.3):  # masks mixed, all False, all True
        _check(jf, _inputs(rng, p))
    assert jf.cache_size == 1
    compiled = jf.last.compiled
    assert compiled.kept == ("args[0]", "args[1]")
    assert compiled.donated_args == (False, False, False)


def test_small_updated_arrays_are_not_kept(rng):
    jf = rl.jit(_mask_update)
    a, b, m = (x[:8] for x in _inputs(rng))
    _check(jf, (a.copy(), b.copy(), m.copy()))
    assert jf.last.compiled.kept == ()


def test_a_held_result_of_the_executable_is_never_given_up(rng):
    # device_call's run hands back the updated arrays' new values: while one is held, the next
    # runs write elsewhere, and it keeps its values.
    jf = rl.jit(_mask_update)
    args = _inputs(rng)
    jf(*[x.copy() for x in args])
    run, place = jf.last.compiled.device_call(*args)
    held = run(*place()[0])
    values = [np.array(h) for h in held]
    for _ in range(3):
        run(*place()[0])
        _check(jf, _inputs(rng))
    for h, v in zip(held, values, strict=True):
        np.testing.assert_array_equal(np.asarray(h), v)


def test_kept_buffers_under_a_time_limit(rng):
    jf = rl.jit(_mask_update, timeout=60.0)  # guarded calls: on the executable's twin
    for p in (0.5, 0.0):
        _check(jf, _inputs(rng, p))
    assert jf.last.compiled.guarded and jf.last.compiled.kept == ("args[0]", "args[1]")


def test_calls_from_several_threads_each_get_their_own_values(rng):
    jf = rl.jit(_mask_update)
    jf(*_inputs(rng))
    inputs = [_inputs(rng, p) for p in (0.2, 0.5, 0.8, 0.0)]
    refs = [[x.copy() for x in args] for args in inputs]
    got: list[object] = [None] * len(inputs)

    def work(i):
        for _ in range(3):
            args = [x.copy() for x in refs[i]]
            got[i] = (jf(*args), args)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (total, args), ref in zip(got, refs, strict=True):  # type: ignore[misc]
        want = _mask_update(*ref)
        for x, y in zip(args, ref, strict=True):
            np.testing.assert_array_equal(x, y)
        assert_close(total, want, rtol=1e-12)


def test_a_failed_call_leaves_the_arrays_and_the_next_call_works(rng):
    jf = rl.jit(_mask_update)
    _check(jf, _inputs(rng))
    a, b, m = _inputs(rng)
    before = a.copy(), b.copy()
    with pytest.raises(rl.SignatureMismatchError):
        jf.last.compiled(a, b[:, :5], m)
    np.testing.assert_array_equal(a, before[0])
    np.testing.assert_array_equal(b, before[1])
    _check(jf, _inputs(rng))
