"""Reactant's enzyme-hlo pattern list (data shipped with the package), fitted to the installed
enzyme-ad: the ``${patterns}`` of the optimize stages and the note naming what was left out.

Patterns measured to give wrong results, or to be much slower on a target, are left out (the
table with its evidence is data: ``pattern_exclusions.json``); patterns of Reactant's later lists
measured to make kernels faster here run after Reactant's list (``pattern_additions.json``). A
``PatternChoice`` changes that per call: ``exact=True`` runs Reactant's list untouched (no
exclusions, no additions), ``exclude`` leaves more patterns out,
``replace`` runs a list of the user's own. ``REACTANT_LAB_PATTERNS=reactant-exact`` makes exact the
process default; ``REACTANT_LAB_PATTERNS=enzyme-ad`` uses the installed enzyme-ad's own (longer)
default list instead, as reactant_lab did before.
"""

from __future__ import annotations

import dataclasses
import difflib
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
_ADDITIONS = Path(__file__).with_name("pattern_additions.json")
_NO_NAN = ("no_nan", "no_nan_self_sub_simplify", "no_nan_add_sub_simplify(1)")
_WITH_NAN = ("no_nan_add_sub_simplify(0)",)


@dataclass(frozen=True)
class PatternChoice:
    """How a call wants the enzyme-hlo pattern list changed (hashable: part of cache keys)."""

    exact: bool = False
    """Run Reactant's list untouched: the exclusion table is not applied."""
    exclude: tuple[str, ...] = ()
    """Patterns to leave out: a full entry (``slice_of_dynamic_update<1>``) or a name, which
    leaves out every entry of that name (``slice_of_dynamic_update``)."""
    replace: tuple[str, ...] | None = None
    """A pattern list to run instead of Reactant's (``exclude`` still applies)."""

    @classmethod
    def of(cls, *, exact: bool = False, exclude_patterns: Any = (),
           patterns: Any = None) -> PatternChoice:
        """The choice from the keyword arguments the entry points take (a pattern list as a
        sequence of str, or one str separated by ';' or ',')."""
        if not isinstance(exact, bool):
            raise PipelineError(f"exact must be True or False, not {exact!r}")
        return cls(exact, _names(exclude_patterns, "exclude_patterns"),
                   None if patterns is None else _names(patterns, "patterns"))

    @property
    def default(self) -> bool:
        """Whether this is the plain choice (Reactant's list less the exclusion table)."""
        return self == DEFAULT_CHOICE


DEFAULT_CHOICE = PatternChoice()
"""Reactant's list, less the patterns the exclusion table leaves out on the target."""


def _names(value: Any, what: str) -> tuple[str, ...]:
    """Pattern names from a str (';' or ',' separated) or a sequence of str."""
    if isinstance(value, str):
        value = re.split(r"[;,]", value)
    try:
        items = tuple(value)
    except TypeError:
        items = (value,)
    bad = [p for p in items if not isinstance(p, str)]
    if bad:
        raise PipelineError(f"{what} must be pattern names (str), e.g. "
                            f"('slice_of_dynamic_update',); got {bad[0]!r}")
    return tuple(dict.fromkeys(p.strip() for p in items if p.strip()))


def base_name(pattern: str) -> str:
    """``slice_of_dynamic_update`` from ``slice_of_dynamic_update<1>`` (or ``no_nan_x(1)``)."""
    return re.split(r"[<(]", pattern, maxsplit=1)[0]


def _match(wanted: tuple[str, ...], names: tuple[str, ...]) -> tuple[set[str], list[str]]:
    """The entries of ``wanted`` that ``names`` pick (exactly or by base name), and the names
    that pick none."""
    picked: set[str] = set()
    unknown = []
    for name in names:
        hits = {p for p in wanted if p == name or base_name(p) == name}
        picked |= hits
        if not hits:
            unknown.append(name)
    return picked, unknown


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
    user_excluded: tuple[str, ...] = ()
    """Patterns left out because the call asked (``exclude_patterns=``)."""
    added: tuple[str, ...] = ()
    """Patterns run after Reactant's list because the addition table says so (``additions``)."""

    @property
    def text(self) -> str:
        """The list as ``enzyme-hlo-generate-td{patterns=...}`` wants it."""
        return ";".join(self.patterns)

    @property
    def note(self) -> str | None:
        """What a stage running these patterns should say about the ones left out, or None."""
        notes = []
        if self.user_excluded:
            notes.append(f"left out as asked (exclude_patterns): {', '.join(self.user_excluded)}")
        if self.source == "reactant-exact":
            notes.append("exact: Reactant's list untouched (the exclusion table is not applied)")
        if self.source == "user":
            notes.append(f"the call's own list of {len(self.patterns)} patterns (patterns=)")
        if self.excluded:
            notes.append(f"left out as measured wrong, crashing, never finishing or slow here: "
                         f"{', '.join(self.excluded)} "
                         "(the evidence is in reactant_lab/stages/pattern_exclusions.json; "
                         "exact=True runs them)")
        if self.added:
            notes.append(f"added after Reactant's list, from its later lists, as measured faster "
                         f"here: {', '.join(self.added)} (the evidence is in "
                         "reactant_lab/stages/pattern_additions.json; exact=True leaves them out)")
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


@functools.cache
def additions() -> tuple[dict[str, Any], ...]:
    """The addition table: pattern, targets ('*' for all), faster_than, why, evidence."""
    return tuple(json.loads(_ADDITIONS.read_text(encoding="utf-8"))["additions"])


def added_for(target: str) -> tuple[str, ...]:
    """The patterns the addition table runs after Reactant's list on ``target``, in order."""
    return tuple(e["pattern"] for e in additions()
                 if "*" in e["targets"] or target in e["targets"])


def excluded_for(target: str) -> frozenset[str]:
    """The patterns the table leaves out on ``target`` ('cpu', 'cuda', ...)."""
    return frozenset(e["pattern"] for e in exclusions()
                     if "*" in e["targets"] or target in e["targets"])


@functools.lru_cache(maxsize=64)
def pattern_list(*, no_nan: bool, target: str = "cpu",
                 choice: PatternChoice = DEFAULT_CHOICE) -> PatternList:
    """The pattern list for this process, target and choice (probed once against enzyme-ad;
    after changing REACTANT_LAB_PATTERNS, call ``pattern_list.cache_clear()``).

    A pattern in ``choice.exclude`` that the list does not hold, or a ``choice.replace`` entry
    the installed enzyme-ad does not parse, raises PipelineError naming it.
    """
    env = os.environ.get("REACTANT_LAB_PATTERNS", "")
    if env == "enzyme-ad" and choice.replace is None:
        own = tuple(p for p in backend.transform_patterns(no_nan=no_nan).split(";") if p)
        choice = dataclasses.replace(choice, replace=own)
    if choice.replace is not None:
        wanted = choice.replace
        bad = unparsable_patterns(wanted) if backend.enzyme_available() else ()
        if bad:
            raise PipelineError(f"the installed enzyme-ad does not know these patterns of "
                                f"patterns=: {', '.join(bad)}. Check their spelling (with the "
                                "benefit, e.g. 'add_simplify<16>').")
        missing: set[str] = set()
        left_out: frozenset[str] = frozenset()
        extra: tuple[str, ...] = ()
        source = "enzyme-ad" if env == "enzyme-ad" else "user"
    else:
        wanted = reactant_patterns(no_nan=no_nan)
        exact = choice.exact or env == "reactant-exact"
        left_out = frozenset() if exact else excluded_for(target)
        extra = () if exact else tuple(p for p in added_for(target) if p not in wanted)
        missing = (set(unparsable_patterns(wanted + extra)) if backend.enzyme_available()
                   else set())
        source = "reactant-exact" if exact else "reactant"
    listed = wanted + extra
    asked, unknown = _match(listed, choice.exclude)
    if unknown:
        raise PipelineError(_unknown_exclusions(unknown, listed))
    return PatternList(
        tuple(p for p in listed if p not in missing and p not in left_out and p not in asked),
        tuple(dict.fromkeys(p for p in wanted if p in missing)), len(wanted), source,
        # each name once (Reactant's list names one twice), and not when it is missing anyway
        tuple(dict.fromkeys(p for p in wanted if p in left_out and p not in asked
                            and p not in missing)),
        tuple(p for p in listed if p in asked),
        tuple(p for p in extra if p not in missing and p not in asked))


def _unknown_exclusions(unknown: list[str], wanted: tuple[str, ...]) -> str:
    names = sorted({base_name(p) for p in wanted})
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(base_name(name), names, n=3, cutoff=0.6)
        hints.append(f"{name!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    return (f"exclude_patterns names patterns the list does not hold: {'; '.join(hints)}. Give "
            "an entry such as 'slice_of_dynamic_update<1>' or a name such as "
            "'slice_of_dynamic_update' (see reactant_lab.stages.patterns.reactant_patterns()).")


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


_TD = "enzyme-hlo-generate-td{patterns="


def without_patterns(passes: list[str], exclude: tuple[str, ...]) -> list[str]:
    """A custom pipeline's passes with ``exclude`` left out of each
    ``enzyme-hlo-generate-td{patterns=...}`` (PipelineError for names none of them hold)."""
    lists = [p[len(_TD):-1].split(";") if p.startswith(_TD) and p.endswith("}") else None
             for p in passes]
    held = tuple(dict.fromkeys(x for lst in lists if lst for x in lst))
    if not held:
        raise PipelineError("exclude_patterns needs an enzyme-hlo-generate-td{patterns=...} pass "
                            "in the pipeline; this pipeline has none")
    picked, unknown = _match(held, exclude)
    if unknown:
        raise PipelineError(_unknown_exclusions(unknown, held))
    return [p if lst is None else _TD + ";".join(x for x in lst if x not in picked) + "}"
            for p, lst in zip(passes, lists, strict=True)]
