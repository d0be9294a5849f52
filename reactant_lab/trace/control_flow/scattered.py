"""The loop left after hoisting, when all it does is write rows or columns of a matrix, masked
to a triangle: no loop, each write one ``select`` of the whole matrix.

covariance's ``cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (n - 1)``, its product
hoisted (``hoisted``), kept a 300-iteration loop of two masked scatters of the product's row i:
XLA:CPU compiled that loop in 0.15-0.2 s, four to five times the product alone
(benchmarks/xla_loop_compile.py), the most of the kernel's first call. Such a loop needs no loop
when

- each matrix it updates is only written, never read: a chain of point scatters of one row of
  values each (NumPy mode's masked row and column writes), the last of which the loop leaves;
- the places depend on the counter and on constants alone (iotas, bounds, masks): they are
  computed while tracing, with NumPy, for every iteration (``_Places``);
- each scatter writes iteration k's element e at row k + a, column e + b (a row write) or at row
  e + b, column k + a (a column write), and the places it writes over the whole loop are a
  triangle of that block (``column - row >= d`` for a row write, ``row - column >= d`` for a
  column write) or all of it; and
- no two writes of the loop put different values in one place: every write to a place is of the
  same element of the same update in the same iteration (the diagonal of ``cov``, written by
  both scatters of iteration i, from the same row).

Each write of the loop is then the matrix of its values for all iterations (the body's value
equations vmapped over the counter: covariance's hoisted product itself, or its transpose),
selected into the updated matrix on its triangle; the order of the writes cannot change the
result. Anything else (a read of the matrix, a place from the data, a write of another shape,
two iterations writing one place) keeps its loop.
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

from reactant_lab.trace.control_flow import hoisted
from reactant_lab.trace.control_flow.counter import called, counts, needed

MAX_BYTES = 32 << 20
"""The values of all the iterations, alive at once, must fit here (as
``hoisted.MAX_HOISTED_BYTES``)."""

_MODES = (lax.GatherScatterMode.FILL_OR_DROP, lax.GatherScatterMode.PROMISE_IN_BOUNDS)


@dataclass(frozen=True)
class _Scatter:
    """One point scatter of the body: the array it writes (carried position), its places and
    values (variables of the body), and the operand axis each place coordinate indexes."""

    pos: int
    indices: Any
    updates: Any
    axes: tuple[int, ...]
    drops: bool
    """Whether a place outside the array is dropped (else the scatter promised none is)."""


def _point_scatter(eqn: Any) -> tuple[int, ...] | None:
    """The operand axis of each index coordinate when ``eqn`` scatters each element of its
    update to one place (no window), replacing what was there; else None."""
    if eqn.primitive.name != "scatter" or eqn.params.get("mode") not in _MODES:
        return None
    dn = eqn.params["dimension_numbers"]
    operand, indices, updates = (v.aval for v in eqn.invars)
    rank = len(operand.shape)
    if (dn.update_window_dims or sorted(dn.inserted_window_dims) != list(range(rank))
            or len(dn.scatter_dims_to_operand_dims) != rank or dn.operand_batching_dims
            or dn.scatter_indices_batching_dims or not indices.shape
            or indices.shape[-1] != rank or tuple(updates.shape) != tuple(indices.shape[:-1])):
        return None
    return tuple(dn.scatter_dims_to_operand_dims)


def _writes(jaxpr: Any, carried: Sequence[Any]) -> list[_Scatter] | None:
    """The body's scatters into the arrays it updates, when those arrays are only written (a
    chain of point scatters each, the loop leaving the last); else None."""
    outs = jaxpr.outvars
    written = [pos for pos, (v, out) in enumerate(zip(carried, outs, strict=True))
               if out is not v]
    if not written:
        return None
    version = {carried[pos]: pos for pos in written}
    spent: set[Any] = set()
    found: list[_Scatter] = []
    for eqn in jaxpr.eqns:
        uses = [i for i, v in enumerate(eqn.invars)
                if not isinstance(v, jcore.Literal) and (v in version or v in spent)]
        if not uses:
            continue
        axes = _point_scatter(eqn)
        if uses != [0] or axes is None or eqn.invars[0] in spent:
            return None  # read, or written otherwise
        pos = version.pop(eqn.invars[0])
        spent.add(eqn.invars[0])
        version[eqn.outvars[0]] = pos
        found.append(_Scatter(pos, eqn.invars[1], eqn.invars[2], axes,
                              eqn.params["mode"] == lax.GatherScatterMode.FILL_OR_DROP))
    for pos, out in enumerate(outs):
        if pos in written and (isinstance(out, jcore.Literal) or version.get(out) != pos):
            return None
        if pos not in written and not isinstance(out, jcore.Literal) and (
                out in version or out in spent):
            return None
    return found


def _free(eqns: Sequence[Any]) -> set[Any]:
    """The variables ``eqns`` read that none of them makes."""
    made = {v for e in eqns for v in e.outvars}
    return {v for e in eqns for v in e.invars
            if not isinstance(v, jcore.Literal) and v not in made}


@dataclass(frozen=True)
class _Form:
    """Where one scatter's writes land in its matrix, over the whole loop: iteration k's element
    e at ``axis`` index k + a and other-axis index e + b (``axis`` 0: a row write, 1: a column
    write), on the places with ``other - axis >= d`` of that block (d None: all of it)."""

    axis: int
    a: int
    b: int
    d: int | None


@dataclass(frozen=True)
class Plan:
    """How the loop runs as selects: its scatters, the jaxpr of one iteration's values, and
    where each scatter's writes land."""

    writes: list[_Scatter]
    values: Any
    """(constants, counter, frontier values, carried values) -> every scatter's values."""
    forms: list[_Form]


def plan(rest: Any, consts: Sequence[Any], n_front: int, lo: int, hi: int) -> Plan | None:
    """The plan of ``rest`` (``hoisted.Split.rest``: constants, counter, the iteration's frontier
    values, carried values -> carried values) over the counter's ``lo .. hi - 1``; None when its
    loop must stay (see the module)."""
    jaxpr = rest.jaxpr
    n_lead = len(consts)
    counter = jaxpr.invars[n_lead]
    carried = jaxpr.invars[n_lead + 1 + n_front:]
    if jaxpr.effects or hi - lo < 2:
        return None
    writes = _writes(jaxpr, carried)
    if not writes or any(len(carried[w.pos].aval.shape) != 2 or len(w.updates.aval.shape) != 1
                         for w in writes):
        return None
    if sum(hoisted.nbytes(w.updates.aval) for w in writes) * (hi - lo) > MAX_BYTES:
        return None
    known = {v for v, c in zip(jaxpr.invars[:n_lead], consts, strict=True)
             if not isinstance(c, jax.core.Tracer)}
    places = _closed(jaxpr, [w.indices for w in writes]).jaxpr
    if any(e.effects for e in places.eqns) or not _free(places.eqns) <= known | {counter}:
        return None  # a place that depends on the data
    try:
        return _planned(jaxpr, places, writes, consts, carried, lo, hi)
    except (_Unknown, ValueError, IndexError, TypeError):
        # An equation the evaluator does not know, or NumPy refusing a shape it met: the loop
        # stays a loop (an error here would make the loop's caller unroll it).
        return None


def _planned(jaxpr: Any, places: Any, writes: list[_Scatter], consts: Sequence[Any],
             carried: Sequence[Any], lo: int, hi: int) -> Plan | None:
    """``plan``'s checks on the places (``places``: the jaxpr computing them), evaluated for
    every iteration."""
    at = _Places(places, consts).over(np.arange(lo, hi))
    forms: list[_Form] = []
    owners: dict[int, np.ndarray] = {}  # per written matrix: who wrote each place (-1: none)
    numbers: dict[int, int] = {}  # per update variable: where its writes' numbers start
    total = 0
    for w, where in zip(writes, at, strict=True):
        shape = carried[w.pos].aval.shape
        coords, inside = _coords(w, where, shape)
        form = _form(coords, inside, shape, lo)
        if form is None or not (w.drops or inside.all()):
            return None
        if id(w.updates) not in numbers:
            numbers[id(w.updates)], total = total, total + inside.size
        if not _claim(owners.setdefault(w.pos, np.full(shape, -1, np.int64)), coords, inside,
                      numbers[id(w.updates)]):
            return None  # two writes put different values in one place
        forms.append(form)
    return Plan(writes, _closed(jaxpr, [w.updates for w in writes]), forms)


def _closed(jaxpr: Any, outs: list[Any]) -> Any:
    """The equations of ``jaxpr`` that compute ``outs``, from all its arguments."""
    names = jcore.DebugInfo("a rolled loop's writes", "reactant_lab",
                            tuple(f"arg[{i}]" for i in range(len(jaxpr.invars))),
                            tuple(f"write[{i}]" for i in range(len(outs))))
    return jcore.ClosedJaxpr(jcore.Jaxpr((), list(jaxpr.invars), outs,
                                         needed(jaxpr.eqns, outs, set()), set(), names),
                             [])


def _coords(w: _Scatter, at: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A scatter's places over the loop in its array's axis order, (iterations, elements,
    rank), and which of them are inside the array (the others are dropped)."""
    coords = np.zeros((*at.shape[:-1], len(shape)), np.int64)
    coords[..., list(w.axes)] = at
    inside = np.ones(at.shape[:-1], bool)
    for d, n in enumerate(shape):  # one unsigned comparison: a negative index wraps past n
        inside &= coords[..., d].view(np.uint64) < n
    return coords, inside


def _form(coords: np.ndarray, inside: np.ndarray, shape: tuple[int, ...],
          lo: int) -> _Form | None:
    """Where a scatter's writes land (see ``_Form``), checked on every place; None when they
    land otherwise.

    Once every written place of iteration t's element e is (lo + t + a, e + b) on (axis, other
    axis), distinct (t, e) write distinct places, all in that block: the places written are the
    block's (or its triangle's) exactly when the elements kept are those whose places fall in
    the matrix (and in the triangle), compared on the (iterations, elements) grid itself."""
    if not inside.any():
        return None
    t, e = np.nonzero(inside)
    k = t + lo
    for axis in (0, 1):
        along, other = coords[t, e, axis], coords[t, e, 1 - axis]
        a, b = int(along[0] - k[0]), int(other[0] - e[0])
        if not (np.array_equal(along, k + a) and np.array_equal(other, e + b)):
            continue
        n_iter, n_elem = inside.shape
        x_axis = np.arange(lo + a, lo + a + n_iter)[:, None]
        x_other = np.arange(b, b + n_elem)[None, :]
        fits = ((x_axis >= 0) & (x_axis < shape[axis])
                & (x_other >= 0) & (x_other < shape[1 - axis]))
        if np.array_equal(inside, fits):
            return _Form(axis, a, b, None)
        d = int((other - along).min())
        if np.array_equal(inside, fits & (x_other - x_axis >= d)):
            return _Form(axis, a, b, d)
        return None
    return None


def _claim(owner: np.ndarray, coords: np.ndarray, inside: np.ndarray, first: int) -> bool:
    """Mark in ``owner`` the places a scatter writes (``coords``, those ``inside`` the matrix),
    its writes numbered from ``first`` by iteration then element; whether every place was
    unwritten or written by the same write: the same element of the same update in the same
    iteration (the diagonal of ``cov``, which both of covariance's scatters write)."""
    t, e = np.nonzero(inside)
    place = (coords[t, e, 0], coords[t, e, 1])
    number = first + t * inside.shape[1] + e
    held = owner[place]
    if np.any((held != -1) & (held != number)):
        return False
    owner[place] = number
    return True


class _Unknown(Exception):
    """An equation ``_Places`` does not evaluate: the loop stays."""


_ELEMENTWISE = {
    "add": "add", "sub": "subtract", "mul": "multiply", "max": "maximum", "min": "minimum",
    "neg": "negative", "abs": "abs", "sign": "sign", "eq": "equal", "ne": "not_equal",
    "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "not": "invert",
    "rem": "fmod",
}
"""Integer and boolean equations, by the name of the NumPy function computing
them as XLA does (``rem``: C's remainder; ``not`` of a boolean: the logical not)."""


@dataclass(frozen=True)
class _Val:
    """A value of the places' jaxpr: ``x`` itself, or (``each``) one per counter value, stacked
    on a first axis; ``iota``: the (shape, dimension) of the iota it is."""

    x: Any
    each: bool
    iota: tuple[tuple[int, ...], int] | None = None


class _Places:
    """A jaxpr of integer and boolean arithmetic (the places of a loop's writes, from the
    counter and constants) evaluated with NumPy while tracing, for all counter values at once:
    each value carries the counter as a first axis where it depends on it (a window of an iota
    at the counter is an iota plus the counter, no gather)."""

    def __init__(self, jaxpr: Any, consts: Sequence[Any]):
        self.jaxpr = jaxpr
        self.fixed = {v: _Val(c, False) for v, c in zip(jaxpr.invars, consts, strict=False)
                      if not isinstance(c, jax.core.Tracer)}
        self.counter = jaxpr.invars[len(consts)]

    def over(self, ks: Any) -> list[Any]:
        """The jaxpr's results for each counter value in ``ks`` (a 1-D array), stacked."""
        env = dict(self.fixed)
        env[self.counter] = _Val(np.asarray(ks, self.counter.aval.dtype), True)
        outs = self._run(self.jaxpr, env)
        n = len(ks)
        return [o.x if o.each else np.broadcast_to(o.x, (n, *np.shape(o.x))) for o in outs]

    def _run(self, jaxpr: Any, env: dict[Any, _Val]) -> list[_Val]:
        for eqn in jaxpr.eqns:
            ins = [_read(env, v) for v in eqn.invars]
            inner = called(eqn)
            if inner is not None:
                sub = getattr(inner, "jaxpr", inner)
                local = {v: _Val(c, False) for v, c in zip(
                    sub.constvars, getattr(inner, "consts", []), strict=True)}
                local.update(zip(sub.invars, ins, strict=True))
                outs = self._run(sub, local)
            elif len(eqn.outvars) != 1:
                raise _Unknown(eqn.primitive.name)
            else:
                outs = [self._one(eqn.primitive.name, eqn.params, ins, eqn.outvars[0].aval)]
            for v, o in zip(eqn.outvars, outs, strict=True):
                env[v] = _Val(np.asarray(o.x, dtype=v.aval.dtype), o.each, o.iota)
        return [_read(env, v) for v in jaxpr.outvars]

    def _one(self, name: str, params: Any, ins: list[_Val], aval: Any) -> _Val:
        if name in _ELEMENTWISE or name in ("select_n", "clamp", "copy", "copy_p"):
            return self._elementwise(name, ins, len(aval.shape))
        return self._structural(name, params, ins, len(aval.shape))

    @staticmethod
    def _elementwise(name: str, ins: list[_Val], rank: int) -> _Val:
        each = any(v.each for v in ins)
        xs = [_aligned(v, rank, each) for v in ins]
        if name in ("copy", "copy_p"):
            return _Val(xs[0], each)
        if name == "select_n":
            if len(xs) != 3:
                raise _Unknown("select_n of more than two cases")
            return _Val(np.where(xs[0], xs[2], xs[1]), each)
        if name == "clamp":
            return _Val(np.minimum(np.maximum(xs[1], xs[0]), xs[2]), each)
        if name == "not" and ins[0].x.dtype == np.bool_:
            return _Val(np.logical_not(xs[0]), each)
        return _Val(getattr(np, _ELEMENTWISE[name])(*xs), each)

    def _structural(self, name: str, params: Any, ins: list[_Val], rank: int) -> _Val:
        each = any(v.each for v in ins)
        if name == "iota":
            shape, dim = tuple(params["shape"]), params["dimension"]
            line = np.arange(shape[dim]).reshape([-1 if d == dim else 1 for d in range(rank)])
            return _Val(np.broadcast_to(line, shape), False, (shape, dim))
        x, lead = ins[0], (len(ins[0].x) if ins[0].each else None)
        batch = (lead,) if x.each else ()
        if name == "broadcast_in_dim":
            dims, shape = params["broadcast_dimensions"], tuple(params["shape"])
            kept = [np.shape(x.x)[len(batch) + dims.index(d)] if d in dims else 1
                    for d in range(rank)]
            return _Val(np.broadcast_to(x.x.reshape(*batch, *kept), (*batch, *shape)), x.each)
        if name == "reshape" and params.get("dimensions") is None:
            return _Val(x.x.reshape(*batch, *params["new_sizes"]), x.each)
        if name == "squeeze":
            return _Val(np.squeeze(x.x, axis=tuple(d + len(batch) for d in params["dimensions"])),
                        x.each)
        if name == "convert_element_type":
            return _Val(x.x.astype(params["new_dtype"]), x.each)
        if name == "transpose":
            return _Val(np.transpose(x.x, [*range(len(batch)),
                                           *(p + len(batch) for p in params["permutation"])]),
                        x.each)
        if name == "concatenate":
            n = next((len(v.x) for v in ins if v.each), 0)
            parts = [v.x if v.each or not each else np.broadcast_to(v.x, (n, *np.shape(v.x)))
                     for v in ins]
            return _Val(np.concatenate(parts, axis=params["dimension"] + int(each)), each)
        if name == "slice" and not x.each:
            strides = params["strides"] or (1,) * rank
            return _Val(x.x[tuple(slice(a, b, c) for a, b, c in zip(
                params["start_indices"], params["limit_indices"], strides, strict=True))], False)
        if name == "dynamic_slice":
            return self._window(x, ins[1:], tuple(params["slice_sizes"]))
        raise _Unknown(name)

    @staticmethod
    def _window(x: _Val, starts: list[_Val], sizes: tuple[int, ...]) -> _Val:
        """``dynamic_slice``: of an iota at any start (an iota of the window's shape plus the
        start, clamped as XLA clamps it), or at starts that do not depend on the counter."""
        each = any(s.each for s in starts)
        if x.iota is None and (each or x.each):
            raise _Unknown("a window at the counter of a computed array")
        if x.iota is None:
            at = [min(max(int(s.x), 0), n - m) for s, n, m in zip(starts, np.shape(x.x), sizes,
                                                                  strict=True)]
            return _Val(x.x[tuple(slice(a, a + m) for a, m in zip(at, sizes, strict=True))],
                        False)
        shape, dim = x.iota
        start = np.clip(starts[dim].x, 0, shape[dim] - sizes[dim])
        line = np.arange(sizes[dim]).reshape([-1 if d == dim else 1 for d in range(len(sizes))])
        base = np.broadcast_to(line, sizes)
        if not starts[dim].each:
            return _Val(base + start, False)
        return _Val(base[None] + start.reshape(-1, *([1] * len(sizes))), True)


def _aligned(v: _Val, rank: int, each: bool) -> Any:
    """``v``'s array ready to combine elementwise with others of logical rank ``rank``: a
    counter axis first when any operand has one, size 1 where ``v`` has none, and a scalar's
    axes of size 1."""
    x = v.x
    if v.each:
        return x.reshape(len(x), *([1] * rank)) if np.ndim(x) == 1 and rank else x
    return x[None] if each and np.ndim(x) == rank and rank else x


def _read(env: dict[Any, _Val], v: Any) -> _Val:
    if isinstance(v, jcore.Literal):
        return _Val(np.asarray(v.val), False)
    if v not in env:
        raise _Unknown("a value of the data")
    return env[v]




def run(the_plan: Plan, consts: Sequence[Any], stacked: Sequence[Any], varying: Sequence[bool],
        lo: int, hi: int, init: list[Any]) -> list[Any]:
    """The loop's result: each written matrix of ``init`` with each scatter's values for all
    iterations selected into it where the scatter writes; ``stacked`` holds the frontier values,
    stacked over the counter where ``varying``."""
    dtype = the_plan.values.jaxpr.invars[len(consts)].aval.dtype
    ks = counts(dtype, lo, hi)
    fun = jcore.jaxpr_as_fun(the_plan.values)
    axes = [None] * len(consts) + [0] + [0 if v else None for v in varying] + [None] * len(init)
    values = jax.vmap(lambda *args: list(fun(*args)), in_axes=axes)(*consts, ks, *stacked,
                                                                      *init)
    result = list(init)
    for w, form, value in zip(the_plan.writes, the_plan.forms, values, strict=True):
        target = jnp.asarray(result[w.pos])
        block = value if form.axis == 0 else value.T  # rows: the row axis' index
        n_rows, n_cols = target.shape
        first = (lo + form.a, form.b) if form.axis == 0 else (form.b, lo + form.a)
        placed = lax.pad(block.astype(target.dtype), jnp.zeros((), target.dtype), [
            (first[0], n_rows - first[0] - block.shape[0], 0),
            (first[1], n_cols - first[1] - block.shape[1], 0)])
        mask = _written(target.shape, form, lo, value.shape)
        result[w.pos] = lax.select(mask, placed, target)
    return result


def _written(shape: tuple[int, ...], form: _Form, lo: int, block: tuple[int, ...]) -> Any:
    """Where a scatter of ``form`` writes its (iterations, elements) ``block`` of values: the
    boolean matrix of its block (clipped to the matrix) and triangle, made of iotas."""
    rows = lax.broadcasted_iota(np.int32, shape, 0)
    cols = lax.broadcasted_iota(np.int32, shape, 1)
    x_axis, x_other = (rows, cols) if form.axis == 0 else (cols, rows)
    start = lo + form.a
    bounds = [(x_axis, start, start + block[0], shape[form.axis]),
              (x_other, form.b, form.b + block[1], shape[1 - form.axis])]

    def at_least(x: Any, n: int) -> Any:
        return lax.ge(x, lax.broadcast_in_dim(np.int32(n), shape, ()))

    tests = [at_least(x, first) for x, first, _, _ in bounds if first > 0]
    tests += [lax.bitwise_not(at_least(x, end)) for x, _, end, n in bounds if end < n]
    if form.d is not None:
        tests.append(at_least(lax.sub(x_other, x_axis), form.d))
    if not tests:
        return lax.broadcast_in_dim(np.True_, shape, ())
    mask = tests[0]
    for t in tests[1:]:
        mask = lax.bitwise_and(mask, t)
    return mask


def try_run(closed: Any, the_split: hoisted.Split, lo: int, hi: int,
            init: list[Any]) -> list[Any] | None:
    """The hoisted loop of ``closed`` (over all of ``lo .. hi - 1``) run as selects when its
    rest allows (see the module): the carried values after it; else None."""
    consts = list(closed.consts)
    the_plan = plan(the_split.rest, consts, len(the_split.varying), lo, hi)
    if the_plan is None:
        return None
    stacked = hoisted.stack(closed, the_split, lo, hi, init)
    return run(the_plan, consts, stacked, the_split.varying, lo, hi, init)
