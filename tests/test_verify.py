"""Stage verification (reactant_lab/verify/): each stage's module compiled, run on the example
inputs and compared with NumPy eager / jax.jit / the traced module, within a dtype tolerance."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import compile as rl_compile
from reactant_lab import verify
from reactant_lab.errors import TraceError
from reactant_lab.explore import ExploreOptions, build_from_text, verified

needs_enzyme = pytest.mark.skipif(not rl.enzyme_available(),
                                  reason="the enzyme-hlo patterns need enzyme-ad")


@pytest.fixture(autouse=True)
def _reproducers_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("REACTANT_LAB_REPRO_DIR", str(tmp_path / "repro"))


def clamped_update(z):
    # The start index 9 is clamped to 3 (len 4); slice_of_dynamic_update<1> does not clamp.
    return jax.lax.dynamic_update_slice(z, jnp.full((1,), 1.5, z.dtype), (9,))[3:4]


def _clamp_input(rng):
    z = rng.standard_normal(4).astype(np.float32)
    z[3] = 4.0  # jax.jit gives [1.5]; the miscompiled module reads z[3]
    return jnp.asarray(z)


# -- (a) a wrong stage is found ---------------------------------------------------------------

CLAMP_ON_CPU = ("the module the patterns make reads z[3] where jax.jit clamps the update's start: "
                "XLA:CPU gives the wrong value this test looks for, a TPU did not (measured)")


@pytest.mark.cpu_only(CLAMP_ON_CPU)
@needs_enzyme
def test_the_stage_that_miscompiles_is_the_first_wrong(rng):
    z = _clamp_input(rng)
    v = rl.trace(clamped_update, z).stages("all", exact=True).verify(z)
    wrong = v.first_wrong
    assert wrong is not None and wrong.name == "optimize+sroa"
    assert wrong.max_abs == pytest.approx(2.5)
    assert "got 4.0, reference 1.5" in (wrong.first_bad or "")
    assert v.checks[0].ok and not v.ok
    assert all(c.ok is False for c in v.checks[wrong.index:])  # the later stages keep it
    assert "WRONG <- first" in v.table()
    assert "first stage that went wrong: 1 optimize+sroa" in v.table()


@pytest.mark.cpu_only(CLAMP_ON_CPU)
@needs_enzyme
def test_pass_granularity_names_the_pattern_pass(rng):
    z = _clamp_input(rng)
    v = rl.trace(clamped_update, z).stages("all", granularity="pass", exact=True).verify(z)
    assert v.first_wrong is not None and v.first_wrong.name == "enzyme-hlo patterns"
    assert all(c.ok for c in v.checks[:v.first_wrong.index])


@needs_enzyme
def test_with_the_exclusions_every_stage_is_right(rng):
    z = _clamp_input(rng)
    v = rl.trace(clamped_update, z).stages("all").verify(z)
    assert v.ok and v.first_wrong is None
    assert all(c.max_abs == 0 for c in v.checks)


# -- (b) NumPy kernels that update their arguments -------------------------------------------

def smooth(u, v):
    u[1:-1] = 0.25 * u[:-2] + 0.5 * u[1:-1] + 0.25 * u[2:]
    v[...] = v * 2 - u


def sharpen(u, v):  # the same signature, another answer
    u[1:-1] = 2 * u[1:-1] - 0.5 * (u[:-2] + u[2:])
    v[...] = v * 2 - u


def _arrays(rng):
    base = rng.standard_normal((12, 9))
    return {"C": (rng.standard_normal((6, 5)), rng.standard_normal((6, 5))),
            "F": (np.asfortranarray(rng.standard_normal((6, 5))),
                  np.asfortranarray(rng.standard_normal((6, 5)))),
            "strided": (base[::2, 1:6], rng.standard_normal((30, 20))[::-5, ::4])}


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_numpy_kernel_is_compared_on_its_updated_arguments(rng, layout):
    u, v = _arrays(rng)[layout]
    before = [(a.tobytes(), a.strides, a.flags.c_contiguous, a.flags.f_contiguous)
              for a in (u, v)]
    stages = rl.trace(smooth, u, v).stages("all")
    ver = stages.verify(u, v)
    assert ver.reference == "numpy" and ver.ok
    assert [(a.tobytes(), a.strides, a.flags.c_contiguous, a.flags.f_contiguous)
            for a in (u, v)] == before  # the caller's arrays, bit for bit, layout kept
    want = verify.reference_outcome(stages.traced, (u, v), {}, "numpy")
    assert want.names == ("argument args[0]", "argument args[1]")
    # A module computing something else for the same call is caught on the arguments.
    other = rl.trace(sharpen, u, v).ir
    check = verify.check_module(stages.traced, other, (u, v), {}, want=want, time_it=False)
    assert check.ok is False and check.first_bad.startswith("argument args[0]")


def test_strided_argument_keeps_its_layout_for_a_layout_dependent_trace(rng):
    u = rng.standard_normal((10, 8))[::2, 1::3]

    def flat(u):
        return u.ravel() * 2  # a copy of a strided view, a view of a contiguous one

    ver = rl.trace(flat, u).stages("none").verify(u)
    assert ver.ok and all(c.error is None for c in ver.checks)


def test_kwargs_and_static_arguments_reach_both_sides(rng):
    x, y = rng.standard_normal(7), rng.standard_normal(7)

    def scaled(x, n, *, y, how="add"):
        return (x + y if how == "add" else x - y) * len(n)

    args, kwargs = (jnp.asarray(x), [1, 2, 3]), {"y": jnp.asarray(y), "how": "sub"}
    ver = rl.trace(scaled, *args, **kwargs).stages("none").verify(*args, **kwargs)
    assert ver.reference == "jax" and ver.ok
    assert all(c.max_abs == pytest.approx(0, abs=1e-6) for c in ver.checks)


def test_kwargs_and_scalar_results_are_timed(rng):
    x = jnp.asarray(rng.standard_normal(7).astype(np.float32))
    ver = rl.trace(lambda x, *, y: (x * y).sum(), x, y=x).stages("none").verify(x, y=x)
    assert all(c.error is None and c.run_seconds is not None for c in ver.checks)


# -- (c) references --------------------------------------------------------------------------

def test_jax_code_against_jit_and_stage0(rng):
    x = jnp.asarray(rng.standard_normal((5, 3)).astype(np.float32))
    stages = rl.trace(lambda x: (jnp.tanh(x) @ x.T, x.max() > 0, 3), x).stages("all")
    auto, stage0 = stages.verify(x), stages.verify(x, reference="stage0")
    assert (auto.reference, stage0.reference) == ("jax", "stage0")
    assert auto.ok and stage0.ok
    assert "reference: jax.jit" in auto.table()
    assert "reference: the traced module" in stage0.table()


def test_the_jax_reference_runs_on_the_device_the_stages_run_on(rng):
    """verify and bisect compile the stages for ``device``; jax.jit, their reference, must run
    there too, not on JAX's default device: on a TPU machine, stages verified on the CPU were
    compared with the TPU's jax.jit (whose XLA drops a clamp the CPU's keeps), and every stage
    was 'wrong'. The function notes JAX's default device each time it is traced."""
    from reactant_lab.bisect import bisect

    seen: list[object] = []

    def f(x):
        seen.append(jax.config.jax_default_device)
        return jnp.tanh(x) * 2

    x = jnp.asarray(rng.standard_normal(6).astype(np.float32))
    cpu = jax.devices("cpu")[0]
    stages = rl.trace(f, x).stages("all", device="cpu")
    seen.clear()
    assert stages.verify(x, device="cpu").ok
    assert seen and seen[-1] == cpu  # traced once more, by the reference's jax.jit
    seen.clear()
    assert not bisect(f, x, metric="result", progress=False, device="cpu").found
    assert cpu in seen


def test_references_that_cannot_run_this_code_are_refused(rng):
    x = rng.standard_normal(4)
    jax_code = rl.trace(jnp.sin, jnp.asarray(x)).stages("none")
    with pytest.raises(TraceError, match=r"reference='numpy'.*JAX mode.*'jax'"):
        jax_code.verify(jnp.asarray(x), reference="numpy")
    numpy_code = rl.trace(lambda x: np.sin(x) * 2, x).stages("none")
    with pytest.raises(TraceError, match=r"reference='jax'.*NumPy mode.*'numpy'"):
        numpy_code.verify(x, reference="jax")
    with pytest.raises(rl.ReactantLabError, match="unknown reference 'torch'"):
        numpy_code.verify(x, reference="torch")


def test_module_text_has_nothing_to_run():
    text = rl.trace(lambda x: x * 2, np.ones(3)).ir
    ex = build_from_text(text, ExploreOptions(optimize="none", verify=True))
    assert ex.verification is None
    with pytest.raises(TraceError, match=r"module text.*rl\.explore\(fn, \*args, verify=True\)"):
        verified(ex, (), {})
    with pytest.raises(TraceError, match="module text"):
        ex.stages.verify()


def test_a_failing_reference_says_which_and_what_to_do(rng):
    x = rng.standard_normal(4)
    calls = []

    def once(x):
        calls.append(1)
        if len(calls) > 1:  # the trace runs it; the NumPy reference run fails
            raise ValueError("no second call")
        return x + 1

    stages = rl.trace(once, x).stages("none")
    with pytest.raises(TraceError, match=r"NumPy eager.*no second call.*reference='stage0'"):
        stages.verify(x)
    assert stages.verify(x, reference="stage0").ok


# -- (d) tolerances by dtype -----------------------------------------------------------------

def _one(value, weak=False):
    return verify.Outcome(("result",), (np.asarray(value),), (weak,))


def test_float32_reassociation_is_within_tolerance(rng):
    x = rng.standard_normal(20000).astype(np.float32)
    ver = rl.trace(lambda x: (x * x).sum() - x.sum() ** 2 / x.size, x).stages("all").verify(x)
    assert ver.ok
    assert all(c.max_rel <= 1e-4 for c in ver.checks)


def test_tolerance_follows_the_dtype(rng):
    w = rng.standard_normal(50)
    assert verify.compare(_one(w * (1 + 1e-12)), _one(w)).ok
    off = w.copy()
    # 1e-7 of the result's scale: 50x float64's bound, whatever w[7] is (the bound is relative
    # to |want| + max|want|: w[7] * (1 + 1e-7) passed when w[7] was near zero)
    off[7] += 1e-7 * np.abs(w).max()
    c = verify.compare(_one(off), _one(w))
    assert not c.ok and c.first_bad.startswith("result[7]")
    w32 = w.astype(np.float32)
    assert verify.compare(_one((w32 * (1 + 1e-6)).astype(np.float32)), _one(w32)).ok
    ints = rng.integers(-100, 100, 20)
    assert not verify.compare(_one(ints + (np.arange(20) == 3)), _one(ints)).ok
    assert verify.compare(_one(ints.copy()), _one(ints)).ok
    flags = ints > 0
    c = verify.compare(_one(~flags), _one(flags))
    assert not c.ok and c.max_abs == 1
    assert "1e-4 for float32" in verify.TOLERANCE_TEXT


def test_non_finite_values_must_match_in_place(rng):
    w = rng.standard_normal(10)
    w[[2, 5]] = np.nan
    w[7] = np.inf
    assert verify.compare(_one(w.copy()), _one(w)).ok
    moved = w.copy()
    moved[[2, 3]] = moved[[3, 2]]
    c = verify.compare(_one(moved), _one(w))
    assert not c.ok and c.max_abs == np.inf
    flipped = w.copy()
    flipped[7] = -np.inf
    assert not verify.compare(_one(flipped), _one(w)).ok


def test_scalars_complex_and_empty_values(rng):
    z = rng.standard_normal(6) + 1j * rng.standard_normal(6)
    assert verify.compare(_one(z * (1 + 1e-12)), _one(z)).ok
    assert not verify.compare(_one(z + 1e-3j), _one(z)).ok
    assert verify.compare(_one(np.float64(2.5)), _one(2.5)).ok
    assert verify.compare(_one(np.empty((0, 3))), _one(np.empty((0, 3)))).ok
    shape = verify.compare(_one(np.empty((3, 0))), _one(np.empty((0, 3))))
    assert not shape.ok and "float64[3, 0], reference float64[0, 3]" in shape.first_bad
    # A Python number (weak: no dtype of its own) is compared by value only.
    assert verify.compare(_one(np.int64(3)), _one(np.int32(3), weak=True)).ok
    assert not verify.compare(_one(np.int64(3)), _one(np.int32(3))).ok


def test_float64_difference_in_a_stage_is_wrong(rng):
    x = rng.standard_normal(16)
    traced = rl.trace(lambda x: np.sqrt(np.abs(x)), x)
    want = verify.reference_outcome(traced, (x,), {}, "numpy")
    nudged = rl.trace(lambda x: np.sqrt(np.abs(x)) * (1 + 1e-8), x).ir
    check = verify.check_module(traced, nudged, (x,), {}, want=want, time_it=False)
    assert check.ok is False and 1e-9 < check.max_rel < 1e-7
    same = verify.check_module(traced, traced.ir, (x,), {}, want=want, time_it=False)
    assert same.ok and same.run_seconds is None


# -- (e) unchanged stages reuse the figures before them --------------------------------------

def test_unchanged_stages_are_not_compiled_again(rng, monkeypatch):
    compiled = []
    real = rl_compile.compile_traced

    def counting(traced, ir, **kw):  # counts compiles, changes nothing
        compiled.append(kw.get("stage_name"))
        return real(traced, ir, **kw)

    monkeypatch.setattr(rl_compile, "compile_traced", counting)
    x = jnp.asarray(rng.standard_normal((4, 4)).astype(np.float32))
    stages = rl.trace(lambda x: jnp.exp(x) + jnp.exp(x), x).stages("all")
    ver = stages.verify(x)
    changed = [s.name for s in stages.stages if s.changed]
    assert compiled == changed
    for stage, check in zip(stages.stages, ver.checks, strict=True):
        if stage.changed:
            assert check.same_as is None
        else:
            source = ver.checks[check.same_as]
            assert source.same_as is None and stages.stages[check.same_as].changed
            assert (check.run_seconds, check.max_abs) == (source.run_seconds, source.max_abs)


# -- (f) explore(verify=True) and the stage table --------------------------------------------

def test_explore_verify_shows_the_columns(rng):
    u = rng.standard_normal((6, 6))
    keep = u.copy()
    ex = rl.explore(smooth, u, u[::-1].copy(), optimize="all", verify=True, run=False)
    assert ex.verification is not None and ex.verification.ok
    assert np.array_equal(u, keep)
    row = next(line for line in ex.summary().splitlines() if line.startswith("#"))
    assert all(word in row for word in ("changed", "compile", "run", "max abs err", "ok"))
    assert "reference: NumPy eager" in ex.summary()
    plain = ex.stages.table()
    assert "compile" not in plain and "reference" not in plain
    again = ex.restaged(optimize="none")
    assert again.options.verify and again.verification is None
    assert verified(again, (u, u[::-1].copy()), {}).verification.ok


# -- (g) a module XLA refuses is recorded, not raised ----------------------------------------

def test_a_stage_xla_cannot_compile_is_recorded(rng):
    x = jnp.asarray(rng.standard_normal(8).astype(np.float32))
    stages = rl.trace(lambda x: jnp.sin(x) * 2, x).stages("none")
    first = stages.stages[0]
    # A call to a custom-call target nobody registered: XLA's own compile error.
    bad_ir = first.ir.replace("stablehlo.multiply %0, %1 : tensor<8xf32>",
                              "stablehlo.custom_call @reactant_lab_no_such_target(%0) : "
                              "(tensor<8xf32>) -> tensor<8xf32>")
    assert bad_ir != first.ir
    bad = dataclasses.replace(first, index=1, name="broken", ir=bad_ir)
    ver = dataclasses.replace(stages, stages=(first, bad)).verify(x)
    check = ver.checks[1]
    assert check.ok is None and check.compile_seconds is None
    assert "XLA compile failed" in check.error and "reactant_lab_no_such_target" in check.error
    assert not ver.ok and ver.first_error is check and ver.first_wrong is None
    assert "error <- first" in ver.table() and "1 broken: XLA compile failed" in ver.table()
