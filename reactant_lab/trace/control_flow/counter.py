"""A loop body run for every value of its counter at once, and what is known of its indices.

``hoisted``, ``summed`` and ``batched`` run a rolled loop's iterations together: the body
vmapped over its counter k, an iota. JAX's rule for a ``dynamic_slice`` at a start that varies
along the batch is a gather of each iteration's index, which XLA runs element by element, where
the iterations' windows often tile a slice of the array: ``x[i]``, ``x[n - 1 - i]`` and
``A[:, k]`` over k are a slice, a reversed slice and a transpose. :func:`vmapped` vmaps a jaxpr
over k with such reads cut before the vmap, as one slice of the array (strided or reversed for
a step other than 1) batched along the read axis (:func:`taken`); the index analysis that finds
them (:class:`Indices`: a scalar as ``coef * k + const``, and the bounds checks NumPy mode makes
of it decided when they hold for every k) is the one ``batched`` checks its slots with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
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




_Window = tuple[Any, int, int, int, tuple[Any, ...], tuple[int, ...]]
"""What a read cut before the vmap takes: (its operand, read axis, coef, const, the start on
each other axis (a variable or a literal's value), the window's sizes)."""


def vmapped(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], counter: int, lo: int,
            hi: int, out_axes: Sequence[int | None]) -> list[Any]:
    """``jaxpr`` (its constvars bound to ``consts``) on ``args`` for k = ``lo .. hi - 1`` at
    once: ``jax.vmap`` over its input ``counter`` (the value in ``args`` there is not used),
    its results batched on ``out_axes`` (None: the same for every k). A ``dynamic_slice`` at
    the top level of ``jaxpr`` of an operand the same for every k, of size 1 on one axis where
    its start is ``coef * k + const`` (inside the axis for every k) and at starts the same for
    every k on the others, is read from one slice of the operand cut before the vmap."""
    k_var = jaxpr.invars[counter]
    ks = counts(k_var.aval.dtype, lo, hi)
    windows = _windows(jaxpr, consts, k_var, lo, hi)
    if not windows:
        run = jcore.jaxpr_as_fun(jcore.ClosedJaxpr(jaxpr, list(consts)))
        return list(jax.vmap(lambda k: list(run(*args[:counter], k, *args[counter + 1:])),
                             out_axes=list(out_axes))(ks))
    env: dict[Any, Any] = dict(zip(jaxpr.constvars, consts, strict=True))
    env.update((v, a) for i, (v, a) in enumerate(zip(jaxpr.invars, args, strict=True))
               if i != counter)
    keys = list(dict.fromkeys(windows.values()))
    wanted = [v for key in keys for v in (key[0], *key[4]) if isinstance(v, jcore.Var)]
    outside = dict(env)  # the operands and starts of the reads, computed before the vmap
    for eqn in needed(jaxpr.eqns, wanted, set(outside)):
        outside.update(zip(eqn.outvars, bind(eqn, [_value(v, outside) for v in eqn.invars]),
                           strict=True))
    slabs = [_slab(key, outside, lo, hi) for key in keys]

    def one(k: Any, cut: list[Any]) -> list[Any]:
        local = dict(env)
        local[k_var] = k
        by_key = dict(zip(keys, cut, strict=True))
        for eqn in jaxpr.eqns:
            if id(eqn) in windows:
                local[eqn.outvars[0]] = by_key[windows[id(eqn)]]
            else:
                local.update(zip(eqn.outvars, bind(eqn, [_value(v, local) for v in eqn.invars]),
                                 strict=True))
        return [_value(v, local) for v in jaxpr.outvars]

    return list(jax.vmap(one, in_axes=(0, [key[1] for key in keys]),
                         out_axes=list(out_axes))(ks, slabs))


def _value(v: Any, env: dict[Any, Any]) -> Any:
    return env[v] if is_var(v) else v.val


def _windows(jaxpr: Any, consts: Sequence[Any], k_var: Any, lo: int, hi: int
             ) -> dict[int, _Window]:
    """The reads ``vmapped`` cuts before the vmap: id of the equation -> what it reads."""
    env: dict[Any, Value] = {v: literal(c) for v, c in zip(jaxpr.constvars, consts,
                                                          strict=True)}
    env[k_var] = Sym(1, 0)
    varying = {k_var}
    indices = Indices(lo, hi - 1)
    found: dict[int, _Window] = {}
    for eqn in jaxpr.eqns:
        ins = [literal(v) if not is_var(v) else env.get(v) for v in eqn.invars]
        if any(is_var(v) and v in varying for v in eqn.invars):
            varying.update(eqn.outvars)
        if (eqn.primitive.name == "dynamic_slice" and is_var(eqn.invars[0])
                and eqn.invars[0] not in varying):
            key = _window(eqn, ins, varying, lo, hi)
            if key is not None:
                found[id(eqn)] = key
        env.update(zip(eqn.outvars, indices.eqn(eqn, ins), strict=True))
    return found


def _window(eqn: Any, ins: list[Value], varying: set[Any], lo: int, hi: int
            ) -> _Window | None:
    """A read's ``_Window``, or None unless it is one ``vmapped`` cuts."""
    starts, sizes = eqn.invars[1:], tuple(eqn.params["slice_sizes"])
    moving = [d for d, v in enumerate(starts) if is_var(v) and v in varying]
    if len(moving) != 1:
        return None
    d = moving[0]
    at = ins[1 + d]
    if not isinstance(at, Sym) or at.coef == 0 or sizes[d] != 1:
        return None
    least, most = span(at, lo, hi - 1)
    if least < 0 or most >= eqn.invars[0].aval.shape[d]:
        return None
    others = tuple(v if is_var(v) else int(v.val) for e, v in enumerate(starts) if e != d)
    return (eqn.invars[0], d, at.coef, at.const, others, sizes)


def _slab(key: _Window, values: dict[Any, Any], lo: int, hi: int) -> Any:
    """The windows a read takes for every k, batched along its read axis (size 1 there in each):
    the operand's window at the read's starts on the other axes (clamped as the read clamps
    them) over all of the read axis, then its slots ``coef * k + const`` (``taken``)."""
    operand, d, coef, const, others, sizes = key
    x = jax.numpy.asarray(values[operand])
    given = iter(others)
    starts = []
    for e in range(x.ndim):
        start = 0 if e == d else next(given)
        starts.append(jax.numpy.asarray(values[start] if isinstance(start, jcore.Var)
                                        else start))
    dtype = jax.numpy.result_type(*starts)
    window = lax.dynamic_slice(x, [s.astype(dtype) for s in starts],
                               [x.shape[d] if e == d else n for e, n in enumerate(sizes)],
                               allow_negative_indices=False)
    return lax.expand_dims(taken(window, d, coef * np.arange(lo, hi) + const), (d + 1,))
