"""What ``bisect`` found: ``BisectResult``."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, field

from reactant_lab import timing
from reactant_lab.verify import StageCheck


@dataclass(frozen=True, kw_only=True)
class BisectResult:
    """The pass, and the patterns inside it, that first make a program's metric go bad."""

    fn_name: str
    """The bisected function."""
    metric: str
    """'result', 'runtime' or 'compile_time'."""
    threshold: float | None
    """Runtime / compile_time: bad above this many times the traced module's figure."""
    reference: str | None
    """Result: what it was compared with ('numpy', 'jax' or 'stage0')."""
    found: bool
    """Whether a culprit was found (False when the final module is not bad: ``why`` says so)."""
    why: str
    """One paragraph for the user: what was found, or why nothing."""
    regressed: bool | None = None
    """Whether the final module is bad (True: a culprit is looked for; False: nothing regressed,
    nothing to bisect); None when the traced module itself could not be judged."""
    stage: str | None = None
    """The preset stage holding the culprit pass (its group name)."""
    pass_index: int | None = None
    """The culprit's index in the pass-granularity StageTrace."""
    pass_name: str | None = None
    """The culprit pass (``enzyme-hlo patterns`` for the pattern trio)."""
    pass_pipeline: str | None = None
    """The culprit's pipeline as it ran in the full pipeline."""
    patterns: tuple[str, ...] = ()
    """The minimal set of enzyme-hlo patterns that is bad (empty for other passes)."""
    before_ir: str | None = field(default=None, repr=False)
    """The module before the culprit."""
    after_ir: str | None = field(default=None, repr=False)
    """The module after the culprit alone (the minimal patterns, for the pattern pass)."""
    good: StageCheck | None = None
    """The figures without the culprit (of ``before_ir``)."""
    bad: StageCheck | None = None
    """The figures with the culprit (of ``after_ir``)."""
    tests: int = 0
    """Variants compiled and measured."""
    seconds: float = 0.0
    """Wall time of the whole bisection."""
    reproducer: pathlib.Path | None = None
    """Directory with before.mlir, after.mlir, pipeline.txt, inputs.npz, result.json, rerun.py."""
    log: tuple[str, ...] = ()
    """One line per test: what was tried, the figure, good or bad."""

    def summary(self) -> str:
        """Plain text: the verdict, the culprit, the figures with and without it."""
        lines = [f"bisect {self.fn_name}, metric={self.metric}: "
                 f"{_verdict(self)}", self.why]
        if self.found:
            lines.append(f"culprit: pass {self.pass_index} {self.pass_name!r} of stage "
                         f"{self.stage!r}")
            if self.patterns:
                lines.append(f"patterns: {', '.join(self.patterns)}")
            lines.append(f"without it: {_figures(self.good)}; with it: {_figures(self.bad)}")
        lines.append(f"{self.tests} variants compiled and measured in {self.seconds:.1f} s")
        if self.reproducer is not None:
            lines.append(f"reproducer: {self.reproducer} (python rerun.py)")
        return "\n".join(lines)

    __str__ = summary
    __repr__ = summary


def _verdict(result: BisectResult) -> str:
    """The outcome in a few words: culprit found, no regression, or no culprit."""
    if result.found:
        return "culprit found"
    return "no regression" if result.regressed is False else "no culprit"


def _figures(check: StageCheck | None) -> str:
    if check is None:
        return "-"
    if check.error:
        return check.error
    parts = [f"compile {timing.format_seconds(check.compile_seconds, 'us')}"]
    if check.run_seconds is not None:
        parts.append(f"run {timing.format_seconds(check.run_seconds, 'us')}")
    parts.append("result ok" if check.ok else f"result off: {check.first_bad}")
    return ", ".join(parts)

