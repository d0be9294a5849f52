"""A product with a one-hot matrix as a sum per class: one scatter-add instead of a dot.

NumPy code sums rows by label with a one-hot matrix, as k-means' update does::

    onehot = (labels[:, None] == np.arange(k)[None, :]).astype(X.dtype)
    sums = onehot.T @ X

The product does N * k * D multiplications, all but N * D of them by zero, and the one-hot
matrix (N x k) is built in memory first. Its value is the sum of X's rows per label: a
scatter-add of X's N rows into k slots, N * D additions. Measured on XLA:CPU with N = 50,000
float64 rows: D = 8, k = 16: 1.24 ms as the product, 0.24 ms as the scatter; k = 256: 51 ms
and 0.47 ms; D = 64, k = 2: 1.7 and 1.4 ms. The scatter was faster at every k tried (2 to 256),
so it replaces every such product.

So, in NumPy mode's jaxpr (inside loops, branches and calls too), a ``dot_general`` with no
batch axes, one contracting axis a side, where one side is a one-hot matrix contracted over its
labels' axis, becomes a scatter-add of the other side along its contracting axis. A one-hot
matrix here is ``eq`` of a vector of integer labels broadcast along one axis and ``arange(k)``
(a constant of the traced function, or an ``iota``) along the other, converted to the
product's type, maybe transposed. Labels outside ``0 .. k - 1`` match no column, and the
scatter drops them. The one-hot matrix stays where something else reads it (``onehot.sum(0)``:
the counts), and goes with the dead code where nothing does.

The scatter adds each class's rows one after the other, where the product adds them in its own
order (as NumPy's BLAS does in yet another): a float result can differ in the last bits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax import lax
from jax.extend import core as jcore

from reactant_lab.trace.numpy_mode.subjaxprs import closed_rewritten, inlined, inner_rewritten


def summed(closed: Any) -> Any:
    """``closed`` with each product by a one-hot matrix made a sum per class (see the module's
    doc); ``closed`` itself when it has none."""
    consts = dict(zip(closed.jaxpr.constvars, closed.consts, strict=True))
    return closed_rewritten(closed, lambda jaxpr: _rewritten(jaxpr, consts))


def _rewritten(jaxpr: Any, consts: dict[Any, Any]) -> Any:
    eqns = [inner_rewritten(e, _inner_rewrite(e, consts)) for e in jaxpr.eqns]
    changed = any(a is not b for a, b in zip(eqns, jaxpr.eqns, strict=True))
    producer = {v: e for e in eqns for v in e.outvars}
    out = []
    for eqn in eqns:
        new = _scatter(eqn, producer, consts) if eqn.primitive.name == "dot_general" else None
        if new is None:
            out.append(eqn)
        else:
            out.extend(new)
            changed = True
    return jaxpr.replace(eqns=out) if changed else jaxpr


def _inner_rewrite(eqn: Any, consts: dict[Any, Any]) -> Callable[[Any], Any]:
    inner = _inner_consts(eqn, consts)
    return lambda jaxpr: _rewritten(jaxpr, inner)


def _inner_consts(eqn: Any, consts: dict[Any, Any]) -> dict[Any, Any]:
    """The constants the jaxprs of ``eqn``'s parameters see: their own, and each input that
    stays the same through the equation (a loop's constants, a call's or a branch's inputs)
    where its value outside is one of ``consts`` (``np.arange(k)`` in a loop's body is a
    constant of the function, passed into the loop)."""
    p, outer = eqn.params, eqn.invars
    pairs: list[tuple[Any, Any]] = []  # (inner jaxpr, the outer values of its first inputs)
    if eqn.primitive.name == "while":
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        pairs = [(p["cond_jaxpr"], outer[:cn]), (p["body_jaxpr"], outer[cn:cn + bn])]
    elif eqn.primitive.name == "scan":
        pairs = [(p["jaxpr"], outer[:p["num_consts"]])]
    elif eqn.primitive.name == "cond":
        pairs = [(b, outer[1:]) for b in p["branches"]]
    elif eqn.primitive.name in ("pjit", "jit", "closed_call", "core_call"):
        pairs = [(p.get("jaxpr", p.get("call_jaxpr")), outer)]
    inner: dict[Any, Any] = {}
    for given, values in pairs:
        sub = given
        if isinstance(given, jcore.ClosedJaxpr):
            inner.update(zip(given.jaxpr.constvars, given.consts, strict=True))
            sub = given.jaxpr
        if not isinstance(sub, jcore.Jaxpr):
            continue
        for v, value in zip(sub.invars, values, strict=False):
            if isinstance(value, jcore.Var) and value in consts:
                inner[v] = consts[value]
    return inner


def _scatter(dot: Any, producer: dict[Any, Any], consts: dict[Any, Any]) -> list[Any] | None:
    """The equations of ``dot`` as a scatter-add, or None when neither side is a one-hot
    matrix contracted over its labels' axis."""
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    if lb or rb or len(lc) != 1 or len(rc) != 1:
        return None
    result = dot.outvars[0].aval
    for side in (0, 1):
        onehot, other = dot.invars[side], dot.invars[1 - side]
        found = _one_hot(onehot, producer, consts)
        if found is None or found[1] != (lc, rc)[side][0]:
            continue
        labels, _, k = found
        axis = (lc, rc)[1 - side][0]
        args = [labels, other]
        avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype, weak_type=v.aval.weak_type)
                 for v in args]

        def by_class(labels: Any, x: Any, axis: int = axis, k: int = k,
                     first: bool = side == 0) -> Any:
            return _class_sums(labels, x, axis, k, result.dtype, first)

        return inlined(by_class, args, avals, dot.outvars[0], dot.source_info)
    return None


def _class_sums(labels: Any, x: Any, axis: int, k: int, dtype: Any, first: bool) -> Any:
    """Per class c in ``0 .. k - 1``, the sum of ``x``'s slices along ``axis`` whose label is
    c; the classes on the result's first axis when ``first``, else on its last."""
    perm = (axis, *(a for a in range(x.ndim) if a != axis))
    rows = lax.convert_element_type(lax.transpose(x, perm), dtype)
    kind = np.int32 if k < np.iinfo(np.int32).max else np.int64
    inside = lax.bitwise_and(lax.ge(labels, lax.full_like(labels, 0)),
                             lax.lt(labels, lax.full_like(labels, k)))
    # Labels outside 0 .. k - 1 match no class: slot k, past the end, where the scatter drops
    # them (before the narrowing, which could bring a large label inside).
    index = lax.convert_element_type(lax.select(inside, labels, lax.full_like(labels, k)), kind)
    numbers = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(range(1, rows.ndim)), inserted_window_dims=(0,),
        scatter_dims_to_operand_dims=(0,))
    sums = lax.scatter_add(lax.full((k, *rows.shape[1:]), 0, dtype), index[:, None], rows,
                           numbers, mode=lax.GatherScatterMode.FILL_OR_DROP)
    return sums if first else lax.transpose(sums, (*range(1, sums.ndim), 0))


def _one_hot(v: Any, producer: dict[Any, Any], consts: dict[Any, Any]
             ) -> tuple[Any, int, int] | None:
    """``(labels, the labels' axis, k)`` when ``v`` is a 2-d one-hot matrix (see the module's
    doc): ``v[i, c] == (labels[i] == c)`` (axes swapped for axis 1), else None."""
    aval: Any = getattr(v, "aval", None)
    if not isinstance(v, jcore.Var) or aval.ndim != 2 or aval.dtype == np.bool_:
        return None
    swapped = False
    made = producer.get(v)
    if made is not None and made.primitive.name == "transpose":
        swapped, made = True, producer.get(made.invars[0])
    if made is None or made.primitive.name != "convert_element_type" \
            or not isinstance(made.invars[0], jcore.Var):
        return None
    eq = producer.get(made.invars[0])
    if eq is None or eq.primitive.name != "eq" or eq.outvars[0].aval.ndim != 2:
        return None
    shape = eq.outvars[0].aval.shape
    for a, b in (eq.invars, eq.invars[::-1]):
        for axis in (0, 1):
            labels = _broadcast_vector(a, axis, shape, producer)
            if labels is None or not np.issubdtype(labels.aval.dtype, np.integer):
                continue
            if _arange(b, 1 - axis, shape, producer, consts):
                return labels, axis ^ swapped, shape[1 - axis]
    return None


def _broadcast_vector(v: Any, axis: int, shape: tuple[int, ...], producer: dict[Any, Any]
                      ) -> Any | None:
    """The vector ``v`` broadcasts along ``axis`` of the 2-d ``shape`` (its other axis 1 or
    full), else None; integers widened before or after the broadcast (int32 labels compared
    with an int64 arange) are followed back."""
    made = producer.get(_widened(v, producer))
    if made is None or made.primitive.name != "broadcast_in_dim" \
            or tuple(made.params["broadcast_dimensions"]) != (axis,):
        return None
    src: Any = _widened(made.invars[0], producer)
    known: Any = getattr(src, "aval", None)  # a Var's; a literal is no vector
    if not isinstance(src, jcore.Var) or known.shape != (shape[axis],) \
            or v.aval.shape[1 - axis] not in (1, shape[1 - axis]):
        return None
    return src


def _widened(v: Any, producer: dict[Any, Any]) -> Any:
    """What ``v`` converts when it is an integer conversion that keeps every value (an int32
    array made int64), else ``v``."""
    made = producer.get(v) if isinstance(v, jcore.Var) else None
    if made is None or made.primitive.name != "convert_element_type":
        return v
    src = made.invars[0]
    kinds = (np.dtype(src.aval.dtype), np.dtype(v.aval.dtype))
    if all(np.issubdtype(d, np.integer) for d in kinds) and np.can_cast(*kinds, "safe"):
        return src
    return v


def _arange(v: Any, axis: int, shape: tuple[int, ...], producer: dict[Any, Any],
            consts: dict[Any, Any]) -> bool:
    """Whether ``v`` holds ``0, 1, ..., shape[axis] - 1`` along ``axis`` of the 2-d ``shape``
    (the same in every row or column): an ``iota`` there, or a broadcast ``arange`` vector."""
    made = producer.get(v) if isinstance(v, jcore.Var) else None
    if made is None:
        return False
    if made.primitive.name == "iota":
        return bool(made.params["dimension"] == axis and v.aval.shape[axis] == shape[axis])
    vector = _broadcast_vector(v, axis, shape, producer)
    if vector is None:
        return False
    inner = producer.get(vector)
    if inner is not None and inner.primitive.name == "iota":
        return True  # a vector, so along its only axis
    value = consts.get(vector)
    if value is None:
        return False
    value = np.asarray(value)
    return bool(np.issubdtype(value.dtype, np.integer)
                and np.array_equal(value, np.arange(value.shape[0])))
