"""XLA's own pipeline as stages: the HLO module XLA began with, then the module after each of its
HLO passes that changed it (simplification, layout assignment, fusion, copy insertion,
scheduling), continuing the MLIR stages' list; which pass each piece of the compile's time went
to; and, on the CPU, the LLVM IR XLA emitted per kernel. Built from what ``backend`` read back
from XLA's dump of the one compile (``backend.XlaDump``); plain values, no bindings."""

from __future__ import annotations

import dataclasses
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from reactant_lab import backend
from reactant_lab.analysis.normalize import normalize
from reactant_lab.analysis.ops import op_counts
from reactant_lab.errors import ReactantLabError, UnknownStageError
from reactant_lab.stages.runner import Stage, stage_table

GROUP = "XLA"
"""The group of XLA's stages."""
START = "pipeline-start"
"""XLA's name for the dump at the start of a pass pipeline (not a pass)."""


@dataclass(frozen=True)
class XlaPass:
    """One run of one of XLA's HLO passes."""

    pipeline: str
    """The pass pipeline it ran in (``simplification``, ``HLO_passes_through_layout_assignment``)."""
    name: str
    """The pass (``algsimp``, ``fusion``, ``layout-assignment``)."""
    changed: bool
    """Whether it changed the module (its text differs from the one before it)."""
    seconds: float
    """Wall time from the dump before it to its own: the pass, and XLA printing the module."""


@dataclass(frozen=True)
class PassTotal:
    """Every run of one pass name, together."""

    name: str
    """The pass."""
    runs: int
    """How many times it ran."""
    changed: int
    """How many of the runs changed the module."""
    seconds: float
    """Their time together."""


@dataclass(frozen=True, kw_only=True)
class XlaStages:
    """XLA's pipeline for one compile, as stages."""

    stages: tuple[Stage, ...]
    """The HLO module XLA began with, then the module after each pass that changed it; the last
    is the optimized HLO of the executable (``Compiled.hlo_text()``)."""
    passes: tuple[XlaPass, ...] = field(repr=False)
    """Every pass that ran, in order (``every_pass``), else those that changed the module."""
    every_pass: bool
    """Whether XLA printed the module after every pass (a large module: after changed ones
    only, and ``passes`` lists those)."""
    import_seconds: float
    """From handing the module to XLA to its first HLO: lowering to HLO."""
    pass_seconds: float
    """XLA's HLO passes (from its first HLO to the optimized one), printing included."""
    codegen_seconds: float
    """From the optimized HLO to the executable: code generation (LLVM on the CPU)."""
    kernels: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """(name, optimized LLVM IR) per kernel XLA:CPU emitted; a kernel is named after the fusion
    or instruction of the optimized HLO it computes. Empty on other platforms."""
    objects: tuple[tuple[str, bytes], ...] = field(default=(), repr=False)
    """(name, object code) per kernel XLA:CPU emitted (``assembly`` disassembles one)."""

    def __iter__(self) -> Iterator[Stage]:
        return iter(self.stages)

    def __len__(self) -> int:
        return len(self.stages)

    @property
    def final(self) -> Stage:
        """The optimized HLO."""
        return self.stages[-1]

    def reindexed(self, first: int) -> XlaStages:
        """These stages numbered from ``first`` on (after the MLIR stages of an exploration)."""
        if self.stages and self.stages[0].index == first:
            return self
        stages = tuple(dataclasses.replace(s, index=first + k) for k, s in enumerate(self.stages))
        return dataclasses.replace(self, stages=stages)

    def totals(self) -> list[PassTotal]:
        """Per pass name, its runs, how many changed the module and their time; slowest first."""
        found: dict[str, list[float]] = {}
        for p in self.passes:
            runs = found.setdefault(p.name, [0, 0, 0.0])
            runs[0] += 1
            runs[1] += p.changed
            runs[2] += p.seconds
        return sorted((PassTotal(name, int(r[0]), int(r[1]), r[2]) for name, r in found.items()),
                      key=lambda t: -t.seconds)

    def timing(self) -> str:
        """Where the compile's time went, in one line."""
        changed = sum(p.changed for p in self.passes)
        ran = (f"{changed} of {len(self.passes)} pass runs changed the module" if self.every_pass
               else f"{changed} pass runs changed the module (a large module: the others are "
               "not listed)")
        return (f"XLA: lowering to HLO {self.import_seconds * 1e3:.1f} ms, HLO passes "
                f"{self.pass_seconds * 1e3:.1f} ms ({ran}), code generation "
                f"{self.codegen_seconds * 1e3:.1f} ms")

    def table(self, passes: int = 10) -> str:
        """Plain-text table of the stages, where the time went, and the ``passes`` slowest
        passes with their runs."""
        rows = [stage_table(self.stages), self.timing()]
        totals = self.totals()[:passes]
        if totals:
            width = max(len(t.name) for t in totals)
            rows.append("slowest passes (runs, of which changed the module, ms):")
            rows += [f"  {t.name.ljust(width)}  {t.runs:>3}  {t.changed:>3}  "
                     f"{t.seconds * 1e3:7.2f}" for t in totals]
        return "\n".join(rows)

    def llvm_ir(self, kernel: str) -> str:
        """The optimized LLVM IR of ``kernel`` (a fusion's name in the optimized HLO, e.g.
        ``'add_dynamic-update-slice_fusion'``); UnknownStageError lists the kernels."""
        for name, text in self.kernels:
            if name == kernel:
                return text
        listing = ", ".join(name for name, _ in self.kernels) or "none (not a CPU compile)"
        raise UnknownStageError(f"no kernel {kernel!r}; XLA emitted: {listing}")

    def assembly(self, kernel: str) -> str:
        """The machine code XLA:CPU compiled ``kernel`` to, disassembled by ``objdump`` (or
        ``llvm-objdump``) from PATH; UnknownStageError lists the kernels, ReactantLabError says
        when neither tool is there."""
        data = next((d for name, d in self.objects if name == kernel), None)
        if data is None:
            listing = ", ".join(name for name, _ in self.objects) or "none (not a CPU compile)"
            raise UnknownStageError(f"no kernel {kernel!r}; XLA emitted: {listing}")
        return disassemble(data, kernel)

    def __str__(self) -> str:
        return self.table()


DISASSEMBLERS = ("objdump", "llvm-objdump")
"""The tools ``XlaStages.assembly`` runs, the first found on PATH."""


def disassembler() -> str | None:
    """The disassembler ``disassemble`` runs (its path), None when neither is on PATH."""
    return next((t for t in map(shutil.which, DISASSEMBLERS) if t), None)


def disassemble(data: bytes, name: str = "kernel") -> str:
    """Object code ``data`` as assembly (``objdump -d``, Intel syntax on x86)."""
    tool = disassembler()
    if tool is None:
        raise ReactantLabError(
            f"disassembling {name} needs objdump (binutils) or llvm-objdump on PATH; its LLVM "
            "IR (XlaStages.llvm_ir) needs nothing")
    with tempfile.NamedTemporaryFile(suffix=".o") as obj:
        obj.write(data)
        obj.flush()
        flags = ["-d", "--no-show-raw-insn"] + (
            ["-M", "intel"] if platform.machine() in ("x86_64", "AMD64") else [])
        done = subprocess.run([tool, *flags, obj.name], capture_output=True, text=True,
                              timeout=60, check=False)
    if done.returncode != 0:
        raise ReactantLabError(f"{os.path.basename(tool)} could not disassemble {name}: "
                               f"{done.stderr.strip()[-500:]}")
    return done.stdout.replace(obj.name, name)


def _stage(index: int, name: str, ran: Sequence[tuple[str, str]], text: str, seconds: float,
           changed: bool) -> Stage:
    """An XLA stage; ``ran``: (pass pipeline, pass) of each pass since the stage before, which
    its ``pipeline`` lists as ``simplification: algsimp, dce; fusion: ...``."""
    runs: list[tuple[str, list[str]]] = []
    for pipe, pass_name in ran:
        if not runs or runs[-1][0] != pipe:
            runs.append((pipe, []))
        runs[-1][1].append(pass_name)
    listed = "; ".join(f"{pipe}: {', '.join(names)}" for pipe, names in runs)
    return Stage(index=index, name=name, group=GROUP, pipeline=listed, ir=text,
                 seconds=max(seconds, 0.0), changed=changed,
                 op_counts=MappingProxyType(op_counts(text)))


def xla_stages(dump: backend.XlaDump, optimized: str | None, first: int = 0) -> XlaStages | None:
    """The stages of ``dump`` numbered from ``first``; ``optimized`` (the executable's HLO, when
    it prints one) stands as the last stage's text. None when XLA dumped nothing to start
    from."""
    imported = dump.imported
    if not imported:
        return None
    start_ns, imported_ns = dump.start_ns, dump.imported_ns
    stages = [_stage(first, "hlo", (), imported, (imported_ns - start_ns) / 1e9, True)]
    passes: list[XlaPass] = []
    last_text, last_norm, last_ns, dumped_ns = imported, normalize(imported), imported_ns, \
        imported_ns
    ran: list[tuple[str, str]] = []
    for d in dump.passes:
        differs = d.text != last_text
        if d.after != START and d.before:  # a pass (not a snapshot within one)
            passes.append(XlaPass(d.pipeline, d.after, differs, (d.at_ns - dumped_ns) / 1e9))
            ran.append((d.pipeline, d.after))
            dumped_ns = d.at_ns
        if not differs:
            continue
        norm = normalize(d.text)
        name = (f"before {d.pipeline}" if d.after == START else d.after if d.before
                else f"{d.pipeline}: {d.after.replace('_', ' ')}")
        stages.append(_stage(first + len(stages), name, ran, d.text, (d.at_ns - last_ns) / 1e9,
                             norm != last_norm))
        last_text, last_norm, last_ns, ran = d.text, norm, d.at_ns, []
    optimized_ns = dump.optimized_ns or last_ns
    if optimized is not None:
        if normalize(optimized) == last_norm:
            stages[-1] = dataclasses.replace(stages[-1], ir=optimized)
        else:
            stages.append(_stage(first + len(stages), "optimized", ran, optimized,
                                 (optimized_ns - last_ns) / 1e9, True))
    return XlaStages(
        stages=tuple(stages), passes=tuple(passes), every_pass=dump.every_pass,
        import_seconds=max(imported_ns - start_ns, 0) / 1e9,
        pass_seconds=max(optimized_ns - imported_ns, 0) / 1e9,
        codegen_seconds=max(dump.end_ns - optimized_ns, 0) / 1e9, kernels=dump.kernels,
        objects=dump.objects)
