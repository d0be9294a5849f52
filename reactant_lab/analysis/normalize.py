"""One normalization of MLIR text: what a pass changed, ignoring locations and SSA renumbering."""

from __future__ import annotations

import re

_LOC_ALIAS_LINE = re.compile(r"^\s*#loc\w*\s*=\s*loc\(.*$")
_ATTR_ALIAS_LINE = re.compile(r"^(#[A-Za-z_][\w$.]*)\s*=\s*(.+)$")
_SSA = re.compile(r"%[A-Za-z0-9$._-]+")
_BLOCK = re.compile(r"\^[A-Za-z0-9$._-]+")
_NAME_LOC = re.compile(r'"(?:[^"\\]|\\.)*"')


def _in_string(line: str, pos: int) -> bool:
    """Whether ``pos`` lies inside a double-quoted MLIR string on ``line``."""
    inside = False
    i = 0
    while i < pos:
        c = line[i]
        if c == "\\" and inside:
            i += 2
            continue
        if c == '"':
            inside = not inside
        i += 1
    return inside


def _loc_end(line: str, start: int) -> int:
    """Index just past the ``)`` closing the ``loc(`` whose ``(`` is at ``start``."""
    depth, i, inside = 0, start, False
    while i < len(line):
        c = line[i]
        if inside:
            if c == "\\":
                i += 1
            elif c == '"':
                inside = False
        elif c == '"':
            inside = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(line)


def _strip_line(line: str, keep_names: bool) -> str:
    out, pos = [], 0
    while True:
        at = line.find(" loc(", pos)
        while at != -1 and _in_string(line, at):
            at = line.find(" loc(", at + 1)
        if at == -1:
            out.append(line[pos:])
            return "".join(out)
        end = _loc_end(line, at + 4)
        inner = line[at + 5:end - 1]
        keep = keep_names and _NAME_LOC.fullmatch(inner) is not None
        out.append(line[pos:end] if keep else line[pos:at])
        pos = end


def strip_locations(text: str, keep_names: bool = True) -> str:
    """Drop ``loc(...)`` and ``#loc`` alias lines.

    With ``keep_names`` a bare name location ``loc("args[0]['w']")`` stays: that is how block
    arguments show their paths.
    """
    lines = []
    for line in text.splitlines():
        if _LOC_ALIAS_LINE.match(line):
            continue
        lines.append(_strip_line(line, keep_names) if " loc(" in line else line)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) + "\n"


def _inline_aliases(lines: list[str]) -> list[str]:
    """Replace attribute / type aliases (``#map = ...``) by their definitions, so that alias
    numbering and order do not count as a change."""
    aliases: dict[str, str] = {}
    body = []
    for line in lines:
        m = _ATTR_ALIAS_LINE.match(line)
        if m and not line.startswith("#loc"):
            aliases[m.group(1)] = m.group(2)
        else:
            body.append(line)
    if not aliases:
        return body
    pattern = re.compile("|".join(re.escape(a) for a in sorted(aliases, key=len, reverse=True))
                         + r"(?![\w$.<])")
    return [pattern.sub(lambda m: aliases[m.group(0)], line) for line in body]


def _renumber(lines: list[str]) -> list[str]:
    names: dict[str, str] = {}
    blocks: dict[str, str] = {}

    def ssa(m: re.Match) -> str:
        return names.setdefault(m.group(0), f"%v{len(names)}")

    def block(m: re.Match) -> str:
        return blocks.setdefault(m.group(0), f"^b{len(blocks)}")

    return [_BLOCK.sub(block, _SSA.sub(ssa, line)) for line in lines]


def normalize(text: str) -> str:
    """Canonical form for structural comparison: no locations, aliases inlined, SSA values and
    blocks renumbered in order of appearance, blank lines and trailing spaces dropped."""
    lines = [ln.rstrip() for ln in strip_locations(text, keep_names=False).splitlines()]
    lines = [ln for ln in lines if ln]
    return "\n".join(_renumber(_inline_aliases(lines))) + "\n"


def same_structure(before: str, after: str) -> bool:
    """True when two modules differ only in locations, SSA numbering or alias order."""
    return normalize(before) == normalize(after)
