"""A compiled NumPy kernel's call checks what JAX's dispatch cannot: an argument the executable
does not take (an array the kernel overwrites whole) must still have the traced shape and dtype,
so ``jit`` traces again for another one and gives NumPy's answer, and ``Compiled`` refuses it."""

from __future__ import annotations

import numpy as np
import pytest

import reactant_lab as rl
from tests.conftest import assert_close, assert_values_equal


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


def axpy(a, x, y):
    y += a * x
    return y.max()


def test_later_calls_on_fresh_arrays_give_numpys_results(rng):
    """Every later call of a jit kernel on NumPy arrays takes the per-call path (no flattening,
    the checks inlined): results and in-place effects stay NumPy's, on fresh inputs each time,
    whether the arrays own their memory or are views of another array."""
    jitted = rl.jit(axpy)
    for k in range(4):
        a, x = rng.random(6), rng.random(6)
        if k % 2:  # views that share no element, of one array
            m = rng.random((2, 6))
            x, y = m[0], m[1]
        else:
            y = rng.random(6)
        want_y = y.copy()
        want = axpy(a, x, want_y)
        got = jitted(a, x, y)
        assert_close(y, want_y, rtol=1e-12)
        assert type(got) is np.float64 and got == pytest.approx(want)
    assert jitted.cache_size == 1


def test_the_same_array_twice_on_a_later_call_is_refused(rng):
    """Two arrays that each own their memory are apart unless they are the same array."""
    jitted = rl.jit(axpy)
    jitted(rng.random(6), rng.random(6), rng.random(6))
    y = rng.random(6)
    before = y.copy()
    with pytest.raises(rl.UnsupportedArgumentError, match=r"args\[2\] is updated in place and "
                                                          r"shares memory with args\[1\]"):
        jitted(rng.random(6), y, y)
    np.testing.assert_array_equal(y, before)


def test_a_later_call_with_a_read_only_updated_array_is_refused(rng):
    jitted = rl.jit(axpy)
    jitted(rng.random(6), rng.random(6), rng.random(6))
    y = rng.random(6)
    y.flags.writeable = False
    with pytest.raises(rl.UnsupportedArgumentError, match=r"args\[2\] must be a writable NumPy"):
        jitted(rng.random(6), rng.random(6), y)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_a_later_call_with_another_dtype_or_shape_traces_again(dtype, rng):
    jitted = rl.jit(axpy)
    jitted(rng.random(6), rng.random(6), rng.random(6))
    a, x, y = ((rng.random(9) * 10).astype(dtype) for _ in range(3))
    want_y = y.copy()
    want = axpy(a, x, want_y)
    got = jitted(a, x, y)
    assert jitted.cache_size == 2
    assert_close(y, want_y, rtol=1e-6)
    assert got == pytest.approx(want, rel=1e-6)
    a, x, y = rng.random(6), rng.random(6), rng.random(6)  # back to the first signature
    want_y = y.copy()
    want = axpy(a, x, want_y)
    assert jitted(a, x, y) == pytest.approx(want)
    assert_close(y, want_y, rtol=1e-12)
    assert jitted.cache_size == 2


def test_a_later_call_in_another_memory_layout_traces_again(rng):
    """A kernel whose views depend on the layout (a ravel) is traced per layout."""
    def flat_update(m, out):
        out[:] = m.ravel()[: out.size] * 2.0

    jitted = rl.jit(flat_update)
    m = rng.random((3, 4))
    jitted(m, np.zeros(5))
    for arr in (np.asfortranarray(rng.random((3, 4))), rng.random((3, 4))):
        out, want = np.zeros(5), np.zeros(5)
        flat_update(arr, want)
        jitted(arr, out)
        assert_values_equal(out, want)
    assert jitted.cache_size == 2


def two_updates(A, u, v):
    A += np.outer(u, v)
    u *= 2.0
    return A.sum(axis=0), u.max(), A[0]


def test_later_calls_updating_two_arrays_and_returning_several_results(rng):
    """The per-call path's general rebuild and write-back: two arrays updated in place, a
    tuple of an array, a scalar and a row that is, as in NumPy, a view of the caller's A."""
    jitted = rl.jit(two_updates)
    for _ in range(3):
        A, u, v = rng.random((5, 4)), rng.random(5), rng.random(4)
        wA, wu = A.copy(), u.copy()
        want = two_updates(wA, wu, v.copy())
        got = jitted(A, u, v)
        assert_close(A, wA, rtol=1e-12)
        assert_close(u, wu, rtol=1e-12)
        assert isinstance(got, tuple) and len(got) == 3
        for g, w in zip(got, want, strict=True):
            assert_close(g, w, rtol=1e-12)
        assert type(got[1]) is np.float64
        assert np.shares_memory(got[2], A)
    assert jitted.cache_size == 1


def scaled_update(alpha, C, A, beta, steps):
    for _ in range(steps):
        C *= beta
        C += alpha * (A @ A.T)
    return C.trace()


def test_later_calls_with_python_numbers_among_the_arrays(rng):
    """A kernel taking Python numbers beside its arrays (syrk's alpha and beta, a step count)
    takes the per-call path too: a later call with the same numbers gives NumPy's result, one
    with another number (or the same number as another type, 2 for 2.0) is traced again, and
    each signature's executable is used again after (a NaN too, though NaN != NaN)."""
    jitted = rl.jit(scaled_update)
    calls = [(1.5, 0.5, 2), (1.5, 0.5, 2), (2.5, 0.5, 2), (1.5, 0.5, 3), (1.5, 0.5, 2),
             (2, 0.5, 2), (2.0, 0.5, 2), (float("nan"), 0.5, 2), (float("nan"), 0.5, 2)]
    for alpha, beta, steps in calls:
        C, A = rng.random((5, 5)), rng.random((5, 3))
        want_C = C.copy()
        want = scaled_update(alpha, want_C, A.copy(), beta, steps)
        got = jitted(alpha, C, A, beta, steps)
        assert_close(C, want_C, rtol=1e-12)
        assert got == pytest.approx(want, rel=1e-12, nan_ok=True)
    assert jitted.cache_size == 6  # (1.5, 2), (2.5, 2), (1.5, 3), (2, 2), (2.0, 2), (nan, 2)


def test_a_call_turns_64_bit_types_on_for_itself_only(rng):
    """The lean path sets JAX's 64-bit flag for the executable's call and restores it after,
    also when the call fails: the caller's JAX code keeps its own types."""
    import jax
    import jax.numpy as jnp

    x, y = rng.random(8), np.zeros(8)
    jitted = rl.jit(overwrite)
    with jax.enable_x64(False):  # the caller's choice, whatever the process default
        for _ in range(3):  # the first call builds, the next ones take the lean path
            got = jitted(x, y)
            assert type(got) is np.float64 and got == pytest.approx(x.sum())
            assert jnp.zeros(1).dtype == np.float32 and not jax.config.jax_enable_x64
        assert_values_equal(y, x * 2.0 + 1.0)
        with pytest.raises(ValueError):  # an executable refusing its input, on the lean path
            jitted(rng.random(9), np.zeros(8))
        assert jnp.zeros(1).dtype == np.float32 and not jax.config.jax_enable_x64
        with jax.enable_x64(True):  # already on: it stays on
            jitted(x, y)
            assert jnp.zeros(1).dtype == np.float64
        assert jnp.zeros(1).dtype == np.float32



def _scale_in_place(a, b):
    a *= 1.5
    a += b
    b -= 1.0


def _scale_one(a, b):
    a *= 1.5
    a += b


@pytest.mark.parametrize("layout", ["C", "F", "strided", "1-D"])
@pytest.mark.parametrize("kernel", [_scale_in_place, _scale_one])
def test_large_updated_arrays_are_written_back_whole_in_two_halves(kernel, layout, rng,
                                                                   monkeypatch):
    """An updated array from PARALLEL_COPY_MIN bytes up is copied back in two halves at once
    (lowered here so that small arrays take that path, in every layout; one updated array is
    written by the lean call path itself, two by the general write-back): every element lands,
    on the first call and the later ones."""
    import reactant_lab.compile as compiled

    monkeypatch.setattr(compiled, "PARALLEL_COPY_MIN", 0)
    n, m = int(rng.integers(7, 40)), int(rng.integers(5, 30))
    make = {"C": lambda: rng.standard_normal((n, m)),
            "F": lambda: np.asfortranarray(rng.standard_normal((n, m))),
            "strided": lambda: rng.standard_normal((2 * n, m + 3))[::2, 1:m + 1],
            "1-D": lambda: rng.standard_normal(n * m)}[layout]
    jf = rl.jit(kernel)
    for _ in range(3):  # the first call (full path) and later ones (the lean path)
        a, b = make(), make()
        want_a, want_b = a.copy(), b.copy()
        kernel(want_a, want_b)
        jf(a, b)
        np.testing.assert_allclose(a, want_a, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(b, want_b, rtol=1e-13, atol=1e-13)


def test_a_large_update_in_place_at_full_size(rng):
    import reactant_lab.compile as compiled

    a = rng.standard_normal(compiled.PARALLEL_COPY_MIN // 8 + int(rng.integers(1, 1000)))
    b = rng.standard_normal(a.shape)
    want_a, want_b = a * 1.5 + b, b - 1.0
    rl.jit(_scale_in_place)(a, b)
    np.testing.assert_allclose(a, want_a, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(b, want_b, rtol=1e-13, atol=1e-13)


def test_copy_into_writes_every_shape_and_layout_whole(rng, monkeypatch):
    import reactant_lab.compile as compiled

    monkeypatch.setattr(compiled, "PARALLEL_COPY_MIN", 0)
    for target in (np.zeros((6, 5)), np.zeros((6, 5), order="F"), np.zeros((1, 9)),
                   np.zeros((2, 3, 4))[:, ::2], np.zeros(()), np.zeros((0, 3))):
        host = rng.standard_normal(target.shape)
        compiled.copy_into(target, host)
        np.testing.assert_array_equal(target, host)


MAIN = """module @m {{
  func.func public @main(%arg0: tensor<4xf64> loc("args[0]"), %arg1: tensor<4xf64>) -> (tensor<4xf64>) {{
{body}
  }}
  func.func private @helper(%arg0: tensor<4xf64>, %arg1: tensor<4xf64>) -> tensor<4xf64> {{
    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf64>
    return %0 : tensor<4xf64>
  }}
}}
"""


@pytest.mark.parametrize(("body", "every"), [
    ("    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf64>\n    return %0 : tensor<4xf64>", True),
    # %arg1 read only inside a region of @main (regions number their arguments on)
    ("    %0 = stablehlo.reduce(%arg0 init: %c) applies stablehlo.add across dimensions = [0]"
     "\n    %1 = stablehlo.map %arg1 (%arg2: tensor<f64>) { stablehlo.return %arg2 }"
     "\n    return %arg0 : tensor<4xf64>", True),
    # %arg1 read only by @helper's own %arg1, and %arg10 is not %arg1
    ("    %0 = call @helper(%arg0, %arg0) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>"
     "\n    %arg10 = stablehlo.add %0, %0 : tensor<4xf64>\n    return %0 : tensor<4xf64>", False),
])
def test_the_text_check_of_read_arguments_never_misses_an_unread_one(body, every):
    from reactant_lab import _backend_text
    assert _backend_text.main_reads_every_arg(MAIN.format(body=body)) is every
