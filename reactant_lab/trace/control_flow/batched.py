"""Rolled loops whose iterations are independent, run as one batched computation.

A ``for`` over a static range whose body touches each array it updates only at the current
iteration's slot (``out[i] = f(x[i])``, ``A[r, :, :] = A[r] @ C``: one row, column or plane, at
the loop index plus a constant, on one axis) cannot see another iteration's writes, so its
iterations commute: the loop is the body run once over all the slots at once (``jax.vmap``), its
slabs put back in one ``dynamic_update_slice``, instead of a ``stablehlo.while`` that runs them
one after the other. The body is traced once, inside the ``lax.fori_loop`` that would run it
(``jax.make_jaxpr`` of the loop), and checked on its jaxpr (the loop's scan body), where every
use of a carried array is an equation: an updated array may only be read with ``dynamic_slice``
and written with ``dynamic_update_slice`` at its slot (index ``step * k + c`` on the slot axis,
proven inside the axis for every iteration, size 1 there), or read at the slot of a later
iteration (``x[i + 1]`` in a loop up the axis that writes ``x[i]``: not yet written, so read
from the array before the loop); arrays the body does not update may be read in any way. A
masked write of the slot (``C[i, :i + 1] *= beta``) is traced in that window form while the body
is traced for the check (NumPy mode's ``context.window_writes``), and a loop nested in the body
that carries an updated array passes when its own body touches it only at the slot (syrk's loop
over k on row i): it then runs on the slabs, batched. Anything else (a scalar accumulator, a read
of the previous row, a scattered write) keeps the loop rolled: the traced loop itself, one
equation, goes into the module. A batched loop whose writes all fall in one window of each slab,
the same for every iteration (``B[i, j]`` in a loop over j, i fixed by an enclosing loop), puts
back only those windows (row i), not the whole slabs: run once per outer iteration, it then
costs no copy of the array.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend import core as jcore

from reactant_lab import backend
from reactant_lab.trace.control_flow import hoisted, scattered, summed
from reactant_lab.trace.control_flow.counter import (
    Bool,
    Indices,
    Sym,
    Value,
    bind,
    counts,
    literal,
    needed,
    slabs_at,
    slot_axes,
    span,
    taken,
)
from reactant_lab.trace.numpy_mode import context as numpy_context

MAX_BATCHED_BYTES = 256 << 20
"""A loop is batched only when the values its body computes, times the trip count, fit here:
the batched body holds every iteration's intermediates at once, ..."""

MAX_GROWTH = 32
"""... and only when they are at most this many times the slots one iteration updates: a body
that reduces much more than it writes (``res[i] = data[mask_i].mean()`` over 200,000 values) is
faster as a loop, whose iterations XLA fuses without holding their temporaries."""

@dataclass
class _Slot:
    """Where the body touches one array it updates: index ``at`` (of k) on ``axis``."""

    axis: int | None = None
    at: Sym | None = None
    pending: list[tuple[Any, Sequence[Value], Sequence[int], Sequence[int]]] = field(
        default_factory=list)
    """Reads met before a write fixed the slot: (equation, starts, sizes, the array's shape)."""
    ahead: dict[int, int] = field(default_factory=dict)
    """Reads of a later iteration's slot: id of the dynamic_slice equation -> its distance d
    from the slot (the slot of iteration k is ``at``, the read ``at + d``)."""

    def fits(self, eqn: Any, starts: Sequence[Value], sizes: Sequence[int],
             shape: Sequence[int], lo: int, hi: int, write: bool) -> bool:
        """Whether a dynamic_slice (``write``: a dynamic_update_slice) at ``starts`` (window
        ``sizes``) of the array touches only this slot, inside the axis for every k, or (a read)
        the slot of a later iteration. The first write fixes the slot: the one axis indexed by
        a multiple of k plus a constant, with size 1 (reads before it wait for it)."""
        if self.axis is None:
            found = slot_axes(starts, sizes)
            if not write:
                self.pending.append((eqn, starts, sizes, shape))
                return bool(found)
            if len(found) > 1:  # M[i, i]: the axis the reads before it agree on
                found = self._agreed(found)
            if len(found) != 1 or not self._fix(found[0], starts, lo, hi):
                return False
        if write:
            return self._at_slot(starts, sizes, shape, lo, hi)
        return self._read(eqn, starts, sizes, shape, lo, hi)

    def settle(self, lo: int, hi: int) -> bool:
        """After the body: reads that no write followed fix the slot (an axis all of them index
        by k) from the first of them."""
        if self.axis is not None or not self.pending:
            return True
        first = self.pending[0][1]
        common = self._agreed(slot_axes(first, self.pending[0][2]))
        return bool(common) and self._fix(common[0], first, lo, hi)

    def _agreed(self, axes: list[int]) -> list[int]:
        """Those of ``axes`` that every waiting read indexes by k."""
        return [d for d in axes if all(d in slot_axes(p[1], p[2]) for p in self.pending)]

    def _fix(self, axis: int, starts: Sequence[Value], lo: int, hi: int) -> bool:
        """Fix the slot at ``starts[axis]``; whether every waiting read then fits it."""
        self.axis, self.at = axis, starts[axis]  # type: ignore[assignment]
        waiting, self.pending = self.pending, []
        return all(self._read(*p, lo, hi) for p in waiting)

    def _at_slot(self, starts: Sequence[Value], sizes: Sequence[int], shape: Sequence[int],
                 lo: int, hi: int) -> bool:
        assert self.axis is not None
        at = starts[self.axis]
        if not isinstance(at, Sym) or at != self.at or sizes[self.axis] != 1:
            return False
        least, most = span(at, lo, hi)
        return least >= 0 and most < shape[self.axis]

    def _read(self, eqn: Any, starts: Sequence[Value], sizes: Sequence[int],
              shape: Sequence[int], lo: int, hi: int) -> bool:
        """A read at the slot, or at the slot of a later iteration: ``at + d`` with d of the
        sign of k's coefficient (``x[i + 1]`` in a loop writing ``x[i]``). Every iteration
        writes only its own slot, so what it reads there is what the array held before the
        loop: the batched loop reads it from there (an anti-dependence, no dependence)."""
        if self._at_slot(starts, sizes, shape, lo, hi):
            return True
        assert self.axis is not None and self.at is not None
        at = starts[self.axis]
        if not isinstance(at, Sym) or at.coef != self.at.coef or sizes[self.axis] != 1:
            return False
        d = at.const - self.at.const
        least, most = span(at, lo, hi)
        if d == 0 or (d > 0) != (at.coef > 0) or least < 0 or most >= shape[self.axis]:
            return False
        self.ahead[id(eqn)] = d
        return True


Source = tuple[str, int]
"""An input of a loop body: ('carried', position), ('const', index of the constant) or
('invariant', index in ``_Plan.invariant``: a value the body computes from such inputs alone)."""
SlotRead = tuple[str, Source, int, int, int]
"""('read', the input, its slot axis, coef, const): a read of the input at ``coef * k + const``
on that axis."""
WindowRead = tuple[str, int, int, int, tuple[tuple[str, int], ...], tuple[int, ...]]
"""('window', position, slot axis, const, the start on each other axis: ('literal', value) or
('invariant', index in ``_Plan.invariant``), the window's size on each axis): a read of a
window of a ``_Plan.direct`` array, size 1 at ``k + const`` on the slot axis, at the same place
on the others in every iteration."""


@dataclass
class _Plan:
    slots: dict[int, _Slot]
    """Carried position -> the slot of an array the body updates."""
    known: dict[Any, Sym | Bool]
    """Scalars of the body known for every iteration (a bounds check that always holds)."""
    ahead: dict[int, tuple[int, int]]
    """Reads of a later iteration's slot: id of the equation -> (position, distance d)."""
    narrow: dict[int, int] = field(default_factory=dict)
    """Position -> id of the body's last write of that array, for each array whose writes all
    land in one window of its slab that is the same for every iteration (``B[i, j]`` in a loop
    over j inside one over i: row i of each column slab): the batched loop puts back those
    windows only, not the whole slabs (see ``_narrow_writes``)."""
    reads: dict[int, SlotRead] = field(default_factory=dict)
    """Reads of inputs the body does not update at the slot, on one axis (``x[i, j]`` in a
    loop over i that updates ``y``): id of the dynamic_slice equation -> what it reads. The
    batched loop cuts slabs of them, as of the arrays it updates, and reads those at the slot
    (a window over the batch axis, where JAX's rule for a start that varies along the batch
    is a gather: recursive_filter's x[i, j] in its loop over j, which XLA:CPU's cost analysis
    then counted as all of x per iteration, too much for a loop compiled as one kernel)."""
    direct: frozenset[int] = frozenset()
    """Positions of narrowed arrays the body reads element by element before it writes them:
    the batched loop reads those elements from the array as it was before the loop, and cuts
    no slabs out of it (see ``_read_before_write``)."""
    invariant: tuple[Any, ...] = ()
    """Values the body computes the same in every iteration and reads at the slot (a batched
    inner loop's view of a whole input, read at the outer loop's index): the batched loop
    computes them once, before it, and cuts their slabs as of an input's (a read at a batched
    index would otherwise be a gather of every slot, a copy)."""
    invariant_eqns: tuple[Any, ...] = ()
    """The body's equations that compute ``invariant``, in order."""
    windows: dict[int, WindowRead] = field(default_factory=dict)
    """Reads of a ``direct`` array's element at the slot (or a later one) whose other starts
    are the same in every iteration (``T[i + 1, j + 1]`` in a loop over j, i fixed by an
    enclosing loop): id of the dynamic_slice equation -> what it reads. The batched loop cuts
    the run of elements all iterations read, one window of the array before the loop, and
    hands each iteration its own: read at a batched index instead, each would be a gather
    (triangle_max_path's three reads per row)."""
    kept_windows: dict[int, WindowRead] = field(default_factory=dict)
    """Position -> the window of a ``direct`` array that its narrowed write covers, when its
    starts are as a ``windows`` read's: what an iteration a traced range leaves out keeps
    there (``run_batched``'s ``active``), cut as those reads are."""


_WINDOWS = ("dynamic_slice", "dynamic_update_slice")


def plan(jaxpr: Any, consts: Sequence[Any], lo: int, hi: int) -> _Plan | None:
    """The batching plan of a loop body ``jaxpr`` (invars: the counter, then the carried values;
    outvars: the carried values), k running ``lo .. hi`` inclusive; None when its iterations may
    depend on each other (or the check cannot tell), or batching would hold too much."""
    carried = jaxpr.invars[1:]
    if len(jaxpr.outvars) != len(carried) or jaxpr.effects:
        return None
    env: dict[Any, Value] = {jaxpr.invars[0]: Sym(1, 0)}
    env.update((v, literal(c)) for v, c in zip(jaxpr.constvars, consts, strict=True))
    # a var holding (a version of) an array the body updates -> the array's position
    version = {v: pos for pos, (v, out) in enumerate(zip(carried, jaxpr.outvars, strict=True))
               if out is not v}
    walk = _Walk(Indices(lo, hi), {pos: _Slot() for pos in set(version.values())})
    walk.sources.update({v: ("carried", pos) for pos, v in enumerate(carried)
                         if pos not in walk.slots})
    walk.sources.update({v: ("const", i) for i, v in enumerate(jaxpr.constvars)})
    walk.invariant.update(walk.sources)
    if not walk.eqns(jaxpr.eqns, env, version) or not all(
            slot.settle(lo, hi) for slot in walk.slots.values()):
        return None
    for pos, out in enumerate(jaxpr.outvars):
        owner = None if isinstance(out, jcore.Literal) else version.get(out)
        if owner != (pos if pos in walk.slots else None):
            return None  # an updated array left as something else, or as another's result
    slots, held = walk.slots, walk.held
    slab = sum(hoisted.nbytes(carried[pos].aval) // carried[pos].aval.shape[slot.axis]
               for pos, slot in slots.items() if slot.axis is not None)
    if (not slots or (held + walk.transient) * (hi - lo + 1) > MAX_BATCHED_BYTES
            or held > MAX_GROWTH * max(slab, 1)):
        return None
    known = {v: o for v, o in env.items() if getattr(v.aval, "shape", None) == () and (
        isinstance(o, Bool) or (isinstance(o, Sym) and o.coef == 0))}
    ahead = {eqn: (pos, d) for pos, slot in slots.items() for eqn, d in slot.ahead.items()}
    narrow = _narrow_writes(jaxpr, slots)
    direct = _read_before_write(jaxpr, narrow)
    invariant = list(walk.slot_invariants)
    windows = _window_reads(jaxpr, direct, slots, env, walk.invariant, invariant)
    writes = {id(eqn): eqn for eqn in jaxpr.eqns if id(eqn) in narrow.values()}
    kept = {pos: key for pos in direct if (key := _window_of(
        writes[narrow[pos]], 2, pos, slots[pos].axis, env, walk.invariant, invariant))}
    given = set(walk.sources)
    return _Plan(slots, known, ahead, narrow, walk.reads, direct, tuple(invariant),
                 tuple(needed(jaxpr.eqns, invariant, given)), windows, kept)


def _window_reads(jaxpr: Any, direct: frozenset[int], slots: dict[int, _Slot],
                  env: dict[Any, Value], same: set[Any], invariant: list[Any]
                  ) -> dict[int, WindowRead]:
    """``_Plan.windows``: the body's reads of its ``direct`` arrays (each of one element, before
    any write: ``_read_before_write``) at ``k + const`` on the slot axis whose other starts are
    literals or values the same in every iteration (``same``; each added to ``invariant``, the
    values the batched loop computes before it)."""
    arrays = {jaxpr.invars[1 + pos]: pos for pos in direct}
    windows: dict[int, WindowRead] = {}
    for eqn in jaxpr.eqns:
        pos = arrays.get(eqn.invars[0]) if eqn.primitive.name == "dynamic_slice" else None
        if pos is not None and (key := _window_of(eqn, 1, pos, slots[pos].axis, env, same,
                                                  invariant)):
            windows[id(eqn)] = key
    return windows


def _window_of(eqn: Any, first: int, pos: int, axis: int | None, env: dict[Any, Value],
               same: set[Any], invariant: list[Any]) -> WindowRead | None:
    """The window a dynamic_slice (``first`` = 1) or dynamic_update_slice (2) takes of the array
    at ``pos``, as a ``WindowRead``; None unless its start on ``axis`` is ``k + const`` and each
    other start a literal or a value of ``same`` (added to ``invariant``)."""
    starts = eqn.invars[first:]
    if axis is None:
        return None
    at = literal(starts[axis]) if isinstance(starts[axis], jcore.Literal) else env.get(
        starts[axis])
    if not isinstance(at, Sym) or at.coef != 1:
        return None
    others: list[tuple[str, int]] = []
    for d, v in enumerate(starts):
        if d == axis:
            continue
        if isinstance(v, jcore.Literal):
            others.append(("literal", int(v.val)))
        elif v in same:
            if v not in invariant:
                invariant.append(v)
            others.append(("invariant", invariant.index(v)))
        else:
            return None
    sizes = (tuple(eqn.params["slice_sizes"]) if first == 1
             else tuple(eqn.invars[1].aval.shape))
    return ("window", pos, axis, at.const, tuple(others), sizes)


def _read_before_write(jaxpr: Any, narrow: dict[int, int]) -> frozenset[int]:
    """The narrowed arrays (``_narrow_writes``) whose every read in the body is of one element
    and comes before the body's first write of the array, none in a nested loop. What such a
    read sees is what the array held before the loop (no iteration writes another's slot), so
    the batched loop takes it from there, one element per iteration (cut as one window of the
    array, ``_Plan.windows``, where its other starts are the same in every iteration; else a
    gather), and needs no slabs of the array: the slab of a column slot is the whole column,
    and a triangle's row update (``T[i, j] += max(T[i + 1, j], T[i + 1, j + 1])`` over j) cut
    the 250x250 array into two transposed 250x249 slabs in each of its 249 outer iterations to
    read 249 elements of one row from them (10 ms; 0.5 ms without the slabs)."""
    versions = {v: pos for pos, v in enumerate(jaxpr.invars[1:]) if pos in narrow}
    written: set[int] = set()
    ok = set(versions.values())
    for eqn in jaxpr.eqns:
        touched = _touched(eqn, versions)
        if not touched:
            continue
        name, pos = eqn.primitive.name, versions[eqn.invars[touched[0]]]
        if touched != [0] or name not in _WINDOWS:
            ok -= {versions[eqn.invars[i]] for i in touched}
        elif name == "dynamic_update_slice":
            written.add(pos)
            versions[eqn.outvars[0]] = pos
        elif pos in written or any(size != 1 for size in eqn.params["slice_sizes"]):
            ok.discard(pos)
    return frozenset(ok)


def _narrow_writes(jaxpr: Any, slots: dict[int, _Slot]) -> dict[int, int]:
    """The updated arrays whose every write in the body (a dynamic_update_slice of a version of
    the array, none in a nested loop) covers the same window of the slab: the same update
    shape, smaller than the slab on some axis, at the same start on every axis but the slot's,
    each start a literal or a value of the loop's constants alone (the same for every
    iteration). The body's result then differs from the slab in that window alone, where it is
    the update of the write that made it. Position -> id of that write: the batched loop puts
    back the windows, where the whole slabs would cost a copy of the array per run of the loop
    (trmm's loop over columns, run once per row of an outer loop, wrote all of B back each
    time). NumPy mode's second write of a window replaces the first (storage.write_window):
    both are writes of the array before them."""
    variant = set(jaxpr.invars)  # the counter and the carried values
    versions = {v: pos for pos, v in enumerate(jaxpr.invars[1:]) if pos in slots}
    writes: dict[int, list[Any]] = {pos: [] for pos in slots}
    broken: set[int] = set()
    for eqn in jaxpr.eqns:
        if any(not isinstance(v, jcore.Literal) and v in variant for v in eqn.invars):
            variant.update(eqn.outvars)
        touched = _touched(eqn, versions)
        if not touched:
            continue
        name = eqn.primitive.name
        if touched == [0] and name == "dynamic_update_slice":
            pos = versions[eqn.invars[0]]
            writes[pos].append(eqn)
            versions[eqn.outvars[0]] = pos
        elif touched != [0] or name != "dynamic_slice":  # a nested loop or another use
            broken |= {versions[eqn.invars[i]] for i in touched}
    narrow = {}
    for pos, chain in writes.items():
        axis, out = slots[pos].axis, jaxpr.outvars[pos]
        last = [e for e in chain if e.outvars[0] is out]
        if pos in broken or not last or axis is None:
            continue
        shape, full = chain[0].invars[1].aval.shape, chain[0].invars[0].aval.shape
        if any(e.invars[1].aval.shape != shape for e in chain) or all(
                shape[d] == full[d] for d in range(len(full)) if d != axis):
            continue
        starts = {tuple(_start_key(e.invars[2 + d], variant) for d in range(len(full))
                        if d != axis) for e in chain}
        if len(starts) == 1 and None not in next(iter(starts)):
            narrow[pos] = id(last[0])
    return narrow


def _start_key(v: Any, variant: set[Any]) -> Any:
    """What identifies a write's start on one axis when it is the same for every iteration: a
    literal's value, or the variable of one computed from the loop's constants; else None."""
    if isinstance(v, jcore.Literal):
        return ("literal", int(v.val))
    return None if v in variant else ("var", id(v))


def _touched(eqn: Any, version: dict[Any, int]) -> list[int]:
    """The positions of ``eqn``'s operands that hold (a version of) an updated array."""
    return [i for i, v in enumerate(eqn.invars)
            if not isinstance(v, jcore.Literal) and v in version]


@dataclass
class _Walk:
    """The check of a body's equations (and of the loops nested in it) against the slots."""

    indices: Indices
    """The index analysis, over the loop's span."""
    slots: dict[int, _Slot]
    held: int = 0
    """Bytes one iteration computes, slabs aside."""
    transient: int = 0
    """Bytes one step of a nested loop computes at most (held while it runs, batched)."""
    sources: dict[Any, Source] = field(default_factory=dict)
    """Variables that hold an input of the body it does not update -> which input."""
    reads: dict[int, SlotRead] = field(default_factory=dict)
    """Reads of such an input at the slot (see ``_Plan.reads``)."""
    invariant: set[Any] = field(default_factory=set)
    """Variables of the body that are the same in every iteration: computed from the inputs it
    does not update alone (a nested batched loop's view of a whole input). The batched body
    computes them once, not once per iteration, so they are not counted in ``held``."""
    slot_invariants: dict[Any, int] = field(default_factory=dict)
    """Those of them read at the slot, at the body's own level -> their index in
    ``_Plan.invariant``."""
    depth: int = 0
    """How deep in nested loops the equations being checked are (0: the body's own)."""

    def slot_read(self, eqn: Any, ins: list[Value]) -> None:
        """Note ``eqn`` when it is a dynamic_slice of an input the body does not update, of size
        1 on the one axis where its start is ``coef * k + const`` (inside the axis for every k).
        Its other starts may be anything: they index the slab as they indexed the input."""
        if eqn.primitive.name != "dynamic_slice" or isinstance(eqn.invars[0], jcore.Literal):
            return
        operand = eqn.invars[0]
        source = self.sources.get(operand)
        if source is None and self.depth == 0 and operand in self.invariant:
            source = ("invariant", self.slot_invariants.get(operand, len(self.slot_invariants)))
        if source is None:
            return
        starts, sizes = ins[1:], eqn.params["slice_sizes"]
        axes = slot_axes(starts, sizes)
        if len(axes) != 1:
            return
        at = starts[axes[0]]
        assert isinstance(at, Sym)
        least, most = span(at, self.indices.lo, self.indices.hi)
        if least >= 0 and most < eqn.invars[0].aval.shape[axes[0]]:
            self.reads[id(eqn)] = ("read", source, axes[0], at.coef, at.const)
            if source[0] == "invariant":
                self.slot_invariants.setdefault(operand, source[1])

    def eqns(self, eqns: Sequence[Any], env: dict[Any, Value], version: dict[Any, int]) -> bool:
        """Whether ``eqns`` touch the updated arrays (``version``: var -> position) only at
        their slots; ``env`` and ``version`` get what the equations make."""
        def read(v: Any) -> Value:
            return literal(v) if isinstance(v, jcore.Literal) else env.get(v)

        for eqn in eqns:
            ins = [read(v) for v in eqn.invars]
            touched = _touched(eqn, version)
            if touched and eqn.primitive.name == "scan":
                if not self.scan(eqn, ins, touched, version):
                    return False
            elif touched:
                if touched != [0] or eqn.primitive.name not in _WINDOWS:
                    return False  # any other use may read another iteration's slot
                pos = version[eqn.invars[0]]
                if eqn.primitive.name == "dynamic_slice":
                    starts, sizes = ins[1:], eqn.params["slice_sizes"]
                else:
                    starts, sizes = ins[2:], eqn.invars[1].aval.shape
                    version[eqn.outvars[0]] = pos
                span = self.indices
                if not self.slots[pos].fits(eqn, starts, sizes, eqn.invars[0].aval.shape,
                                            span.lo, span.hi,
                                            eqn.primitive.name == "dynamic_update_slice"):
                    return False
            if not touched:
                self.slot_read(eqn, ins)
            env.update(zip(eqn.outvars, self.indices.eqn(eqn, ins), strict=True))
            if not eqn.effects and all(isinstance(v, jcore.Literal) or v in self.invariant
                                       for v in eqn.invars):
                self.invariant.update(eqn.outvars)
                continue
            self.held += sum(hoisted.nbytes(v.aval) for v in eqn.outvars
                             if hasattr(v.aval, "shape") and v not in version)
        return True

    def scan(self, eqn: Any, ins: list[Value], touched: list[int],
             version: dict[Any, int]) -> bool:
        """A loop nested in the body (``C[i, :i + 1] += ...`` over k inside a loop over i) that
        carries updated arrays: fine when its body touches them only at the slots, each
        carried one leaving as a version of itself (its result a version then)."""
        params = eqn.params
        n_consts, n_carry = params["num_consts"], params["num_carry"]
        if any(not n_consts <= t < n_consts + n_carry for t in touched):
            return False  # an updated array read as a constant or scanned over
        inner = params["jaxpr"]
        jaxpr = inner.jaxpr
        env: dict[Any, Value] = {v: literal(c) for v, c in zip(jaxpr.constvars, inner.consts,
                                                                 strict=True)}
        env.update((v, x) for v, x in zip(jaxpr.invars[:n_consts], ins[:n_consts], strict=True))
        inner_version = {jaxpr.invars[t]: version[eqn.invars[t]] for t in touched}
        for t in range(n_consts):  # the loop's constants that are inputs of the outer body
            outer = eqn.invars[t]
            if not isinstance(outer, jcore.Literal) and outer in self.sources:
                self.sources[jaxpr.invars[t]] = self.sources[outer]
        before = self.held
        self.depth += 1
        try:
            if not self.eqns(jaxpr.eqns, env, inner_version):
                return False
        finally:
            self.depth -= 1
        # One step's values live while it runs, not all the loop's: not this iteration's work.
        self.transient, self.held = max(self.transient, self.held - before), before
        for j, out in enumerate(jaxpr.outvars):
            owner = None if isinstance(out, jcore.Literal) else inner_version.get(out)
            start = (version[eqn.invars[n_consts + j]]
                     if j < n_carry and n_consts + j in touched else None)
            if owner != start:
                return False  # a carried array left as something else, or as another's
            if owner is not None:
                version[eqn.outvars[j]] = owner
        return True


Aheads = dict[Any, Any]
"""(position, distance d) -> the slabs of a later iteration's slot, as they were before the
loop (see ``_Slot._read``); a SlotRead -> the slabs of that input at the slots."""


Written = dict[int, tuple[Any, list[Any]]]
"""id of a narrowed array's last write -> (its update, its start on each axis)."""


def _slot_run(jaxpr: Any, consts: Sequence[Any], the_plan: _Plan, k: Any,
              flat: Sequence[Any], aheads: Aheads) -> tuple[list[Any], list[list[Any]]]:
    """One iteration of the body with each updated array replaced by its slab (size 1 on the slot
    axis, the slot's index there becoming 0), and each read of a later iteration's slot by that
    slot's slab before the loop (``aheads``): the slabs it leaves (for an array in
    ``the_plan.narrow``, the window its writes cover), and the starts of those windows."""
    args = [k, *flat]
    version = {jaxpr.invars[1 + pos]: pos for pos in the_plan.slots}
    written: Written = {}
    outs = _on_slabs(jaxpr, consts, args, version, the_plan, the_plan.known, aheads, written)
    order = sorted(the_plan.slots)
    last = {pos: written[the_plan.narrow[pos]] for pos in order if pos in the_plan.narrow}
    return ([last[pos][0] if pos in last else outs[pos] for pos in order],
            [starts for _, starts in last.values()])


def _on_slabs(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], version: dict[Any, int],
              the_plan: _Plan, known: dict[Any, Sym | Bool], aheads: Aheads,
              written: Written | None = None) -> list[Any]:
    """``jaxpr`` evaluated with the updated arrays (``version``: invar -> position) as their
    slabs: windows on them taken at index 0 of the slot axis, nested loops run on the slabs.
    ``written`` (the loop's own body) gets the update and starts of each narrowed array's last
    write."""
    env: dict[Any, Any] = dict(zip(jaxpr.constvars, consts, strict=True))
    env.update(zip(jaxpr.invars, args, strict=True))

    def read(v: Any) -> Any:
        return v.val if isinstance(v, jcore.Literal) else env[v]

    for eqn in jaxpr.eqns:
        if eqn.outvars and all(v in known for v in eqn.outvars):
            for v in eqn.outvars:  # the same for every k: a constant, not a computation
                value = known[v]
                env[v] = np.asarray(value.value if isinstance(value, Bool) else value.const,
                                    v.aval.dtype)
            continue
        pred = eqn.invars[0] if eqn.invars else None
        which = None if pred is None or isinstance(pred, jcore.Literal) else known.get(pred)
        if eqn.primitive.name == "select_n" and len(eqn.invars) == 3 and isinstance(which,
                                                                                    Bool):
            env[eqn.outvars[0]] = read(eqn.invars[2 if which.value else 1])
            continue
        if id(eqn) in the_plan.windows:  # a direct array's element: from its window
            env[eqn.outvars[0]] = aheads[the_plan.windows[id(eqn)]]
            continue
        ins = [read(v) for v in eqn.invars]
        touched = _touched(eqn, version)
        if id(eqn) in the_plan.reads:  # an input's slot: from its slabs
            axis = the_plan.reads[id(eqn)][2]
            ins[0] = aheads[the_plan.reads[id(eqn)]]
            ins[1 + axis] = jnp.zeros((), jnp.asarray(ins[1 + axis]).dtype)
        if touched and eqn.primitive.name == "scan":
            outs = _scan_on_slabs(eqn, ins, touched, version, the_plan, aheads)
            for v, o in zip(eqn.outvars, outs, strict=True):
                env[v] = o
            continue
        if touched:
            value = _on_window(eqn, ins, version, the_plan, aheads, written)
            if value is not _BIND:
                env[eqn.outvars[0]] = value
                continue
        env.update(zip(eqn.outvars, bind(eqn, ins), strict=True))
    return [read(v) for v in jaxpr.outvars]


_BIND = object()
"""``_on_window``'s answer when the op is to be bound on the operands it moved to the slab."""


def _on_window(eqn: Any, ins: list[Any], version: dict[Any, int], the_plan: _Plan,
               aheads: Aheads, written: Written | None) -> Any:
    """A dynamic_slice / dynamic_update_slice of an updated array, in the body run on slabs: its
    value, or _BIND once ``ins`` are moved onto the slab (the slot's start 0, a later slot's
    slab from before the loop). An array of ``the_plan.direct`` has no slab: its reads run as
    traced, on the array before the loop, and its writes are not made (no read follows them;
    the narrowed window is what the loop puts back)."""
    pos = version[eqn.invars[0]]
    update = eqn.primitive.name == "dynamic_update_slice"
    if update:
        version[eqn.outvars[0]] = pos
        if written is not None and id(eqn) in the_plan.narrow.values():
            written[id(eqn)] = (ins[1], list(ins[2:]))
    if pos in the_plan.direct:
        return ins[0] if update else _BIND
    if not update and id(eqn) in the_plan.ahead:  # a later slot: read from before the loop
        ins[0] = aheads[the_plan.ahead[id(eqn)]]
    whole = eqn.invars[1].aval.shape if update else eqn.outvars[0].aval.shape
    if tuple(whole) == tuple(np.shape(ins[0])):  # the whole slab: no op needed
        return ins[1] if update else ins[0]
    axis = the_plan.slots[pos].axis
    assert axis is not None
    skip = 2 if update else 1
    ins[skip + axis] = jnp.zeros((), jnp.asarray(ins[skip + axis]).dtype)
    return _BIND


def _scan_on_slabs(eqn: Any, ins: list[Any], touched: list[int], version: dict[Any, int],
                   the_plan: _Plan, aheads: Aheads) -> list[Any]:
    """A nested loop (a scan equation) that carries updated arrays, run on their slabs."""
    params = eqn.params
    n_consts, n_carry = params["num_consts"], params["num_carry"]
    inner = params["jaxpr"]
    jaxpr = inner.jaxpr
    inner_version = {jaxpr.invars[t]: version[eqn.invars[t]] for t in touched}
    for j, out in enumerate(eqn.outvars[:n_carry]):
        if n_consts + j in touched:
            version[out] = version[eqn.invars[n_consts + j]]
    fixed = ins[:n_consts]

    def step(carry: list[Any], xs: list[Any]) -> tuple[list[Any], list[Any]]:
        outs = _on_slabs(jaxpr, inner.consts, [*fixed, *carry, *xs], dict(inner_version),
                         the_plan, {}, aheads)
        return outs[:n_carry], outs[n_carry:]

    carry, ys = lax.scan(step, ins[n_consts:n_consts + n_carry], ins[n_consts + n_carry:],
                         length=params["length"], reverse=params["reverse"],
                         unroll=params["unroll"])
    return [*carry, *ys]


def run_batched(closed: Any, the_plan: _Plan, lo: int, hi: int, flat: list[Any],
                active: Callable[[Any], Any] | None = None) -> list[Any]:
    """The loop over k in ``lo .. hi - 1`` as one vmapped body: the carried values after it.
    ``active(k)``: whether iteration k runs (the slot keeps its value where it does not)."""
    jaxpr, consts = closed.jaxpr, closed.consts
    ks = counts(jaxpr.invars[0].aval.dtype, lo, hi)  # an iota, no constant
    order = sorted(the_plan.slots)
    # Batched along the slot axis where it lies (no transposes in or out): trmm's column loop
    # 1.25x faster than with the slots moved to the front, others alike; but a traced range's
    # masked slots (gramschmidt) were 1.5x slower so, and keep them in front.
    axes, places, slabs, later, read_ahead = _loop_slabs(the_plan, order, lo, hi, flat, consts,
                                                         active is not None, jaxpr)
    narrowed = [pos for pos in order if pos in the_plan.narrow]
    same: list[list[Any]] = []  # the windows' starts as values outside the vmap (or None)

    def one(k: Any, own: list[Any], ahead: list[Any]
            ) -> tuple[list[Any], list[list[Any]], list[Any], Any]:
        values = list(flat)
        for pos, slab in zip(order, own, strict=True):
            if pos not in the_plan.direct:
                values[pos] = slab
        aheads = dict(zip(later, ahead, strict=True))
        outs, starts = _slot_run(jaxpr, consts, the_plan, k, values, aheads)
        same.extend([backend.unbatched(s) for s in st] for st in starts)
        starts = [[jnp.asarray(s, ks.dtype) for s in st] for st in starts]
        if active is None:  # nothing to keep: no old values, no flags
            return outs, starts, [], None
        keep = active(k)
        kept = dict(zip(narrowed, starts, strict=True))
        for i, pos in enumerate(order):  # a narrowed slab keeps its window's old values
            if pos in the_plan.kept_windows:  # cut before the loop, as its reads are
                own[i] = aheads[the_plan.kept_windows[pos]]
            elif pos in the_plan.direct:  # read where it lies, at the slot's own index
                own[i] = lax.dynamic_slice(jnp.asarray(flat[pos]), kept[pos], outs[i].shape)
            elif pos in kept:
                axis = the_plan.slots[pos].axis
                at = [jnp.zeros((), ks.dtype) if d == axis else s
                      for d, s in enumerate(kept[pos])]
                own[i] = lax.dynamic_slice(own[i], at, outs[i].shape)
        # The select of the iterations that run comes after the vmap, on whole blocks: a select
        # of the slabs (with their unit slot axis) made XLA copy the array it updates in every
        # iteration of a loop around (gramschmidt's R: 0.88 -> 0.62 ms, alternating).
        return outs, starts, [jnp.asarray(i).astype(o.dtype) for o, i in zip(
            outs, own, strict=True)], keep

    # No transposes around column slabs; windows at an enclosing loop's index stay windows.
    with backend.batch_axis_kept_by_unit_reshapes(), backend.batch_rules_in_place():
        own_axes = [None if pos in the_plan.direct else b for pos, b in zip(order, axes,
                                                                              strict=True)]
        outs, starts, olds, keep = jax.vmap(
            one, in_axes=(0, own_axes, [b for b, _, _ in read_ahead]),
            out_axes=(axes, 0, axes if active is not None else [], 0))(
                ks, slabs, [slab for _, _, slab in read_ahead])
    # The same in every iteration (_narrow_writes): made of unbatched values, as they are (an
    # enclosing loop's index); else the first iteration's.
    window_at = {pos: [lax.index_in_dim(s, 0, keepdims=False) if u is None else u
                       for s, u in zip(st, given, strict=True)]
                 for pos, st, given in zip(narrowed, starts, same, strict=True)}
    result = list(flat)
    for i, (pos, where, out, batch) in enumerate(zip(order, places, outs, axes, strict=True)):
        axis = the_plan.slots[pos].axis
        assert axis is not None
        block = _moved(lax.squeeze(out, (axis + 1,)), batch, axis)
        if active is not None:  # a slot outside the traced range keeps its old values
            old = _moved(lax.squeeze(olds[i], (axis + 1,)), batch, axis)
            block = lax.select(lax.broadcast_in_dim(keep, block.shape, (axis,)), block, old)
        result[pos] = _put_back(jnp.asarray(flat[pos]), block, axis, where,
                                window_at.get(pos))
    return result


def _loop_slabs(the_plan: _Plan, order: list[int], lo: int, hi: int, flat: list[Any],
                consts: Sequence[Any], front: bool, jaxpr: Any
                ) -> tuple[list[int], list[np.ndarray], list[Any], list[Any], list[Any]]:
    """The batched loop's slabs: per updated array (in ``order``) its batch axis, slot per
    iteration and slabs (None: read where it lies, ``_Plan.direct``); then the keys of the
    slabs read besides (a later iteration's slot, an input read at the slot) and those slabs."""
    axes: list[int] = []
    places: list[np.ndarray] = []
    slabs: list[Any] = []
    for pos in order:
        if pos in the_plan.direct:  # no slabs: read where it lies (_read_before_write)
            slot = the_plan.slots[pos]
            assert slot.axis is not None and slot.at is not None
            axes.append(slot.axis)
            places.append(slot.at.coef * np.arange(lo, hi) + slot.at.const)
            slabs.append(None)
            continue
        batch, where, slab = _slabs(the_plan, pos, 0, lo, hi, flat, front)
        axes.append(batch)
        places.append(where)
        slabs.append(slab)
    later: list[Any] = sorted({a for a in the_plan.ahead.values()
                               if a[0] not in the_plan.direct})
    read_ahead = [_slabs(the_plan, pos, d, lo, hi, flat, front) for pos, d in later]
    invariant = _invariant_values(the_plan, jaxpr, flat, consts)
    for key in dict.fromkeys(the_plan.reads.values()):  # inputs read at the slot
        _, (kind, i), on, coef, const = key
        value = {"carried": flat, "const": consts, "invariant": invariant}[kind][i]
        read_ahead.append(_input_slabs(value, on, coef * np.arange(lo, hi) + const))
        later.append(key)
    for window in dict.fromkeys([*the_plan.windows.values(), *the_plan.kept_windows.values()]):
        read_ahead.append(_window(window, lo, hi, flat, invariant))  # of direct arrays
        later.append(window)
    return axes, places, slabs, later, read_ahead


def _window(read: WindowRead, lo: int, hi: int, flat: list[Any], invariant: list[Any]
            ) -> tuple[int, np.ndarray, Any]:
    """(batch axis, slot per iteration, the windows) of a ``_Plan.windows`` read over the
    loop: ``hi - lo`` of them from ``lo + const`` on the slot axis (inside it: the slot check
    proved it), at its other starts, clamped as the read's own dynamic_slice clamps them."""
    _, pos, axis, const, others, sizes = read
    x = jnp.asarray(flat[pos])
    given = iter(others)
    starts = []
    for d in range(x.ndim):
        kind, value = ("literal", lo + const) if d == axis else next(given)
        starts.append(jnp.asarray(value if kind == "literal" else invariant[value]))
    dtype = jnp.result_type(*starts)
    cut = lax.dynamic_slice(x, [s.astype(dtype) for s in starts],
                            [hi - lo if d == axis else n for d, n in enumerate(sizes)],
                            allow_negative_indices=False)
    return axis, np.arange(lo, hi) + const, lax.expand_dims(cut, (axis + 1,))


def _invariant_values(the_plan: _Plan, jaxpr: Any, flat: Sequence[Any],
                      consts: Sequence[Any]) -> list[Any]:
    """``the_plan.invariant``'s values, computed once, before the batched loop, from the
    body's constants and the inputs it does not update."""
    if not the_plan.invariant:
        return []
    env: dict[Any, Any] = dict(zip(jaxpr.constvars, consts, strict=True))
    env.update(zip(jaxpr.invars[1:], flat, strict=True))

    def read(v: Any) -> Any:
        return v.val if isinstance(v, jcore.Literal) else env[v]

    for eqn in the_plan.invariant_eqns:
        env.update(zip(eqn.outvars, bind(eqn, [read(v) for v in eqn.invars]), strict=True))
    return [env[v] for v in the_plan.invariant]


def _slabs(the_plan: _Plan, pos: int, d: int, lo: int, hi: int, flat: list[Any],
           front: bool) -> tuple[int, np.ndarray, Any]:
    """(batch axis, slot per iteration, batched slabs) of the slots ``d`` past each iteration's
    own in the array at ``pos`` before the loop; ``front``: batched along a new first axis."""
    slot = the_plan.slots[pos]
    assert slot.axis is not None and slot.at is not None
    batch = 0 if front else slot.axis
    where = slot.at.coef * np.arange(lo, hi) + slot.at.const + d
    cut = taken(jnp.asarray(flat[pos]), slot.axis, where)
    return batch, where, lax.expand_dims(_moved(cut, slot.axis, batch), (slot.axis + 1,))


def _input_slabs(x: Any, axis: int, where: np.ndarray) -> tuple[int, np.ndarray, Any]:
    """``_slabs`` of an input the body does not update, at the slots ``where`` on ``axis``
    (batched along that axis: windows over the batch axis stay windows)."""
    return axis, where, slabs_at(x, axis, where)


def _moved(x: Any, source: int, target: int) -> Any:
    """``jnp.moveaxis(x, source, target)``, as the identity when they are the same axis (in
    lax: jax.numpy's is a jitted call while tracing)."""
    if source == target:
        return x
    perm = [d for d in range(x.ndim) if d != source]
    perm.insert(target, source)
    return lax.transpose(x, perm)


def _put_back(x: Any, block: Any, axis: int, where: np.ndarray, at: list[Any] | None) -> Any:
    """``x`` with the batched loop's ``block`` written back: the slots ``where`` along ``axis``
    (a slice when they are consecutive), whole or (``at``: the window's start on each axis) in
    their window."""
    block, step = block.astype(x.dtype), where[1] - where[0] if len(where) > 1 else 1
    if at is None:
        if step == 1:
            return lax.dynamic_update_slice_in_dim(x, block, int(where[0]), axis)
        index = (slice(None),) * axis + (jnp.asarray(where),)
        return x.at[index].set(block, unique_indices=True)
    dtype = jnp.asarray(at[0]).dtype  # one index type (starts taken as they were may differ)
    at = [s if jnp.asarray(s).dtype == dtype else lax.convert_element_type(s, dtype) for s in at]
    if step == 1:  # the starts the body's writes used: wrapped already, as the primitive's are
        return lax.dynamic_update_slice(x, block, [np.asarray(int(where[0]), dtype) if d == axis
                                                   else s for d, s in enumerate(at)],
                                        allow_negative_indices=False)
    grid = [  # each slot's window, its start clamped as dynamic_update_slice clamps it
        jnp.asarray(where) if d == axis else lax.iota(dtype, block.shape[d])
        + jnp.clip(s, 0, x.shape[d] - block.shape[d]) for d, s in enumerate(at)]
    return x.at[jnp.ix_(*grid)].set(block, unique_indices=True)


BATCHED, SUMMED, HOISTED, SELECTED, SPLIT = "batched", "summed", "hoisted", "selected", "split"
"""How a loop ran, when not as a plain loop: batched (this module), as the sum of its terms
(``summed``), with its work that does not depend on the updated arrays hoisted ahead of it
(``hoisted``), or that and its triangles of row and column writes made selects, no loop left
(``scattered``); or split into loops that update disjoint values, each batched or summed
(``_split``)."""


def fori(lo: int, hi: int, step_fn: Callable[[Any, list[Any]], list[Any]], init: list[Any],
         batch: bool, nested: bool = False) -> tuple[list[Any], str | None]:
    """``lax.fori_loop(lo, hi, step_fn, init)``, batched when ``batch`` and the body's iterations
    are independent (see the module), else summed when it only accumulates (``summed``), else
    with its invariant work hoisted when that pays (``hoisted``), and then with no loop when
    what remains writes triangles of rows and columns (``scattered``); else, ``nested`` in
    another loop, unrolled when short and small (``UNROLL_TRIPS``): the carried values after
    it, and how it ran (BATCHED, SUMMED, HOISTED, SELECTED or None)."""
    if not batch or hi <= lo:
        return list(lax.fori_loop(lo, hi, step_fn, list(init))), None
    return _run(lo, hi, step_fn, list(init), None, nested)


@dataclass(frozen=True)
class _Between:
    """The part of a loop's span that a range with a traced bound runs: iterations ``start``
    .. ``stop - 1``, ``trips`` of them, the m-th at ``counter(m)``."""

    start: Any
    stop: Any
    trips: Any
    counter: Callable[[Any], Any]

    def active(self, k: Any) -> Any:
        return jnp.logical_and(k >= self.start, k < self.stop)


def _run(lo: int, hi: int, fn: Callable[[Any, list[Any]], list[Any]], init: list[Any],
         between: _Between | None, nested: bool = False) -> tuple[list[Any], str | None]:
    """The loop of ``fn`` over ``lo .. hi - 1`` (over part of it with ``between``): batched,
    hoisted or plain, as ``fori`` says."""
    # The loop itself, traced once into a jaxpr of its own: the body is traced inside the
    # loop as lax.fori_loop always traces it (tracing it on its own, jax.make_jaxpr(fn), made
    # loop kernels' traces 1.4-1.7x slower), and read from the loop's equation.
    # Masked row / column writes are traced in the window form the check reads; should the loop
    # not batch, it is traced again with them as scatters, which a rolled loop runs faster
    # (correlation's and covariance's carried matrices not copied around each write).
    with numpy_context.fresh_memo(), numpy_context.window_writes() as windows:
        outer = jax.make_jaxpr(lambda flat: lax.fori_loop(lo, hi, fn, flat))(init)
    body = _scan_body(outer, init, lo, hi - lo)
    if body is not None:
        run = _batched_or_summed(body, lo, hi, between)
        if run is not None:
            return run(init)
        parts = _split(body, lo, hi, init, between)
        if parts is not None:
            return parts, SPLIT
    if windows.count:  # a new function: JAX would give back the body it traced for ``fn``
        again = functools.partial(fn)
        with numpy_context.fresh_memo():  # nothing remembered from the first trace
            outer = jax.make_jaxpr(lambda flat: lax.fori_loop(lo, hi, again, flat))(init)
        body = _scan_body(outer, init, lo, hi - lo)
    if body is not None:
        the_split = hoisted.split(body, hi - lo)
        done = (scattered.try_run(body, the_split, lo, hi, init)
                if the_split is not None and between is None else None)
        if done is not None:
            return done, SELECTED
        if the_split is not None:
            return hoisted.run(body, the_split, lo, hi, init, *(
                () if between is None else (between.counter, between.trips))), HOISTED
    if nested and between is None and body is not None and _unrolls(body, hi - lo):
        fun, dtype, flat = jcore.jaxpr_as_fun(body), body.jaxpr.invars[0].aval.dtype, list(init)
        for k in range(lo, hi):
            flat = list(fun(np.asarray(k, dtype), *flat))
        return flat, None
    if between is None:  # the loop as traced
        return list(jcore.jaxpr_as_fun(outer)(*init)), None
    counter = between.counter
    if body is None:
        return list(lax.fori_loop(0, between.trips, lambda m, flat: fn(counter(m), flat),
                                  init)), None
    call = _as_call(body)
    return list(lax.fori_loop(0, between.trips, lambda m, flat: call(counter(m), *flat),
                              init)), None


UNROLL_TRIPS = 16
"""A loop over a static range of at most this many iterations, inside another loop, that stays a
loop (it neither batches, sums nor hoists) runs unrolled when its body is straight-line and
small (UNROLL_WORK): the iterations' few operations in a row, with no while for XLA to step
through in every iteration of the loop around it. A loop that no loop runs around is left
rolled: its own iterations' cost is paid once."""

UNROLL_WORK = 512
"""The most work (``hoisted.straight_work``, summed over the iterations) of a loop that runs
unrolled. XLA:CPU's while costs about 0.1-0.3 us an iteration here, as much as a few hundred
scalar operations: crc32's 8-step bit loop, inside its loop over 16,384 bytes, ran 1.6x faster
unrolled (0.34 -> 0.21 ms, its `if` a select either way; benchmarks/numpy_speed.py --only
crc32)."""


def _unrolls(body: Any, trips: int) -> bool:
    """Whether the loop of ``body`` (as ``_scan_body`` gives it) over ``trips`` iterations runs
    unrolled (UNROLL_TRIPS, UNROLL_WORK). Only a loop that carries scalars alone: one that
    carries an array (it writes into one) stays a loop, so that the loop around it can still
    run batched on its rows (the batching follows a loop's reads and writes of its carried
    arrays, not those of a loop unrolled into the body)."""
    if trips > UNROLL_TRIPS or any(getattr(v.aval, "shape", ()) for v in body.jaxpr.invars):
        return False
    work = hoisted.straight_work(body.jaxpr)
    return work is not None and work * trips <= UNROLL_WORK


def _batched_or_summed(body: Any, lo: int, hi: int, between: _Between | None
                       ) -> Callable[[list[Any]], tuple[list[Any], str]] | None:
    """The loop of ``body`` (as ``_scan_body`` gives it) planned to run batched, else as the
    sum of its terms: a function of the carried values before it that gives them after it and
    how it ran; None when it does neither."""
    the_plan = plan(body.jaxpr, body.consts, lo, hi - 1)
    if the_plan is not None and between is not None:  # over whole axes, when that is near
        wide = _whole_axes(the_plan, body.jaxpr, lo, hi)
        wider = None if wide is None else plan(body.jaxpr, body.consts, wide[0], wide[1] - 1)
        if wide is not None and wider is not None and _same_reads(the_plan, wider):
            the_plan, (lo, hi) = wider, wide
    if the_plan is not None:
        active = None if between is None else between.active
        return lambda init: (run_batched(body, the_plan, lo, hi, init, active), BATCHED)
    sums = summed.plan(body, hi - lo)
    if sums is None:
        return None
    extra = () if between is None else (between.active, between.trips)
    return lambda init: (summed.run(sums, lo, hi, init, *extra), SUMMED)


WIDEN = 0.25
"""A loop over a range with a traced bound runs batched over the static span of the values
its counter can take, each slot outside the range keeping its values (``active``). When that
span falls short of its slots' whole axis by at most this fraction of it (``for j in
range(k + 1, n)``: j in 1 .. n - 1, one column short), it runs over the whole axis instead,
the extra iterations kept out the same way: its slabs are then the arrays themselves, where a
slab of all columns but the first was a copy, and so was every product it fed (XLA:CPU's dot
reads a contiguous operand). gramschmidt's 60 iterations: 0.70 -> 0.54 ms (alternating in one
process; the jax.jit port's 0.36), no kernel slower."""


def _whole_axes(the_plan: _Plan, jaxpr: Any, lo: int, hi: int) -> tuple[int, int] | None:
    """The counter span over which every slot of ``the_plan`` covers its whole axis, when it
    contains ``lo .. hi - 1`` and adds at most WIDEN of it (else None)."""
    spans = set()
    for pos, slot in the_plan.slots.items():
        assert slot.axis is not None and slot.at is not None
        n = jaxpr.invars[1 + pos].aval.shape[slot.axis]
        coef, const = slot.at.coef, slot.at.const
        if coef == 1:
            spans.add((-const, n - const))
        elif coef == -1:
            spans.add((const - n + 1, const + 1))
        else:
            return None
    if len(spans) != 1:
        return None
    (a, b), = spans
    if (a, b) == (lo, hi) or a > lo or b < hi or (b - a) - (hi - lo) > max(1, WIDEN * (hi - lo)):
        return None
    return a, b


def _same_reads(a: _Plan, b: _Plan) -> bool:
    """Whether plan ``b`` (over a wider span) reads as ``a`` does: the same slab, window and
    later-slot reads (a read the wider span takes outside its axis would be gathered)."""
    return (len(a.reads), len(a.windows), len(a.ahead), a.direct, len(a.narrow)) == (
        len(b.reads), len(b.windows), len(b.ahead), b.direct, len(b.narrow))


def _split(body: Any, lo: int, hi: int, init: list[Any], between: _Between | None
           ) -> list[Any] | None:
    """The loop of ``body`` (as ``_scan_body`` gives it) as several loops, when the values it
    updates fall into groups that read nothing of each other (``M[i] = f(x[i])`` beside
    ``total += g(x[i])``: a slot write and an accumulator, which neither batching nor summing
    takes together) and every group's loop batches or sums on its own: the carried values after
    them. None when it is one group, or some group would stay a loop. Each group's body keeps
    only its own equations; the values no iteration changes are read by any group."""
    groups = None if body.jaxpr.effects else _independent_groups(body.jaxpr)
    if groups is None:
        return None
    runs: list[tuple[list[int], Callable[[list[Any]], tuple[list[Any], str]]]] = []
    for carried in groups:  # every group planned before any runs
        run = _batched_or_summed(_part(body, carried), lo, hi, between)
        if run is None:
            return None
        runs.append((carried, run))
    result = list(init)
    for carried, run in runs:
        done, _ = run([init[pos] for pos in carried])
        for pos, value in zip(carried, done, strict=True):
            if body.jaxpr.outvars[pos] is not body.jaxpr.invars[1 + pos]:
                result[pos] = value
    return result


def _independent_groups(jaxpr: Any) -> list[list[int]] | None:
    """The carried positions of a loop body in groups, each group's updates reading no value
    another group updates (values no iteration changes go with every group that reads them):
    positions ascending, None when there is only one group."""
    carried = jaxpr.invars[1:]
    changed = [pos for pos, (v, out) in enumerate(zip(carried, jaxpr.outvars, strict=True))
               if out is not v]
    reads: dict[Any, frozenset[int]] = {v: frozenset({pos}) for pos, v in enumerate(carried)}
    for eqn in jaxpr.eqns:  # what each value reads of the carried values, through any equation
        got = frozenset().union(*(reads.get(v, frozenset()) for v in eqn.invars
                                  if not isinstance(v, jcore.Literal)))
        reads.update((out, got) for out in eqn.outvars)
    parent = {pos: pos for pos in changed}

    def root(pos: int) -> int:
        while parent[pos] != pos:
            pos = parent[pos]
        return pos

    for pos in changed:
        out = jaxpr.outvars[pos]
        for other in (frozenset() if isinstance(out, jcore.Literal) else reads.get(out, frozenset())):
            if other in parent:
                parent[root(other)] = root(pos)
    groups: dict[int, set[int]] = {}
    for pos in changed:
        groups.setdefault(root(pos), set()).add(pos)
    if len(groups) < 2:
        return None
    unchanged = [pos for pos in range(len(carried)) if pos not in parent]
    result = []
    for group in groups.values():
        needed = frozenset().union(*(reads.get(jaxpr.outvars[pos], frozenset()) for pos in group
                                     if not isinstance(jaxpr.outvars[pos], jcore.Literal)))
        result.append(sorted(group | {pos for pos in unchanged if pos in needed}))
    return sorted(result)


def _part(body: Any, carried: list[int]) -> Any:
    """The loop body ``body`` restricted to the carried positions ``carried``: (counter, those
    values) -> those values, with only the equations their new values need."""
    jaxpr = body.jaxpr
    outs = [jaxpr.outvars[pos] for pos in carried]
    needed = {v for v in outs if not isinstance(v, jcore.Literal)}
    eqns = []
    for eqn in reversed(jaxpr.eqns):
        if eqn.effects or needed.intersection(eqn.outvars):
            eqns.append(eqn)
            needed.update(v for v in eqn.invars if not isinstance(v, jcore.Literal))
    names = jcore.DebugInfo("a rolled loop's body", "reactant_lab",
                            tuple(f"carry[{i}]" for i in range(len(carried) + 1)),
                            tuple(f"carry[{i}]" for i in range(len(carried))))
    part = jcore.Jaxpr(jaxpr.constvars, [jaxpr.invars[0], *(jaxpr.invars[1 + p] for p in carried)],
                       outs, eqns[::-1], jaxpr.effects, names)
    return jcore.ClosedJaxpr(part, body.consts)


def _scan_body(outer: Any, init: list[Any], lo: int, length: int) -> Any | None:
    """The body of the loop that ``outer`` (a jaxpr of one static lax.fori_loop over ``init``)
    holds, as a closed jaxpr of (counter, carried values) -> carried values; None when the
    loop is not the scan of ``length`` steps from ``lo`` that fori_loop makes of it."""
    if len(outer.jaxpr.eqns) != 1 or outer.jaxpr.eqns[0].primitive.name != "scan":
        return None
    eqn = outer.jaxpr.eqns[0]
    params, n_consts = eqn.params, eqn.params["num_consts"]
    first = eqn.invars[n_consts]
    if (params["reverse"] or params["length"] != length or params["num_carry"] != 1 + len(init)
            or list(eqn.outvars[1:]) != list(outer.jaxpr.outvars)
            or not isinstance(first, jcore.Literal) or int(first.val) != lo):
        return None
    env = dict(zip(outer.jaxpr.constvars, outer.consts, strict=True))
    env.update(zip(outer.jaxpr.invars, init, strict=True))
    operands = [a.val if isinstance(a, jcore.Literal) else env[a] for a in eqn.invars[:n_consts]]
    inner = params["jaxpr"]
    j = inner.jaxpr
    names = jcore.DebugInfo("a rolled loop's body", "reactant_lab",
                            tuple(f"carry[{i}]" for i in range(len(j.invars) - n_consts)),
                            tuple(f"carry[{i}]" for i in range(len(j.outvars) - 1)))
    body = jcore.Jaxpr([*j.constvars, *j.invars[:n_consts]], j.invars[n_consts:], j.outvars[1:],
                       j.eqns, j.effects, names)
    return jcore.ClosedJaxpr(body, [*inner.consts, *operands])


def fori_between(span: tuple[int, int], start: Any, stop: Any, n: Any,
                 at_value: Callable[[Any, list[Any]], list[Any]], init: list[Any]
                 ) -> tuple[list[Any], str | None]:
    """A loop over ``range(start, stop)`` with a traced bound whose values all lie in the static
    ``span`` (lo, hi): batched over the span, each slot kept where its value is outside the
    range, when its iterations are independent; else one ``lax.fori_loop`` over the ``n``
    iterations, its invariant work hoisted (computed over the span) when that pays.
    ``at_value(v, flat)``: the body at index value v. As ``fori``, it says how it ran."""
    lo, hi = span
    dtype = jnp.asarray(0).dtype  # the index type fori_loop counts in

    def counter(m: Any) -> Any:
        return lax.convert_element_type(start + m, dtype)

    # Traced inside a loop over the span, as in fori (tracing the body on its own is slower).
    return _run(lo, hi, at_value, list(init), _Between(start, stop, jnp.maximum(n, 0), counter))


def _as_call(closed: Any) -> Callable[..., list[Any]]:
    """The traced body as one ``closed_call`` equation (its constants passed as arguments), for
    the loop that runs it unbatched: binding its equations one by one again costs about as
    much as tracing it."""
    jaxpr, consts = closed.jaxpr, list(closed.consts)
    invars = [*jaxpr.constvars, *jaxpr.invars]
    names = jcore.DebugInfo("a rolled loop's body", "reactant_lab",
                            tuple(f"arg[{i}]" for i in range(len(invars))),
                            tuple(f"carry[{i}]" for i in range(len(jaxpr.outvars))))
    call = hoisted.one_call(jcore.ClosedJaxpr(jcore.Jaxpr((), invars, jaxpr.outvars, jaxpr.eqns,
                                                          jaxpr.effects, names), []))
    return lambda *args: call(*consts, *args)
