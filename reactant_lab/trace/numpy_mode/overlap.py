"""Whether an argument a NumPy kernel updates in place overlaps another argument's memory.

NumPy mode traces each argument as an independent array, which gives NumPy's answer only when an
updated argument shares no element with another: disjoint views of one array (``M[:, 0]`` and
``M[:, 1]``, ``v[0::2]`` and ``v[1::2]``) are fine, overlapping ones are refused. Checked when
tracing and again on every call of a compiled kernel.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from reactant_lab.errors import UnsupportedArgumentError

MAX_WORK = 10_000
"""Candidate solutions ``np.shares_memory`` may consider (at worst ~0.2 ms); past that, the
arrays count as overlapping, so the call is refused rather than possibly computed wrongly."""


def overlap(a: np.ndarray, b: np.ndarray) -> str | None:
    """None when ``a`` and ``b`` share no element, else how they are related, for a message."""
    if not np.may_share_memory(a, b):  # a bounds check: cheap, and exact when they are apart
        return None
    try:
        # NumPy takes any positive bound; its stub types only the special values -1 and 0.
        shared = np.shares_memory(a, b, max_work=MAX_WORK)  # type: ignore[arg-type]  # see above
    except np.exceptions.TooHardError:
        return (f"may share memory with (np.shares_memory could not decide it within max_work="
                f"{MAX_WORK})")
    return "shares memory with" if shared else None


def check_independent(values: Sequence[Any], paths: Sequence[str],
                      updated: Iterable[int]) -> None:
    """Raise UnsupportedArgumentError when an argument in ``updated`` (indices into ``values``,
    the linear argument values) overlaps another NumPy array argument."""
    for i in updated:
        for j, other in enumerate(values):
            if j == i or not isinstance(other, np.ndarray) or not isinstance(values[i],
                                                                             np.ndarray):
                continue
            how = overlap(values[i], other)
            if how is None:
                continue
            a, b = paths[i], paths[j]
            raise UnsupportedArgumentError(
                f"{a} is updated in place and {how} {b}; reactant_lab traces "
                "arguments as independent arrays, so NumPy's view of the update through "
                f"{b} would be lost. Pass separate arrays (e.g. {b}.copy()) or views that share "
                "no element.", a, type(other))
