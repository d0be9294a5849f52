"""Checks of the arguments and options of reactant_lab's own public functions (not of the traced
function's arguments): each names the option, what it takes and what it got."""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from reactant_lab.errors import ArgumentTypeError, ArgumentValueError


def _got(value: Any) -> str:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"{type(value).__name__} {shown}"


def instance(name: str, value: Any, kind: type | tuple[type, ...], expects: str) -> None:
    """``value`` must be a ``kind``: ``expects`` says what in words ("an Exploration from
    rl.explore")."""
    if not isinstance(value, kind):
        raise ArgumentTypeError(f"{name} must be {expects}; got {_got(value)}")


def count(name: str, value: Any, *, minimum: int = 0, none: bool = False) -> int | None:
    """``value`` as an int of at least ``minimum`` (a bool is not a count; None only when
    ``none``)."""
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        also = " or None" if none else ""
        raise ArgumentTypeError(f"{name} must be an int{also}; got {_got(value)}")
    if value < minimum:
        also = " or None" if none else ""
        raise ArgumentValueError(f"{name} must be {_at_least(minimum)}{also}, not {value}")
    return int(value)


def number(name: str, value: Any, *, minimum: float = 0.0) -> float:
    """``value`` as a real number of at least ``minimum`` (not a bool, not NaN)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a number; got {_got(value)}")
    if not float(value) >= minimum:  # NaN fails too
        raise ArgumentValueError(f"{name} must be a number of at least {minimum}, not {value}")
    return float(value)


def flag(name: str, value: Any) -> bool:
    """``value`` as a bool: True or False (NumPy's bool too), nothing else."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise ArgumentTypeError(f"{name} must be True or False; got {_got(value)}")


SCALAR_POLICIES = (False, True, "floats")
"""What ``trace_scalars`` accepts: Python numbers static, all traced, or floats (and complex
numbers) traced while ints and bools stay static (sizes, counts, flags)."""


def scalars(value: Any) -> bool | str:
    """``trace_scalars`` checked: True, False or 'floats'."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, str) and value == "floats":
        return value
    raise ArgumentTypeError(
        "trace_scalars must be True (trace every Python number), False (bake them in) or "
        f"'floats' (trace Python floats, keep ints and bools static); got {_got(value)}")


def names(name: str, value: Any, example: str) -> tuple[str, ...]:
    """``value`` as a tuple of str: a sequence of names, not one str (whose letters would be
    taken for names) nor anything else."""
    if isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a sequence of names such as {example}, not the "
                                f"str {value!r} (write {name}=({value!r},))")
    try:
        items = tuple(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be a sequence of names such as {example}; got "
                                f"{_got(value)}") from None
    for item in items:
        if not isinstance(item, str):
            raise ArgumentTypeError(f"{name} must hold names (str) such as {example}; it holds "
                                    f"{_got(item)}")
    return items


def misspelt(given: Iterable[str], known: Iterable[str]) -> list[str]:
    """Each name of ``given`` not in ``known``, with the close spelling when there is one:
    ``["'optimise' (did you mean 'optimize'?)"]``."""
    known = list(known)
    out = []
    for name in given:
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        out.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return out


def _at_least(minimum: int) -> str:
    return {0: "0 or more", 1: "a positive int"}.get(minimum, f"at least {minimum}")
