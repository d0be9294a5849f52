"""What is known of a rolled loop's counter and indices, and the helpers that run its body for
every counter value at once.

``hoisted``, ``summed`` and ``batched`` run a rolled loop's iterations together: the body
vmapped over its counter k (``counts``: an iota). :class:`Indices` evaluates the body's integer
scalars symbolically, each as ``coef * k + const`` (:class:`Sym`), and decides the bounds
checks NumPy mode makes of them when they hold for every k: how ``batched`` proves each
iteration touches its own slot. :func:`taken` cuts the slots of an array along an axis as one
slice (strided, or reversed for a negative step), not a gather of their indices;
:func:`over_counter` runs a body for every counter value so (``hoisted`` and ``summed``), its
reads of an input at the counter taken from such slices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend import core as jcore


def called(eqn: Any) -> Any | None:
    """The jaxpr (closed or not) that a call equation (``pjit``, ``closed_call``) runs, else
    None."""
    inner = eqn.params.get("jaxpr") or eqn.params.get("call_jaxpr")
    if eqn.primitive.name in ("jit", "pjit", "closed_call", "core_call") and inner is not None:
        return inner
    return None


def is_var(v: Any) -> bool:
    return not isinstance(v, jcore.Literal)


def needed(eqns: Sequence[Any], wanted: Sequence[Any], given: set[Any]) -> list[Any]:
    """The equations of ``eqns`` (in order) that computing ``wanted`` needs, the values in
    ``given`` being known."""
    need = {v for v in wanted if is_var(v) and v not in given}
    kept = []
    for eqn in reversed(eqns):
        if any(v in need for v in eqn.outvars):
            kept.append(eqn)
            need.update(v for v in eqn.invars if is_var(v) and v not in given)
    return kept[::-1]


def counts(dtype: Any, lo: int, hi: int) -> Any:
    """The counter values ``lo .. hi - 1`` as an iota (plus ``lo`` unless it is 0), in lax:
    a loop's iterations all at once, with no constant in the module."""
    ks = lax.iota(dtype, hi - lo)
    return lax.add(ks, lax.full(ks.shape, lo, ks.dtype)) if lo else ks


def bind(eqn: Any, ins: Sequence[Any]) -> list[Any]:
    """``eqn``'s primitive bound on ``ins``: its results, as a list."""
    ans = eqn.primitive.bind(*ins, **eqn.primitive.get_bind_params(eqn.params))
    return list(ans) if eqn.primitive.multiple_results else [ans]


@dataclass(frozen=True)
class Sym:
    """An integer scalar known as ``coef * k + const`` (``k``: the loop counter)."""

    coef: int
    const: int


@dataclass(frozen=True)
class Bool:
    value: bool


Value = Sym | Bool | None
"""What the index analysis knows of a scalar: affine in k, a known boolean, or nothing."""


def span(s: Sym, lo: int, hi: int) -> tuple[int, int]:
    """The least and greatest value of ``s`` for k in ``lo .. hi``."""
    a, b = s.coef * lo + s.const, s.coef * hi + s.const
    return min(a, b), max(a, b)


def literal(v: Any) -> Value:
    """What is known of a literal or a concrete constant (a traced one: nothing)."""
    raw = v.val if isinstance(v, jcore.Literal) else v
    if isinstance(raw, jax.core.Tracer) or np.shape(raw) != ():
        return None
    val = np.asarray(raw)
    if val.dtype == np.bool_:
        return Bool(bool(val))
    if np.issubdtype(val.dtype, np.integer):
        return Sym(0, int(val))
    return None


def _sum(a: Sym, b: Sym, sign: int) -> Sym:
    return Sym(a.coef + sign * b.coef, a.const + sign * b.const)


def _product(a: Sym, b: Sym) -> Value:
    if a.coef == 0:
        return Sym(b.coef * a.const, b.const * a.const)
    return Sym(a.coef * b.const, a.const * b.const) if b.coef == 0 else None


def _pick(pred: Value, *cases: Value) -> Value:
    """``select_n``: the case its known predicate picks."""
    if isinstance(pred, Sym) and pred.coef == 0 and 0 <= pred.const < len(cases):
        return cases[pred.const]
    return cases[int(pred.value)] if isinstance(pred, Bool) and len(cases) == 2 else None


_COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")


class Indices:
    """Symbolic evaluation of a jaxpr's integer scalar arithmetic over the loop counter k,
    which runs ``lo .. hi``: sums and constant multiples of k, and the comparisons, selects
    and clamps NumPy mode's index checks make of them (decided when they hold for every k)."""

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi

    def compare(self, name: str, a: Value, b: Value) -> Value:
        if not (isinstance(a, Sym) and isinstance(b, Sym)):
            return None
        least, most = span(_sum(a, b, -1), self.lo, self.hi)
        true, false = {"lt": (most < 0, least >= 0), "le": (most <= 0, least > 0),
                       "gt": (least > 0, most <= 0), "ge": (least >= 0, most < 0),
                       "eq": (least == most == 0, least > 0 or most < 0),
                       "ne": (least > 0 or most < 0, least == most == 0)}[name]
        return Bool(True) if true else Bool(False) if false else None

    def extreme(self, pick_max: bool, a: Value, b: Value) -> Value:
        if not (isinstance(a, Sym) and isinstance(b, Sym)):
            return None
        (a_lo, a_hi), (b_lo, b_hi) = span(a, self.lo, self.hi), span(b, self.lo, self.hi)
        if a_lo >= b_hi:
            return a if pick_max else b
        if b_lo >= a_hi:
            return b if pick_max else a
        return None

    def scalar(self, name: str, params: Any, ins: list[Value]) -> Value:
        """One equation with one result: what is known of it."""
        a, b = [*ins, None, None][:2]
        syms = isinstance(a, Sym) and isinstance(b, Sym)
        bools = isinstance(a, Bool) and isinstance(b, Bool)
        if name in ("add", "sub") and syms:
            return _sum(a, b, 1 if name == "add" else -1)  # type: ignore[arg-type]
        if name == "mul" and syms:
            return _product(a, b)  # type: ignore[arg-type]
        if name == "neg" and isinstance(a, Sym):
            return Sym(-a.coef, -a.const)
        if name == "convert_element_type":
            integer = np.issubdtype(np.dtype(params["new_dtype"]), np.integer)
            return a if isinstance(a, Sym) and integer else None
        if name == "select_n":
            return _pick(a, *ins[1:])
        if name in ("and", "or") and bools:
            x, y = a.value, b.value  # type: ignore[union-attr]
            return Bool(x and y if name == "and" else x or y)
        if name == "not" and isinstance(a, Bool):
            return Bool(not a.value)
        if name in _COMPARE:
            return self.compare(name, a, b)
        if name in ("max", "min"):
            return self.extreme(name == "max", a, b)
        if name == "clamp" and len(ins) == 3:
            inner = self.extreme(True, ins[0], ins[1])
            return self.extreme(False, inner, ins[2]) if inner is not None else None
        return None

    def eqn(self, eqn: Any, ins: list[Value]) -> list[Value]:
        inner = called(eqn)
        if inner is not None:
            return self.run(getattr(inner, "jaxpr", inner),
                            [literal(c) for c in getattr(inner, "consts", [])], ins)
        if len(eqn.outvars) != 1:
            return [None] * len(eqn.outvars)
        return [self.scalar(eqn.primitive.name, eqn.params, ins)]

    def run(self, jaxpr: Any, consts: list[Value], args: list[Value]) -> list[Value]:
        env: dict[Any, Value] = dict(zip(jaxpr.constvars, consts, strict=True))
        env.update(zip(jaxpr.invars, args, strict=True))

        def read(v: Any) -> Value:
            return literal(v) if isinstance(v, jcore.Literal) else env.get(v)

        for eqn in jaxpr.eqns:
            env.update(zip(eqn.outvars, self.eqn(eqn, [read(v) for v in eqn.invars]),
                           strict=True))
        return [read(v) for v in jaxpr.outvars]




def taken(x: Any, axis: int, where: np.ndarray) -> Any:
    """The slots ``where`` (inside the axis, at a constant step) along ``axis`` of ``x``, in
    order: a slice, strided, reversed for a negative step (``x[n - 1 - i]``): a gather of the
    indices would read them one by one."""
    step = int(where[1] - where[0]) if len(where) > 1 else 1
    first, last = (int(where[0]), int(where[-1])) if step > 0 else (int(where[-1]),
                                                                     int(where[0]))
    if step == 1 and first == 0 and last + 1 == x.shape[axis]:
        return x
    taken = lax.slice_in_dim(x, first, last + 1, stride=abs(step), axis=axis)
    return taken if step > 0 else lax.rev(taken, (axis,))


def slot_axes(starts: Sequence[Value], sizes: Sequence[int]) -> list[int]:
    """The axes a window indexes by a multiple of k plus a constant, with size 1."""
    return [d for d, v in enumerate(starts) if isinstance(v, Sym) and v.coef != 0
            and sizes[d] == 1]


def slabs_at(x: Any, axis: int, where: np.ndarray) -> Any:
    """The slots ``where`` of ``x`` along ``axis`` (``taken``), each kept as a unit axis after
    it: batched along ``axis``, each iteration sees ``x`` with its own slot there."""
    return lax.expand_dims(taken(jnp.asarray(x), axis, where), (axis + 1,))


Read = tuple[Any, int, int, tuple[int, ...]]
"""A read at the slot: (the input variable, coef, const, its constant start on each axis (on
the first, the slot axis, unused))."""


def slot_reads(jaxpr: Any, counter: Any, given: set[Any], lo: int, hi: int) -> dict[int, Read]:
    """The ``dynamic_slice`` equations of ``jaxpr`` (at its own level) that read one of its
    inputs ``given`` (values the same for every k) at ``coef * k + const`` on its first axis,
    with size 1 there and inside the axis for every k in ``lo .. hi``, its other starts
    constants: id of the equation -> the read.

    Not on another axis: the slab of ``x[:, k]`` over k is x's columns, which the patterns
    fold into a product as a transposed operand, and XLA:CPU runs a product contracting its
    left operand's first axis as a plain dot, not the YNNPACK one (correlation's
    ``data[:, i] @ data[:, i + 1:]``: 15% slower); JAX's gather of the columns becomes a copy
    and a YNNPACK product. Nor with a start that is another input, which may vary along a
    batch around this one (syrk's ``A[i, k]``, i batched by the loop around it, is a gather
    of both indices that XLA turns back into A; read from a slab at i, it would stay one)."""
    indices = Indices(lo, hi)
    env: dict[Any, Value] = {counter: Sym(1, 0)}
    found: dict[int, Read] = {}

    def read(v: Any) -> Value:
        return literal(v) if isinstance(v, jcore.Literal) else env.get(v)

    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        operand = eqn.invars[0] if eqn.invars else None
        if eqn.primitive.name == "dynamic_slice" and is_var(operand) and operand in given:
            starts = ins[1:]
            if slot_axes(starts, eqn.params["slice_sizes"]) == [0] and all(
                    isinstance(v, Sym) and (v.coef == 0 or d == 0) for d, v in enumerate(starts)):
                at = starts[0]
                assert isinstance(at, Sym)
                least, most = span(at, lo, hi)
                if least >= 0 and most < eqn.invars[0].aval.shape[0]:
                    found[id(eqn)] = (operand, at.coef, at.const,
                                      tuple(v.const for v in starts))  # type: ignore[union-attr]
        env.update(zip(eqn.outvars, indices.eqn(eqn, ins), strict=True))
    return found


def over_counter(jaxpr: Any, before: Sequence[Any], after: Sequence[Any], lo: int, hi: int,
                 out_axes: Sequence[int | None]) -> list[Any]:
    """``jaxpr(*before, k, *after)`` (no constants) for every k in ``lo .. hi - 1`` at once,
    vmapped over k, each result stacked on its ``out_axes`` (None: the same for every k).

    A read of an input at the slot (``slot_reads``: ``x[k]``, ``x[n - 1 - k]``, ``x[2 * k]``)
    reads a slab of it cut before the vmap: one slice of the slots (``taken``: reversed,
    strided), batched along the slot axis, where JAX's rule for a start that varies along the
    batch is a gather of every slot (pair_matches' ``seq2[-1 - i]``: a gather of 20,000
    indices, now a reversed slice that fuses into the sum)."""
    counter = jaxpr.invars[len(before)]
    inputs = dict(zip([*jaxpr.invars[:len(before)], *jaxpr.invars[len(before) + 1:]],
                      [*before, *after], strict=True))
    ks = counts(counter.aval.dtype, lo, hi)
    reads = slot_reads(jaxpr, counter, set(inputs), lo, hi - 1) if hi - lo > 1 else {}
    keys = list(dict.fromkeys(read[:3] for read in reads.values()))
    slabs = [slabs_at(inputs[var], 0, coef * np.arange(lo, hi) + const)
             for var, coef, const in keys]

    def one(k: Any, cut: list[Any]) -> list[Any]:
        env: dict[Any, Any] = {**inputs, counter: k}
        for eqn in jaxpr.eqns:
            read = reads.get(id(eqn))
            if read is not None:  # the input's slot: a static slice of its slab
                slab, sizes = cut[keys.index(read[:3])], eqn.params["slice_sizes"]
                starts = [0 if d == 0 else min(max(s, 0), slab.shape[d] - sizes[d])
                          for d, s in enumerate(read[3])]  # clamped, as the read clamps
                env[eqn.outvars[0]] = lax.slice(
                    slab, starts, [s + n for s, n in zip(starts, sizes, strict=True)])
                continue
            ins = [v.val if isinstance(v, jcore.Literal) else env[v] for v in eqn.invars]
            env.update(zip(eqn.outvars, bind(eqn, ins), strict=True))
        return [v.val if isinstance(v, jcore.Literal) else env[v] for v in jaxpr.outvars]

    return list(jax.vmap(one, in_axes=(0, [0] * len(keys)), out_axes=list(out_axes))(ks, slabs))
