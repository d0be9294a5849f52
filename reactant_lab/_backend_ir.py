"""Edits backend makes to MLIR modules: entry function, result names, donation, hints, text.

Only backend and its private modules import this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from reactant_lab._backend_text import compile_message
from reactant_lab.errors import CompileError

Aval = tuple[tuple[int, ...], np.dtype[Any], bool]
"""An abstract value as backend takes it: (shape, dtype, weak_type)."""

Donation = list[tuple[str, Any]]
"""Per argument, (attribute name, value) to add: ``('tf.aliasing_output', result index)``,
``('jax.buffer_donor', True)`` or ``('', None)`` (none)."""


def asm(module: ir.Module) -> str:
    """The module's text, with locations (as every stage keeps it)."""
    text = module.operation.get_asm(enable_debug_info=True)
    if not isinstance(text, str):  # only binary=True gives bytes
        raise TypeError(f"MLIR printed the module as {type(text).__name__}, not str")
    return text


def main_func(module: ir.Module) -> ir.Operation:
    """The module's ``func.func @main``. Raises CompileError when there is none."""
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(
                op.attributes["sym_name"]).value == "main":
            return op.operation
    raise CompileError("the module has no func.func @main; reactant_lab compiles @main")


def set_result_names(main: ir.Operation, names: Sequence[str]) -> None:
    """Name @main's results (``jax.result_info``), keeping their other attributes."""
    old = main.attributes.get("res_attrs", None)
    new = []
    for i, name in enumerate(names):
        entries: dict[str, ir.Attribute] = {}
        if old is not None:
            attrs = ir.DictAttr(ir.ArrayAttr(old)[i])
            entries = {attrs[j].name: attrs[j].attr for j in range(len(attrs))}
        entries["jax.result_info"] = ir.StringAttr.get(name)
        new.append(ir.DictAttr.get(entries))
    if new:
        main.attributes["res_attrs"] = ir.ArrayAttr.get(new)


def prepare(text: str, donation: Donation) -> ir.Module:
    """Parse module text in the current context for XLA: drop Enzyme's analysis hints (XLA does
    not know their dialect) and add the donation attributes."""
    ctx = ir.Context.current
    ctx.allow_unregistered_dialects = True
    try:
        module = ir.Module.parse(text)
    except ir.MLIRError as exc:
        raise CompileError(compile_message(text, exc)) from None
    finally:
        ctx.allow_unregistered_dialects = False

    def drop_hints(op: ir.Operation) -> ir.WalkResult:
        for name in list(op.attributes.keys()):
            if name.startswith("enzymexla."):
                del op.attributes[name]
        return ir.WalkResult.ADVANCE

    module.operation.walk(drop_hints)
    if donation:
        _apply_donation(module, donation)
    return module


def donation_plan(donate: Sequence[bool], avals: Sequence[Aval],
                  out_avals: Sequence[Aval], donors: Sequence[int] = ()) -> Donation:
    """Per argument, the donation attribute to add: ``tf.aliasing_output`` paired with a result
    of the same type, ``jax.buffer_donor`` when none is left, or nothing (empty list: no
    donation at all). ``donors``: results to add one more argument for each, donated to it
    (its entries come last, after those of ``avals``; ``_backend_buffers``)."""
    if not any(donate) and not donors:
        return []
    free = [k for k in range(len(out_avals)) if k not in set(donors)]
    plan: Donation = []
    for aval, wanted in zip(avals, donate, strict=True):
        match = next((k for k in free if out_avals[k][:2] == aval[:2]), None) if wanted else None
        if not wanted:
            plan.append(("", None))
        elif match is None:
            plan.append(("jax.buffer_donor", True))
        else:
            free.remove(match)
            plan.append(("tf.aliasing_output", match))
    return plan + [("tf.aliasing_output", k) for k in donors]


def _apply_donation(module: ir.Module, plan: Donation) -> None:
    """Set the plan's attributes on ``@main``'s arguments; entries past its last argument add
    one, of the type of the result it is donated to (``@main`` never reads it)."""
    main = main_func(module)
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    inputs = list(ftype.inputs)
    added = [value for _, value in plan[len(inputs):]]
    if added:
        block = main.regions[0].blocks[0]
        for k in added:
            inputs.append(ftype.results[k])
            block.add_argument(ftype.results[k], ir.Location.name("kept result buffer"))
        main.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(inputs, list(ftype.results)))
    old = ir.ArrayAttr(main.attributes["arg_attrs"]) if "arg_attrs" in main.attributes else None
    new = []
    for i, (name, value) in enumerate(plan):
        entries: dict[str, ir.Attribute] = {}
        if old is not None and i < len(old):
            d = ir.DictAttr(old[i])
            entries = {d[j].name: d[j].attr for j in range(len(d))}
        if name == "jax.buffer_donor":
            entries[name] = ir.BoolAttr.get(True)
        elif name:
            entries[name] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), value)
        new.append(ir.DictAttr.get(entries))
    main.attributes["arg_attrs"] = ir.ArrayAttr.get(new)


def drop_unused_args(module: ir.Module) -> list[int]:
    """Remove the arguments ``@main`` never reads (from its block, function type and argument
    attributes); return their indices. A NumPy kernel's output array that it overwrites whole
    is one: the caller's values would be copied to the device for nothing."""
    main = main_func(module)
    blocks = list(main.regions[0].blocks)
    if len(blocks) != 1:
        return []
    block = blocks[0]
    unused = [i for i, a in enumerate(block.arguments) if not list(a.uses)]
    if not unused:
        return []
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    keep = [i for i in range(len(ftype.inputs)) if i not in set(unused)]
    for i in reversed(unused):
        block.erase_argument(i)
    main.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([ftype.inputs[i] for i in keep], list(ftype.results)))
    if "arg_attrs" in main.attributes:
        old = ir.ArrayAttr(main.attributes["arg_attrs"])
        main.attributes["arg_attrs"] = ir.ArrayAttr.get([old[i] for i in keep])
    return unused


def drop_results(module: ir.Module, drop: Sequence[int]) -> None:
    """Remove results of ``@main`` (its return operands, function type and result attributes):
    what Reactant does with results the passes reduced to an argument returned unchanged."""
    if not drop:
        return
    main = main_func(module)
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    dropped = set(drop)
    keep = [i for i in range(len(ftype.results)) if i not in dropped]
    blocks = list(main.regions[0].blocks)
    if len(blocks) != 1:
        raise CompileError("@main has more than one block; its results cannot be pruned")
    block = blocks[0]
    ret = list(block.operations)[-1].operation
    if ret.name != "func.return":
        raise CompileError(f"@main ends in {ret.name}, not func.return")
    operands = [ret.operands[i] for i in keep]
    with ir.InsertionPoint.at_block_terminator(block), ret.location:
        ir.Operation.create("func.return", operands=operands)
    ret.erase()
    main.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(list(ftype.inputs), [ftype.results[i] for i in keep]))
    if "res_attrs" in main.attributes:
        old = ir.ArrayAttr(main.attributes["res_attrs"])
        main.attributes["res_attrs"] = ir.ArrayAttr.get([old[i] for i in keep])
