"""XLA's HLO text as the analyses read it: which op each line holds, what a user is shown (op
metadata and the stack-frame tables dropped), what counts structurally, and which Python source
each op came from.

HLO text is not MLIR: ``%name = f32[4]{0} add(%a, %b), metadata={op_name="..." ...}`` per
instruction, computations ``%name (params) -> type {`` ... ``}``, and, in XLA's newer printer, a
header of tables (``FileNames``, ``FunctionNames``, ``FileLocations``, ``StackFrames``) that the
instructions' ``stack_frame_id`` point into. Older printers put ``source_file=`` and
``source_line=`` in the metadata itself; both are read. Plain functions on text, no bindings.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter

__all__ = ["hlo_frames", "hlo_op_counts", "hlo_opcode", "hlo_shown", "hlo_structural",
           "is_hlo"]

_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%[\w.$-]*\s*=\s*")
_SHAPE = re.compile(r"[a-z][a-z0-9]*\[|\(")
_OPCODE = re.compile(r"\s*([a-z][\w-]*)\(")
_FIELD = re.compile(r"(\w+)=(\"(?:[^\"\\]|\\.)*\"|[^\s}]+)")
_HEADER_PARAM = re.compile(r"([(,]\s*)[\w.$-]+:\s")
_COMPUTATION = re.compile(r"^\s*(?:ENTRY\s+)?%[\w.$-]+\s*\(")


def is_hlo(text: str) -> bool:
    """Whether ``text`` is an HLO module as XLA prints it (``HloModule name, ...``)."""
    return text.lstrip().startswith("HloModule ")


_BRACE_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|[{}]')


def _brace_end(s: str, start: int) -> int:
    """Index just past the ``}`` closing the ``{`` at ``start`` (strings skipped)."""
    depth = 0
    for m in _BRACE_OR_STRING.finditer(s, start):
        token = m.group(0)
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                return m.end()
    return len(s)


def _attribute(line: str, name: str) -> tuple[int, int] | None:
    """(start, end) of ``, name={...}`` in an instruction line (outside strings), or None."""
    key = f", {name}={{"
    at = line.find(key)
    while at >= 0:
        # a match inside a string (an op_name holding the key) is not the attribute
        if line.count('"', 0, at) % 2 == 0:
            return at, _brace_end(line, at + len(key) - 1)
        at = line.find(key, at + 1)
    return None


def _without_metadata(line: str) -> str:
    found = _attribute(line, "metadata") if "metadata={" in line else None
    return line if found is None else line[:found[0]] + line[found[1]:]


def _lines(text: str) -> list[tuple[int, str]]:
    """(raw line index, line) of each line shown: the stack-frame tables left out."""
    out: list[tuple[int, str]] = []
    in_table = False
    for i, line in enumerate(text.splitlines()):
        if line.strip() in _TABLES:
            in_table = True
            continue
        if in_table:
            if not line.strip():
                in_table = False
            continue
        out.append((i, line))
    return out


def hlo_shown(text: str) -> list[str]:
    """The lines of HLO text as shown: op metadata and the stack-frame tables dropped, blank
    lines collapsed to one, trailing blank lines removed."""
    return list(_shown(text))


@functools.lru_cache(maxsize=32)
def _shown(text: str) -> tuple[str, ...]:
    # a stage's text is shown, compared and diffed several times over
    shown: list[str] = []
    for _, raw in _lines(text):
        line = _without_metadata(raw).rstrip()
        if not line and (not shown or not shown[-1]):
            continue
        shown.append(line)
    while shown and not shown[-1]:
        shown.pop()
    return tuple(shown)


def _canonical_config(line: str) -> str:
    """``line`` with a JSON ``backend_config`` printed with sorted keys (XLA prints the same
    config in either order)."""
    found = _attribute(line, "backend_config") if "backend_config={" in line else None
    if found is None:
        return line
    start = found[0] + len(", backend_config=")
    try:
        config = json.dumps(json.loads(line[start:found[1]]), sort_keys=True,
                            separators=(",", ":"))
    except ValueError:
        return line
    return line[:start] + config + line[found[1]:]


def hlo_structural(text: str) -> tuple[list[str], list[str], list[int]]:
    """(shown lines, structural keys, per key the index of its shown line): the keys drop blank
    lines, print backend configs canonically and leave parameter names out of computation
    headers (the instructions' names are renumbered by the caller, as SSA names are)."""
    shown = list(_shown(text))
    keys: list[str] = []
    where: list[int] = []
    for i, line in enumerate(shown):
        key = line.rstrip()
        if not key:
            continue
        if _COMPUTATION.match(key):
            key = _HEADER_PARAM.sub(r"\1", key)
        keys.append(_canonical_config(key))
        where.append(i)
    return shown, keys, where


def hlo_opcode(line: str) -> str | None:
    """The opcode of an HLO instruction line (``add``, ``fusion``, ``while``), or None for a line
    that holds none (MLIR's lines among them). Its names may be bare sigils (``% = f32[] ...``,
    as ``normalize.ssa_template`` leaves them)."""
    m = _INSTRUCTION.match(line)
    if m is None or not _SHAPE.match(line, m.end()):
        return None
    i = m.end()
    if line.startswith("(", i):  # a tuple shape: (f32[], s32[2]{0})
        depth = 0
        while i < len(line):
            depth += {"(": 1, ")": -1}.get(line[i], 0)
            i += 1
            if depth == 0:
                break
    else:
        while i < len(line) and not line[i].isspace():
            i += 1
    op = _OPCODE.match(line, i)
    return op.group(1) if op else None


def hlo_op_counts(text: str) -> dict[str, int]:
    """Number of each opcode (``fusion`` -> 3) over all computations, sorted by name."""
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        if "%" in line:
            op = hlo_opcode(line)
            if op is not None:
                counts[op] += 1
    return dict(sorted(counts.items()))


Frame = tuple[str, int, int]
"""(file, line, column) of one stack frame."""


def _tables(text: str) -> dict[str, dict[int, str]]:
    """The stack-frame tables: table name -> id -> the rest of its line."""
    tables: dict[str, dict[int, str]] = {}
    current: dict[int, str] | None = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(("%", "ENTRY")):  # the computations: past the tables
            break
        if s in _TABLES:
            current = tables.setdefault(s, {})
            continue
        if current is None:
            continue
        if not s:
            current = None
            continue
        head, _, rest = s.partition(" ")
        if head.isdigit():
            current[int(head)] = rest
    return tables


def _fields(text: str) -> dict[str, str]:
    return {k: v.strip('"') for k, v in _FIELD.findall(text)}


class _Frames:
    """Resolves ``stack_frame_id``s through the module's tables to frame chains."""

    def __init__(self, text: str):
        tables = _tables(text)
        self.files = {k: v.strip().strip('"') for k, v in tables.get("FileNames", {}).items()}
        self.locations = {k: _fields(v) for k, v in tables.get("FileLocations", {}).items()}
        self.frames = {k: _fields(v) for k, v in tables.get("StackFrames", {}).items()}
        self.memo: dict[int, tuple[Frame, ...]] = {}

    def chain(self, frame: int) -> tuple[Frame, ...]:
        """The frame and its callers, innermost first."""
        if frame in self.memo:
            return self.memo[frame]
        out: list[Frame] = []
        seen: set[int] = set()
        at: int | None = frame
        while at is not None and at in self.frames and at not in seen:
            seen.add(at)
            entry = self.frames[at]
            loc = self.locations.get(int(entry.get("file_location_id", "0") or 0))
            if loc is not None:
                file = self.files.get(int(loc.get("file_name_id", "0") or 0))
                if file is not None:
                    out.append((file, int(loc.get("line", "0") or 0),
                                int(loc.get("column", "0") or 0)))
            # XLA prints a frame's parent one above its id, 1 for none (the root frame)
            parent = int(entry.get("parent_frame_id", "0") or 0) - 1
            at = parent if parent >= 1 else None
        self.memo[frame] = tuple(out)
        return self.memo[frame]


def hlo_frames(text: str) -> dict[int, tuple[Frame, ...]]:
    """Where each instruction with source metadata came from: its 1-based line in the shown
    text (``hlo_shown``) -> its stack frames, innermost first (``stack_frame_id``), or the one
    ``source_file`` / ``source_line`` of an older printer."""
    frames: _Frames | None = None
    out: dict[int, tuple[Frame, ...]] = {}
    shown = 0
    previous_blank = True
    for _, line in _lines(text):
        blank = not line.strip()
        if blank and previous_blank:
            continue
        previous_blank = blank
        shown += 1
        found = _attribute(line, "metadata") if "metadata={" in line else None
        if found is None:
            continue
        meta = _fields(line[found[0] + len(", metadata={"):found[1] - 1])
        if "stack_frame_id" in meta:
            frames = frames if frames is not None else _Frames(text)
            chain = frames.chain(int(meta["stack_frame_id"]))
            if chain:
                out[shown] = chain
        elif "source_file" in meta and "source_line" in meta:
            out[shown] = ((meta["source_file"], int(meta["source_line"]), 0),)
    return out
