"""Reactant's enzyme-hlo pattern list (data shipped with the package), fitted to the installed
enzyme-ad: the ``${patterns}`` of the optimize stages and the note naming what was left out.

Patterns measured to give wrong results are left out (the table with its evidence is data:
``pattern_exclusions.json``). Set ``REACTANT_LAB_PATTERNS=reactant-exact`` to run Reactant's list
untouched, or ``REACTANT_LAB_PATTERNS=enzyme-ad`` to use the installed enzyme-ad's own (longer)
default list instead, as reactant_lab did before.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reactant_lab import backend
from reactant_lab.errors import PipelineError

_DATA = Path(__file__).with_name("reactant_patterns.txt")
_EXCLUSIONS = Path(__file__).with_name("pattern_exclusions.json")
_NO_NAN = ("no_nan", "no_nan_self_sub_simplify", "no_nan_add_sub_simplify(1)")
_WITH_NAN = ("no_nan_add_sub_simplify(0)",)


@dataclass(frozen=True)
class PatternList:
    """The enzyme-hlo patterns a stage runs, and Reactant's patterns that it cannot."""

    patterns: tuple[str, ...]
    """Patterns passed to ``enzyme-hlo-generate-td``, in Reactant's order."""
    missing: tuple[str, ...]
    """Reactant's patterns the installed enzyme-ad does not parse (left out)."""
    wanted: int
    """How many patterns Reactant's list has (with the no_nan entries)."""
    source: str
    """'reactant', 'reactant-exact' or 'enzyme-ad': where the list comes from."""
    excluded: tuple[str, ...] = ()
    """Reactant's patterns left out because the exclusion table says so (see ``exclusions``)."""

    @property
    def text(self) -> str:
        """The list as ``enzyme-hlo-generate-td{patterns=...}`` wants it."""
        return ";".join(self.patterns)

    @property
    def note(self) -> str | None:
        """What a stage running these patterns should say about the ones left out, or None."""
        notes = []
        if self.excluded:
            notes.append(f"left out as measured wrong: {', '.join(self.excluded)} (the evidence "
                         "is in reactant_lab/stages/pattern_exclusions.json; "
                         "REACTANT_LAB_PATTERNS=reactant-exact runs them)")
        if self.missing:
            notes.append(f"{len(self.missing)} of Reactant's {self.wanted} enzyme-hlo patterns "
                         f"are not in the installed enzyme-ad ({backend.versions()['enzyme-ad']}) "
                         f"and were left out: {', '.join(self.missing)}")
        return "; ".join(notes) or None


def reactant_patterns(*, no_nan: bool) -> tuple[str, ...]:
    """Reactant's pattern list as stored in the package, with its no_nan entries."""
    lines = _DATA.read_text(encoding="utf-8").splitlines()
    listed = tuple(s for s in (line.strip() for line in lines) if s and not s.startswith("#"))
    return listed + (_NO_NAN if no_nan else _WITH_NAN)


@functools.cache
def exclusions() -> tuple[dict[str, Any], ...]:
    """The exclusion table: pattern, targets ('*' for all), kind, why, evidence."""
    return tuple(json.loads(_EXCLUSIONS.read_text(encoding="utf-8"))["exclusions"])


def excluded_for(target: str) -> frozenset[str]:
    """The patterns the table leaves out on ``target`` ('cpu', 'cuda', ...)."""
    return frozenset(e["pattern"] for e in exclusions()
                     if "*" in e["targets"] or target in e["targets"])


@functools.lru_cache(maxsize=16)
def pattern_list(*, no_nan: bool, target: str = "cpu") -> PatternList:
    """The pattern list for this process and target (probed once against enzyme-ad; after
    changing REACTANT_LAB_PATTERNS, call ``pattern_list.cache_clear()``)."""
    choice = os.environ.get("REACTANT_LAB_PATTERNS", "")
    if choice == "enzyme-ad":
        own = tuple(p for p in backend.transform_patterns(no_nan=no_nan).split(";") if p)
        return PatternList(own, (), len(own), "enzyme-ad")
    wanted = reactant_patterns(no_nan=no_nan)
    exact = choice == "reactant-exact"
    left_out = frozenset() if exact else excluded_for(target)
    missing = set(unparsable_patterns(wanted)) if backend.enzyme_available() else set()
    return PatternList(tuple(p for p in wanted if p not in missing and p not in left_out),
                       tuple(dict.fromkeys(p for p in wanted if p in missing)), len(wanted),
                       "reactant-exact" if exact else "reactant",
                       tuple(p for p in wanted if p in left_out))


def unparsable_patterns(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """The entries of ``patterns`` the installed enzyme-ad rejects.

    One probe of the whole list, then per rejected pattern one more: enzyme-ad names the first
    pattern it cannot build (when the name is ambiguous, bisection finds the entry).
    """
    left = list(patterns)
    bad: list[str] = []
    while (error := backend.pattern_error(left)) is not None:
        if len(bad) > len(patterns) // 2:
            raise PipelineError(
                f"the installed enzyme-ad rejects most of Reactant's enzyme-hlo patterns; the "
                f"last error: {error.strip()[:600]}\nSet REACTANT_LAB_PATTERNS=enzyme-ad to use "
                "enzyme-ad's own list.")
        culprit = _named_pattern(error, left) or _first_failing(left)
        bad.append(culprit)
        left = [p for p in left if p != culprit]
    return tuple(bad)


def _named_pattern(error: str, left: list[str]) -> str | None:
    """The one entry of ``left`` that enzyme-ad's error names, or None."""
    found = re.search(r"corresponding to (\w+)|enzyme_hlo\.(\w+)'", error)
    if found is None:
        return None
    name = found.group(1) or found.group(2)
    same = list(dict.fromkeys(p for p in left if re.split(r"[<(]", p, maxsplit=1)[0] == name))
    return same[0] if len(same) == 1 else None


def _first_failing(left: list[str]) -> str:
    """The first entry of ``left`` (a list that fails) whose prefix fails, by bisection."""
    good, failing = 0, len(left)  # left[:good] parses, left[:failing] does not
    while failing - good > 1:
        middle = (good + failing) // 2
        if backend.pattern_error(left[:middle]) is None:
            good = middle
        else:
            failing = middle
    return left[failing - 1]
