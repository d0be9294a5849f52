"""A compiled NumPy kernel's call checks what JAX's dispatch cannot: an argument the executable
does not take (an array the kernel overwrites whole) must still have the traced shape and dtype,
so ``jit`` traces again for another one and gives NumPy's answer, and ``Compiled`` refuses it."""

from __future__ import annotations

import numpy as np
import pytest

import reactant_lab as rl


def overwrite(x, y):
    y[:] = x * 2.0 + 1.0
    return x.sum()


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.complex64])
def test_jit_traces_again_for_an_overwritten_array_of_another_dtype(dtype, rng):
    x = rng.random(8)
    jitted = rl.jit(overwrite)
    jitted(x, np.zeros(8))
    y, want = np.zeros(8, dtype), np.zeros(8, dtype)
    want_sum = overwrite(x, want)
    got_sum = jitted(x, y)
    assert jitted.cache_size == 2
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, want)
    assert type(got_sum) is np.float64 and got_sum == pytest.approx(want_sum)


def test_jit_gives_numpys_error_for_an_overwritten_array_of_another_shape(rng):
    x = rng.random(8)
    jitted = rl.jit(overwrite)
    jitted(x, np.zeros(8))
    y = np.zeros(5)
    with pytest.raises(ValueError, match="could not broadcast"):
        jitted(x, y)
    np.testing.assert_array_equal(y, np.zeros(5))


def test_a_compiled_kernel_refuses_an_overwritten_array_of_another_dtype(rng):
    x = rng.random(8)
    jitted = rl.jit(overwrite)
    jitted(x, np.zeros(8))
    compiled = jitted.last.compiled
    assert compiled.used_args == (0,)  # the optimized executable does not take y
    y = np.zeros(8, np.int64)
    with pytest.raises(rl.SignatureMismatchError, match=r"args\[1\]: compiled for float64\[8\], "
                                                        r"called with int64\[8\]"):
        compiled(x, y)
    np.testing.assert_array_equal(y, np.zeros(8, np.int64))
