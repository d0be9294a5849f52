"""Rewriting a jaxpr everywhere: in the jaxprs its equations carry as parameters too (a loop's
body, a conditional's branches, a call), and splicing a function's equations in place of one
that computes the same: NumPy mode's rewrites of the traced jaxpr (``fused_reads``, ``one_hot``,
``product_sums``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.extend import core as jcore

Rewrite = Callable[[Any], Any]
"""A jaxpr -> the rewritten jaxpr (same inputs and results), the same object when unchanged."""


def closed_rewritten(closed: Any, rewrite: Rewrite) -> Any:
    """``closed`` (a ClosedJaxpr) with its jaxpr rewritten; ``closed`` itself when unchanged."""
    jaxpr = rewrite(closed.jaxpr)
    return closed if jaxpr is closed.jaxpr else jcore.ClosedJaxpr(jaxpr, closed.consts)


def inner_rewritten(eqn: Any, rewrite: Rewrite) -> Any:
    """``eqn`` with the jaxprs of its parameters rewritten; ``eqn`` itself when unchanged."""
    params = {}
    for key, value in eqn.params.items():
        new = _param(value, rewrite)
        if new is not value:
            params[key] = new
    return eqn.replace(params={**eqn.params, **params}) if params else eqn


def _param(value: Any, rewrite: Rewrite) -> Any:
    if isinstance(value, jcore.ClosedJaxpr):
        return closed_rewritten(value, rewrite)
    if isinstance(value, jcore.Jaxpr):
        return rewrite(value)
    if isinstance(value, tuple) and any(isinstance(v, jcore.ClosedJaxpr | jcore.Jaxpr)
                                        for v in value):
        new = tuple(_param(v, rewrite) for v in value)
        return value if all(a is b for a, b in zip(new, value, strict=True)) else new
    return value


def inlined(fn: Callable[..., Any], args: Sequence[Any], avals: Sequence[Any], out: Any,
            source_info: Any) -> list[Any] | None:
    """The equations of ``fn`` traced on ``avals``, reading the variables ``args`` and giving
    its one result as the variable ``out`` (with ``source_info``): to splice in place of the
    equations that computed ``out``; None when its trace holds constants (none expected)."""
    inner = jax.make_jaxpr(fn)(*avals)
    if inner.consts:
        return None
    names = dict(zip(inner.jaxpr.invars, args, strict=True))
    names[inner.jaxpr.outvars[0]] = out
    return [e.replace(invars=[names.get(v, v) if isinstance(v, jcore.Var) else v
                              for v in e.invars],
                      outvars=[names.get(v, v) for v in e.outvars], source_info=source_info)
            for e in inner.jaxpr.eqns]
