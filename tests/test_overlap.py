"""NumPy mode: arguments updated in place may be disjoint views of one array (NumPy's answer
comes out); arguments that really overlap are refused with a clear message, when tracing and on
every call of a compiled kernel; an overlap too costly to decide exactly is refused too."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import reactant_lab as rl
from reactant_lab.trace.numpy_mode.overlap import MAX_WORK, overlap
from tests.conftest import assert_values_equal


def update_both(a, b):
    a += 1.5
    b *= 2.0
    b += a  # reads the other argument after its update


def _views(base, kind):
    if kind == "columns":
        return base[:, 0], base[:, 1]
    return base[0::2], base[1::2]


def _base(rng, kind):
    return rng.random((5, 3)) if kind == "columns" else rng.random(10)


@pytest.mark.parametrize("optimize", ["none", "all"])
@pytest.mark.parametrize("kind", ["columns", "interleaved"])
def test_disjoint_views_of_one_array_are_updated_as_numpy_does(kind, optimize, rng):
    base = _base(rng, kind)
    want = base.copy()
    update_both(*_views(want, kind))
    assert np.may_share_memory(*_views(base, kind))  # a bounds check alone would refuse them
    rl.jit(update_both, optimize=optimize)(*_views(base, kind))
    assert_values_equal(base, want)


@pytest.mark.parametrize("first_call", ["separate arrays", "disjoint views"])
@pytest.mark.parametrize("kind", ["columns", "interleaved"])
def test_a_later_call_of_a_cached_jit_takes_disjoint_views(kind, first_call, rng):
    compiled = rl.jit(update_both, optimize="none")
    if first_call == "separate arrays":  # traced without any overlap to judge
        compiled(rng.random(5), rng.random(5))
    else:
        compiled(*_views(_base(rng, kind), kind))
    base = _base(rng, kind)
    want = base.copy()
    update_both(*_views(want, kind))
    compiled(*_views(base, kind))
    assert compiled.cache_size == 1
    assert_values_equal(base, want)


def test_overlapping_views_are_refused_when_tracing(rng):
    base = rng.random(8)
    before = base.copy()
    with pytest.raises(rl.UnsupportedArgumentError) as info:
        rl.jit(update_both, optimize="none")(base[:5], base[3:])
    assert str(info.value).startswith("args[0] is updated in place and shares memory with "
                                      "args[1]")
    assert "Pass separate arrays (e.g. args[1].copy())" in str(info.value)
    np.testing.assert_array_equal(base, before)


def test_overlapping_views_are_refused_on_a_later_call(rng):
    compiled = rl.jit(update_both, optimize="none")
    compiled(rng.random(4), rng.random(4))
    base = rng.random(8)
    before = base.copy()
    with pytest.raises(rl.UnsupportedArgumentError, match=r"args\[0\] is updated in place and "
                                                          r"shares memory with args\[1\]"):
        compiled(base[:4], base[2:6])
    np.testing.assert_array_equal(base, before)  # nothing written back


def test_an_updated_argument_overlapping_a_read_only_one_is_refused(rng):
    def kernel(a, b):
        a += b

    base = rng.random(6)
    with pytest.raises(rl.UnsupportedArgumentError, match=r"args\[0\] .*shares memory with "
                                                          r"args\[1\]"):
        rl.jit(kernel, optimize="none")(base[:4], base[2:])


def test_reading_disjoint_views_of_one_array_is_fine(rng):
    def kernel(a, b):
        a += b

    base = rng.random((4, 2))
    want = base.copy()
    kernel(want[:, 0], want[:, 1])
    rl.jit(kernel, optimize="none")(base[:, 0], base[:, 1])
    assert_values_equal(base, want)


def _hard_pair():
    """Two strided views of one buffer that share no element, which np.shares_memory cannot
    decide within MAX_WORK (found by search; their bounds overlap)."""
    memory = np.zeros(200_000, np.int8)
    a = as_strided(memory, (10, 3, 19), (116, 2758, 481))
    b = as_strided(memory[281:], (11, 6, 19), (1332, 1763, 525))
    return a, b


def test_the_hard_pair_really_is_hard_and_disjoint():
    a, b = _hard_pair()
    assert not np.shares_memory(a, b)
    with pytest.raises(np.exceptions.TooHardError):
        np.shares_memory(a, b, max_work=MAX_WORK)


def test_an_overlap_too_costly_to_decide_is_refused():
    def kernel(a, b):
        a += 1

    a, b = _hard_pair()
    with pytest.raises(rl.UnsupportedArgumentError) as info:
        rl.jit(kernel, optimize="none")(a, b)
    assert "may share memory with (np.shares_memory could not decide it within max_work=" in (
        str(info.value))


def test_overlap_decides_exactly(rng):
    m = rng.random((4, 4))
    assert overlap(m[:, 0], m[:, 1]) is None
    assert overlap(m[0::2], m[1::2]) is None
    assert overlap(m[:2], rng.random(3)) is None
    assert overlap(m[:, 0], m[1]) == "shares memory with"
    assert overlap(m, m.T) == "shares memory with"
