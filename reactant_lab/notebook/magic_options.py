"""The options of a magic's line, checked all at once before argparse reads them: argparse stops
at the first wrong one, so a misspelt ``--optimise`` went unreported beside a bad value."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from IPython.core.error import UsageError

from reactant_lab.checks import misspelt

Check = Callable[[str], str | None]
"""A check of one option's value: what is wrong with it, or None."""


def parse(magic: Any, line: str, name: str, checks: Mapping[str, Check] | None = None
          ) -> argparse.Namespace:
    """``parse_argstring(magic, line)`` after every ``--option`` of ``line`` was checked: an
    unknown one (with its close spelling), a value outside its choices, of the wrong type or
    refused by ``checks`` (option string -> check); all of them in one UsageError naming
    ``%name``."""
    parser: argparse.ArgumentParser = magic.parser
    try:
        words = shlex.split(line)  # as magic_arguments splits it (IPython's arg_split, POSIX)
    except ValueError as exc:  # an unclosed quote
        raise UsageError(f"%{name}: {exc} in {line!r}") from None
    problems = _problems(parser, words, checks or {})
    if problems:
        raise UsageError(f"%{name}: " + "; ".join(problems))
    namespace: argparse.Namespace = parser.parse_args(words)
    return namespace


def _problems(parser: argparse.ArgumentParser, words: list[str],
              checks: Mapping[str, Check]) -> list[str]:
    options = {s: a for a in parser._actions for s in a.option_strings}
    problems: list[str] = []
    for i, word in enumerate(words):
        if not word.startswith("--") or word == "--":
            continue
        flag, eq, inline = word.partition("=")
        action = _action(parser, options, flag)
        if action is None:
            problems += [f"unknown option {m}" for m in misspelt([flag], options)]
            continue
        takes = action.nargs != 0  # not store_true / store_const / count / help
        value = inline if eq else (words[i + 1] if i + 1 < len(words)
                                   and not words[i + 1].startswith("--") else None)
        if takes and value is not None:
            wrong = _value_problem(action, value, checks.get(action.option_strings[-1]))
            if wrong:
                problems.append(f"{action.option_strings[-1]} {value!r}: {wrong}")
    return problems


def _action(parser: argparse.ArgumentParser, options: dict[str, argparse.Action],
            flag: str) -> argparse.Action | None:
    """The action of ``flag``, or of the one option it abbreviates (as argparse allows)."""
    if flag in options:
        return options[flag]
    starts = {a for s, a in options.items() if s.startswith(flag)}
    return starts.pop() if parser.allow_abbrev and len(starts) == 1 else None


def _value_problem(action: argparse.Action, value: str, check: Check | None) -> str | None:
    if action.choices is not None:
        return None if value in action.choices else _not_one_of(value, action.choices)
    if callable(action.type):
        try:
            action.type(value)
        except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
            return str(exc) or f"not a valid {getattr(action.type, '__name__', 'value')}"
    return check(value) if check is not None else None


def _not_one_of(value: str, choices: Any) -> str:
    names = [str(c) for c in choices]
    close = misspelt([value], names)[0].removeprefix(repr(value)).strip()
    return f"choose from {', '.join(names)}" + (f" {close}" if close else "")


def one_of(names: Any, *, listed: bool = False, suffix: str = "") -> Check:
    """A check that a value is one of ``names`` (with the close spelling when not); ``listed``:
    a comma-separated list of them, each perhaps ending in ``suffix``."""
    def check(value: str) -> str | None:
        items = [v.strip() for v in value.split(",") if v.strip()] if listed else [value]
        for item in items:
            if item.removesuffix(suffix) not in names if suffix else item not in names:
                return (f"{item!r}: " if listed else "") + _not_one_of(item, names)
        return None
    return check


def at_least(minimum: int) -> Callable[[str], int]:
    """argparse's type of an int of at least ``minimum``."""
    def count(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an int: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, not {value}")
        return value
    count.__name__ = "int"
    return count


def seconds(text: str) -> float:
    """argparse's type of a finite number of at least 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of at least 0, not {text}")
    return value
