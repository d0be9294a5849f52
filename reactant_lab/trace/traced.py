"""``Traced``: a function traced for one call signature, as a StableHLO module with specs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reactant_lab import checks
from reactant_lab.analysis.custom_calls import CustomCall, custom_calls
from reactant_lab.analysis.normalize import strip_locations
from reactant_lab.analysis.ops import EnzymeCall, enzyme_calls, op_counts, total_ops
from reactant_lab.trace.specs import ArgSpec, CallLayout, ResultSpec, SkippedArg

if TYPE_CHECKING:
    from reactant_lab.stages.runner import StageTrace


@dataclass(frozen=True)
class Traced:
    """A traced call: the module, its linear arguments and results, and how they map to Python."""

    fn_name: str
    """Name of the traced function."""
    mode: str
    """'jax' (JAX code) or 'numpy' (NumPy code traced through proxy arrays)."""
    linear_args: tuple[ArgSpec, ...]
    """Traced argument leaves, in block-argument order."""
    skipped_args: tuple[SkippedArg, ...]
    """Static argument leaves baked into the module."""
    linear_results: tuple[ResultSpec, ...]
    """Array leaves of the result; preserved ones are not computed by the module."""
    preserved: Mapping[str, str]
    """Result path -> argument path, for results that are an argument returned unchanged."""
    mutated: tuple[str, ...]
    """Paths of arguments the function updated in place (NumPy mode); empty for JAX code."""
    donation_mask: tuple[bool, ...]
    """Per linear argument: whether ``compile(donate=True)`` gives its buffer to the executable."""
    seconds: float
    """Wall time of tracing and lowering."""
    layout: CallLayout = field(repr=False)
    """How the Python call maps onto the module (used to run it and rebuild results)."""
    ir: str = field(repr=False)
    """The module text with every location (what the pass pipeline receives)."""
    fn: Callable[..., Any] | None = field(default=None, repr=False, compare=False)
    """The traced function itself."""
    platform: str | None = field(default=None, compare=False)
    """The platform it was lowered for when ``trace(platform=...)`` named one, else None (the
    default device's)."""
    names: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    """The name the user wrote for each argument and result path the function's signature or
    source names otherwise (``args[0]['w1']`` -> ``p['w1']``, ``result`` -> ``t``,
    ``trace.python_names``); a path it does not name is absent."""
    loop_notes: tuple[str, ...] = field(default=(), compare=False)
    """Loops that were unrolled although ``loops=`` allowed rolling them, functions whose
    control flow could not be converted, and loops that run batched (their iterations
    independent), each with the reason (``file:line: ...``)."""

    def as_text(self, debug_info: bool = False) -> str:
        """The StableHLO module. Block arguments always show their paths as locations; op
        locations (source lines) only with ``debug_info=True``."""
        checks.flag("debug_info", debug_info)
        return self.ir if debug_info else strip_locations(self.ir)

    def stages(self, optimize: str = "all", granularity: str = "stage",
               pipeline: str | None = None, no_nan: bool = False,
               device: Any | None = None, *, exclude_patterns: Any = (),
               patterns: Any = None, exact: bool = False,
               shardy_passes: str = "default") -> StageTrace:
        """Run an optimize preset (or a custom ``pipeline``) stage by stage.

        ``granularity='pass'`` makes every top-level pass its own step. The enzyme-hlo pattern
        list is Reactant's, less the patterns measured wrong, crashing, never finishing or slow on
        the target; ``exact=True`` runs Reactant's list untouched (and, on a TPU, its
        ``strip-debuginfo``: presets.LOCATIONS_PASS), ``exclude_patterns`` leaves more out
        (entries or names, e.g. ``("slice_of_dynamic_update",)``), ``patterns`` replaces it.

        ``shardy_passes`` (Reactant's option, for a call sharded over a mesh; an unsharded
        call's stages do not change): ``'default'`` keeps the traced ``sdy`` annotations for
        XLA's Shardy partitioner at compile; ``'to_mhlo_shardings'`` adds Shardy's propagation
        and export as stages (every value then shows its sharding), then canonicalize + CSE.
        """
        from reactant_lab.stages.runner import run_stages

        return run_stages(self, optimize=optimize, granularity=granularity, pipeline=pipeline,
                          no_nan=no_nan, device=device, exclude_patterns=exclude_patterns,
                          patterns=patterns, exact=exact, shardy_passes=shardy_passes)

    @property
    def enzyme_ops(self) -> tuple[EnzymeCall, ...]:
        """The Enzyme ops the trace emitted (``reactant_lab.enzyme``'s gradient, vjp, jvp and
        batch): each names the function it differentiates or batches, a private ``func.func``
        of the module, with its activities or batch shape. The ``enzyme (AD)`` and ``batch``
        stages turn them into StableHLO."""
        return enzyme_calls(self.ir)

    @property
    def custom_calls(self) -> tuple[CustomCall, ...]:
        """The module's ``stablehlo.custom_call`` ops: each call target, backend config, and
        the kernel a Pallas TPU call carries (``MosaicKernel``; ``StageTrace.custom_calls()``
        decodes it to MLIR)."""
        return custom_calls(self.ir) if "custom_call" in self.ir else ()

    def summary(self) -> str:
        """Plain-text description of the signature (each path with the name the function gives
        it), the traced module's size and the loops that were unrolled (the op count shows what
        that costs)."""
        ops = total_ops(op_counts(self.ir))
        lines = [f"Traced {self.fn_name} ({self.mode} mode, {self.seconds * 1e3:.1f} ms, "
                 f"{ops} ops" + (f", for {self.platform}" if self.platform else "") + ")"]
        named = self.names

        def name(path: str) -> str:
            return f"  ({named[path]})" if path in named else ""

        lines += [f"  arg    {a}" + ("  [donatable]" if d else "") + name(a.path)
                  for a, d in zip(self.linear_args, self.donation_mask, strict=True)]
        lines += [f"  static {s}{name(s.path)}" for s in self.skipped_args]
        lines += [f"  result {r}{name(r.path)}" for r in self.linear_results]
        lines += [f"  mutated {m}" for m in self.mutated]
        lines += [f"  loops  {n}" for n in self.loop_notes]
        lines += [f"  enzyme {c}" for c in self.enzyme_ops]
        lines += [f"  custom_call {c.target}" + (f" (kernel {c.kernel.name})" if c.kernel else "")
                  for c in self.custom_calls]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()
