"""Enzyme ops in a JAX trace: ``enzyme.autodiff``, ``enzyme.fwddiff`` and ``enzyme.batch`` as JAX
primitives whose MLIR lowering puts the function they act on in its own private ``func.func``
and calls it through the Enzyme op, as Reactant.jl emits them. The ``enzyme (AD)`` and ``batch``
stages then do the transformation.

Only backend and its private modules import this module.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.extend import core as jcore
from jax.interpreters import mlir as jax_mlir
from jaxlib.mlir import ir

ACTIVITIES = ("enzyme_active", "enzyme_dup", "enzyme_const", "enzyme_activenoneed",
              "enzyme_dupnoneed", "enzyme_constnoneed")
"""The activity annotations of Enzyme's MLIR dialect."""

_NEEDS_SHADOW = ("enzyme_dup", "enzyme_dupnoneed")
_HAS_PRIMAL = ("enzyme_active", "enzyme_dup", "enzyme_const")
_ACTIVE = ("enzyme_active", "enzyme_activenoneed")


def _closed(fn: Callable[..., Sequence[Any]], avals: Sequence[Any]) -> tuple[Any, list[Any]]:
    """Trace ``fn(*flat) -> list`` to a closed jaxpr without constants; the values it closes
    over (arrays, tracers of an enclosing trace) become its leading arguments. Returns
    (ClosedJaxpr, those values)."""
    from jax._src.interpreters import partial_eval as pe

    closed = jax.make_jaxpr(lambda *a: list(fn(*a)))(*avals)
    consts = list(closed.consts)
    jaxpr = pe.convert_constvars_jaxpr(closed.jaxpr)
    return jcore.ClosedJaxpr(jaxpr, []), consts


def _aval(x: Any) -> jax.ShapeDtypeStruct:
    if isinstance(x, jax.ShapeDtypeStruct):
        return x
    t = jax.typeof(x)
    return jax.ShapeDtypeStruct(t.shape, t.dtype, weak_type=getattr(t, "weak_type", False))


def _tensor(ctx: Any, aval: Any) -> ir.Type:
    return jax_mlir.aval_to_ir_type(ctx.module_context, aval)


# ---------------------------------------------------------------- autodiff / fwddiff

autodiff_p = jcore.Primitive("enzyme_autodiff")
autodiff_p.multiple_results = True


def _ad_out_avals(jaxpr: Any, mode: str, activity: Sequence[str],
                  ret_activity: Sequence[str]) -> list[Any]:
    in_avals, out_avals = jaxpr.in_avals, jaxpr.out_avals
    outs = []
    if mode == "reverse":
        outs += [a for a, act in zip(out_avals, ret_activity, strict=True) if act in _HAS_PRIMAL]
        outs += [a for a, act in zip(in_avals, activity, strict=True) if act in _ACTIVE]
    else:
        for a, act in zip(out_avals, ret_activity, strict=True):
            if act in _HAS_PRIMAL:
                outs.append(a)
            if act in _NEEDS_SHADOW:
                outs.append(a)
    return outs


def _ad_abstract_eval(*_: Any, jaxpr: Any, mode: str, activity: tuple[str, ...],
                      ret_activity: tuple[str, ...], name: str) -> list[Any]:
    return _ad_out_avals(jaxpr, mode, activity, ret_activity)


def _ad_impl(*args: Any, **params: Any) -> Any:
    raise NotImplementedError(
        "an enzyme.autodiff / enzyme.fwddiff op only runs once the Enzyme-JAX 'enzyme' pass "
        "has differentiated it: call it inside a function that reactant_lab traces "
        "(rl.jit / rl.explore / %%reactant_jit), or outside any trace (it then compiles "
        "through the pipeline)")


autodiff_p.def_abstract_eval(_ad_abstract_eval)  # type: ignore[no-untyped-call]
autodiff_p.def_impl(_ad_impl)  # type: ignore[no-untyped-call]


def _activity_attr(acts: Sequence[str]) -> ir.Attribute:
    return ir.Attribute.parse("[" + ", ".join(f"#enzyme.activity<{a}>" for a in acts) + "]")


def _private_func(ctx: Any, name: str, jaxpr: Any) -> str:
    """Lower ``jaxpr`` into its own private function of the module; return its symbol name."""
    module_ctx = ctx.module_context
    func = jax_mlir.lower_jaxpr_to_fun(module_ctx, name, jaxpr, [], num_const_args=0,
                                       in_avals=jaxpr.in_avals)
    func.attributes["sym_visibility"] = ir.StringAttr.get("private")
    return str(ir.StringAttr(func.attributes["sym_name"]).value)


def _ad_lowering(ctx: Any, *args: Any, jaxpr: Any, mode: str, activity: tuple[str, ...],
                 ret_activity: tuple[str, ...], name: str) -> Sequence[Any]:
    ir.Context.current.allow_unregistered_dialects = True
    fn = _private_func(ctx, name, jaxpr)
    results = [_tensor(ctx, a) for a in ctx.avals_out]
    op = ir.Operation.create(
        "enzyme.autodiff" if mode == "reverse" else "enzyme.fwddiff",
        results=results, operands=list(args),
        attributes={"fn": ir.FlatSymbolRefAttr.get(fn),
                    "activity": _activity_attr(activity),
                    "ret_activity": _activity_attr(ret_activity),
                    "width": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)})
    return list(op.results)


jax_mlir.register_lowering(autodiff_p, _ad_lowering)


# ---------------------------------------------------------------- batch

batch_p = jcore.Primitive("enzyme_batch")
batch_p.multiple_results = True


def _batch_abstract_eval(*_: Any, jaxpr: Any, batch_shape: tuple[int, ...],
                         name: str) -> list[Any]:
    return [a.update(shape=(*batch_shape, *a.shape)) for a in jaxpr.out_avals]


def _batch_impl(*args: Any, **params: Any) -> Any:
    raise NotImplementedError(
        "an enzyme.batch op only runs once the Enzyme-JAX 'enzyme-batch' pass has batched it: "
        "call it inside a function that reactant_lab traces (rl.jit / rl.explore / "
        "%%reactant_jit), or outside any trace (it then compiles through the pipeline)")


batch_p.def_abstract_eval(_batch_abstract_eval)  # type: ignore[no-untyped-call]
batch_p.def_impl(_batch_impl)  # type: ignore[no-untyped-call]


def _batch_lowering(ctx: Any, *args: Any, jaxpr: Any, batch_shape: tuple[int, ...],
                    name: str) -> Sequence[Any]:
    ir.Context.current.allow_unregistered_dialects = True
    fn = _private_func(ctx, name, jaxpr)
    op = ir.Operation.create(
        "enzyme.batch", results=[_tensor(ctx, a) for a in ctx.avals_out], operands=list(args),
        attributes={"fn": ir.FlatSymbolRefAttr.get(fn),
                    "batch_shape": ir.DenseI64ArrayAttr.get(list(batch_shape))})
    return list(op.results)


jax_mlir.register_lowering(batch_p, _batch_lowering)


# ---------------------------------------------------------------- the API backend offers


class FlatFunction:
    """A function of flat array values traced once, ready to be called by an Enzyme op: its
    jaxpr (no constants), the values it closes over (leading const operands of the op), its
    name in the module, and its results' (shape, dtype)."""

    def __init__(self, fn: Callable[..., Sequence[Any]], args: Sequence[Any], name: str):
        self.jaxpr, self.consts = _closed(fn, [_aval(a) for a in args])
        self.name = re.sub(r"\W", "_", name).strip("_") or "fn"
        self.out_avals: tuple[tuple[tuple[int, ...], np.dtype[Any]], ...] = tuple(
            (tuple(a.shape), np.dtype(a.dtype)) for a in self.jaxpr.out_avals)


def is_tracer(x: Any) -> bool:
    """Whether ``x`` is a value of a JAX trace (not a concrete array)."""
    return isinstance(x, jax.core.Tracer)


def _check(acts: Sequence[str], what: str, allowed: Sequence[str]) -> None:
    for a in acts:
        if a not in allowed:
            raise ValueError(f"{what} activity {a!r} is not one of {', '.join(allowed)}")


def autodiff(fn: FlatFunction, args: Sequence[Any], activity: Sequence[str],
             ret_activity: Sequence[str], seeds: Sequence[Any]) -> list[Any]:
    """``enzyme.autodiff`` (reverse mode) of ``fn`` at ``args``: the primal results whose
    ret_activity keeps them (enzyme_active, enzyme_const), then one gradient per
    ``enzyme_active`` argument. ``seeds``: one cotangent per enzyme_active(noneed) result."""
    _check(activity, "argument", ("enzyme_active", "enzyme_const"))
    _check(ret_activity, "result", ("enzyme_active", "enzyme_activenoneed", "enzyme_const",
                                    "enzyme_constnoneed"))
    return list(autodiff_p.bind(  # type: ignore[no-untyped-call]
        *fn.consts, *args, *seeds, jaxpr=fn.jaxpr, mode="reverse",
        activity=("enzyme_const",) * len(fn.consts) + tuple(activity),
        ret_activity=tuple(ret_activity), name=fn.name))


def batch(fn: FlatFunction, args: Sequence[Any], batch_shape: Sequence[int]) -> list[Any]:
    """``enzyme.batch`` of ``fn``: every operand (``fn``'s closed-over values included) carries
    ``batch_shape`` as its leading dimensions, over ``fn``'s own argument shapes; so does every
    result. Closed-over values are broadcast to the batch here."""
    shape = tuple(int(b) for b in batch_shape)
    consts = [jax.numpy.broadcast_to(c, (*shape, *np.shape(c))) for c in fn.consts]
    for k, (x, a) in enumerate(zip(args, fn.jaxpr.in_avals[len(fn.consts):], strict=True)):
        if tuple(np.shape(x)) != (*shape, *a.shape):
            raise ValueError(f"batch operand {k} has shape {tuple(np.shape(x))}, not the batch "
                             f"shape {shape} followed by {tuple(a.shape)}")
    return list(batch_p.bind(  # type: ignore[no-untyped-call]
        *consts, *args, jaxpr=fn.jaxpr, batch_shape=shape, name=fn.name))


def _vmapped(fn: FlatFunction, args: Sequence[Any],
             body: Callable[..., Sequence[Any]]) -> Callable[..., Any]:
    """jax.vmap of ``body`` over ``fn``'s operands: its closed-over values unbatched, ``args``
    along their leading axis."""
    return jax.vmap(body, in_axes=(None,) * len(fn.consts) + (0,) * len(args))


def vmap(fn: FlatFunction, args: Sequence[Any]) -> list[Any]:
    """What ``batch(fn, args, ...)`` computes, by JAX's own vmap (for when enzyme-ad is not
    available): every result with the batch as its leading axis."""
    run = jcore.jaxpr_as_fun(fn.jaxpr)
    return list(_vmapped(fn, args, run)(*fn.consts, *args))


def batched_results(fn: FlatFunction, args: Sequence[Any]) -> list[bool]:
    """Per result of ``fn``, whether it varies along the batch of ``args`` (their leading
    axis), by JAX's batching rules: jax.vmap refuses out_axes=None for those."""
    from reactant_lab._backend_jax import unbatched

    run = jcore.jaxpr_as_fun(fn.jaxpr)
    flags: list[bool] = []

    def probe(*values: Any) -> Sequence[Any]:
        outs: Sequence[Any] = run(*values)
        flags.extend(unbatched(o) is None for o in outs)
        return outs

    jax.eval_shape(_vmapped(fn, args, probe), *map(_aval, fn.consts), *map(_aval, args))
    return flags


def fwddiff(fn: FlatFunction, args: Sequence[Any], tangents: Sequence[Any | None],
            activity: Sequence[str], ret_activity: Sequence[str]) -> list[Any]:
    """``enzyme.fwddiff`` (forward mode) of ``fn`` at ``args``: per result, its primal (unless
    its ret_activity ends in noneed) then its tangent (enzyme_dup / enzyme_dupnoneed).
    ``tangents``: per argument, its tangent when its activity is enzyme_dup (else ignored)."""
    _check(activity, "argument", ("enzyme_dup", "enzyme_const"))
    _check(ret_activity, "result", ("enzyme_dup", "enzyme_dupnoneed", "enzyme_const",
                                    "enzyme_constnoneed"))
    operands: list[Any] = list(fn.consts)
    for x, t, act in zip(args, tangents, activity, strict=True):
        operands += [x, t] if act == "enzyme_dup" else [x]
    return list(autodiff_p.bind(  # type: ignore[no-untyped-call]
        *operands, jaxpr=fn.jaxpr, mode="forward",
        activity=("enzyme_const",) * len(fn.consts) + tuple(activity),
        ret_activity=tuple(ret_activity), name=fn.name))
