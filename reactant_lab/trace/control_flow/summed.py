"""Rolled loops that only accumulate, run as their first values plus the sum of their terms.

syrk's inner loop ``for k: C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]`` adds to the row it
updates a term that reads nothing the loop updates; so does ``s += x[k] * y[k]``. Such a body is
``F(x) = x + T(k)`` for each array ``x`` it updates, and the loop's result is ``x0 + T(lo) + ... +
T(hi - 1)``: the terms computed for every iteration at once (vmapped over the counter, as
``hoisted`` does) and summed over the iterations, with no loop left. XLA fuses elementwise terms
into the reduction without holding them, and the enzyme-hlo patterns turn a sum of products into
a ``dot_general`` (syrk's loop over k becomes ``A @ A.T``, masked).

The check runs on the body's jaxpr (the loop's scan body, as ``batched`` reads it). Every
equation that reads, directly or not, an array the loop updates must keep it unit-linear:

- ``add(v, t)``, ``add(t, v)``, ``sub(v, t)`` where ``t`` reads nothing the loop updates (a
  *term*; it may change with the counter);
- ``dynamic_slice(x, idx)`` or a unit-stride ``slice`` of the whole array, ``reshape`` /
  ``squeeze`` / a same-type
  ``convert_element_type`` / ``copy`` of a value (views);
- ``select_n(p, v1, v2, ...)`` whose cases are all the same view of the same array and whose
  predicate does not change with the counter (a mask);
- ``dynamic_update_slice(x, v, idx)`` of the whole, unchanged array at the window ``v`` was read
  from (the same indices, proven by numbering the index computations), the indices not changing
  with the counter;

and each updated array's value at the end of the body must be that array so transformed. Then
``F(x; t)`` is linear in ``x`` and the terms jointly, with ``F(x; 0) = x``, so the loop's result
is ``F(x0; sum of the terms)``: the body's equations that read the updated arrays, replayed once
on the first values with each term replaced by its sum (which is also exact where a mask is off).
A term holding a product or a reduction that changes with the counter keeps the loop: summed, it
would run batched over the iterations, its operands gathered for each, and be held for the sum.

Summing the terms all at once changes the order of the additions: a float result may differ in
the last bits from the loop's (as a product computed by another kernel may); integer sums are
exact. A loop that updates a float of 16 bits or fewer (float16, bfloat16) stays a loop: NumPy
rounds it to 16 bits after every addition, and a sum reordered differs by far more. Calls the
body makes (``jnp.where``'s) are inlined for the check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend import core as jcore

from reactant_lab.trace.control_flow import hoisted
from reactant_lab.trace.control_flow.counter import called, counts, needed, over_counter

MAX_TERM_BYTES = hoisted.MAX_HOISTED_BYTES
"""The terms of all the iterations together must fit here (a term that XLA cannot fuse into the
sum, a product, is held for every iteration)."""

_VIEWS = frozenset({"reshape", "squeeze", "copy", "copy_p"})
"""Equations that show the same elements of a value in another shape."""


@dataclass(frozen=True)
class Plan:
    """A loop body found to only accumulate: what ``run`` needs."""

    ahead: Any
    """(constants, counter, the carried values ``reads``) -> the terms, then the masks and
    indices."""
    reads: tuple[int, ...]
    """The positions of the carried values the terms read (values the loop leaves as they
    are)."""
    varying: tuple[bool, ...]
    """Per value of ``ahead``: whether it changes with the counter."""
    n_terms: int
    """How many of ``ahead``'s values are terms (the rest are masks and indices)."""
    literals: tuple[Any, ...]
    """Terms that are literals in the body (``x += 1``)."""
    replay: Any
    """The body's equations that read an updated array, in order."""
    body: Any
    """The closed body jaxpr (its calls inlined where the check needed it) that ``ahead`` and
    ``replay`` come from."""


@dataclass(frozen=True)
class _Form:
    """What the check knows of a value that reads an updated array: which one (``root``, its
    position among the carried values) and which of its elements it shows (``view``: None for
    the whole array, else the numbered start indices and sizes of its window); the value is
    that view of the array plus a sum of terms."""

    root: int
    view: tuple[Any, ...] | None


class _NotSummed(Exception):
    """The body does something other than accumulate."""


class _Inline(Exception):
    """A call the body makes reads an updated array: check it again with its calls inlined."""


def _hashable(x: Any) -> Any:
    try:
        hash(x)
    except TypeError:
        return ("id", id(x))
    return x


class _Numbering:
    """Value numbers of the body's values that read nothing it updates: equal numbers, equal
    values (the same equation on equal operands), so two index computations that jnp repeated
    for a read and its write are known to give the same window."""

    def __init__(self, jaxpr: Any):
        self._producer = {v: e for e in jaxpr.eqns for v in e.outvars}
        self._memo: dict[Any, Any] = {}

    def of(self, v: Any) -> Any:
        if isinstance(v, jcore.Literal):
            val = np.asarray(v.val).item() if np.ndim(v.val) == 0 else _hashable(v.val)
            return ("literal", val, str(getattr(v.aval, "dtype", "")))
        if v in self._memo:
            return self._memo[v]
        eqn = self._producer.get(v)
        if eqn is None or eqn.effects:
            key: Any = ("var", id(v))
        else:
            params = tuple(sorted((k, _hashable(p)) for k, p in eqn.params.items()))
            key = (eqn.primitive.name, params, tuple(self.of(x) for x in eqn.invars),
                   eqn.outvars.index(v))
        self._memo[v] = key
        return key


def plan(closed: Any, n: int) -> Plan | None:
    """The plan for a loop body (a closed jaxpr of (counter, carried values) -> carried values,
    as ``batched._scan_body`` gives it) that runs ``n`` iterations when it only accumulates (see
    the module), else None."""
    jaxpr = closed.jaxpr
    if jaxpr.effects or len(jaxpr.outvars) != len(jaxpr.invars) - 1 or n < 2 or any(
            _narrow_float(v.aval.dtype) for v, out in zip(jaxpr.invars[1:], jaxpr.outvars,
                                                         strict=True) if out is not v):
        return None
    try:
        return _plan(closed, n)
    except _Inline:
        pass
    except _NotSummed:
        return None
    try:
        return _plan(_inlined(closed), n)
    except (_Inline, _NotSummed):
        return None


def _narrow_float(dtype: Any) -> bool:
    """A float of 16 bits or fewer (float16, bfloat16): NumPy rounds it at every step, and a
    sum in another order is off by far more than the last bits (3,000 x 0.1 in float16: NumPy
    gives 256, the terms' sum 300)."""
    return bool(jnp.issubdtype(dtype, jnp.floating)) and np.dtype(dtype).itemsize <= 2


def _plan(closed: Any, n: int) -> Plan:
    jaxpr = closed.jaxpr
    counter, carried = jaxpr.invars[0], jaxpr.invars[1:]
    forms: dict[Any, _Form] = {v: _Form(r, None) for r, (v, out) in
                               enumerate(zip(carried, jaxpr.outvars, strict=True)) if out is not v}
    if not forms:
        raise _NotSummed
    numbers = _Numbering(jaxpr)
    varying = {counter}
    terms: dict[Any, None] = {}
    params: dict[Any, None] = {}
    literals: list[Any] = []
    replay = []

    def param(v: Any) -> Any:
        if isinstance(v, jcore.Literal):
            return numbers.of(v)
        if v in forms or v in varying or v in terms:
            raise _NotSummed
        params[v] = None
        return numbers.of(v)

    def term(v: Any) -> None:
        if isinstance(v, jcore.Literal):  # n times it, as any term that does not vary
            literals.append(v)
        elif v in params:
            raise _NotSummed
        else:
            terms[v] = None

    for eqn in jaxpr.eqns:
        ins = [v if isinstance(v, jcore.Literal) else forms.get(v) for v in eqn.invars]
        dep = [f for f in ins if isinstance(f, _Form)]
        if not dep:
            if any(v in varying for v in eqn.invars if not isinstance(v, jcore.Literal)):
                varying.update(eqn.outvars)
            continue
        if eqn.effects:
            raise _NotSummed
        form = _form(eqn, ins, dep, param, term)
        forms.update((v, form) for v in eqn.outvars)
        replay.append(eqn)
    for r, (v, out) in enumerate(zip(carried, jaxpr.outvars, strict=True)):
        if out is not v and forms.get(out) != _Form(r, None):
            raise _NotSummed
    if any(v in params for v in terms):
        raise _NotSummed
    wanted = [*terms, *params]
    free = [e for e in jaxpr.eqns if e not in replay]
    ahead_eqns = needed(free, wanted, set())
    held = sum(hoisted.nbytes(v.aval) for v in terms if v in varying)
    if held * n > MAX_TERM_BYTES or any(
            hoisted.work(e, reducing_only=True) for e in ahead_eqns
            if any(v in varying for v in e.outvars)):
        # A product or a reduction in a term that changes with the counter would run batched
        # over the iterations, its operands gathered for each (conv2d's nine shifted-window
        # products: 3x slower than the loop), and held for the sum: the loop stays.
        raise _NotSummed
    # The carried values the terms read (those the loop leaves as they are), and no others: a
    # loop batched around this one must not see it read what it updates.
    read = {v for e in ahead_eqns for v in e.invars if not isinstance(v, jcore.Literal)}
    kept = tuple(r for r, v in enumerate(carried) if v in read or v in terms or v in params)
    args = [*jaxpr.constvars, counter, *(carried[r] for r in kept)]
    ahead = jcore.Jaxpr((), args, wanted, ahead_eqns, set(),
                        jcore.DebugInfo("a summed loop's terms", "reactant_lab",
                                        tuple(f"arg[{i}]" for i in range(len(args))),
                                        tuple(f"term[{i}]" for i in range(len(wanted)))))
    return Plan(ahead, kept, tuple(v in varying for v in wanted), len(terms), tuple(literals),
                tuple(replay), closed)


def _form(eqn: Any, ins: list[Any], dep: list[_Form], param: Callable[[Any], Any],
          term: Callable[[Any], None]) -> _Form:
    """The form of an equation's result given its operands' (``ins``: a _Form, a literal or
    None for a value that reads nothing updated), registering the terms and parameters (masks,
    indices) it reads; raises _NotSummed when it is not unit-linear in the updated array."""
    name = eqn.primitive.name
    if called(eqn) is not None:
        raise _Inline
    if name in ("add", "sub") and len(dep) == 1:
        at = 0 if isinstance(ins[0], _Form) else 1
        if (name == "sub" and at == 1) or eqn.outvars[0].aval.shape != eqn.invars[at].aval.shape:
            raise _NotSummed  # t - x, or x broadcast: not x plus a term
        term(eqn.invars[1 - at])
        return dep[0]
    if name in _VIEWS or (name == "convert_element_type"
                          and eqn.params["new_dtype"] == eqn.invars[0].aval.dtype):
        if len(eqn.invars) != 1:
            raise _NotSummed
        return dep[0]
    if name in ("dynamic_slice", "slice") and isinstance(ins[0], _Form) and len(dep) == 1:
        return _window(eqn, ins[0], param)
    if name == "select_n" and not isinstance(ins[0], _Form):
        cases = ins[1:]
        shapes = {v.aval.shape for v in eqn.invars[1:]}
        if not all(isinstance(c, _Form) for c in cases) or len(set(cases)) != 1 or \
                len(shapes) != 1:
            raise _NotSummed
        param(eqn.invars[0])
        return dep[0]
    if name == "dynamic_update_slice" and isinstance(ins[0], _Form) and \
            isinstance(ins[1], _Form) and len(dep) == 2:
        whole, window = ins[0], ins[1]
        starts = _starts(eqn.invars[2:], eqn.invars[1].aval.shape, eqn.invars[0].aval.shape,
                         param)
        if (whole.view is not None or whole.root != window.root
                or window.view != (starts, tuple(eqn.invars[1].aval.shape))):
            raise _NotSummed
        return whole
    raise _NotSummed


def _window(eqn: Any, whole: _Form, param: Callable[[Any], Any]) -> _Form:
    """The form of a window (``dynamic_slice`` or unit-stride ``slice``) of a whole updated
    array."""
    if whole.view is not None:
        raise _NotSummed
    if eqn.primitive.name == "slice":
        if any(s not in (None, 1) for s in eqn.params["strides"] or ()):
            raise _NotSummed
        starts = tuple(eqn.params["start_indices"])
        return _Form(whole.root, (starts, tuple(
            b - a for a, b in zip(starts, eqn.params["limit_indices"], strict=True))))
    sizes = tuple(eqn.params["slice_sizes"])
    return _Form(whole.root, (_starts(eqn.invars[1:], sizes, eqn.invars[0].aval.shape, param),
                              sizes))


def _starts(starts: Sequence[Any], sizes: Sequence[int], shape: Sequence[int],
            param: Callable[[Any], Any]) -> tuple[Any, ...]:
    """A window's start indices as the check compares them: a literal as the index it reads
    (clamped into the array, as dynamic_slice and dynamic_update_slice clamp it), any other
    index by its value number."""
    return tuple(
        min(max(int(v.val), 0), dim - size) if isinstance(v, jcore.Literal) else param(v)
        for v, size, dim in zip(starts, sizes, shape, strict=True))


def _inlined(closed: Any) -> Any:
    """The body with the calls it makes (``jnp.where``'s, any ``jax.jit`` function) inlined:
    one flat jaxpr of the same constants and arguments."""
    jaxpr = closed.jaxpr

    def evaluate(j: Any, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
        env = dict(zip(j.constvars, consts, strict=True))
        env.update(zip(j.invars, args, strict=True))

        def read(v: Any) -> Any:
            return v.val if isinstance(v, jcore.Literal) else env[v]

        for eqn in j.eqns:
            ins = [read(v) for v in eqn.invars]
            inner = called(eqn)
            if inner is not None:
                outs = evaluate(getattr(inner, "jaxpr", inner), getattr(inner, "consts", ()),
                                ins)
            else:
                out = eqn.primitive.bind(*ins, **eqn.params)
                outs = out if eqn.primitive.multiple_results else [out]
            env.update(zip(eqn.outvars, outs, strict=True))
        return [read(v) for v in j.outvars]

    n_consts = len(jaxpr.constvars)
    avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype,
                                  weak_type=getattr(v.aval, "weak_type", False))
             for v in [*jaxpr.constvars, *jaxpr.invars]]
    flat = jax.make_jaxpr(lambda *a: evaluate(jaxpr, a[:n_consts], a[n_consts:]))(*avals)
    j = flat.jaxpr
    inner = jcore.Jaxpr([*j.constvars, *j.invars[:n_consts]], j.invars[n_consts:], j.outvars,
                        j.eqns, j.effects, jaxpr.debug_info)
    return jcore.ClosedJaxpr(inner, [*flat.consts, *closed.consts])


def run(the_plan: Plan, lo: int, hi: int, init: list[Any],
        active: Callable[[Any], Any] | None = None, trips: Any = None) -> list[Any]:
    """The loop's carried values after iterations ``lo .. hi - 1``: its terms summed over them,
    replayed on ``init``. With ``active`` (and ``trips``, how many iterations are active), only
    the iterations where ``active(k)`` holds count (a range with a traced bound)."""
    consts, body = list(the_plan.body.consts), the_plan.body.jaxpr
    dtype = body.invars[0].aval.dtype
    count = hi - lo if trips is None else trips
    out_axes = [0 if v else None for v in the_plan.varying]

    def summed_terms(consts: list[Any], init: list[Any]) -> list[Any]:
        values = over_counter(the_plan.ahead, consts, init, lo, hi, out_axes)
        ks = counts(dtype, lo, hi) if active is not None else None
        out = []
        for i, (x, vary) in enumerate(zip(values, the_plan.varying, strict=True)):
            if i >= the_plan.n_terms:
                out.append(x)  # a mask or an index: the same for every iteration
            elif vary:
                kept = x
                if active is not None:  # the iterations outside the traced range add nothing
                    on = jax.vmap(active)(ks).reshape((-1,) + (1,) * (x.ndim - 1))
                    kept = jnp.where(on, x, jnp.zeros((), x.dtype))
                out.append(kept.sum(axis=0, dtype=x.dtype))
            else:
                out.append(x * lax.convert_element_type(count, x.dtype))
        return out

    # One call: a batched loop around this one counts its result, not the terms it sums (which
    # XLA fuses into the sum, or the patterns make a product), as what each iteration holds.
    env: dict[Any, Any] = dict(zip(the_plan.ahead.outvars,
                                   jax.jit(summed_terms)(consts, [init[r] for r in the_plan.reads]),
                                   strict=True))
    env.update(zip(body.constvars, consts, strict=True))
    env.update(zip(body.invars[1:], init, strict=True))

    summed_literals = {id(v): lax.mul(np.asarray(v.val, v.aval.dtype),
                                      lax.convert_element_type(count, v.aval.dtype))
                       for v in the_plan.literals}

    def read(v: Any) -> Any:
        if isinstance(v, jcore.Literal):
            return summed_literals.get(id(v), v.val)
        return env[v]

    for eqn in the_plan.replay:
        out = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
        env.update(zip(eqn.outvars, out if eqn.primitive.multiple_results else [out],
                       strict=True))
    return [read(v) for v in body.outvars]
