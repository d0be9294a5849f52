"""Forward mode: ``jvp``, one ``enzyme.fwddiff``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab import backend
from reactant_lab.enzyme import checks
from reactant_lab.enzyme.common import (
    ACTIVE,
    CONST,
    STATIC,
    eager,
    fallback,
    from_numpy,
    in_mode,
    inexact,
    leaf_activities,
    plan,
    rebuild,
    traced,
)
from reactant_lab.trace.jax_mode import fn_name


def _forward(f: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...],
             has_aux: bool) -> Any:
    """Trace-time forward mode (primals and tangents checked): one enzyme.fwddiff."""
    if not backend.enzyme_available():
        return jax.jvp(f, primals, _float0_for_integers(primals, tangents), has_aux=has_aux)
    leaves, treedefs, acts = plan(primals, leaf_activities(
        primals, tuple(range(len(primals))), None))
    tangent_leaves = [jax.tree_util.tree_leaves(t) for t in tangents]
    args, arg_tangents, arg_acts = [], [], []
    for ls, ts, as_ in zip(leaves, tangent_leaves, acts, strict=True):
        for x, t, a in zip(ls, ts, as_, strict=True):
            if a == STATIC:
                continue
            args.append(x)
            dup = a == ACTIVE
            arg_tangents.append(jnp.asarray(t, jnp.result_type(x)) if dup else None)
            arg_acts.append("enzyme_dup" if dup else CONST)
    out_tree: list[Any] = []

    def flat(*values: Any) -> list[Any]:
        res = f(*rebuild(leaves, acts, treedefs, values))
        if has_aux:
            checks.aux_pair("jvp", f, res)
        out_leaves, tree = jax.tree_util.tree_flatten(res)
        out_tree.append(tree)
        return [jnp.asarray(r) for r in out_leaves]

    fn = backend.FlatFunction(flat, args, fn_name(f))
    n_aux = out_tree[0].children()[1].num_leaves if has_aux else 0
    n_out = len(fn.out_avals) - n_aux
    ret_acts = ["enzyme_dup" if jnp.issubdtype(d, jnp.inexact) and i < n_out else CONST
                for i, (_s, d) in enumerate(fn.out_avals)]
    results = iter(backend.fwddiff(fn, args, arg_tangents, arg_acts, ret_acts))
    outs, touts = [], []
    for (shape, dtype), act in zip(fn.out_avals, ret_acts, strict=True):
        outs.append(next(results))
        touts.append(next(results) if act == "enzyme_dup" else jnp.zeros(shape, dtype))
    tree = out_tree[0]
    if not has_aux:
        return (jax.tree_util.tree_unflatten(tree, outs),
                jax.tree_util.tree_unflatten(tree, touts))
    out_def, aux_def = tree.children()
    return (jax.tree_util.tree_unflatten(out_def, outs[:n_out]),
            jax.tree_util.tree_unflatten(out_def, touts[:n_out]),
            jax.tree_util.tree_unflatten(aux_def, outs[n_out:]))


def _float0_for_integers(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> Any:
    """The tangents jax.jvp takes: float0 zeros for integer primals (a compiled call got bool
    ones instead)."""
    return jax.tree_util.tree_map(
        lambda p, t: t if inexact(p) else np.zeros(np.shape(p), checks.FLOAT0), primals,
        tangents)


def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> Any:
    """``(f(*primals), tangent of the output)`` (and aux with ``has_aux``) as ``jax.jvp``, its
    checks included, computed by Enzyme's forward mode (``enzyme.fwddiff``; floating-point
    leaves are ``enzyme_dup`` with their tangent, integer leaves ``enzyme_const``: their
    tangent is a float0 zero, as JAX asks)."""
    fallback("jvp")
    checks.jvp_args(f, from_numpy(primals), from_numpy(tangents))
    primals, tangents = tuple(primals), tuple(tangents)

    def call(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> Any:
        return in_mode(lambda fn, ps, ts: _forward(fn, ps, ts, has_aux), f, primals, tangents)

    if traced((primals, tangents)):
        return call(primals, tangents)
    return eager(f"jvp_of_{fn_name(f)}", call)(primals, checks.no_float0(tangents))
