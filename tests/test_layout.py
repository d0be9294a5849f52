"""Memory layout is part of a NumPy-mode call's signature where NumPy's view-or-copy rule
depends on it: a kernel writing through ravel() / reshape() gives NumPy's answer on C-order,
Fortran-order, strided and reversed arguments, on a fresh jit and on a cached one."""

from __future__ import annotations

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.errors import SignatureMismatchError
from reactant_lab.trace.paths import memory_layout
from tests.conftest import assert_close, assert_values_equal


def ravel_write(a):
    a.ravel()[:] = np.arange(a.size) + 1.0


def reshape_write(a):
    a.reshape(-1)[1::2] = -1.0
    return a.sum()


def reshape_rows(a):
    r = a.reshape(3, -1)
    r[0] += 10.0
    return r


def increment(a):
    a += 1.0


def layouts(rng):
    """The same (4, 6) values laid out five ways; each comes with the base the caller holds."""
    values = rng.random((4, 6))
    c = values.copy()
    f = np.asfortranarray(values)
    base = rng.random((8, 12))
    strided = base[::2, ::2]
    strided[...] = values
    rev_base = rng.random((4, 6))
    rev = rev_base[::-1, ::-1]
    rev[...] = values
    return {"C": (c, c), "F": (f, f), "strided": (strided, base), "reversed": (rev, rev_base)}


def check(kernel, jitted, arg, base):
    """Call ``jitted(arg)`` and ``kernel`` on a copy of the caller's memory laid out the same
    way; the caller's whole base array and the result must agree."""
    want_base = base.copy(order="K")
    offset = arg.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    want_arg = np.ndarray(arg.shape, arg.dtype, buffer=want_base, offset=offset,
                          strides=arg.strides)
    want_out = kernel(want_arg)
    got_out = jitted(arg)
    assert_values_equal(base, want_base)  # float64: exact on the CPU
    if want_out is not None:
        assert_close(np.asarray(got_out), np.asarray(want_out), rtol=1e-12)


@pytest.mark.parametrize("kernel", [ravel_write, reshape_write, reshape_rows])
@pytest.mark.parametrize("preset", ["none", "all"])
def test_one_jit_called_with_every_layout_gives_numpys_answer(kernel, preset, rng):
    jitted = rl.jit(kernel, optimize=preset)
    for name, (arg, base) in layouts(rng).items():
        check(kernel, jitted, arg, base)
        assert jitted.last.traced.layout.layout_deps, name


@pytest.mark.parametrize("first", ["F", "strided", "reversed"])
def test_a_fresh_jit_on_a_non_c_layout_gives_numpys_answer(first, rng):
    arg, base = layouts(rng)[first]
    check(ravel_write, rl.jit(ravel_write), arg, base)


def test_a_strided_views_ravel_write_does_not_reach_the_callers_base(rng):
    base = rng.random((4, 3))
    before = base.copy()
    rl.jit(ravel_write)(base[::2])
    np.testing.assert_array_equal(base, before)


def test_a_kernel_that_ignores_layout_compiles_once_for_all_layouts(rng):
    jitted = rl.jit(increment)
    for _name, (arg, base) in layouts(rng).items():
        check(increment, jitted, arg, base)
    assert jitted.cache_size == 1 and jitted.last.traced.layout.layout_deps == ()


def test_a_compiled_call_with_another_layout_is_refused(rng):
    c = rng.random((2, 3))
    compiled = rl.trace(ravel_write, c).stages("none").compile()
    f = np.asfortranarray(rng.random((2, 3)))
    before = f.copy()
    with pytest.raises(SignatureMismatchError, match=r"args\[0\]: traced for a C-contiguous "
                                                     "array, called with a F-contiguous"):
        compiled(f)
    np.testing.assert_array_equal(f, before)


@pytest.mark.parametrize("first", ["C", "F", "strided", "reversed"])
def test_a_compiled_kernel_refuses_a_layout_its_views_were_not_traced_for(first, rng):
    """Also when the kernel updates nothing in place (JAX's own dispatch runs it, and checks
    shapes and dtypes only): a reshape that was a copy for one layout is a view for another."""
    arg, _ = layouts(rng)[first]
    compiled = rl.trace(reshape_write, arg).stages("none").compile()
    for other, _ in layouts(rng).values():
        if memory_layout(other) == memory_layout(arg):
            continue
        with pytest.raises(SignatureMismatchError, match="laid out another way"):
            compiled(other)
