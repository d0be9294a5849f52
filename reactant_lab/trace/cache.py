"""Compiled entries found by call signature: structure, shapes, dtypes, static values, and the
memory layout of the arguments a NumPy-mode trace's view semantics depend on."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from reactant_lab.trace.paths import FlatCall, layouts_hold
from reactant_lab.trace.traced import Traced

T = TypeVar("T")


class SignatureCache(Generic[T]):
    """Entries (explorations, cell entries) keyed by the signature of the call they were traced
    for. A trace whose views depend on an argument's layout (``a.ravel()`` is a view of a
    C-order array and a copy of a Fortran-order or strided one) is only found again for calls
    whose arguments are laid out the same way, as NumPy would decide."""

    def __init__(self, traced_of: Callable[[T], Traced]):
        self._traced_of = traced_of
        self._by_key: dict[tuple[Hashable, ...], list[T]] = {}
        self._order: list[T] = []

    @staticmethod
    def _key(flat: FlatCall, prefix: Hashable) -> tuple[Hashable, ...]:
        return (prefix, flat.signature(), flat.all_numpy)

    def get(self, flat: FlatCall, prefix: Hashable = None) -> T | None:
        """The entry traced for a call like ``flat``, or None."""
        for entry in self._by_key.get(self._key(flat, prefix), ()):
            if layouts_hold(self._traced_of(entry).layout.layout_deps, flat.linear_values):
                return entry
        return None

    def add(self, flat: FlatCall, entry: T, prefix: Hashable = None) -> None:
        """Remember ``entry`` as traced for calls like ``flat``."""
        self._by_key.setdefault(self._key(flat, prefix), []).append(entry)
        self._order.append(entry)

    def values(self) -> list[T]:
        """Every entry, oldest first."""
        return list(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __bool__(self) -> bool:
        return bool(self._order)
