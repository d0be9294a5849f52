"""Stages: preset table, stage lists, stage-by-stage equals one shot, pass failures, no enzyme-ad."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.analysis import normalize
from reactant_lab.examples import EXAMPLES, heat_loop, mlp
from reactant_lab.stages import split_passes
from reactant_lab.stages.presets import target_of
from tests.conftest import child_env
from tests.corpus import CASES

GOLDEN_STAGE_LISTS = {
    "none": [],
    "canonicalize": ["canonicalize"],
    "just_batch": ["batch"],
    "only_enzyme": ["batch", "enzyme (AD)", "cleanup"],
    "after_enzyme": ["batch", "enzyme (AD)", "cleanup", "optimize (after AD)",
                     "kernel lowering", "raise", "jit lowering"],
    "before_enzyme": ["optimize+sroa", "batch", "optimize", "enzyme (AD)", "cleanup",
                      "kernel lowering", "raise", "jit lowering"],
    "no_enzyme": ["optimize+sroa", "batch", "optimize", "arith raise", "cleanup",
                  "optimize (after AD)"],
    "before_kernel": ["optimize+sroa", "batch", "optimize", "enzyme (AD)", "cleanup",
                      "optimize (after AD)"],
    "before_raise": ["optimize+sroa", "batch", "optimize", "enzyme (AD)", "cleanup",
                     "optimize (after AD)", "kernel lowering"],
    "before_jit": ["optimize+sroa", "batch", "optimize", "enzyme (AD)", "cleanup",
                   "optimize (after AD)", "kernel lowering", "raise"],
    "all": ["optimize+sroa", "batch", "optimize", "enzyme (AD)", "cleanup",
            "optimize (after AD)", "kernel lowering", "raise", "jit lowering"],
    "noopt": ["kernel lowering", "raise", "jit lowering"],
}


@pytest.fixture(scope="module")
def mlp_traced():
    args = EXAMPLES[0].make_args(np.random.default_rng())
    return rl.trace(mlp, *args)


def test_presets_table_is_reactants():
    assert list(rl.PRESETS) == list(GOLDEN_STAGE_LISTS)


@pytest.mark.parametrize("preset", list(GOLDEN_STAGE_LISTS))
def test_golden_stage_list(mlp_traced, preset):
    st = mlp_traced.stages(preset)
    assert [s.name for s in st.stages] == ["traced", *GOLDEN_STAGE_LISTS[preset]]
    assert st.stages[0].ir == mlp_traced.ir and st.stages[0].pipeline == ""
    assert [s.index for s in st.stages] == list(range(len(st.stages)))
    assert st.optimize == preset


def test_stage_fields(mlp_traced):
    st = mlp_traced.stages("all")
    first_opt = st["optimize+sroa"]
    assert "enzyme-hlo-generate-td{patterns=" in first_opt.pipeline
    assert "transpose_transpose<16>" in first_opt.pipeline  # Reactant's pattern list
    assert first_opt.changed and first_opt.seconds > 0
    # the MLP's double transpose folds away in the first optimize stage
    assert st[0].op_counts["stablehlo.transpose"] == 2
    assert "stablehlo.transpose" not in first_opt.op_counts
    assert st.op_delta("optimize+sroa")["stablehlo.transpose"] == -2
    assert not st["raise"].changed
    # Reactant lowers jit calls for the host on a CPU and on a TPU alike
    assert f"backend={target_of(st.target).jit_backend}" in st["jit lowering"].pipeline
    assert st.final is st.stages[-1]
    table = st.table()
    assert "optimize+sroa" in table and "jit lowering" in table


def one_shot(st: rl.StageTrace) -> str:
    return rl.run_pipeline(st.stages[0].ir, st.pipeline)


@pytest.mark.parametrize("granularity", ["stage", "pass"])
@pytest.mark.parametrize("name", ["mlp", "fori_loop", "cond", "scan", "standardize"])
def test_stage_by_stage_equals_one_shot(name, granularity, rng):
    case = next(c for c in CASES if c.name == name)
    args, kwargs = case.make(rng)
    st = rl.trace(case.fn, *args, **kwargs).stages("all", granularity=granularity)
    assert normalize(st.final.ir) == normalize(one_shot(st))


def test_pass_granularity_keeps_the_transform_trio_together(mlp_traced):
    by_stage = mlp_traced.stages("all")
    by_pass = mlp_traced.stages("all", granularity="pass")
    names = [s.name for s in by_pass.stages]
    assert "enzyme-hlo patterns" in names
    assert "transform-interpreter" not in names and "enzyme-hlo-generate-td" not in names
    assert {"inline", "canonicalize", "cse", "sroa-wrappers", "lower-jit"} <= set(names)
    assert by_pass.pipeline == by_stage.pipeline
    assert {s.group for s in by_pass.stages[1:]} == {s.name for s in by_stage.stages[1:]}
    assert normalize(by_pass.final.ir) == normalize(by_stage.final.ir)


def test_changed_ignores_locations_and_renumbering(mlp_traced):
    st = mlp_traced.stages("all", granularity="pass")
    for prev, cur in zip(st.stages, st.stages[1:], strict=False):
        assert cur.changed == (normalize(prev.ir) != normalize(cur.ir))
    assert any(not s.changed for s in st.stages[1:])


def test_custom_pipeline(mlp_traced):
    st = mlp_traced.stages(pipeline="canonicalize,cse")
    assert [s.name for s in st.stages] == ["traced", "custom"] and st.optimize == "custom"
    by_pass = mlp_traced.stages(pipeline="builtin.module(canonicalize,cse)", granularity="pass")
    assert [s.name for s in by_pass.stages] == ["traced", "canonicalize", "cse"]


def test_no_nan_uses_the_no_nan_patterns(mlp_traced):
    plain = mlp_traced.stages("all")["optimize"].pipeline
    no_nan = mlp_traced.stages("all", no_nan=True)["optimize"].pipeline
    assert "no_nan_add_sub_simplify(0)" in plain and "no_nan_add_sub_simplify(1)" in no_nan
    assert "no_nan_self_sub_simplify(1)" not in plain


def test_unknown_preset_lists_valid_ones(mlp_traced):
    with pytest.raises(rl.UnknownPresetError) as info:
        mlp_traced.stages("fast")
    for name in rl.PRESETS:
        assert name in str(info.value)


def test_unknown_granularity(mlp_traced):
    with pytest.raises(rl.PipelineError, match="granularity"):
        mlp_traced.stages("all", granularity="op")


@pytest.mark.parametrize(("pipeline", "named"), [
    ("canonicalize,no-such-pass", "unknown pass 'no-such-pass'"),
    ("canonicalize{bogus-option=1}", "unknown option 'bogus-option'"),
])
def test_unknown_pass_or_option_is_named(mlp_traced, pipeline, named):
    with pytest.raises(rl.UnknownPassError, match=named.replace("(", r"\(")):
        mlp_traced.stages(pipeline=pipeline)


def test_failing_pass_raises_with_diagnostics_and_reproducer(mlp_traced, tmp_path, monkeypatch):
    monkeypatch.setenv("REACTANT_LAB_REPRO_DIR", str(tmp_path))
    with pytest.raises(rl.PassFailedError) as info:
        mlp_traced.stages(pipeline="canonicalize,transform-interpreter,cse")
    err = info.value
    assert err.stage == "custom" and err.pass_name == "transform-interpreter"
    assert "__transform_main" in err.diagnostics
    assert normalize(err.last_good_ir) == normalize(rl.run_pipeline(mlp_traced.ir,
                                                                    "canonicalize"))
    assert err.reproducer and err.reproducer.startswith(str(tmp_path))
    for name in ("input.mlir", "pipeline.txt", "rerun.py", "diagnostics.txt"):
        assert os.path.exists(os.path.join(err.reproducer, name))
    rerun = subprocess.run([sys.executable, os.path.join(err.reproducer, "rerun.py")],
                           capture_output=True, text=True, timeout=300, env=child_env())
    assert rerun.returncode != 0
    assert "PassFailedError" in rerun.stderr and "__transform_main" in rerun.stderr


def test_split_passes():
    assert split_passes('a{x=1,y="p,q{r}"},b(c,d),e') == ['a{x=1,y="p,q{r}"}', "b(c,d)", "e"]
    assert split_passes("builtin.module(a,b)") == ["a", "b"]
    with pytest.raises(rl.PipelineError, match="unclosed"):
        split_passes("a{x=1")
    with pytest.raises(rl.PipelineError, match="empty pass"):
        split_passes("a,,b")


NO_ENZYME_SCRIPT = textwrap.dedent("""
    import json, numpy as np, jax
    import reactant_lab as rl
    from reactant_lab.examples import mlp, EXAMPLES
    args = EXAMPLES[0].make_args(np.random.default_rng())
    st = rl.trace(mlp, *args).stages("all")
    out = st.compile()(*args)
    ok = bool(np.allclose(out, jax.jit(mlp)(*args), rtol=2e-5, atol=2e-5))
    print(json.dumps({"enzyme": rl.enzyme_available(), "ok": ok,
                      "stages": [[s.name, s.pipeline, s.unavailable, s.changed]
                                 for s in st.stages]}))
""")


def test_without_enzyme_upstream_passes_still_run():
    env = child_env(REACTANT_LAB_NO_ENZYME="1")
    proc = subprocess.run([sys.executable, "-c", NO_ENZYME_SCRIPT], capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["enzyme"] is False and report["ok"] is True
    stages = {name: (pipe, why, changed) for name, pipe, why, changed in report["stages"]}
    pipe, why, changed = stages["optimize+sroa"]
    assert pipe.startswith("inline{") and "canonicalize" in pipe and "cse" in pipe
    assert "sroa-wrappers" in why and "enzyme-ad" in why
    assert why.count("sroa-wrappers") == 1
    pipe, why, changed = stages["batch"]
    assert pipe == "" and "enzyme-batch" in why and not changed
    assert "lower-jit" in stages["jit lowering"][1]


def test_heat_loop_stages_keep_the_loop(rng):
    st = rl.trace(heat_loop, rng.random((16, 16)).astype(np.float32)).stages("all")
    assert st.final.op_counts.get("stablehlo.while", 0) == 1
