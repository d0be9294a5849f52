"""Pass-pipeline strings: split into top-level passes, group them into steps, fill placeholders."""

from __future__ import annotations

import functools
import re
from string import Template

from reactant_lab.errors import PipelineError
from reactant_lab.stages.presets import jit_after, target_of

# These three only work together: generate the transform script, interpret it, remove it.
TRANSFORM_TRIO = ("enzyme-hlo-generate-td", "transform-interpreter", "enzyme-hlo-remove-transform")
_WRAPPER = re.compile(r"^\s*builtin\.module\((.*)\)\s*$", re.S)


def split_passes(pipeline: str) -> list[str]:
    """Top-level passes of a pipeline: commas inside ``{}``, ``()`` or quotes do not split."""
    return list(_split(pipeline))


@functools.lru_cache(maxsize=256)
def _split(pipeline: str) -> tuple[str, ...]:
    """``split_passes``, remembered: a preset's pipelines (the pattern list alone is 10 KB) are
    split on every first call, at about a millisecond each."""
    pipeline = pipeline.strip()
    wrapped = _WRAPPER.match(pipeline)
    if wrapped:
        pipeline = wrapped.group(1)
    passes, depth, start, quote = [], 0, 0, False
    for i, c in enumerate(pipeline):
        if c == '"':
            quote = not quote
        elif quote:
            continue
        elif c in "{(":
            depth += 1
        elif c in "})":
            depth -= 1
            if depth < 0:
                raise PipelineError(f"unbalanced '{c}' at character {i} of pass pipeline "
                                    f"{pipeline[:200]!r}")
        elif c == "," and depth == 0:
            passes.append(pipeline[start:i].strip())
            start = i + 1
    if depth or quote:
        raise PipelineError(f"unclosed bracket or quote in pass pipeline {pipeline[:200]!r}")
    passes.append(pipeline[start:].strip())
    empty = [i for i, p in enumerate(passes) if not p]
    if empty and pipeline:
        raise PipelineError(f"empty pass at position {empty[0]} of pass pipeline "
                            f"{pipeline[:200]!r} (a doubled or trailing comma?)")
    return tuple(p for p in passes if p)


def pass_name(pass_text: str) -> str:
    """``sroa-wrappers`` from ``sroa-wrappers{instcombine=false}``."""
    return re.split(r"[{(]", pass_text, maxsplit=1)[0].strip()


def group_steps(passes: list[str]) -> list[tuple[str, str]]:
    """(step name, step pipeline) per pass; the transform trio stays one step."""
    steps: list[tuple[str, str]] = []
    i = 0
    while i < len(passes):
        names = tuple(pass_name(p) for p in passes[i:i + 3])
        if names == TRANSFORM_TRIO:
            steps.append(("enzyme-hlo patterns", ",".join(passes[i:i + 3])))
            i += 3
        else:
            steps.append((pass_name(passes[i]), passes[i]))
            i += 1
    return steps


def fill(template: str, *, patterns: str, target: str, exact: bool = False) -> str:
    """Resolve ``${patterns}`` and the lowering options of platform ``target`` (presets.TARGETS)
    in a stage template; ``exact``: Reactant's passes after the jit lowering, all of them
    (presets.jit_after)."""
    t = target_of(target)
    return Template(template).substitute(patterns=patterns, kernel_backend=t.kernel_backend,
                                         jit_backend=t.jit_backend,
                                         jit_after=jit_after(t, exact))
