"""A sum of matrix products of one shape as one product over the joined operands.

conv2d written with shifted windows, ``for j in range(3): out += x[:, i:i + H, j:j + W, :] @
w[i, j]``, adds three (30752x16) @ (16x32) products: three dots, each with a contraction of 16,
and three passes over the (30752x32) result. The sum is one product whose contraction joins
theirs: ``concat(x_0, x_1, x_2, axis=-1) @ concat(w_0, w_1, w_2, axis=0)``, a contraction of 48
and one pass over the result. XLA:CPU does not join them itself. Joined, conv2d compiles to 8
fusions and one dot where it compiled to 14 fusions and three dots, in 0.13-0.15 s where it
took 0.20-0.25 s; a warm run of its loop in plain JAX takes 9-10 ms where it took 11-12 ms (the
port's convolution: 35 ms).

So, in NumPy mode's jaxpr, the terms of a sum (a tree of ``add`` whose inner results nothing
else reads) that are ``dot_general`` results read by nothing else are joined when they agree:
the same dimension numbers with one contracting axis a side, the same batch and free axes, the
same types and precision (the contracted lengths may differ). Each side's operands are joined
along its contracting axis, and the product replaces the terms in the sum. Joining copies the
operands, which pays only when each product does many multiplications per element copied: both
free sizes (the rows of the left side, the columns of the right) must be at least
``MIN_FREE``. A matrix-vector product (one column) is never joined: the copy of its matrix
would cost as much as the product.

The product adds its terms in another order than NumPy's ``+=`` one after the other, as any
product computed by another library does: a float result can differ in the last bits.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import jax
from jax import lax
from jax.extend import core as jcore

from reactant_lab.trace.numpy_mode.subjaxprs import closed_rewritten, inlined, inner_rewritten

MIN_FREE = 16
"""Both free sizes of the products in a joined sum must be at least this (see the module's doc):
a product of an (M x K) and a (K x N) matrix does 2MNK flops, its join copies (M + N)K elements,
so at least about 2 * MIN_FREE flops per element copied."""


def join(closed: Any) -> Any:
    """``closed`` with each sum of agreeing products made one product (inside loops, branches
    and calls too); ``closed`` itself when it has none."""
    return closed_rewritten(closed, _join_jaxpr)


def _join_jaxpr(jaxpr: Any) -> Any:
    eqns = [inner_rewritten(e, _join_jaxpr) for e in jaxpr.eqns]
    changed = any(a is not b for a, b in zip(eqns, jaxpr.eqns, strict=True))
    uses: dict[Any, int] = defaultdict(int)
    for e in eqns:
        for v in e.invars:
            if isinstance(v, jcore.Var):
                uses[v] += 1
    for v in jaxpr.outvars:
        if isinstance(v, jcore.Var):
            uses[v] += 1
    producer = {v: e for e in eqns for v in e.outvars}
    seen: set[int] = set()  # ids of the adds of the sums looked at (each sum once)
    dropped: set[int] = set()  # ids of the equations a joined sum replaced
    replaced: dict[int, list[Any]] = {}  # id of a sum's root -> the equations in its place
    for eqn in reversed(eqns):  # roots first: a sum inside a larger one is part of it
        if id(eqn) in seen or not _is_add(eqn):
            continue
        adds, terms = _sum_tree(eqn, producer, uses)
        seen |= {id(a) for a in adds}  # a part of a sum with no join has none either
        found = _joined(eqn, terms, producer, uses)
        if found is None:
            continue
        new, products = found  # the products joined; the others stay terms, as traced
        dropped |= {id(a) for a in adds} | {id(p) for p in products}
        replaced[id(eqn)] = new
    if not replaced:
        return jaxpr.replace(eqns=eqns) if changed else jaxpr
    out = []
    for e in eqns:
        if id(e) in replaced:
            out.extend(replaced[id(e)])
        elif id(e) not in dropped:
            out.append(e)
    return jaxpr.replace(eqns=out)


def _is_add(eqn: Any) -> bool:
    return eqn.primitive.name == "add" and len(eqn.outvars) == 1


def _sum_tree(root: Any, producer: dict[Any, Any], uses: dict[Any, int]
              ) -> tuple[list[Any], list[Any]]:
    """The ``add`` equations of the sum ``root`` ends (those whose result only it reads, the
    root included) and its terms, in order (``add`` takes operands of its result's shape)."""
    adds, terms = [root], []
    stack = list(reversed(root.invars))  # a loop, not recursion: a sum may have 10,000 terms
    while stack:
        v = stack.pop()
        inner = producer.get(v) if isinstance(v, jcore.Var) else None
        if inner is not None and _is_add(inner) and uses[v] == 1:
            adds.append(inner)
            stack.extend(reversed(inner.invars))
        else:
            terms.append(v)
    return adds, terms


def _product_term(v: Any, producer: dict[Any, Any], uses: dict[Any, int]) -> bool:
    made = producer.get(v) if isinstance(v, jcore.Var) else None
    return made is not None and made.primitive.name == "dot_general" and uses[v] == 1


def _key(eqn: Any) -> tuple[Any, ...] | None:
    """What products must share to be joined, or None when ``eqn`` (a product, a term of a sum)
    cannot be (several contracting axes, too few rows or columns)."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = (v.aval for v in eqn.invars)
    if len(lc) != 1 or len(rc) != 1:
        return None
    batch = math.prod(lhs.shape[a] for a in lb)
    rows = lhs.size // max(batch * lhs.shape[lc[0]], 1)
    cols = rhs.size // max(batch * rhs.shape[rc[0]], 1)
    if min(rows, cols) < MIN_FREE:
        return None
    free = [tuple(d for a, d in enumerate(aval.shape) if a not in (*c, *b))
            for aval, c, b in ((lhs, lc, lb), (rhs, rc, rb))]
    params = tuple(sorted((k, repr(v)) for k, v in eqn.params.items()))
    return (params, lhs.dtype, rhs.dtype, lhs.ndim, rhs.ndim,
            tuple(lhs.shape[a] for a in lb), *free)


def _joined(root: Any, terms: list[Any], producer: dict[Any, Any], uses: dict[Any, int]
            ) -> tuple[list[Any], list[Any]] | None:
    """The equations computing ``root``'s sum with its agreeing products joined, and the
    product equations they replace; None when no two products agree."""
    groups: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for t in terms:
        if _product_term(t, producer, uses):
            key = _key(producer[t])
            if key is not None:
                groups[key].append(producer[t])
    joined = [g for g in groups.values() if len(g) > 1]
    if not joined:
        return None
    in_groups = {id(e.outvars[0]) for g in joined for e in g}
    rest = [t for t in terms if id(t) not in in_groups]
    # One function of the products' operands and the other terms; its equations replace the sum.
    args = [v for g in joined for e in g for v in e.invars] + rest
    avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype, weak_type=v.aval.weak_type)
             for v in args]
    params = [g[0].params for g in joined]
    sizes = [len(g) for g in joined]
    dtype = root.outvars[0].aval.dtype

    def summed(*values: Any) -> Any:
        terms, at = [], 0
        for p, n in zip(params, sizes, strict=True):
            ops = values[at:at + 2 * n]
            at += 2 * n
            (lc, rc), _ = p["dimension_numbers"]
            lhs = lax.concatenate(ops[0::2], lc[0])
            rhs = lax.concatenate(ops[1::2], rc[0])
            terms.append(lax.dot_general_p.bind(lhs, rhs, **p))
        total = terms[0]
        for v in [*terms[1:], *values[at:]]:
            total = lax.add(total, v)
        assert total.dtype == dtype
        return total

    new = inlined(summed, args, avals, root.outvars[0], root.source_info)
    return None if new is None else (new, [e for g in joined for e in g])
