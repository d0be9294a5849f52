"""Reactant's ``optimize`` presets as data: each preset is a sequence of named stages.

The stage pipelines follow Reactant.jl's ``compile_mlir!`` for ``optimize=:<preset>``; the
placeholders are filled in when a pipeline runs:

- ``${patterns}``: Reactant's enzyme-hlo pattern list (``no_nan`` aware), less the patterns the
  installed enzyme-ad lacks (see stages/patterns.py; the stage notes name them);
- ``${kernel_backend}``, ``${jit_backend}``, ``${jit_after}``: from TARGETS, by the platform of
  the device the module is compiled for (``target``); TARGETS also swaps stages for a platform
  (the raising pipeline for ``raise`` on a TPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from reactant_lab.errors import PipelineError, UnknownPresetError


@dataclass(frozen=True)
class StageSpec:
    """One named stage of a preset."""

    name: str
    """Name shown in stage lists (unique within a preset)."""
    pipeline: str
    """Pass-pipeline template (comma-separated top-level passes)."""
    what: str
    """One line on what the stage is for."""
    runner: str = "enzyme"
    """Whose pass manager runs it: 'enzyme' (enzyme-ad's, or jaxlib's when enzyme-ad is not
    installed) or 'jaxlib' (jaxlib's own: passes enzyme-ad does not register, the ``sdy``
    ones)."""
    note: str | None = None
    """Where the stage departs from Reactant's, shown with it in the stage notes."""


_INLINE = "inline{default-pipeline=canonicalize max-iterations=4}"
_PATTERNS = ("enzyme-hlo-generate-td{patterns=${patterns}},transform-interpreter,"
             "enzyme-hlo-remove-transform")
_FUNC = f"canonicalize,cse,canonicalize,{_PATTERNS}"
_SROA = "sroa-wrappers{instcombine=false instsimplify=true}"
_ENZYME = ('enzyme{postpasses="arith-raise{stablehlo=true},canonicalize,cse,canonicalize,'
           'remove-unnecessary-enzyme-ops,enzyme-simplify-math,canonicalize,cse,canonicalize"}')
_OPT = f"{_INLINE},{_FUNC}"
_RAISE = ("canonicalize,llvm-to-memref-access,canonicalize,convert-llvm-to-cf,canonicalize,"
          "enzyme-lift-cf-to-scf,canonicalize,func.func(canonicalize-loops),canonicalize-scf-for,"
          "canonicalize,affine-cfg,canonicalize,func.func(canonicalize-loops),canonicalize,"
          "llvm-to-affine-access,canonicalize,delinearize-indexing,canonicalize,"
          "simplify-affine-exprs,affine-cfg,canonicalize,"
          "func.func(affine-loop-invariant-code-motion,affine-loop-unroll),canonicalize,"
          "raise-affine-to-stablehlo,arith-raise{stablehlo=true}")

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
    "kernel": StageSpec("kernel lowering", "lower-kernel{backend=${kernel_backend}},canonicalize",
                        "lower custom kernels for the target"),
    "raise": StageSpec("raise", "canonicalize", "raising off (Reactant's raise=false)"),
    "raise_on": StageSpec(
        "raise", f"{_RAISE},{_OPT}",
        "raise LLVM kernels to StableHLO (Reactant's raise=true, its default on a TPU)",
        note="affine-loop-unroll runs without Reactant's {unroll-full}: the installed "
             "enzyme-ad's MLIR has no such option (only raised LLVM kernels have loops to "
             "unroll)"),
    "jit": StageSpec(
        "jit lowering",
        "lower-jit{openmp=true backend=${jit_backend}},symbol-dce${jit_after}",
        "lower enzymexla jit calls, drop dead symbols"),
    "canonicalize": StageSpec("canonicalize", "canonicalize", "MLIR's canonicalizer only"),
})


@dataclass(frozen=True)
class Target:
    """How the lowering stages read for one device platform (Reactant's ``compile_mlir!``)."""

    kernel_backend: str
    """``lower-kernel``'s backend option."""
    jit_backend: str
    """``lower-jit``'s backend option."""
    jit_after: str = ""
    """Passes run after the jit lowering's ``symbol-dce`` (with a leading comma)."""
    swaps: tuple[tuple[str, str], ...] = ()
    """(stage key of a preset, key of STAGES run in its place on this platform)."""


TARGETS: MappingProxyType[str, Target] = MappingProxyType({
    "cpu": Target("cpu", "cpu"),
    # A TPU runs no custom kernels of its own: Reactant lowers them for the host, raises them
    # (raise=true is its default there) and strips debug info before XLA compiles.
    "tpu": Target("cpu", "cpu", ",strip-debuginfo", (("raise", "raise_on"),)),
})
"""Platform (``backend.platform``: 'cpu', 'tpu', 'cuda', ...) -> its lowering options. A
platform not listed gets its own name as both backends (``target_of``)."""


LOCATIONS_PASS = "strip-debuginfo"
"""A pass of Reactant's lowering for a TPU (after the jit lowering) that runs only under
``exact=True``: it drops every source location, and with them the final stage's links to the
user's lines, its graph's loop names and its matches in the graph diff, and the source lines of
XLA's own stages (XLA's HLO metadata is made from them). Locations are metadata: XLA compiles
the same ops either way, as it does for ``jax.jit``'s modules, which keep theirs."""

LOCATIONS_NOTE = (f"{LOCATIONS_PASS} left out (Reactant runs it here): the source locations stay "
                  "for the explorer's source links and XLA's stages; exact=True runs it")
"""The jit lowering stage's note where LOCATIONS_PASS was left out."""


def jit_after(target: Target, exact: bool) -> str:
    """``target``'s passes after the jit lowering (with a leading comma): Reactant's, less
    LOCATIONS_PASS unless ``exact``."""
    if exact:
        return target.jit_after
    return "".join(f",{p}" for p in target.jit_after.split(",") if p and p != LOCATIONS_PASS)


def target_of(platform: str) -> Target:
    """TARGETS' entry for ``platform``; for one it lacks, its name as both backends."""
    return TARGETS.get(platform) or Target(platform, platform)


def stage_keys(optimize: str, platform: str) -> tuple[str, ...]:
    """The keys of STAGES preset ``optimize`` runs on ``platform`` (its swaps applied)."""
    swaps = dict(target_of(platform).swaps)
    return tuple(swaps.get(k, k) for k in PRESETS[optimize])


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

ONLY_ON: MappingProxyType[str, tuple[str, ...]] = MappingProxyType({
    "propagate-constant-bounds": ("llvm.",),
    "sroa-wrappers": ("llvm.",),
    "libdevice-funcs-raise": ("llvm.",),
    "remove-duplicate-func-def": ("llvm.",),
    "lower-kernel": ("kernel_call", "llvm."),
    "lower-jit": ("jit_call", "llvm."),
})
"""Pass name -> the text of the only ops it rewrites: LLVM dialect functions (SROA on them, the
kernel pointers' bounds, libdevice calls raised to math ops, duplicate definitions) and the
``enzymexla`` calls of custom kernels and jitted LLVM code. Only a front end writes those
(Reactant.jl's kernels and ``@ccall``s); no pass of a preset makes them. A module whose text has
none of a pass's markers comes out of that pass unchanged, so the one run of all a preset's
passes on ``rl.jit``'s first call (``runner.run_deferred``) leaves such passes out: 5-9 ms of
the 20-45 ms those runs took on the benchmark's kernels. The stages, run when looked at, run
every pass; their final module is the one-shot one, text for text (tested over the
differential suite)."""


_JAXLIB = "run through jaxlib's pass manager: enzyme-ad does not register the sdy passes"

SHARDY_STAGES: MappingProxyType[str, StageSpec] = MappingProxyType({
    "sdy_propagate": StageSpec(
        "sdy propagation", "sdy-propagation-pipeline",
        "Shardy's propagation: every value gets the sharding its operands' imply",
        runner="jaxlib", note=_JAXLIB),
    "sdy_export": StageSpec(
        "sdy export", "sdy-export-pipeline",
        "Shardy's export: close the propagated shardings, sink data-flow edges",
        runner="jaxlib",
        note=f"{_JAXLIB}. Reactant runs xla-sdy-stablehlo-export-pipeline, XLA's own, which "
             "neither jaxlib nor enzyme-ad registers; this runs its Shardy part "
             "(sdy-export-pipeline). Its last step, shardings to mhlo.sharding attributes and "
             "sdy.constant to stablehlo.constant, is not available here: values keep their "
             "sdy.sharding and XLA's Shardy partitioner partitions the module at compile"),
    "sdy_cleanup": StageSpec(
        "canonicalize+cse (after sdy)", "canonicalize,cse",
        "canonicalize and CSE on the propagated module, as Reactant does after the export"),
})

SHARDY_PASSES: MappingProxyType[str, tuple[str, ...]] = MappingProxyType({
    # The annotations stay as traced; XLA's Shardy partitioner propagates and partitions them
    # when the module compiles.
    "default": (),
    "to_mhlo_shardings": ("sdy_propagate", "sdy_export", "sdy_cleanup"),
})
"""Reactant's ``shardy_passes`` choice -> stage keys of SHARDY_STAGES, run after the preset's
stages on a sharded call only (an unsharded one's stages do not change)."""


def check_shardy_passes(shardy_passes: str) -> None:
    """Raise PipelineError, listing the valid choices, unless ``shardy_passes`` is one."""
    if shardy_passes not in SHARDY_PASSES:
        raise PipelineError(f"unknown shardy_passes {shardy_passes!r}; valid: "
                            f"{', '.join(SHARDY_PASSES)}")


def check_preset(optimize: str) -> None:
    """Raise UnknownPresetError, listing the valid presets, unless ``optimize`` is one."""
    if optimize not in PRESETS:
        raise UnknownPresetError(
            f"unknown optimize preset {optimize!r}. Valid presets: {', '.join(PRESETS)}; "
            "or pass pipeline='pass1,pass2,...' for a custom pass pipeline.")
