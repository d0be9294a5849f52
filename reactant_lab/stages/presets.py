"""Reactant's ``optimize`` presets as data: each preset is a sequence of named stages.

The stage pipelines follow Reactant.jl's ``compile_mlir!`` for ``optimize=:<preset>``; the
placeholders are filled in when a pipeline runs:

- ``${patterns}``: Reactant's enzyme-hlo pattern list (``no_nan`` aware), less the patterns the
  installed enzyme-ad lacks (see stages/patterns.py; the stage notes name them);
- ``${target}``: ``cpu`` or ``cuda``, from the device the module is compiled for.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from reactant_lab.errors import UnknownPresetError


@dataclass(frozen=True)
class StageSpec:
    """One named stage of a preset."""

    name: str
    """Name shown in stage lists (unique within a preset)."""
    pipeline: str
    """Pass-pipeline template (comma-separated top-level passes)."""
    what: str
    """One line on what the stage is for."""


_INLINE = "inline{default-pipeline=canonicalize max-iterations=4}"
_PATTERNS = ("enzyme-hlo-generate-td{patterns=${patterns}},transform-interpreter,"
             "enzyme-hlo-remove-transform")
_FUNC = f"canonicalize,cse,canonicalize,{_PATTERNS}"
_SROA = "sroa-wrappers{instcombine=false instsimplify=true}"
_ENZYME = ('enzyme{postpasses="arith-raise{stablehlo=true},canonicalize,cse,canonicalize,'
           'remove-unnecessary-enzyme-ops,enzyme-simplify-math,canonicalize,cse,canonicalize"}')
_OPT = f"{_INLINE},{_FUNC}"

STAGES: MappingProxyType[str, StageSpec] = MappingProxyType({
    "opt_sroa": StageSpec(
        "optimize+sroa",
        f"{_INLINE},propagate-constant-bounds,{_SROA},canonicalize,"
        f"{_SROA},libdevice-funcs-raise,canonicalize,remove-duplicate-func-def,{_FUNC}",
        "inline, scalar replacement of wrappers, canonicalize, CSE, enzyme-hlo patterns"),
    "batch": StageSpec("batch", "enzyme-batch", "turn enzyme.batch ops into batched ops"),
    "opt": StageSpec("optimize", _OPT, "inline, canonicalize, CSE, enzyme-hlo patterns"),
    "enzyme": StageSpec("enzyme (AD)", f"{_ENZYME},arith-raise{{stablehlo=true}}",
                        "differentiate enzyme.autodiff / fwddiff calls"),
    "arith_raise": StageSpec("arith raise", "arith-raise{stablehlo=true}",
                             "raise arith ops to StableHLO (no AD)"),
    "cleanup": StageSpec("cleanup",
                         "canonicalize,remove-unnecessary-enzyme-ops,enzyme-simplify-math",
                         "drop leftover Enzyme ops, simplify math"),
    "opt_post": StageSpec("optimize (after AD)", _OPT,
                          "inline, canonicalize, CSE, enzyme-hlo patterns on the AD result"),
    "kernel": StageSpec("kernel lowering", "lower-kernel{backend=${target}},canonicalize",
                        "lower custom kernels for the target"),
    "raise": StageSpec("raise", "canonicalize", "raising off (Reactant's raise=false)"),
    "jit": StageSpec(
        "jit lowering",
        "lower-jit{openmp=true backend=${target}},symbol-dce",
        "lower enzymexla jit calls, drop dead symbols"),
    "canonicalize": StageSpec("canonicalize", "canonicalize", "MLIR's canonicalizer only"),
})

_FRONT = ("opt_sroa", "batch", "opt", "enzyme", "cleanup")

PRESETS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType({
    "none": (),
    "canonicalize": ("canonicalize",),
    "just_batch": ("batch",),
    "only_enzyme": ("batch", "enzyme", "cleanup"),
    "after_enzyme": ("batch", "enzyme", "cleanup", "opt_post", "kernel", "raise", "jit"),
    "before_enzyme": (*_FRONT, "kernel", "raise", "jit"),
    "no_enzyme": ("opt_sroa", "batch", "opt", "arith_raise", "cleanup", "opt_post"),
    "before_kernel": (*_FRONT, "opt_post"),
    "before_raise": (*_FRONT, "opt_post", "kernel"),
    "before_jit": (*_FRONT, "opt_post", "kernel", "raise"),
    "all": (*_FRONT, "opt_post", "kernel", "raise", "jit"),
    # Lowering only, no optimization: the least a module needs to run (a compiler's -O0).
    "noopt": ("kernel", "raise", "jit"),
})
"""Preset name -> stage keys of STAGES, in order."""


def check_preset(optimize: str) -> None:
    """Raise UnknownPresetError, listing the valid presets, unless ``optimize`` is one."""
    if optimize not in PRESETS:
        raise UnknownPresetError(
            f"unknown optimize preset {optimize!r}. Valid presets: {', '.join(PRESETS)}; "
            "or pass pipeline='pass1,pass2,...' for a custom pass pipeline.")
