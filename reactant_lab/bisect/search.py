"""The searches of ``bisect``, pure functions of a predicate: the first bad position (binary
search) and a 1-minimal bad subset (delta debugging)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def first_bad(count: int, bad: Callable[[int], bool]) -> int:
    """The smallest ``i`` in ``1..count`` with ``bad(i)``, by binary search, given that
    ``bad(count)`` holds, ``bad(0)`` does not, and that once bad, later ones stay bad."""
    good, failing = 0, count
    while failing - good > 1:
        middle = (good + failing) // 2
        if bad(middle):
            failing = middle
        else:
            good = middle
    return failing


def ddmin(items: Sequence[T], bad: Callable[[tuple[T, ...]], bool]) -> tuple[T, ...]:
    """A 1-minimal subsequence of ``items`` for which ``bad`` holds (Zeller's delta debugging:
    removing any one element makes it good), given that ``bad(items)`` holds. Each set is
    tested once; a pair that is bad only together is kept whole."""
    seen: dict[frozenset[T], bool] = {}

    def test(subset: tuple[T, ...]) -> bool:
        key = frozenset(subset)
        if key not in seen:
            seen[key] = bad(subset)
        return seen[key]

    current, n = tuple(items), 2
    while len(current) >= 2:
        size = len(current)
        chunks = [current[size * i // n:size * (i + 1) // n] for i in range(n)]
        smaller = next((c for c in chunks if test(c)), None)
        if smaller is not None:
            current, n = smaller, 2
            continue
        rests = [tuple(x for j, c in enumerate(chunks) if j != i for x in c)
                 for i in range(n)] if n > 2 else []
        rest = next((r for r in rests if test(r)), None)
        if rest is not None:
            current, n = rest, max(n - 1, 2)
        elif n >= size:
            break
        else:
            n = min(size, 2 * n)
    return current

