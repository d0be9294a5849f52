"""The payload's ``provenance``: for each stage, which Python line each displayed line of its
text came from, and the traced function's source lines (docs/explorer-schema.md).

Compact by design: one table of sources (per op location a flat ``[file, line, col, ...]`` chain
of user-code frames, innermost first; several locations for an op a pass fused), one list per
distinct stage map (displayed line -> 1 + index into the table, 0 for none, trailing zeros
dropped), and per stage the index of its map.
"""

from __future__ import annotations

import inspect
import linecache
from typing import TYPE_CHECKING, Any

from reactant_lab.analysis.provenance import Chain, function_code, main_file, op_frames

if TYPE_CHECKING:
    from reactant_lab.stages.runner import Stage
    from reactant_lab.trace import Traced

CODE_LINES = 400
"""The source listing spans at most this many lines (the function's own, at least)."""
NEAR = 30
"""... widened to the lines of its file that ops come from within this many lines of it (the
call of the function in a notebook cell)."""


def provenance_entry(stages: list[Stage], traced: Traced | None) -> dict[str, Any] | None:
    """The payload's ``provenance``; None when no op of any stage has a location in user code."""
    by_text: dict[str, dict[int, tuple[Chain, ...]]] = {}
    for s in stages:
        if s.ir not in by_text:
            by_text[s.ir] = op_frames(s.ir)
    sets = [by_text[s.ir] for s in stages]
    if not any(sets):
        return None
    files: dict[str, int] = {}
    table: dict[tuple[Chain, ...], int] = {}
    rows: list[list[list[int]]] = []
    maps: dict[tuple[int, ...], int] = {}
    stage_maps: list[int] = []
    for found in sets:
        line_map = [0] * (max(found) if found else 0)
        for line, chains in found.items():
            k = table.get(chains)
            if k is None:
                k = table[chains] = len(rows)
                rows.append([[n for f in chain for n in (files.setdefault(f.file, len(files)),
                                                         f.line, f.col)] for chain in chains])
            line_map[line - 1] = k + 1
        stage_maps.append(maps.setdefault(tuple(line_map), len(maps)))
    code = _code(traced, sets, files)
    return {"files": list(files), "sources": rows, "maps": [list(m) for m in maps],
            "stages": stage_maps, "code": code}


def _code(traced: Traced | None, sets: list[dict[int, tuple[Chain, ...]]],
          files: dict[str, int]) -> dict[str, Any] | None:
    """The traced function's source lines (widened to the other lines of its file that ops come
    from, up to CODE_LINES lines); None when they cannot be read."""
    span = _function_span(traced.fn if traced is not None else None)
    if span is None:
        file = main_file([{n: tuple(c[0] for c in chains) for n, chains in found.items()}
                          for found in sets])
        if file is None:
            return None
        span = (file, 0, 0)
    file, first, last = span
    lines = linecache.getlines(file)
    if not lines or file not in files:
        return None
    used = sorted({f.line for found in sets for chains in found.values() for c in chains
                   for f in c if f.file == file})
    if first == 0:
        first, last = used[0], used[-1]
    near = [n for n in used if first - NEAR <= n <= last + NEAR]
    lo, hi = min([first, *near]), max([last, *near])
    if hi - lo + 1 > CODE_LINES:
        lo, hi = first, min(last, first + CODE_LINES - 1)
    hi = min(hi, len(lines))
    if lo < 1 or hi < lo:
        return None
    return {"file": files[file], "first": lo,
            "lines": [line.rstrip("\r\n") for line in lines[lo - 1:hi]]}


def _function_span(fn: Any) -> tuple[str, int, int] | None:
    if fn is None:
        return None
    found = function_code(fn)
    if found is None:
        return None
    try:
        lines, start = inspect.getsourcelines(inspect.unwrap(fn))
    except (OSError, TypeError):
        return found
    return found[0], max(start, 1), max(start, 1) + len(lines) - 1
