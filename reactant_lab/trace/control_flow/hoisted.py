"""Rolled loops whose heavy work does not depend on what the loop updates: that work is done for
every iteration at once, before the loop (loop fission), and the loop keeps the rest.

``corr[i + 1:, i] = corr[i, i + 1:] = data[:, i] @ data[:, i + 1:]`` cannot run batched (each
iteration writes a row and a column of ``corr``, masked), but its product reads only ``data``,
which the loop never changes: only the writes depend on earlier iterations. So the body's
equations are split in two, on its jaxpr (the loop's scan body, as ``batched`` reads it):

- *dependent*: those that read, directly or through other equations, an array the loop updates;
- *invariant*: the rest, which read only the counter, constants and the carried values the loop
  leaves as they are.

The invariant values that the dependent equations (or the loop's results) read are computed for
all the iterations at once, the invariant equations vmapped over the counter (the 299
vector-matrix products become one matrix product), and the loop that remains reads its
iteration's row of each. Arithmetic of the counter alone (indices, bounds checks, the
coordinates of a masked row's write, built from iotas) stays in the loop: it costs little there,
and storing it for every iteration would not. It is done only when it pays: the
hoisted products and reductions hold at least twice the work of the equations that stay (a
``dot_general`` counts its multiply-adds, a reduction the elements it reads, other computing
equations the elements they read or write, moving data nothing), and the hoisted values for all
iterations fit the limits below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from jax import lax
from jax.extend import core as jcore
from jax.extend.core.primitives import closed_call_p

from reactant_lab.trace.control_flow.counter import called, is_var, needed, over_counter

MAX_HOISTED_BYTES = 32 << 20
"""The hoisted equations' values for all iterations together must fit here, ...

They are all alive at once, in XLA's temporary buffer. Past about this size it no longer fits the
last-level cache, and the C library maps a buffer this large afresh on every call (32 MiB is the
most its threshold for reusing freed memory rises to): each 4 KiB page then faults on first touch,
~0.35 ms per MiB here, more than batching the iterations saves. conv2d's loop over the kernel's
rows (three taps of (30752x16) @ (16x32) each) hoisted 68 MiB of products and ran in 46 ms, with
~20,000 page faults a call; kept in the loop, 12-15 ms."""

MAX_GROWTH = 32
"""... and be at most this many times the values the loop then reads (a body that reduces a
large temporary to a scalar is faster as a loop, whose iterations XLA fuses)."""

MIN_WORK = 4096
"""Hoisting pays only when the hoisted products and reductions do at least this much work per
iteration (multiply-adds, elements read), ..."""

MIN_RATIO = 2
"""... and this many times the work of the equations that stay in the loop."""

_MOVES = frozenset({
    "dynamic_slice", "slice", "reshape", "squeeze", "broadcast_in_dim", "expand_dims",
    "convert_element_type", "iota", "concatenate", "transpose", "rev", "gather", "pad", "copy",
    "copy_p"})
"""Equations that move or view data: hoisting them saves no work."""

_REDUCTIONS = ("reduce_", "argmin", "argmax")
"""Equations that read many elements for each one they give. Only these and dot_generals are
worth hoisting: the loop then reads a few values instead of recomputing them from many, while
hoisted elementwise work would be written out for every iteration and read back, the same
memory traffic as computing it in the loop (trisolv's masked rows: 1.5x slower hoisted)."""


def _size(v: Any) -> int:
    shape = getattr(v.aval, "shape", None)
    return 1 if shape is None else int(np.prod(shape, dtype=np.int64))


def nbytes(aval: Any) -> int:
    """The bytes of a value of abstract value ``aval`` (0 for one without a dtype: a token)."""
    if not hasattr(aval, "dtype"):
        return 0
    return int(np.prod(aval.shape, dtype=np.int64)) * int(np.dtype(aval.dtype).itemsize)


def work(eqn: Any, reducing_only: bool = False) -> int:
    """The work of one equation: multiply-adds of a dot_general, elements read of a reduction,
    elements read or written of anything else that computes (with ``reducing_only``: nothing),
    nothing for moving data; a call's is its equations'."""
    name = eqn.primitive.name
    inner = called(eqn)
    if inner is not None:
        return sum(work(e, reducing_only) for e in getattr(inner, "jaxpr", inner).eqns)
    if name in _MOVES:
        return 0
    if name == "dot_general":
        (contract, _), _ = eqn.params["dimension_numbers"]
        shape = eqn.invars[0].aval.shape
        return sum(_size(v) for v in eqn.outvars) * int(
            np.prod([shape[d] for d in contract], dtype=np.int64))
    ins = [_size(v) for v in eqn.invars if not isinstance(v, jcore.Literal)]
    if name.startswith(_REDUCTIONS):
        return max(ins, default=0)
    if reducing_only:
        return 0
    if name.startswith("scatter") or name == "dynamic_update_slice":
        return _size(eqn.invars[2 if name != "dynamic_update_slice" else 1])  # in place
    return max([sum(_size(v) for v in eqn.outvars), *ins])


def straight_work(jaxpr: Any) -> int | None:
    """The work (``work``) of a jaxpr's equations, those of the jaxprs inside them (calls,
    custom derivatives) counted inside them; None when it has an effect or a loop or a
    conditional anywhere: straight-line code only, whose cost the sum bounds."""
    if jaxpr.effects:
        return None
    total = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ("while", "cond", "scan"):
            return None
        inner = [getattr(v, "jaxpr", v) for v in eqn.params.values()
                 if isinstance(v, (jcore.Jaxpr, jcore.ClosedJaxpr))]
        if not inner:
            total += work(eqn)
        for sub in inner:
            part = straight_work(sub)
            if part is None:
                return None
            total += part
    return total


@dataclass(frozen=True)
class Split:
    """A loop body split for hoisting: ``ahead`` computes the frontier values from (constants,
    counter, carried values); ``rest`` is the loop's body given (constants, counter, the
    iteration's frontier values, carried values)."""

    ahead: Any
    rest: Any
    varying: tuple[bool, ...]
    """Per frontier value: whether it depends on the counter (one per iteration, stacked and
    read at the iteration's row) or not (computed once)."""


def split(closed: Any, n: int) -> Split | None:
    """The split of a loop body (a closed jaxpr of (counter, carried values) -> carried values,
    as ``batched._scan_body`` gives it) that runs ``n`` iterations; None when hoisting would not
    pay (see the module) or the body has effects."""
    jaxpr = closed.jaxpr
    carried = jaxpr.invars[1:]
    if jaxpr.effects or len(jaxpr.outvars) != len(carried) or n < 2:
        return None
    dependent = {v for v, out in zip(carried, jaxpr.outvars, strict=True) if out is not v}
    heavy: set[Any] = set()
    varying = {jaxpr.invars[0]}
    invariant: list[Any] = []
    for eqn in jaxpr.eqns:
        ins = [v for v in eqn.invars if is_var(v)]
        if any(v in dependent for v in ins) or eqn.effects:
            dependent.update(eqn.outvars)
            continue
        invariant.append(eqn)
        if any(v in varying for v in ins):
            varying.update(eqn.outvars)
        # Heavy: an array computed by a product or a reduction, or from one. Index arrays
        # (a masked row's coordinates, from iotas and the counter) stay in the loop, where they
        # fuse into the write that reads them; hoisted, they would be stored for every
        # iteration (covariance: two 300x300x2 index arrays, and gathers XLA compiles slowly).
        if any(v in heavy for v in ins) or (work(eqn, reducing_only=True) > 0 and any(
                getattr(v.aval, "shape", ()) != () for v in [*ins, *eqn.outvars])):
            heavy.update(eqn.outvars)
    if not heavy:
        return None
    # The frontier: heavy invariant values that the loop still reads.
    frontier: dict[Any, None] = {}
    for eqn in jaxpr.eqns:
        if eqn.outvars and eqn.outvars[0] in dependent:
            frontier.update((v, None) for v in eqn.invars if is_var(v) and v in heavy)
    frontier.update((v, None) for v in jaxpr.outvars if is_var(v) and v in heavy)
    if not frontier:
        return None
    ahead_eqns = needed(invariant, list(frontier), set())
    rest_eqns = needed(jaxpr.eqns, list(jaxpr.outvars), set(frontier))
    hoisted = sum(work(e, reducing_only=True) for e in ahead_eqns)
    kept = sum(work(e) for e in rest_eqns)
    held = sum(nbytes(v.aval) for e in ahead_eqns for v in e.outvars if v in varying)
    reads = sum(nbytes(v.aval) for v in frontier if v in varying)
    if (hoisted < MIN_WORK or hoisted < MIN_RATIO * kept or held * n > MAX_HOISTED_BYTES
            or held > MAX_GROWTH * max(reads, 1)):
        return None
    consts, counter = list(jaxpr.constvars), jaxpr.invars[0]
    names = tuple(f"arg[{i}]" for i in range(len(consts) + 1 + len(frontier) + len(carried)))
    ahead = jcore.Jaxpr((), [*consts, counter, *carried], list(frontier), ahead_eqns, set(),
                        jcore.DebugInfo("a rolled loop's hoisted work", "reactant_lab",
                                        names[:len(consts) + 1 + len(carried)],
                                        tuple(f"hoisted[{i}]" for i in range(len(frontier)))))
    rest = jcore.Jaxpr((), [*consts, counter, *frontier, *carried], jaxpr.outvars, rest_eqns,
                       jaxpr.effects,
                       jcore.DebugInfo("a rolled loop's body", "reactant_lab", names,
                                       tuple(f"carry[{i}]" for i in range(len(carried)))))
    return Split(jcore.ClosedJaxpr(ahead, []), jcore.ClosedJaxpr(rest, []),
                 tuple(v in varying for v in frontier))


def one_call(closed: Any) -> Callable[..., list[Any]]:
    """A closed jaxpr without constants as a function that binds it as one ``closed_call``
    equation."""
    call_p: Any = closed_call_p  # untyped in jax.extend
    params = call_p.get_bind_params({"call_jaxpr": closed})

    def call(*args: Any) -> list[Any]:
        return list(call_p.bind(*args, **params))

    return call


def stack(closed: Any, the_split: Split, lo: int, hi: int, init: list[Any]) -> list[Any]:
    """The hoisted work of every counter value in ``lo .. hi - 1``: each frontier value, stacked
    over the counter where it varies."""
    out_axes = [0 if v else None for v in the_split.varying]
    return over_counter(the_split.ahead.jaxpr, list(closed.consts), init, lo, hi, out_axes)


def run(closed: Any, the_split: Split, lo: int, hi: int, init: list[Any],
        counter: Callable[[Any], Any] | None = None, trips: Any = None) -> list[Any]:
    """The loop with its hoisted work done first for every counter value in ``lo .. hi - 1``:
    the carried values after it. ``counter(m)`` and ``trips``: the counter of the m-th iteration
    and the number of iterations, when the loop runs over part of that span (a traced range);
    by default it runs all of it."""
    consts = list(closed.consts)
    stacked = stack(closed, the_split, lo, hi, init)
    rest = one_call(the_split.rest)

    def body(k: Any, flat: list[Any]) -> list[Any]:
        rows = [lax.dynamic_index_in_dim(s, k - lo, keepdims=False) if v else s
                for s, v in zip(stacked, the_split.varying, strict=True)]
        return rest(*consts, k, *rows, *flat)

    if counter is None:
        return list(lax.fori_loop(lo, hi, body, list(init)))
    return list(lax.fori_loop(0, trips, lambda m, flat: body(counter(m), flat), list(init)))
