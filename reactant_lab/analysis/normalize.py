"""One normalization of MLIR text: what a pass changed, ignoring locations and SSA renumbering."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from reactant_lab.analysis.hlo import hlo_shown, hlo_structural, is_hlo

_LOC_ALIAS_LINE = re.compile(r"^\s*#loc\w*\s*=\s*loc\(.*$")
_ATTR_ALIAS_LINE = re.compile(r"^(#[A-Za-z_][\w$.]*)\s*=\s*(.+)$")
_SSA = re.compile(r"%[A-Za-z0-9$._-]+")
_BLOCK = re.compile(r"\^[A-Za-z0-9$._-]+")
_NAME = re.compile(r"%[A-Za-z0-9$._-]+|\^[A-Za-z0-9$._-]+")
_NAME_LOC = re.compile(r'"(?:[^"\\]|\\.)*"')
_STRING_OR_LOC = re.compile(r'"(?:[^"\\]|\\.)*"?| loc\(')
_TRAILING_LOC_REF = re.compile(r"(.*) loc\(#[\w$.-]*\)$")


def paren_end(line: str, start: int) -> int:
    """Index just past the ``)`` closing the ``(`` at ``start`` (strings skipped), or
    ``len(line)`` when it is not closed."""
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
    out, pos, i = [], 0, 0
    while True:
        m = _STRING_OR_LOC.search(line, i)
        if m is None:
            out.append(line[pos:])
            return "".join(out)
        if m.group(0) != " loc(":  # a string: a loc( inside it is text
            i = m.end()
            continue
        at = m.start()
        end = paren_end(line, at + 4)
        inner = line[at + 5:end - 1]
        keep = keep_names and _NAME_LOC.fullmatch(inner) is not None
        out.append(line[pos:end] if keep else line[pos:at])
        pos = i = end


def strip_locations(text: str, keep_names: bool = True) -> str:
    """Drop ``loc(...)`` and ``#loc`` alias lines.

    With ``keep_names`` a bare name location ``loc("args[0]['w']")`` stays: that is how block
    arguments show their paths. XLA's HLO text loses its op metadata and stack-frame tables
    instead (``analysis.hlo``).
    """
    if is_hlo(text):
        return "\n".join(hlo_shown(text)) + "\n"
    lines = []
    for line in text.splitlines():
        if _LOC_ALIAS_LINE.match(line):
            continue
        lines.append(_strip_line(line, keep_names) if " loc(" in line else line)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) + "\n"


def _alias_pattern(aliases: dict[str, str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(a) for a in sorted(aliases, key=len, reverse=True))
                      + r"(?![\w$.<])")


@dataclass(frozen=True)
class StructuralText:
    """Module text split into what is shown and what counts structurally, line by line."""

    shown: tuple[str, ...]
    """Every line of ``strip_locations(text)``: what a user reads (argument names kept)."""
    keys: tuple[str, ...]
    """Per line that counts: no locations, attribute aliases inlined, SSA names as printed."""
    lines: tuple[int, ...]
    """Per key: the index of its line in ``shown``."""


def structural_lines(text: str) -> StructuralText:
    """The one normalization, before SSA renumbering: drops ``loc(...)``, ``#loc`` lines, blank
    lines and alias definitions (inlining the aliases), and keeps each key's shown line. For
    XLA's HLO text, ``analysis.hlo.hlo_structural``'s keys."""
    if is_hlo(text):
        hlo_lines, hlo_keys, hlo_where = hlo_structural(text)
        return StructuralText(tuple(hlo_lines), tuple(hlo_keys), tuple(hlo_where))
    shown: list[str] = []
    keys: list[str] = []
    where: list[int] = []
    aliases: dict[str, str] = {}
    for line in text.splitlines():
        if _LOC_ALIAS_LINE.match(line):
            continue
        has_loc = " loc(" in line
        quick = _TRAILING_LOC_REF.match(line) if has_loc else None
        if quick and " loc(" not in quick.group(1):  # the common case: one ` loc(#locN)` at the end
            shown.append(quick.group(1))
            key = quick.group(1).rstrip()
        else:
            shown.append(_strip_line(line, True) if has_loc else line)
            key = (_strip_line(line, False) if has_loc else line).rstrip()
        if not key:
            continue
        m = _ATTR_ALIAS_LINE.match(key)
        if m and not key.startswith("#loc"):
            aliases[m.group(1)] = m.group(2)
            continue
        keys.append(key)
        where.append(len(shown) - 1)
    while shown and not shown[-1].strip():
        shown.pop()
    if aliases:
        pattern = _alias_pattern(aliases)
        keys = [pattern.sub(lambda m: aliases[m.group(0)], k) for k in keys]
    return StructuralText(tuple(shown), tuple(keys), tuple(where))


def ssa_template(key: str) -> tuple[str, tuple[str, ...]]:
    """A key with every SSA value and block name replaced by its sigil, and the names in order:
    two lines with equal templates differ at most in naming."""
    names = tuple(_NAME.findall(key))
    # an SSA name holds no `^` and a block name no `%`: two plain substitutions (no callback
    # per name) give _NAME's template
    return (_SSA.sub("%", _BLOCK.sub("^", key)) if names else key), names


def _renumber(lines: list[str]) -> list[str]:
    names: dict[str, str] = {}
    blocks: dict[str, str] = {}

    def ssa(m: re.Match[str]) -> str:
        return names.setdefault(m.group(0), f"%v{len(names)}")

    def block(m: re.Match[str]) -> str:
        return blocks.setdefault(m.group(0), f"^b{len(blocks)}")

    return [_BLOCK.sub(block, _SSA.sub(ssa, line)) for line in lines]


_HEX_DIGITS = b"0123456789abcdefABCDEF"
_LONG_HEX_MIN = 256
"""Hex digits from which a ``"0x..."`` literal is a long one (a folded constant's data)."""


def replace_long_hex(text: str, replacement: Callable[[str], str]) -> str:
    """``text`` with each ``"0x<at least 256 hex digits>"`` literal (quotes included) replaced
    by ``replacement(literal)``. Found with ``str.find`` and checked as bytes: a regex over the
    megabytes of a folded constant took ~30 ms a call on a 16 MB module, this ~5."""
    if '"0x' not in text:
        return text
    pieces: list[str] = []
    done = pos = 0
    while (start := text.find('"0x', pos)) >= 0:
        end = text.find('"', start + 3)
        if end < 0:
            break
        if end - start - 3 < _LONG_HEX_MIN or text[start + 3:end].encode(
                "ascii", "replace").translate(None, _HEX_DIGITS):
            pos = end  # not one: its closing quote may open the next literal
            continue
        pieces += [text[done:start], replacement(text[start:end + 1])]
        done = pos = end + 1
    return "".join(pieces) + text[done:] if pieces else text


def _digest(literal: str) -> str:
    return f'"0x…{hashlib.sha1(literal.encode()).hexdigest()}"'


def normalize(text: str) -> str:
    """Canonical form for structural comparison: no locations, aliases inlined, SSA values and
    blocks renumbered in order of appearance, blank lines and trailing spaces dropped. A long
    hex constant stands as a digest of itself (equal constants stay equal, different ones
    different), so megabytes of folded data do not weigh on every comparison."""
    return "\n".join(_renumber(list(structural_lines(replace_long_hex(text, _digest)).keys))) + "\n"


def same_structure(before: str, after: str) -> bool:
    """True when two modules differ only in locations, SSA numbering or alias order."""
    return normalize(before) == normalize(after)
