"""A function of the linear values -> jaxpr -> result plan -> StableHLO; shared by both modes."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from jax.extend import core as jcore

from reactant_lab import backend
from reactant_lab.trace import sharding as sharding_mod
from reactant_lab.trace.paths import FlatCall, is_none, result_path
from reactant_lab.trace.specs import (
    ArgView,
    Computed,
    Constant,
    OutSlot,
    Preserved,
    ResultSpec,
    Static,
    UpdatedArg,
)
from reactant_lab.trace.user_errors import user_code_errors


@dataclass(frozen=True)
class CallOutput:
    """What one traced call of the user's function produced, in terms tracing understands."""

    treedef: Any
    """Tree structure of the result (None is a leaf)."""
    leaves: list[tuple[str, Any, UpdatedArg | Preserved | ArgView | Constant | None]]
    """Per result leaf: its path, its value (traced array or static), and what argument it is
    when it is one (updated in place, returned unchanged) or a view of one, or the constant it
    is (else None)."""
    extras: list[tuple[str, Any, int]] = field(default_factory=list)
    """Per mutated argument: its ``resargs`` path, its final traced value, its linear index."""
    layout_deps: tuple[tuple[int, Any], ...] = ()
    """(linear index, memory layout) of each argument whose layout the trace depends on."""
    scalars: frozenset[str] | None = None
    """Paths of the 0-d computed leaves that are NumPy scalars (the rest are 0-d arrays);
    None: every 0-d leaf is one."""
    preserved_by_value: bool = True
    """Whether a leaf whose value is an argument's own traced value is that argument returned
    unchanged (JAX: arrays are immutable). NumPy mode names such leaves itself: a copy of an
    argument has its value but is a new array."""


def output_of(out: Any) -> CallOutput:
    """A CallOutput of a plain result pytree (no updated arguments)."""
    with_path, treedef = jax.tree_util.tree_flatten_with_path(out, is_leaf=is_none)
    return CallOutput(treedef, [(result_path(p), leaf, None) for p, leaf in with_path])


@dataclass(frozen=True)
class Lowered:
    """What tracing produced."""

    text: str
    """StableHLO module text with locations; block arguments carry their paths."""
    out_treedef: Any
    """Tree structure of the result (None is a leaf)."""
    out_slots: tuple[OutSlot, ...]
    """Per result leaf: computed, preserved argument, updated argument, or static value."""
    results: tuple[ResultSpec, ...]
    """Specs of the array leaves of the result, then of the ``resargs`` results."""
    writeback: tuple[tuple[int, int], ...] = ()
    """(linear-argument index, module result index) per argument updated in place."""
    layout_deps: tuple[tuple[int, Any], ...] = ()
    """(linear index, memory layout) of each argument whose layout the trace depends on."""


def is_array(leaf: Any) -> bool:
    """A leaf the module computes (a traced value, a JAX or NumPy array, a NumPy scalar)."""
    return isinstance(leaf, jax.Array | np.ndarray | np.generic)


def lower_call(name: str, flat: FlatCall, call: Callable[..., CallOutput], *, x64: bool,
               mode: str, rewrite: Callable[[Any], Any] | None = None) -> Lowered:
    """Trace ``call`` on ``flat``'s avals (Python runs it exactly once), plan its results and
    lower it to StableHLO. ``rewrite``: a mode's change of the traced closed jaxpr (same
    results), applied before lowering."""
    captured: dict[str, CallOutput] = {}

    def flat_fn(*linear: Any) -> list[Any]:
        out = call(*linear)
        captured["out"] = out
        return ([leaf for _, leaf, updated in out.leaves if updated is None and is_array(leaf)]
                + [value for _, value, _ in out.extras])

    # Sharded: an Explicit mesh axis is part of the types JAX traces with (its rules apply).
    shardings = flat.shardings or (None,) * len(flat.linear)
    avals = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type, sharding=s)
             for a, s in zip(flat.linear, shardings, strict=True)]
    with backend.x64_scope(x64), user_code_errors(name, mode):
        closed = jax.make_jaxpr(flat_fn)(*avals)
        # What no result needs goes before lowering, as jax.jit's own lowering drops it: a
        # loop's trace left unused, a batched loop's discarded writes; and before the rewrite,
        # which would otherwise rewrite them too (trmm's loop body held a dead write into a
        # view that the fused-read guard made a scatter: 5 ms of its trace).
        closed = backend.without_dead_code(closed)
        if rewrite is not None:
            closed = rewrite(closed)
            closed = backend.without_dead_code(closed)  # the values a rewrite replaced
    out = captured["out"]
    slots, results, keep, writeback = _plan_results(closed, out, flat)
    by_index = {r.index: r.path for r in results if r.index is not None}  # resargs win
    evaluate = jcore.jaxpr_as_fun(closed)

    def lowered_fn(*linear: Any) -> list[Any]:
        outs = evaluate(*linear)
        return [outs[k] for k in keep]

    names = [by_index[i] for i in range(len(keep))]
    outs: list[Any] = []
    if flat.out_shardings:
        shapes = {r.index: r.shape for r in results if r.index is not None}
        outs = sharding_mod.resolve_out(names, [shapes[i] for i in range(len(keep))],
                                        flat.out_shardings, flat.shardings)
    text = backend.lower(
        lowered_fn, [(a.shape, a.dtype, a.weak_type) for a in flat.linear],
        arg_names=[a.path for a in flat.linear], result_names=names,
        module_name="reactant_" + re.sub(r"\W", "_", name).strip("_"), x64=x64,
        shardings=flat.shardings, out_shardings=outs, platform=flat.platform)
    return Lowered(text, out.treedef, slots, results, writeback, out.layout_deps)


def _plan_results(closed: Any, out: CallOutput, flat: FlatCall) -> tuple[
        tuple[OutSlot, ...], tuple[ResultSpec, ...], list[int], tuple[tuple[int, int], ...]]:
    """Decide, per result leaf, whether the module computes it, it is a preserved argument, an
    argument updated in place, or a static Python value; then add the ``resargs`` results.
    Returns (slots, result specs, kept jaxpr output indices, writeback pairs)."""
    slots, results, keep, updated = _plan_leaves(closed, out, flat)
    n_plain = len(closed.jaxpr.outvars) - len(out.extras)
    writeback = []
    for j, (path, _, arg) in enumerate(out.extras):
        aval = closed.out_avals[n_plain + j]
        writeback.append((arg, len(keep)))
        results.append(ResultSpec(path, tuple(aval.shape), np.dtype(aval.dtype), len(keep)))
        keep.append(n_plain + j)
    index_of = dict(writeback)
    for position, arg in updated:  # the argument returned: its resargs result's value
        results[position] = dataclasses.replace(results[position], index=index_of[arg])
    return tuple(slots), tuple(results), keep, tuple(writeback)


def _plan_leaves(closed: Any, out: CallOutput, flat: FlatCall) -> tuple[
        list[OutSlot], list[ResultSpec], list[int], list[tuple[int, int]]]:
    invar_index = {v: i for i, v in enumerate(closed.jaxpr.invars)}
    slots: list[OutSlot] = []
    results: list[ResultSpec] = []
    keep: list[int] = []
    updated: list[tuple[int, int]] = []  # (position in results, argument) of updated arguments
    k = 0
    for path, leaf, kind in out.leaves:
        if isinstance(kind, Constant):
            slots.append(kind)
            results.append(ResultSpec(path, tuple(kind.value.shape), kind.value.dtype, None,
                                      constant=True))
            continue
        if isinstance(kind, ArgView):
            slots.append(kind)
            results.append(ResultSpec(path, tuple(leaf.shape), np.dtype(leaf.dtype), None,
                                      flat.linear[kind.arg].path, view=True))
            continue
        if isinstance(kind, UpdatedArg | Preserved):
            arg = flat.linear[kind.arg]
            slots.append(kind)
            if isinstance(kind, UpdatedArg):
                updated.append((len(results), kind.arg))
            results.append(ResultSpec(path, arg.shape, arg.dtype, None,
                                      None if isinstance(kind, UpdatedArg) else arg.path))
            continue
        if not is_array(leaf):
            slots.append(Static(leaf))
            continue
        var, aval = closed.jaxpr.outvars[k], closed.out_avals[k]
        shape, dtype = tuple(aval.shape), np.dtype(aval.dtype)
        same = (invar_index.get(var) if out.preserved_by_value and isinstance(var, jcore.Var)
                else None)
        if same is not None:
            slots.append(Preserved(same))
            results.append(ResultSpec(path, shape, dtype, None, flat.linear[same].path))
        else:
            scalar = not shape and (out.scalars is None or path in out.scalars)
            slots.append(Computed(len(keep), scalar))
            results.append(ResultSpec(path, shape, dtype, len(keep)))
            keep.append(k)
        k += 1
    return slots, results, keep, updated
