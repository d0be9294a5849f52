"""The enzyme-hlo pattern list: Reactant's own (shipped as data), fitted to the installed enzyme-ad,
the patterns it lacks named in the stage notes, and scatter updates that compile correctly."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend
from reactant_lab.stages import patterns
from reactant_lab.stages.pipeline import split_passes
from tests.conftest import assert_close, assert_values_equal

needs_enzyme = pytest.mark.skipif(not rl.enzyme_available(), reason="needs enzyme-ad")

# Reactant's patterns that enzyme-ad 0.0.16 does not build (renamed or given a parameter since).
MISSING_IN_0_0_16 = (
    "negate_simplify<16>", "sqrt_simplify<16>", "cos_simplify<16>", "sin_simplify<16>",
    "pad_simplify<16>", "tanh_simplify<16>", "exp_simplify<16>", "gather_simplify<16>",
    "concat_const_prop<1>", "dynamic_update_slice_const_prop",
    *(f"binary_op_transpose_simplify_{op}" for op in
      ("add", "sub", "mul", "div", "min", "max", "pow", "rem", "or", "and", "xor")),
    *(f"transpose_unary_transpose_{op}" for op in
      ("abs", "neg", "sqrt", "rsqrt", "ceil", "convert", "cosine", "exp", "expm1", "log",
       "log1p", "sign", "sine", "tanh")),
    "transpose_reduce_simplify", "while_simplify<1>",
)

SCATTERS = {
    "x.at[1:3].add(1.0)": lambda x: x.at[1:3].add(1.0),
    "x.at[1:-1].set(v)": lambda x: x.at[1:-1].set(5.0),
    "x.at[:4].set(v)": lambda x: x.at[:4].set(2.0),
}


def td_patterns(pipeline: str) -> list[list[str]]:
    """The pattern list of each enzyme-hlo-generate-td step of a pipeline."""
    return [p[len("enzyme-hlo-generate-td{patterns="):-1].split(";")
            for p in split_passes(pipeline) if p.startswith("enzyme-hlo-generate-td{")]


def test_the_shipped_list_is_reactants():
    plain = patterns.reactant_patterns(no_nan=False)
    assert len(plain) == 194 and plain[0] == "compare_op_canon<16>"
    assert plain[-2:] == ("if_remove_unused", "no_nan_add_sub_simplify(0)")
    assert not any(p.startswith("patterns=") or ";" in p or " " in p for p in plain)
    assert "scatter_op_canon<16>" not in plain  # the miscompiling one is enzyme-ad's own
    no_nan = patterns.reactant_patterns(no_nan=True)
    assert no_nan[:193] == plain[:193]
    assert no_nan[193:] == ("no_nan", "no_nan_self_sub_simplify", "no_nan_add_sub_simplify(1)")


@needs_enzyme
@pytest.mark.parametrize("no_nan", [False, True])
def test_all_preset_runs_reactants_list_minus_the_documented_missing_and_excluded_plus_additions(
        no_nan, rng):
    # the CPU's stages (on a TPU the raise stage runs the list a fourth time)
    st = rl.trace(lambda x: jax.numpy.sin(x) * 2, rng.random(4)).stages("all", no_nan=no_nan,
                                                                        device="cpu")
    wanted = patterns.reactant_patterns(no_nan=no_nan)
    listed = patterns.pattern_list(no_nan=no_nan)
    missing, excluded = set(listed.missing), set(listed.excluded)
    assert excluded == {"slice_of_dynamic_update<1>", "slice_reshape_elementwise<1>",
                        "reduce_pad<1>", "compare_op_canon<16>",
                        "scatter_update_computation_const_prop", "slice_elementwise<1>",
                        "slice_pad<1>", "dynamic_update_to_concat<1>", "concat_to_broadcast<16>",
                        "compare_select_simplify", "iota_simplify<16>(1024)"}
    assert excluded <= set(wanted)
    # measured slow on XLA:CPU only: another target keeps it
    assert "iota_simplify<16>(1024)" not in patterns.excluded_for("tpu")
    runs = td_patterns(st.pipeline)
    assert len(runs) == 3  # optimize+sroa, optimize, optimize (after AD)
    assert listed.added == ("factor_scalars_in_dot_general", "reduce_mul_to_dot_general",
                            "split_reduce_add_mul_to_add_dot_general",
                            "dot_general_remove_batch_dimensions")
    for run in runs:
        assert run == [p for p in wanted if p not in missing and p not in excluded] + list(
            listed.added)
    head = f"{len(missing)} of Reactant's {len(wanted)} enzyme-hlo patterns"
    for name in ("optimize+sroa", "optimize", "optimize (after AD)"):
        note = st[name].unavailable
        assert note.startswith("left out as measured wrong, crashing, never finishing or slow "
                               "here: compare_op_canon<16>, concat_to_broadcast<16>, "
                               "iota_simplify<16>(1024), dynamic_update_to_concat<1>, "
                               "slice_of_dynamic_update<1>, slice_elementwise<1>, slice_pad<1>, "
                               "slice_reshape_elementwise<1>, reduce_pad<1>, "
                               "scatter_update_computation_const_prop, "
                               "compare_select_simplify (the evidence")
        assert head in note and ("added after Reactant's list, from its later lists, as "
                                 "measured faster here: factor_scalars_in_dot_general, "
                                 "reduce_mul_to_dot_general, "
                                 "split_reduce_add_mul_to_add_dot_general, "
                                 "dot_general_remove_batch_dimensions (the evidence") in note
        assert set(note.split("left out: ", 1)[1].split(", ")) == missing
    assert st["batch"].unavailable is None
    assert st.table().count(head) == 1  # shared note


def test_every_addition_is_new_to_reactants_list_and_has_its_evidence():
    listed = set(patterns.reactant_patterns(no_nan=False))
    for entry in patterns.additions():
        assert entry["pattern"] not in listed and entry["targets"] and entry["why"]
        assert entry["faster_than"] > 1 and entry["evidence"]["benchmark"].startswith(
            "numpy_speed:")


@needs_enzyme
def test_an_addition_runs_by_default_and_exact_or_exclude_patterns_leave_it_out(rng):
    """gesummv's scaled matrices: with factor_scalars_in_dot_general the scalars move onto the
    matvecs' results (no 2000x2000 multiply left); exact=True and exclude_patterns keep NumPy's
    order; every variant equals NumPy's result."""
    def gesummv(alpha, beta, A, B, x):
        return alpha * A @ x + beta * B @ x

    args = (1.5, 1.2, rng.standard_normal((60, 60)), rng.standard_normal((60, 60)),
            rng.standard_normal(60))
    want = gesummv(*args)
    big_multiply = re.compile(r"stablehlo\.multiply .*tensor<60x60xf64>")
    for kw, scaled in (({}, False), ({"exact": True}, True),
                       ({"exclude_patterns": "factor_scalars_in_dot_general"}, True)):
        jf = rl.jit(gesummv, **kw)
        assert_close(jf(*args), want, rtol=1e-12)
        assert bool(big_multiply.search(jf.last.compiled.as_text())) == scaled, kw
    exact = rl.explore(gesummv, *args, exact=True).stages["optimize"].unavailable or ""
    assert "factor_scalars_in_dot_general" not in exact


@pytest.mark.parametrize("preset", list(rl.PRESETS))
def test_a_traced_if_that_writes_a_large_array_in_a_loop_stays_a_case(rng, preset):
    """limit_steps' `if x[i] - x[i - 1] > limit:` writes an element of a 400-element array, too
    large a result to run as selects: a stablehlo.case as traced (JAX's cond), kept so in every
    preset. Made a stablehlo.if (Enzyme-JAX's case_to_if, no longer added), XLA:CPU copied the
    array in every iteration: 0.04 -> 0.2 ms at 1,000 elements, 0.4 -> 135 ms at 20,000.
    Equal to NumPy."""
    from tests.loop_kernels import limit_steps

    walk = np.cumsum(rng.standard_normal(400))
    want_x = walk.copy()
    want = limit_steps(want_x, 0.5)
    jf = rl.jit(limit_steps, optimize=preset)
    x = walk.copy()
    assert int(np.asarray(jf(x, 0.5))) == want
    np.testing.assert_array_equal(x, want_x)
    assert "stablehlo.case" in jf.last.traced_call.ir
    assert "stablehlo.case" in jf.last.stages.final.ir


def test_crc32s_bit_step_is_branch_free_as_traced(rng):
    """crc32's `if crc & 1:` is two scalar operations a side, in an 8-step loop inside the
    loop over the bytes: the 8 steps are unrolled there and each `if` is branch-free as traced
    (an integer mask, ``b ^ ((a ^ b) & -bit)``), in every preset, with no conditional left; the
    CRC equals zlib's."""
    import zlib

    from tests.loop_kernels import crc32

    data = rng.integers(0, 256, int(rng.integers(20, 60))).astype(np.uint8)
    for preset in rl.PRESETS:
        jf = rl.jit(crc32, optimize=preset)
        assert int(np.asarray(jf(data))) == zlib.crc32(data.tobytes())
        traced = jf.last.traced_call.ir
        # the byte loop alone (crc, a NumPy uint32, is carried from its first iteration), its
        # 8 bit steps unrolled in it, each a mask
        assert traced.count("stablehlo.while") == 1, preset
        assert "stablehlo.case" not in traced and traced.count("stablehlo.negate") >= 8, preset
        final = jf.last.stages.final.ir
        assert "stablehlo.case" not in final and "stablehlo.if" not in final, preset


def _weighted_matches(seq1, seq2, w):
    from tests.numpy_kernels import match

    total = 0.0  # a Python float summing float32 values: float32 after one iteration
    for i in range(seq1.shape[0]):
        total += w[i] if match(seq1[i], seq2[-1 - i]) else np.float32(0)
    return np.asarray(total)


@pytest.mark.parametrize("kernel", ["pair_matches", "weighted"])
def test_the_ifs_of_a_loops_first_iteration_run_apart_are_selects_as_in_the_loop(kernel, rng):
    """The helpers' `if`s in a batched loop are selects, no conditional in the module (each one
    a thunk of its own for XLA:CPU), also in a first iteration run apart: pair_matches carries
    ``total``, a Python int, as int64 from its first iteration; a Python float that float32
    values are added to runs its first iteration apart (NumPy makes it float32 there). The
    results equal NumPy's."""
    from tests.numpy_kernels import pair_matches

    n = int(rng.integers(30, 90))
    seq1, seq2 = rng.integers(0, 4, n), rng.integers(0, 4, n)
    fn, args = ((pair_matches, (seq1, seq2)) if kernel == "pair_matches" else
                (_weighted_matches, (seq1, seq2, rng.random(n).astype(np.float32))))
    want = fn(*args)
    for preset in rl.PRESETS:
        jf = rl.jit(fn, optimize=preset)
        got = jf(*args)
        if kernel == "pair_matches":
            np.testing.assert_array_equal(got[0], want[0])
            assert int(got[1]) == int(want[1]), preset
        else:
            assert got.dtype == want.dtype == np.float32
            assert_close(got, want, rtol=1e-5)
        traced = jf.last.traced_call.ir
        assert "stablehlo.case" not in traced and "stablehlo.select" in traced, preset
        iterations = n if kernel == "pair_matches" else n - 1
        assert any(f"({iterations} iterations)" in t for t in jf.last.traced.loop_notes), preset


def test_every_exclusion_names_a_reactant_pattern_and_its_evidence():
    listed = set(patterns.reactant_patterns(no_nan=False))
    for entry in patterns.exclusions():
        assert entry["pattern"] in listed and entry["kind"] in ("wrong", "crash", "hang", "slow")
        assert entry["why"] and entry["evidence"] and entry["targets"]
        if entry.get("group"):  # a group is put back and left out whole: all its members
            members = [e["pattern"] for e in patterns.exclusions()
                       if e.get("group") == entry["group"]]
            assert entry["group"] == "+".join(members) and len(members) > 1


def _dus_clamped(z):
    return jax.lax.dynamic_update_slice(z, jax.numpy.full((1,), 1.5, z.dtype), (9,))[3:4]


@pytest.mark.parametrize("preset", list(rl.PRESETS))
def test_an_out_of_range_dynamic_update_slice_start_is_clamped_in_every_preset(preset):
    z = np.arange(4, dtype=np.float32) + 1
    # on the CPU, whose XLA clamps; XLA's TPU compile gave 4.0 for it in every preset, `none`
    # too (docs/accelerator.md, known wrong results): the passes are what this test is about
    got = rl.jit(_dus_clamped, optimize=preset, device="cpu")(z)
    np.testing.assert_array_equal(np.asarray(got), [1.5])


@needs_enzyme
def test_the_excluded_pattern_is_still_wrong_so_its_exclusion_still_holds(monkeypatch):
    """When this fails, enzyme-ad fixed the pattern: drop its entry from the table."""
    monkeypatch.setenv("REACTANT_LAB_PATTERNS", "reactant-exact")
    patterns.pattern_list.cache_clear()
    try:
        exact = patterns.pattern_list(no_nan=False)
        assert exact.source == "reactant-exact" and "slice_of_dynamic_update<1>" in exact.patterns
        z = np.arange(4, dtype=np.float32) + 1
        got = np.asarray(rl.jit(_dus_clamped, optimize="all", device="cpu")(z))
        assert got.tolist() == [4.0], "enzyme-ad now clamps: remove the exclusion"
    finally:
        monkeypatch.delenv("REACTANT_LAB_PATTERNS")
        patterns.pattern_list.cache_clear()


def _first_unless_greater(a):
    return np.where(a[1] > a[0], a[1], a[0])  # Python's max(a[0], a[1]), as NumPy mode traces it


@pytest.mark.parametrize("preset", list(rl.PRESETS))
def test_a_select_on_a_comparison_passes_over_nan_in_every_preset(preset, rng):
    """select(b > a, b, a) keeps a when b is NaN (Python's max); compare_select_simplify made it
    a maximum, which gives NaN (issue 38)."""
    a = np.array([rng.uniform(1, 2), np.nan])
    assert_values_equal(rl.jit(_first_unless_greater, optimize=preset)(a), a[0])


@needs_enzyme
def test_compare_select_simplify_is_still_wrong_so_its_exclusion_still_holds():
    """When this fails, enzyme-ad fixed the pattern: drop its entry from the table."""
    got = rl.jit(_first_unless_greater, optimize="all", exact=True)(np.array([1.5, np.nan]))
    assert np.isnan(got), "enzyme-ad now keeps the select's NaN semantics: remove the exclusion"


def _strided_slice_of_reshape(a):
    return jax.numpy.sin(a.reshape(1, 6)).reshape(6)[2:3:2]


@pytest.mark.parametrize("preset", ["all", "no_enzyme", "before_raise"])
def test_a_strided_slice_of_a_reshape_compiles_and_is_right_in_the_presets(preset):
    a = jax.numpy.arange(6, dtype=jax.numpy.float32)
    got = np.asarray(rl.jit(_strided_slice_of_reshape, optimize=preset)(a))
    assert_close(got, np.sin(np.arange(6, dtype=np.float32))[2:3:2], rtol=1e-6)


@needs_enzyme
def test_the_crashing_pattern_still_crashes_so_its_exclusion_still_holds():
    """When this fails, enzyme-ad fixed the pattern: drop its entry from the table."""
    a = jax.numpy.arange(6, dtype=jax.numpy.float32)
    with pytest.raises(rl.PassCrashedError, match="SIGSEGV"):
        rl.jit(_strided_slice_of_reshape, exact=True)(a)
    got = rl.jit(_strided_slice_of_reshape, exact=True,
                 exclude_patterns="slice_reshape_elementwise")(a)
    assert_close(np.asarray(got), np.sin(np.arange(6.0))[2:3:2], rtol=1e-6)


@needs_enzyme
def test_the_missing_patterns_are_the_known_ones_for_enzyme_ad_0_0_16():
    if backend.versions()["enzyme-ad"] != "0.0.16":
        pytest.skip("the golden list is for enzyme-ad 0.0.16")
    assert patterns.pattern_list(no_nan=False).missing == MISSING_IN_0_0_16
    assert patterns.pattern_list(no_nan=True).missing == (
        *MISSING_IN_0_0_16, "no_nan", "no_nan_self_sub_simplify")


@needs_enzyme
def test_probe_finds_bad_patterns_by_name_and_by_bisection():
    good = ("transpose_transpose<16>", "add_simplify<16>", "reshape_iota<16>", "reshape_iota<1>")
    # two entries share the unknown name 'no_such': the first is found by bisection
    listed = (*good, "no_such<1>", "cse_add<16>", "no_such<2>", "sqrt_simplify<16>")
    assert patterns.unparsable_patterns(listed) == ("no_such<1>", "no_such<2>",
                                                   "sqrt_simplify<16>")
    assert patterns.unparsable_patterns(good) == ()
    assert backend.pattern_error(good) is None
    assert "no_such" in backend.pattern_error(["no_such<1>"])


@needs_enzyme
def test_enzyme_ad_list_is_still_available(monkeypatch, rng):
    monkeypatch.setenv("REACTANT_LAB_PATTERNS", "enzyme-ad")
    patterns.pattern_list.cache_clear()
    try:
        st = rl.trace(lambda x: x + 1, rng.random(3)).stages("all")
        assert "scatter_op_canon<16>" in td_patterns(st.pipeline)[0]
        assert st["optimize"].unavailable is None
    finally:
        monkeypatch.delenv("REACTANT_LAB_PATTERNS")
        patterns.pattern_list.cache_clear()


@pytest.mark.parametrize("preset", list(rl.PRESETS))
@pytest.mark.parametrize("name", list(SCATTERS))
def test_scatter_updates_give_jax_jits_answer(name, preset):
    fn = SCATTERS[name]
    x = np.zeros(8, np.float32)
    np.testing.assert_array_equal(np.asarray(rl.jit(fn, optimize=preset)(x)),
                                  np.asarray(jax.jit(fn)(x)))


@needs_enzyme
def test_probe_is_cached_per_process(monkeypatch):
    first = patterns.pattern_list(no_nan=False)
    monkeypatch.setattr(backend, "pattern_error", lambda _: pytest.fail("probed again"))
    assert patterns.pattern_list(no_nan=False) is first


# -- the pattern options of every entry point: exclude_patterns=, patterns=, exact=

@needs_enzyme
def test_exclude_patterns_by_name_leaves_every_entry_of_it_out_and_the_notes_say_so(rng):
    st = rl.trace(lambda x: x * 2, rng.random(4)).stages(
        "all", exclude_patterns=("add_simplify", "transpose_transpose<16>"))
    for run in td_patterns(st.pipeline):
        assert not any(p.startswith("add_simplify") for p in run)
        assert "transpose_transpose<16>" not in run and "sub_simplify<16>" in run
    assert "left out as asked (exclude_patterns): transpose_transpose<16>, add_simplify<16>;" \
        in st["optimize"].unavailable
    assert st.pattern_choice.exclude == ("add_simplify", "transpose_transpose<16>")


@pytest.mark.parametrize("bad", ["slice_of_dynamc", ("no_such_pattern<1>",)])
def test_an_unknown_exclusion_is_refused_with_the_closest_names(bad, rng):
    with pytest.raises(rl.PipelineError, match="exclude_patterns names patterns the list does "
                                               "not hold") as info:
        rl.jit(lambda x: x + 1, exclude_patterns=bad)(rng.random(3))
    if bad == "slice_of_dynamc":
        assert "did you mean slice_of_dynamic_update" in str(info.value)


@needs_enzyme
def test_exact_runs_reactants_list_with_the_excluded_pattern_and_says_so(rng):
    st = rl.trace(lambda x: x * 2, rng.random(4)).stages("all", exact=True)
    assert all("slice_of_dynamic_update<1>" in run for run in td_patterns(st.pipeline))
    assert "exact: Reactant's list untouched" in st["optimize"].unavailable
    z = np.arange(4, dtype=np.float32) + 1
    on_cpu = {"device": "cpu"}  # XLA's TPU compile does not clamp it either (above)
    assert np.asarray(rl.jit(_dus_clamped, exact=True, **on_cpu)(z)).tolist() == [4.0]  # wrong
    assert np.asarray(rl.jit(_dus_clamped, **on_cpu)(z)).tolist() == [1.5]
    assert np.asarray(rl.jit(_dus_clamped, exclude_patterns="slice_of_dynamic_update",
                             exact=True, **on_cpu)(z)).tolist() == [1.5]


@needs_enzyme
def test_patterns_replaces_the_list_and_an_unknown_entry_is_named(rng):
    x = rng.random(4)
    ex = rl.explore(lambda x: x * 2 + 0.0, x, patterns="add_simplify<16>;mul_simplify<16>")
    assert td_patterns(ex.stages.pipeline)[0] == ["add_simplify<16>", "mul_simplify<16>"]
    assert_close(np.asarray(ex.outputs), x * 2)
    with pytest.raises(rl.PipelineError, match="does not know these patterns of patterns=: "
                                               "no_such<1>"):
        rl.trace(lambda x: x, x).stages("all", patterns=["add_simplify<16>", "no_such<1>"])


@needs_enzyme
def test_exclude_patterns_applies_to_a_custom_pipelines_pattern_pass(rng):
    pipe = ("enzyme-hlo-generate-td{patterns=add_simplify<16>;mul_simplify<16>},"
            "transform-interpreter,enzyme-hlo-remove-transform")
    st = rl.trace(lambda x: x + 0.0, rng.random(3)).stages(pipeline=pipe,
                                                           exclude_patterns="add_simplify")
    assert td_patterns(st.pipeline) == [["mul_simplify<16>"]]
    with pytest.raises(rl.PipelineError, match="exact= and patterns= choose a preset"):
        rl.trace(lambda x: x, rng.random(3)).stages(pipeline="canonicalize", exact=True)


def test_pattern_options_reach_jit_explore_code_hlo_and_bench(rng):
    x = rng.random(4)
    assert rl.jit(lambda x: x, exclude_patterns="add_simplify").options.exclude_patterns == (
        "add_simplify",)
    ex = rl.explore(lambda x: x + 1, x, exact=True, run=False)
    assert ex.options.exact and ex.stages.pattern_choice.exact
    assert ex.restaged(optimize="none").options.exact
    assert "stablehlo" in rl.code_hlo(lambda x: x + 1, x, exclude_patterns=("add_simplify",))
    result = rl.bench(lambda x: x + 1, x, presets=("all", "all+exact"), baselines=(),
                      min_time=0.01, warmup=1, roofline=False)
    assert [r.name for r in result.rows] == ["all", "all+exact"]


# -- golden: every preset's passes are the seed's compile_mlir! for that preset

_INLINE = "inline{default-pipeline=canonicalize max-iterations=4}"
_SROA = "sroa-wrappers{instcombine=false instsimplify=true}"
_ENZYME = ('enzyme{postpasses="arith-raise{stablehlo=true},canonicalize,cse,canonicalize,'
           'remove-unnecessary-enzyme-ops,enzyme-simplify-math,canonicalize,cse,canonicalize"}')


_SEED_RAISE = (  # compile_mlir!'s raise_passes for raise=true, less the unroll's {unroll-full}
    "canonicalize,llvm-to-memref-access,canonicalize,convert-llvm-to-cf,canonicalize,"
    "enzyme-lift-cf-to-scf,canonicalize,func.func(canonicalize-loops),canonicalize-scf-for,"
    "canonicalize,affine-cfg,canonicalize,func.func(canonicalize-loops),canonicalize,"
    "llvm-to-affine-access,canonicalize,delinearize-indexing,canonicalize,simplify-affine-exprs,"
    "affine-cfg,canonicalize,func.func(affine-loop-invariant-code-motion,affine-loop-unroll),"
    "canonicalize,raise-affine-to-stablehlo,arith-raise{stablehlo=true}")


def _seed_pipeline(preset: str, td: str, platform: str = "cpu") -> str:
    """compile_mlir!'s passes for ``preset`` on ``platform`` (CPU: raise=false; TPU: raise=true,
    its default there, and strip-debuginfo after the jit lowering), written out from the seed
    (Compiler.jl) independently of reactant_lab/stages/presets.py."""
    func = f"canonicalize,cse,canonicalize,{td},transform-interpreter,enzyme-hlo-remove-transform"
    opt = f"{_INLINE},propagate-constant-bounds,{_SROA},canonicalize,{_SROA}," \
          f"libdevice-funcs-raise,canonicalize,remove-duplicate-func-def,{func}"
    opt2 = f"{_INLINE},{func}"
    enzyme = f"{_ENZYME},arith-raise{{stablehlo=true}}"
    clean = "canonicalize,remove-unnecessary-enzyme-ops,enzyme-simplify-math"
    kern, raise_, jit = ("lower-kernel{backend=cpu},canonicalize", "canonicalize",
                         "lower-jit{openmp=true backend=cpu},symbol-dce")
    if platform == "tpu":
        raise_, jit = f"{_SEED_RAISE},{opt2}", f"{jit},strip-debuginfo"
    front = f"{opt},enzyme-batch,{opt2},{enzyme},{clean}"
    return {
        "none": "", "canonicalize": "canonicalize", "just_batch": "enzyme-batch",
        "only_enzyme": f"enzyme-batch,{enzyme},{clean}",
        "after_enzyme": f"enzyme-batch,{enzyme},{clean},{opt2},{kern},{raise_},{jit}",
        "before_enzyme": f"{front},{kern},{raise_},{jit}",
        "no_enzyme": f"{opt},enzyme-batch,{opt2},arith-raise{{stablehlo=true}},{clean},{opt2}",
        "before_kernel": f"{front},{opt2}",
        "before_raise": f"{front},{opt2},{kern}",
        "before_jit": f"{front},{opt2},{kern},{raise_}",
        "all": f"{front},{opt2},{kern},{raise_},{jit}",
        "noopt": f"{kern},{raise_},{jit}",  # reactant_lab's own: lowering only
    }[preset]


@pytest.mark.parametrize("preset", list(rl.PRESETS))
def test_each_presets_pipeline_is_the_seeds(preset, monkeypatch):
    from reactant_lab.stages.runner import plan

    listed = patterns.pattern_list(no_nan=False, target="cpu")
    td = "enzyme-hlo-generate-td{patterns=" + listed.text + "}"
    steps = plan(preset, None, "stage", no_nan=False, target="cpu")
    assert ",".join(p for *_, p in steps) == _seed_pipeline(preset, td)


@pytest.mark.parametrize("preset", list(rl.PRESETS))
def test_each_presets_pipeline_for_a_tpu_is_what_reactant_runs_there(preset):
    """On a TPU Reactant lowers kernels and jit calls for the host (backend=cpu), raises
    (raise=true) and strips debug info: the pipeline rendered for platform 'tpu', stage by
    stage, under exact=True; by default the same less strip-debuginfo (the locations stay)."""
    from reactant_lab.stages.patterns import PatternChoice
    from reactant_lab.stages.runner import plan

    exact = PatternChoice(exact=True)
    listed = patterns.pattern_list(no_nan=False, target="tpu", choice=exact)
    td = "enzyme-hlo-generate-td{patterns=" + listed.text + "}"
    steps = plan(preset, None, "stage", no_nan=False, target="tpu", choice=exact)
    want = _seed_pipeline(preset, td, "tpu")
    assert ",".join(p for *_, p in steps) == want
    listed = patterns.pattern_list(no_nan=False, target="tpu")
    td = "enzyme-hlo-generate-td{patterns=" + listed.text + "}"
    kept = plan(preset, None, "stage", no_nan=False, target="tpu")
    assert ",".join(p for *_, p in kept) == _seed_pipeline(preset, td, "tpu").replace(
        ",strip-debuginfo", "")
    by_name = {name: p for name, _, p in steps}
    if "jit lowering" in by_name:
        assert by_name["jit lowering"].endswith("symbol-dce,strip-debuginfo")
        assert {n: p for n, _, p in kept}["jit lowering"].endswith("symbol-dce")
        assert "backend=cpu" in by_name["jit lowering"]
    if "raise" in by_name:
        assert by_name["raise"].startswith("canonicalize,llvm-to-memref-access,")
        assert "raise-affine-to-stablehlo" in by_name["raise"]
    if "kernel lowering" in by_name:
        assert by_name["kernel lowering"] == "lower-kernel{backend=cpu},canonicalize"


def _column_then_sum(b):
    b[:, 0] = 0.5  # NumPy mode
    return b.sum(axis=0)


def _product_sign(a, c):
    return (a * c) < 0


def _ints(rng):
    a = rng.integers(-9, 9, (2, 3)).astype(np.int32)
    c = rng.integers(-9, 9, (2, 3)).astype(np.int32)
    a[0, 0], c[0, 0] = 3, -2  # one product certainly negative
    return jax.numpy.asarray(a), jax.numpy.asarray(c)


def _constant_into_a_window(y):
    return y.at[2:, 1::1].set(0.125)


@pytest.mark.slow("compiles a large module")
@needs_enzyme
def test_the_looping_scatter_pattern_still_loops_so_its_exclusion_still_holds(monkeypatch, rng):
    """When this fails, enzyme-ad's patterns reach a fixed point here: drop the entry."""
    monkeypatch.setenv(backend.PASS_TIME_LIMIT_VAR, "5")
    y = jax.numpy.asarray(rng.standard_normal((6, 5)), jax.numpy.float32)
    with pytest.raises(rl.PassTimeoutError) as info:
        rl.jit(_constant_into_a_window, exact=True)(y)
    assert info.value.stage == "optimize+sroa"


@pytest.mark.parametrize("preset", list(rl.PRESETS))
def test_a_constant_written_into_a_strided_window_compiles_in_every_preset(preset, rng):
    y = jax.numpy.asarray(rng.standard_normal((6, 5)), jax.numpy.float32)
    want = np.array(y)
    want[2:, 1:] = 0.125
    got = np.asarray(rl.jit(_constant_into_a_window, optimize=preset)(y))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("preset", list(rl.PRESETS))
def test_a_sum_over_an_updated_column_and_a_product_sign_are_right_in_every_preset(preset, rng):
    b = rng.random((4, 2))
    assert_close(rl.jit(_column_then_sum, optimize=preset)(b.copy()),
                               _column_then_sum(b.copy()), rtol=1e-12)
    a, c = _ints(rng)
    np.testing.assert_array_equal(np.asarray(rl.jit(_product_sign, optimize=preset)(a, c)),
                                  np.asarray(_product_sign(a, c)))


@needs_enzyme
def test_the_reduce_pad_and_compare_exclusions_still_hold(rng):
    """When this fails, enzyme-ad fixed a pattern: drop its entry from the table."""
    b = rng.random((4, 2))
    got = rl.jit(_column_then_sum, exact=True)(b.copy())
    assert got[0] == 0.5, "reduce_pad<1> now counts the padding: remove its exclusion"
    a, c = _ints(rng)
    assert not np.asarray(rl.jit(_product_sign, exact=True)(a, c)).any(), (
        "compare_op_canon<16> no longer folds (a * c) < 0: remove its exclusion")


def test_the_tpu_lowering_stages_run_here():
    """Every pass of the TPU's kernel, raise and jit stages is registered: they run on a
    module here (a pass pipeline does not depend on the device)."""
    from reactant_lab.stages.patterns import PatternChoice
    from reactant_lab.stages.runner import plan

    x = np.linspace(-1.0, 1.0, 6, dtype=np.float32)
    traced = rl.trace(lambda a: jnp.sin(a) * 2.0, x).ir
    assert 'loc("args[0]")' in traced
    for exact in (False, True):
        text = traced
        for _, _, pipeline in plan("noopt", None, "stage", no_nan=False, target="tpu",
                                   choice=PatternChoice(exact=exact)):
            text = rl.run_pipeline(text, pipeline)
        assert "stablehlo.sine" in text
        # exact=True runs strip-debuginfo: the argument's path and the ops' source lines go
        assert ('loc("args[0]")' in text) is not exact and ('loc("' in text) is not exact


@needs_enzyme
def test_stages_for_a_tpu_keep_their_locations_unless_exact(rng, monkeypatch):
    """Lowered for a TPU (its platform forced here), the final stage still links its ops to
    the user's lines and its graph names the loop by its statement; the jit lowering says why;
    exact=True strips them as Reactant does."""
    from reactant_lab.analysis.graph import dataflow, signature_of
    from reactant_lab.stages import runner
    from tests.test_graph_regions import cluster_labels, line_of, stencil

    t = rl.trace(stencil, rng.random(16), 12, loops="auto")
    monkeypatch.setattr(runner.backend, "platform", lambda device: "tpu")
    kept, stripped = t.stages("all"), t.stages("all", exact=True)
    assert kept.target == "tpu" and "raise-affine-to-stablehlo" in kept["raise"].pipeline
    jit = kept["jit lowering"]
    assert "strip-debuginfo left out" in (jit.unavailable or "")
    assert "strip-debuginfo" in stripped["jit lowering"].pipeline
    line = line_of(stencil, "for _ in range(steps)")
    labels = cluster_labels(dataflow(kept.final.ir, signature_of(t)))
    assert f"for _ in range(steps) — line {line}" in labels
    where = 'test_graph_regions.py":'  # a location in the user's file
    assert where in kept.final.ir and where not in stripped.final.ir


def test_the_note_names_each_left_out_pattern_once():
    """Reactant's list names scatter_update_computation_const_prop twice; the note (and the list
    of patterns left out) names it once, and no pattern is both left out and missing."""
    listed = patterns.pattern_list(no_nan=False)
    assert len(listed.excluded) == len(set(listed.excluded))
    assert not set(listed.excluded) & set(listed.missing)
    named = re.findall(r"[a-z_][a-z_0-9]*(?:<\d+>)?", listed.note or "")
    listed_names = set(listed.excluded) | set(listed.missing) | set(listed.added)
    found = [n for n in named if n in listed_names]
    assert found and len(found) == len(set(found))
