"""Differential fuzzing: generated NumPy kernels against NumPy itself, generated JAX functions
against ``jax.jit``, through every preset, on arguments in every memory layout.

The grammar lives in ``tests/fuzz_programs.py``. Each failure message holds the program's source,
the preset, the layouts and the input seed; Hypothesis adds the falsifying example, and
``tests/conftest.py`` the command that replays the test (docs/testing.md).

Tolerances: integer and bool values are compared exactly; floats within
``|got - want| <= rtol * (|want| + scale)``, ``scale`` the largest magnitude in that value,
``rtol = 1024 * eps`` of the least precise float in the program (float32: ~1.2e-4, float64:
~2.3e-13; a float64 result computed from float32 values gets float32's). A miscompile is off by
far more; reassociated sums and fused multiply-adds are not. The control-flow kernels' 16-bit
floats are compared bit for bit (NumPy rounds them at every step; see ``control_flow_programs``).
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import strategies as st

import reactant_lab as rl
from tests.conftest import float_rtol
from tests.fuzz_programs import (
    LAYOUTS,
    Program,
    argument,
    captured_programs,
    control_flow_programs,
    jax_inputs,
    jax_programs,
    laid_out,
    layout_of,
    numpy_programs,
    view,
)

PRESETS = list(rl.PRESETS)
BFLOAT16 = np.dtype("bfloat16")  # ml_dtypes' (JAX registers it with NumPy)
_EXAMPLES = settings.default.max_examples  # per test item; the profile sets it (conftest)
# Shrinking recompiles every candidate (minutes per failure): not within the ci budget.
_PHASES = tuple(p for p in Phase if p is not Phase.shrink or
                settings.get_current_profile_name() != "ci")
FUZZ = settings(deadline=None, phases=_PHASES, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
SEEDS = st.integers(0, 2**32 - 1)


# ---------------------------------------------------------------------------------- comparison

def _rtol(low_precision: bool) -> float:
    return 1024 * float(np.finfo(np.float32 if low_precision else np.float64).eps)


def compare(got, want, rtol: float, what: str) -> str | None:
    """Why ``got`` differs from ``want`` (dtype, shape, values), or None."""
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype != w.dtype:
        return f"{what}: dtype {g.dtype} != NumPy's {w.dtype}"
    if g.shape != w.shape:
        return f"{what}: shape {g.shape} != NumPy's {w.shape}"
    if w.dtype == BFLOAT16:  # exactly representable in float32, where NumPy compares floats
        g, w = g.astype(np.float32), w.astype(np.float32)
    if w.dtype.kind not in "fc":  # complex numbers within rtol too (of the largest modulus)
        if not np.array_equal(g, w):
            return f"{what}: values differ\n  got  {g!r}\n  want {w!r}"
        return None
    rtol = float_rtol(w.dtype, rtol)  # float64 emulated on a TPU: its precision
    finite = np.isfinite(w)
    scale = float(np.max(np.abs(w[finite]), initial=1.0))
    close = np.isclose(g, w, rtol=rtol, atol=rtol * scale, equal_nan=True)
    if not close.all():
        return (f"{what}: values differ beyond rtol={rtol:.1e} at {np.argwhere(~close)[:5].tolist()}"
                f"\n  got  {g!r}\n  want {w!r}")
    return None


def compare_trees(got, want, rtol: float, what: str = "result") -> list[str]:
    """What differs between two result trees: structure, array-or-scalar, then ``compare``."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    if got_tree != want_tree:
        return [f"{what}: structure {got_tree} != {want_tree}"]
    problems = []
    for k, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        if isinstance(w, np.ndarray) != isinstance(g, np.ndarray):
            problems.append(f"{what}[{k}]: {type(g).__name__} where NumPy gives "
                            f"{type(w).__name__}")
        problem = compare(g, w, rtol, f"{what}[{k}]")
        if problem:
            problems.append(problem)
    return problems


def _frame(a: np.ndarray) -> tuple:
    return (id(a), a.dtype, a.shape, a.strides, a.flags.c_contiguous, a.flags.f_contiguous,
            a.flags.writeable, a.flags.owndata)


def fail(program: Program, context: str, problems: list[str]) -> None:
    raise AssertionError("\n".join([
        "reactant_lab and the reference disagree on this program:", "",
        str(program), context, *problems]))


# ---------------------------------------------------------------------------------- NumPy mode

def run_numpy_program(program: Program, preset: str, layouts: tuple[str, ...], seed: int,
                      jitted: rl.JitFunction | None = None, calls: int = 1) -> None:
    """Run ``program`` with NumPy on copies and with reactant_lab on the originals, ``calls``
    times each (an update that happened only while tracing shows on the second); every result
    of the last call, every argument (and captured array) afterwards and every base array
    around a view must agree."""
    rng = np.random.default_rng(seed)
    specs = (*program.args, *program.captured)
    pairs = [laid_out(argument(rng, a), layout, rng)
             for a, layout in zip(specs, layouts, strict=True)]
    ref_pairs = [(base.copy(order="K"), key) for base, key in pairs]
    originals = [base.copy(order="K") for base, _ in pairs]
    arrays = [view(base, key) for base, key in pairs]
    args, n = arrays[:len(program.args)], len(program.args)
    frames = [_frame(a) for a in arrays]
    context = (f"preset={preset!r} layouts={layouts} input seed={seed}\n"
               + "\n".join(f"  {a.name}: {layout_of(x)}" for a, x in zip(specs, arrays,
                                                                          strict=True)))
    if program.rebinds is not None:
        _check_refused(program, preset, arrays, [b for b, _ in pairs], originals, context)
        return
    ref_arrays = [view(b, k) for b, k in ref_pairs]
    try:
        with np.errstate(all="ignore", invalid="warn"), warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            reference = program.function(_captured(program, ref_arrays[n:]))
            for _ in range(calls):
                want = reference(*ref_arrays[:n])
    except Exception:  # NumPy refuses these values (never seen; the probe checks shapes)
        reject()
    if any("encountered in cast" in str(w.message) for w in seen):
        # NaN, inf or an out-of-range float cast to an integer: C leaves the value undefined
        # (x86 NumPy gives INT_MIN, XLA 0 or a saturated value), so there is no answer to match.
        reject()
    jf = jitted or rl.jit(program.function(_captured(program, arrays[n:])), optimize=preset)
    try:
        for _ in range(calls):
            got = jf(*args)
    except Exception as exc:
        fail(program, context, [f"reactant_lab raised {type(exc).__name__}: {exc}"])
    rtol = 0.0 if program.exact else _rtol(program.low_precision)
    problems = compare_trees(got, want, rtol)
    for spec, arg, frame, (ref_base, key), base, before in zip(
            specs, arrays, frames, ref_pairs, (b for b, _ in pairs), originals,
            strict=True):
        if _frame(arg) != frame:
            problems.append(f"argument {spec.name}: object, dtype, strides or flags changed: "
                            f"{frame} -> {_frame(arg)}")
        problem = compare(arg, view(ref_base, key), rtol, f"argument {spec.name} after the call")
        if problem:
            problems.append(problem)
        if key:
            outside = np.ones(base.shape, bool)
            view(outside, key)[...] = False
            if base[outside].tobytes() != before[outside].tobytes():
                problems.append(f"argument {spec.name}: its base array changed outside the "
                                "view (NumPy leaves it untouched)")
    if problems:
        fail(program, context, problems)


def _captured(program: Program, arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Name -> array of the program's captured arrays (globals, closure variables)."""
    return {a.name: x for a, x in zip(program.captured, arrays, strict=True)}


def _check_refused(program: Program, preset: str, arrays: list[np.ndarray],
                   bases: list[np.ndarray], originals: list[np.ndarray], context: str) -> None:
    """A kernel that rebinds a captured name is refused before it runs: the name still holds
    the very same array, and no array changed."""
    n = len(program.args)
    kernel = program.function(_captured(program, arrays[n:]))
    held = dict(zip(kernel.__code__.co_freevars, kernel.__closure__ or (), strict=True))
    try:
        rl.jit(kernel, optimize=preset)(*arrays[:n])
    except rl.TraceError as exc:
        problems = [] if "left as it was" in str(exc) else [f"unclear refusal: {exc}"]
    else:
        problems = ["a kernel that rebinds a captured name was not refused"]
    for spec, array in zip(program.captured, arrays[n:], strict=True):
        now = (kernel.__globals__.get(spec.name) if spec.role == "global"
               else held[spec.name].cell_contents)
        if now is not array:
            problems.append(f"{spec.name} no longer holds the caller's array: {type(now)}")
    for spec, base, before in zip((*program.args, *program.captured), bases, originals,
                                  strict=True):
        if base.tobytes() != before.tobytes():
            problems.append(f"{spec.name} changed")
    if problems:
        fail(program, context, problems)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("preset", PRESETS)
@FUZZ
@given(program=numpy_programs(), other_layouts=st.lists(st.sampled_from(LAYOUTS), min_size=2,
                                                        max_size=2), seed=SEEDS)
def test_numpy_kernel_matches_numpy(program, other_layouts, seed, preset, layout):
    layouts = (layout, *other_layouts)[:len(program.args)]
    run_numpy_program(program, preset, layouts, seed)


@pytest.mark.parametrize("preset", PRESETS)
@settings(FUZZ, max_examples=max(1, _EXAMPLES // 2))
@given(program=numpy_programs(), seed=SEEDS)
def test_one_jit_object_follows_each_layout(program, seed, preset):
    """One ``rl.jit`` object, the same shapes in C order, Fortran order, strided and reversed:
    the cache must not hand one layout's executable (and its view semantics) to another."""
    jitted = rl.jit(program.function(), optimize=preset)
    for layout in LAYOUTS:
        run_numpy_program(program, preset, (layout,) * len(program.args), seed, jitted)


@pytest.mark.parametrize("preset", PRESETS)
@settings(FUZZ, max_examples=max(1, _EXAMPLES // 4))
@given(program=captured_programs(), layouts=st.lists(st.sampled_from(LAYOUTS), min_size=4,
                                                     max_size=4), seed=SEEDS)
def test_numpy_kernel_reading_globals_and_closures_matches_numpy(program, layouts, seed, preset):
    """Arrays read from module globals and closures, updated in place (and now and then
    rebound, which is refused): as NumPy on copies, and every captured array afterwards."""
    count = len(program.args) + len(program.captured)
    run_numpy_program(program, preset, tuple(layouts[:count]), seed, calls=2)


@pytest.mark.parametrize("preset", PRESETS)
@settings(FUZZ, max_examples=max(1, _EXAMPLES // 2))
@given(program=control_flow_programs(), layout=st.sampled_from(LAYOUTS), seed=SEEDS)
def test_control_flow_kernel_matches_numpy(program, layout, seed, preset):
    """Python's rules in converted code: builtins in rolled loops (NaN inputs for max / min),
    16-bit floats rounded at every step (bit for bit), static recursion (issue 38)."""
    run_numpy_program(program, preset, (layout,), seed)


# ---------------------------------------------------------------------------------- JAX mode

@pytest.mark.parametrize("preset", PRESETS)
@FUZZ
@given(program=jax_programs(), seed=SEEDS, device_arrays=st.booleans())
def test_jax_function_matches_jax_jit(program, seed, device_arrays, preset):
    inputs = jax_inputs(program, np.random.default_rng(seed))
    before = [x.copy() for x in inputs]
    want = jax.jit(program.function())(*inputs)
    args = [jnp.asarray(x) for x in inputs] if device_arrays else inputs
    context = (f"preset={preset!r} input seed={seed} device_arrays={device_arrays}\n"
               f"  inputs: {[x.tolist() for x in inputs[-2:]]} (idx, i)")
    try:
        got = rl.jit(program.function(), optimize=preset, mode="jax")(*args)
    except Exception as exc:
        fail(program, context, [f"reactant_lab raised {type(exc).__name__}: {exc}"])
    problems = compare_trees(jax.tree_util.tree_map(np.asarray, got),
                             jax.tree_util.tree_map(np.asarray, want), _rtol(True),
                             "result vs jax.jit")
    problems += [f"input {k} changed" for k, (x, b) in enumerate(zip(inputs, before,
                                                                       strict=True))
                 if x.tobytes() != b.tobytes()]
    if problems:
        fail(program, context, problems)


# ---------------------------------------------------------------------------------- regressions
# Each test below is the minimal program of a defect the fuzzer found (or, where it says so, a
# known defect it targets), with the defect named.

def assert_same_as_numpy(kernel, make_args, preset: str = "none", rtol: float = 1e-12) -> None:
    """``kernel`` under ``preset`` on ``make_args()`` against NumPy on another ``make_args()``:
    same results, same arguments afterwards."""
    args, ref = make_args(), make_args()
    with np.errstate(all="ignore"):
        want = kernel(*ref)
    got = rl.jit(kernel, optimize=preset)(*args)
    problems = compare_trees(got, want, rtol)
    problems += [p for k, (a, r) in enumerate(zip(args, ref, strict=True))
                 if (p := compare(a, r, rtol, f"argument {k} after the call"))]
    assert not problems, f"preset {preset!r}:\n" + "\n".join(problems)


def assert_same_as_jax_jit(fn, *args, presets=PRESETS) -> None:
    want = jax.tree_util.tree_map(np.asarray, jax.jit(fn)(*args))
    bad = {}
    for preset in presets:
        got = jax.tree_util.tree_map(np.asarray, rl.jit(fn, optimize=preset, mode="jax")(*args))
        if problems := compare_trees(got, want, _rtol(True), "result vs jax.jit"):
            bad[preset] = problems
    assert not bad, "\n".join(f"{p}: {'; '.join(v)}" for p, v in bad.items())


# Defect: the enzyme-hlo pattern list (scatter_op_canon with reshape_empty_broadcast) rewrote a
# scatter into a slice of a vector wrongly under every preset that runs the patterns.
def test_scatter_into_a_slice_of_a_vector(rng):
    z = rng.uniform(-4, 4, 6).astype(np.float32)
    assert_same_as_jax_jit(lambda z: z.at[1:3].add(1.0), z)
    assert_same_as_jax_jit(lambda z: z.at[1:6].min(3.0), z)


# Defect: a dynamic_update_slice whose start is out of range (XLA clamps it into the array),
# then a slice of the updated region: the patterns fold the slice as if the start were not
# clamped, and read the old values (presets running the enzyme-hlo patterns).
def test_dynamic_update_slice_with_a_clamped_start_then_a_slice(rng):
    def fn(z):
        updated = jax.lax.dynamic_update_slice(z, jnp.full((1,), 1.5, z.dtype), (9,))
        return updated[3:4]

    assert_same_as_jax_jit(fn, rng.uniform(-4, 4, 4).astype(np.float32))


# Defect: in NumPy a reduction returns an immutable NumPy scalar, so `t += a` rebinds t to a new
# array; NumPy mode kept a writable 0-d array and updated it in place (a broadcast error, or a
# silent change seen through another name bound to it).
def test_a_reduction_result_is_an_immutable_scalar(rng):
    def rebinds(a):
        t = a.sum()
        t += a
        return t

    def alias(a):
        t = a.max()
        u = t
        t += 1
        return u

    assert_same_as_numpy(rebinds, lambda: (np.arange(3.0),))
    assert_same_as_numpy(alias, lambda: (np.arange(3.0),))


# Defect: NumPy mode turns every 0-d result into a NumPy scalar, but NumPy returns a 0-d array
# for a[i, ...] and for astype of a 0-d array (a scalar only for a[i] and reductions): the
# caller gets another type (not writable, no in-place ops).
def test_zero_dimensional_results_are_arrays_where_numpy_gives_arrays(rng):
    def kernel(a):
        a[0] = 2.0
        return (a * 2)[1, ...], a[2, ...].astype(np.int64), a[1, ...], a[0], a.sum()

    assert_same_as_numpy(kernel, lambda: (np.arange(1.0, 4.0),))


# Defect: NumPy's assignment drops leading length-1 axes of the value (a (1, 2) value fits a
# (2,) target); NumPy mode refused it for advanced-index targets with a broadcast error.
def test_assigned_value_may_have_leading_unit_axes(rng):
    def kernel(a, b):
        a[[0, 2]] = b[None, :2]
        a[[[1]]] = b[None, None, 2:]

    assert_same_as_numpy(kernel, lambda: (np.zeros(3), np.arange(1.0, 4.0)))


# Defect: an array NumPy computes from a Fortran-order argument (a ufunc, astype) is
# Fortran-order too, so its ravel() / reshape(-1) is a copy and writes to it are lost; NumPy
# mode treated it as C order and wrote through.
def test_ravel_of_an_array_computed_from_a_fortran_argument_is_a_copy(rng):
    def ufunc_result(b):
        t = b * 2
        t.ravel()[0] = -1.0
        return t

    def cast_result(b):
        t = b.astype(np.int32)
        t.reshape(-1)[1] = 9
        return t

    def make():
        return (np.asfortranarray(np.arange(6.0).reshape(2, 3)),)

    assert_same_as_numpy(ufunc_result, make)
    assert_same_as_numpy(cast_result, make)


# Defect: ravel() of a non-contiguous 1-D argument (b[1::3], b[::-1]) is a copy in NumPy; NumPy
# mode made it a view, so a later write to the argument showed through it (2-D ones are right).
@pytest.mark.parametrize("make", [lambda: np.arange(10.0)[1::3], lambda: np.arange(4.0)[::-1]],
                         ids=["strided", "reversed"])
def test_ravel_of_a_non_contiguous_vector_argument_is_a_copy(make):
    def kernel(b):
        v = b.ravel()
        b[:] = 0
        return v

    assert_same_as_numpy(kernel, lambda: (make(),))


# Known defect (fixed; the one-jit-object fuzz test targets it): rl.jit's cache ignored memory
# layout, so the executable traced for a C-order call (where ravel() is a view) ran for
# Fortran-order and strided arrays of the same shape.
@pytest.mark.parametrize("preset", ["none", "all"])
def test_one_jit_object_called_with_c_then_fortran_then_strided(preset):
    def kernel(a):
        a.ravel()[1] = -5.0
        return a.sum()

    jitted = rl.jit(kernel, optimize=preset)
    for make in (lambda: np.arange(6.0).reshape(2, 3),
                 lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3)),
                 lambda: np.arange(24.0).reshape(4, 6)[::2, 1::2]):
        a, want = make(), make()
        want_sum = kernel(want)
        assert jitted(a) == want_sum
        np.testing.assert_array_equal(a, want)


# Known defect (fixed): arguments that are disjoint views of one array (halves, interleaved
# columns) were refused as overlapping when one of them is updated in place.
def test_disjoint_views_of_one_array_update_in_place(rng):
    def kernel(a, b):
        a += 1
        b *= 2

    for split in (lambda base: (base[:3], base[3:]),
                  lambda base: (base.reshape(3, 2)[:, 0], base.reshape(3, 2)[:, 1])):
        base, ref = np.arange(6.0), np.arange(6.0)
        rl.jit(kernel, optimize="none")(*split(base))
        kernel(*split(ref))
        np.testing.assert_array_equal(base, ref)
