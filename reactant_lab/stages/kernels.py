"""The custom calls of a stage trace, as the explorer shows them: each op with its call target,
the stages it passes through unchanged, and the MLIR of the kernel a Pallas TPU call carries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reactant_lab import backend
from reactant_lab.analysis.custom_calls import CustomCall, MosaicKernel, custom_calls

if TYPE_CHECKING:
    from reactant_lab.stages.runner import Stage


@dataclass(frozen=True)
class CustomCallView:
    """One custom call of the traced module, through the stages."""

    call: CustomCall
    """The op as traced (stage 0)."""
    stages: tuple[int, ...]
    """Indices of the stages whose module holds it unchanged (target, backend config, type)."""
    kernel_mlir: str | None
    """The MLIR of the kernel it runs (a Pallas TPU kernel's Mosaic module), when it carries one
    that could be decoded here."""
    kernel_note: str | None
    """Why no kernel MLIR is shown, when the call carries a kernel but it was not decoded."""


def kernel_mlir(kernel: MosaicKernel) -> tuple[str | None, str | None]:
    """``(MLIR text, None)`` of a Pallas TPU kernel, or ``(None, why it cannot be shown)``."""
    return backend.mosaic_kernel_text(kernel.body)


def custom_call_views(stages: Sequence[Stage]) -> tuple[CustomCallView, ...]:
    """The custom calls of the first stage's module, each with the stages that keep it as it
    was and its kernel's MLIR; empty when the module has none."""
    if not stages or "custom_call" not in stages[0].ir:
        return ()
    per_stage = [[c.identity for c in custom_calls(s.ir)] if "custom_call" in s.ir else []
                 for s in stages]
    views = []
    for call in custom_calls(stages[0].ir):
        text, note = kernel_mlir(call.kernel) if call.kernel is not None else (None, None)
        kept = tuple(s.index for s, ids in zip(stages, per_stage, strict=True)
                     if call.identity in ids)
        views.append(CustomCallView(call, kept, text, note))
    return tuple(views)
