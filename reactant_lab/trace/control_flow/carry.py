"""One attempt at rolling a loop: the carry built from the variables' values where the rolled part
starts, the body traced once on stand-ins for them (``lax.fori_loop`` / ``lax.while_loop``), and
every array the trace touched put back as it was; the attempt is repeated with more carried
arrays when the body wrote one it did not carry."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax

from reactant_lab.trace.control_flow.slots import (
    CannotRoll,
    Forced,
    Slot,
    carried_value,
    check_out,
    describe,
    stand_in,
)
from reactant_lab.trace.numpy_mode import carry
from reactant_lab.trace.numpy_mode.proxy import ProxyArray


class Carry:
    """The carried state of one attempt: per variable a slot (``skip``: the loop target, set by
    the loop itself), then the arrays written in place."""

    def __init__(self, names: tuple[str, ...], state: tuple[Any, ...], *, skip: str | None,
                 numpy: bool, mark: int, force: Forced, roots: list[carry.Root]):
        self.names, self.skip, self.numpy, self.mark = names, skip, numpy, mark
        self.slots = [describe(n, v, numpy, mark, n in force, n in force.exact)
                      for n, v in zip(names, state, strict=True) if n != skip]
        self.roots = sorted(roots, key=lambda r: r.serial)
        # Held as traced values while the body runs (``enter``): their data is not written in
        # place, so the state kept is the data itself, not a copy.
        self.saved = {r: r.save(copy=False) for r in self.roots}
        self._init = [carried_value(s, v) for s, v in self._pairs(state) if s.carried]
        self._init += [r.value for r in self.roots]

    def _pairs(self, state: tuple[Any, ...]) -> list[tuple[Slot, Any]]:
        values = [v for n, v in zip(self.names, state, strict=True) if n != self.skip]
        return list(zip(self.slots, values, strict=True))

    @property
    def init(self) -> list[Any]:
        """The carried values where the rolled part starts."""
        return self._init

    def _state(self, flat: list[Any], target: Any) -> tuple[Any, ...]:
        it = iter(flat)
        values = iter([stand_in(s, next(it) if s.carried else None, self.numpy)
                       for s in self.slots])
        return tuple(target if n == self.skip else next(values) for n in self.names)

    def enter(self, flat: list[Any], target: Any = None) -> tuple[Any, ...]:
        """The variables as the body sees them for the carried ``flat``."""
        n = sum(s.carried for s in self.slots)
        for root, value in zip(self.roots, flat[n:], strict=True):
            root.hold(value)
        return self._state(list(flat[:n]), target)

    def leave(self, state: tuple[Any, ...]) -> list[Any]:
        """The carried values after the body, checked against the slots they started in."""
        outs = [check_out(s, v, self.numpy, self.mark) for s, v in self._pairs(state)]
        return [o for o, s in zip(outs, self.slots, strict=True) if s.carried] + [
            r.value for r in self.roots]

    def restore(self) -> None:
        for root in self.roots:
            root.load(self.saved[root])

    def finish(self, flat: list[Any], target: Any) -> tuple[Any, ...]:
        """The variables after the loop, and the carried arrays updated, for the final
        ``flat``."""
        n = sum(s.carried for s in self.slots)
        for root, value in zip(self.roots, flat[n:], strict=True):
            root.set_traced(value)
        return self._state(list(flat[:n]), target)


@contextlib.contextmanager
def _journal(numpy: bool) -> Iterator[Any]:
    if not numpy:
        yield None
        return
    with carry.journal() as opened:
        yield opened


def attempt(make: Callable[[list[carry.Root]], Carry],
            run: Callable[[Carry], list[Any]], numpy: bool, mark: int,
            guess: Sequence[carry.Root] = ()) -> tuple[Carry, list[Any]]:
    """Find the carry and trace the loop. The first trace is for real, carrying ``guess``
    (NumPy mode: the arrays the loop's source writes in place, ``written_roots``; JAX mode,
    where arrays are values, writes none). When the body wrote exactly those, that trace is
    the loop: the body is traced once, and a nest of two loops traces the inner body once
    (before, each loop was traced abstractly first: 4 inner traces; lu's and seidel_2d's
    traces 2-3x shorter so, the module the same).

    Otherwise (an array written by a called function, or behind a static branch not taken)
    the search goes on abstractly (``jax.eval_shape``: nothing reaches the module): the
    arrays the body writes without carrying them are carried next time. Once they are, the
    loop is traced for real; should that trace still write an array it does not carry
    (carrying one changed what the body writes), the search goes on. A real trace left
    unused is dead code, removed before lowering (``lowering.lower_call``). Every array is
    put back as it was after each trace; ``Carry.finish`` then updates them."""
    state = make(list(guess))
    final, missing, written = _trace(state, run, numpy, mark)  # a CannotRoll leaves no loop
    if not missing and all(r in written for r in guess):
        return state, final
    roots = [r for r in guess if r in written] + missing
    abstract = True
    for _ in range(8):
        state = make(roots)
        if abstract:
            missing = _trace(state, lambda s: jax.eval_shape(lambda: run(s)), numpy, mark)[1]
            if not missing:
                return state, _trace(state, run, numpy, mark)[0]
        else:
            final, missing, _ = _trace(state, run, numpy, mark)
            if not missing:
                return state, final
        abstract = not abstract
        roots = roots + missing
    raise CannotRoll("the arrays the body writes kept changing between attempts")


def _trace(state: Carry, run: Callable[[Carry], Any], numpy: bool, mark: int
           ) -> tuple[Any, list[carry.Root], set[carry.Root]]:
    """Run ``run`` once, put every array back; returns its result, the arrays that existed
    before the loop and that it wrote without carrying them, and every array it wrote."""
    with _journal(numpy) as opened:
        try:
            final = run(state)
        except CannotRoll as exc:
            exc.written = frozenset(opened.written if opened is not None else ())
            raise
        finally:
            if opened is not None:
                opened.undo()
            state.restore()
    written = set() if opened is None else set(opened.written)
    missing = [] if opened is None else [
        r for r in opened.written if r.serial < mark and r not in state.saved]
    return final, missing, written


def written_roots(values: Sequence[Any], mark: int) -> list[carry.Root]:
    """The arrays that existed before a loop (roots made before ``mark``) behind ``values``,
    the values of the names its source writes in place (views count as their array)."""
    found: dict[carry.Root, None] = {}
    for v in values:
        if isinstance(v, ProxyArray) and v.mask is None and v.root.serial < mark:
            found[v.root] = None
    return list(found)
