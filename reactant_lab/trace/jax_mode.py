"""JAX mode: trace a function of arrays to a jaxpr, find preserved results, lower to StableHLO."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.extend import core as jcore

from reactant_lab import backend
from reactant_lab.trace.paths import FlatCall, is_none, result_path
from reactant_lab.trace.specs import Computed, Preserved, ResultSpec, Static
from reactant_lab.trace.user_errors import user_code_errors


@dataclass(frozen=True)
class Lowered:
    """What tracing in JAX mode produced."""

    text: str
    """StableHLO module text with locations; block arguments carry their paths."""
    out_treedef: Any
    """Tree structure of the result (None is a leaf)."""
    out_slots: tuple[Computed | Preserved | Static, ...]
    """Per result leaf: computed, preserved argument, or static value."""
    results: tuple[ResultSpec, ...]
    """Specs of the array leaves of the result."""


def fn_name(fn: Callable) -> str:
    """A readable name for ``fn`` (functools.partial and callables included)."""
    inner = getattr(fn, "func", fn)
    return getattr(inner, "__name__", type(inner).__name__)


def trace_jax(fn: Callable, flat: FlatCall) -> Lowered:
    """Trace ``fn`` on ``flat``'s avals and lower it; Python runs the function exactly once."""
    name = fn_name(fn)
    captured: dict[str, Any] = {}

    def flat_fn(*linear):
        args, kwargs = flat.rebuild(linear)
        out = fn(*args, **kwargs)
        with_path, treedef = jax.tree_util.tree_flatten_with_path(out, is_leaf=is_none)
        captured["treedef"] = treedef
        captured["leaves"] = [(result_path(p), leaf) for p, leaf in with_path]
        return [leaf for _, leaf in captured["leaves"] if _is_array(leaf)]

    avals = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in flat.linear]
    with backend.x64_scope(flat.needs_x64), user_code_errors(name):
        closed = jax.make_jaxpr(flat_fn)(*avals)
    slots, results, keep = _plan_results(closed, captured["leaves"], flat)
    evaluate = jcore.jaxpr_as_fun(closed)

    def lowered_fn(*linear):
        outs = evaluate(*linear)
        return [outs[k] for k in keep]

    text = backend.lower(
        lowered_fn, [(a.shape, a.dtype, a.weak_type) for a in flat.linear],
        arg_names=[a.path for a in flat.linear],
        result_names=[r.path for r in results if r.index is not None],
        module_name="reactant_" + re.sub(r"\W", "_", name).strip("_"), x64=flat.needs_x64)
    return Lowered(text, captured["treedef"], slots, results)


def _is_array(leaf: Any) -> bool:
    return isinstance(leaf, jax.Array | np.ndarray | np.generic)


def _plan_results(closed: Any, leaves: list[tuple[str, Any]], flat: FlatCall):
    """Decide, per result leaf, whether the module computes it, it is a preserved argument, or it
    is a static Python value; returns (slots, result specs, kept jaxpr output indices)."""
    invar_index = {v: i for i, v in enumerate(closed.jaxpr.invars)}
    outvars = closed.jaxpr.outvars
    slots: list[Computed | Preserved | Static] = []
    results: list[ResultSpec] = []
    keep: list[int] = []
    k = 0
    for path, leaf in leaves:
        if not _is_array(leaf):
            slots.append(Static(leaf))
            continue
        var, aval = outvars[k], closed.out_avals[k]
        shape, dtype = tuple(aval.shape), np.dtype(aval.dtype)
        arg = invar_index.get(var) if isinstance(var, jcore.Var) else None
        if arg is not None:
            slots.append(Preserved(arg))
            results.append(ResultSpec(path, shape, dtype, None, flat.linear[arg].path))
        else:
            slots.append(Computed(len(keep)))
            results.append(ResultSpec(path, shape, dtype, len(keep)))
            keep.append(k)
        k += 1
    return tuple(slots), tuple(results), keep

