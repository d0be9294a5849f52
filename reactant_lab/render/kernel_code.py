"""The payload's ``xla.code``: the LLVM IR and the assembly XLA:CPU generated per kernel, kept
compressed up to a size budget (a saved notebook stays small; the live explorer asks the kernel
for the rest, ``ExplorerWidget``'s ``code`` command), and why no assembly is there when no
disassembler is installed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reactant_lab.errors import ReactantLabError, UnknownStageError
from reactant_lab.stages.xla import disassembler

if TYPE_CHECKING:
    from reactant_lab.render.texts import TextStore
    from reactant_lab.stages.xla import XlaStages

CODE_KINDS = ("llvm_ir", "assembly")
"""What the explorer shows of a kernel (``XlaStages.llvm_ir``, ``XlaStages.assembly``)."""


def kernel_code(xla: XlaStages, kernel: str, what: str) -> str:
    """Kernel ``kernel``'s LLVM IR or assembly (``what``); a clear error for anything else."""
    if what not in CODE_KINDS:
        raise ReactantLabError(f"unknown kind of kernel code {what!r}; use one of "
                               f"{', '.join(CODE_KINDS)}")
    return xla.llvm_ir(kernel) if what == "llvm_ir" else xla.assembly(kernel)


def code_entry(xla: XlaStages, texts: TextStore, budget: int) -> dict[str, Any] | None:
    """The payload's ``xla.code`` (None when XLA emitted no CPU kernels): per kernel, the text
    ids of its LLVM IR and assembly, or null for a text left out past ``budget`` characters
    stored in all (each kernel's LLVM IR first, then the assemblies, kernels by name so that a
    text is stored as a delta from a like one before it)."""
    if not xla.kernels:
        return None
    names = sorted(name for name, _ in xla.kernels)
    ids: dict[tuple[str, str], int | None] = {}
    error: str | None = None
    spent = 0
    for what in CODE_KINDS:
        base: int | None = None
        for name in names:
            ids[what, name] = None
            if what == "assembly" and error is not None:
                continue
            try:
                text = kernel_code(xla, name, what)
            except UnknownStageError:  # no object code for this kernel
                continue
            except ReactantLabError as exc:  # no disassembler: said once, for every kernel
                error = str(exc) if disassembler() is None else None
                continue
            tid, size = texts.add_within(text, base, budget - spent, packed=True)
            if tid is not None:
                spent += size
                ids[what, name] = base = tid
    kernels = [{"name": name, "llvm_ir": ids["llvm_ir", name], "assembly": ids["assembly", name]}
               for name, _ in xla.kernels]
    return {"kernels": kernels, "budget": budget, "assembly_error": error}
