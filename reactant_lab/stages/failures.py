"""Turn a failed, crashed or interrupted pass run into the error the user sees: the failing pass
(found by re-running the stage pass by pass), MLIR's diagnostics, and a reproducer."""

from __future__ import annotations

from reactant_lab import backend
from reactant_lab.errors import (
    PassCrashedError,
    PassFailedError,
    PassInterruptedError,
    PassTimeoutError,
)
from reactant_lab.stages.pipeline import group_steps, split_passes
from reactant_lab.stages.reproducer import KEEP_NEWEST, write_reproducer

PARSER = "(MLIR's parser, before any pass)"
"""The ``pass_name`` of a crash that happens while the module text is parsed."""


def pass_failed(stage: str, pipeline: str, before: str,
                exc: backend.PassRunFailure) -> PassFailedError:
    """Find the failing pass of a stage and describe it. After a crash each re-run starts a
    fresh worker; a crash that parsing alone reproduces is blamed on the parser."""
    if isinstance(exc, backend.PassCrash) and _parser_crashes(before):
        return _describe(stage, PARSER, before, exc)
    if isinstance(exc, backend.PassTimeout):  # re-running its steps could take as long again
        return _describe(stage, pipeline, before, exc)
    failing, ir, error = pipeline, before, exc
    steps = group_steps(split_passes(pipeline))
    if len(steps) > 1:
        for _, step in steps:
            try:
                ir = backend.run_pipeline(ir, step)
            except backend.PassRunFailure as inner:
                failing, error = step, inner
                break
        else:  # each pass alone succeeds: only the whole stage fails
            ir = before
    return _describe(stage, failing, ir, error)


def _parser_crashes(text: str) -> bool:
    try:
        backend.check_parses(text)
    except backend.PassCrash:
        return True
    except backend.PassRunFailure:
        return False
    return False


def _describe(stage: str, failing: str, ir: str, error: backend.PassRunFailure) -> PassFailedError:
    diagnostics = error.diagnostics
    where = write_reproducer(ir, "" if failing == PARSER else failing, diagnostics)
    reproducer = (f"Reproducer: {where} (python {where}/rerun.py; the newest {KEEP_NEWEST} are "
                  "kept)" if where else
                  "No reproducer could be written.")
    if isinstance(error, backend.PassTimeout):
        message = (f"stage {stage!r} ran for {error.seconds:.0f} s, past the pass time limit of "
                   f"{error.limit:g} s, and was stopped (a pass or pattern that never finishes, or "
                   "a module too large); this Python process is unharmed and the next pipeline "
                   "starts a new worker. To find the pass, run with granularity='pass'; for the "
                   "enzyme-hlo patterns, time halves of the list with pipeline=...; set "
                   f"{backend.PASS_TIME_LIMIT_VAR} to a larger number of seconds (0: no limit) "
                   f"if it only needs longer.\n{reproducer}")
        return PassTimeoutError(message, seconds=error.seconds, limit=error.limit, stage=stage,
                                pass_name=failing, diagnostics=diagnostics, last_good_ir=ir,
                                reproducer=where)
    if isinstance(error, backend.PassCrash):
        what = "MLIR's parser" if failing == PARSER else f"pass {failing[:200]!r}"
        message = (f"{what} crashed the pass worker ({error.signal}) in stage {stage!r}; this "
                   "Python process is unharmed and the next pipeline starts a new worker.\n"
                   f"MLIR diagnostics:\n  {diagnostics.strip()[:2000] or '(it printed nothing)'}"
                   f"\n{reproducer}")
        return PassCrashedError(message, signal=error.signal, stage=stage, pass_name=failing,
                                diagnostics=diagnostics, last_good_ir=ir, reproducer=where)
    message = (f"pass {failing[:200]!r} failed in stage {stage!r}.\nMLIR diagnostics:\n"
               f"  {diagnostics.strip()[:2000]}\n{reproducer}")
    return PassFailedError(message, stage=stage, pass_name=failing, diagnostics=diagnostics,
                           last_good_ir=ir, reproducer=where)


def check_parses(text: str) -> None:
    """Raise ModuleTextError unless ``text`` parses (PassCrashedError if the parser crashes)."""
    try:
        backend.check_parses(text)
    except backend.PassRunFailure as exc:
        raise pass_failed("parse", "", text, exc) from None


def interrupted(stage: str, seconds: float, ops: int | None) -> PassInterruptedError:
    """The error for Ctrl-C during a stage."""
    size = f" on a module of {ops:,} ops" if ops is not None else ""
    stopped = ("passes run in this process (REACTANT_LAB_INPROCESS_PASSES), so Ctrl-C took "
               "effect when the pass returned" if backend.inprocess_passes() else
               "the pass worker running it was stopped; the next call starts a new one")
    return PassInterruptedError(
        f"stage {stage!r} was interrupted after {seconds:.1f} s{size}: {stopped}. To find a "
        "slow pass, run the stages with granularity='pass', or time halves of the pattern list "
        "with pipeline=...", stage=stage, seconds=seconds)
