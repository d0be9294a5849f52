"""Edits backend makes to MLIR modules: entry function, result names, donation, hints, text.

Only backend and its private modules import this module.
"""

from __future__ import annotations

import re
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


Interval = tuple[int, int]
"""The least and greatest value an integer scalar can take."""

_COMBINE = {
    "stablehlo.add": lambda a, b: (a[0] + b[0], a[1] + b[1]),
    "stablehlo.subtract": lambda a, b: (a[0] - b[1], a[1] - b[0]),
    "stablehlo.maximum": lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
    "stablehlo.minimum": lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
    "stablehlo.multiply": lambda a, b: (min(p := [x * y for x in a for y in b]), max(p)),
}


def loop_bounds(module: ir.Module, limit: int) -> tuple[set[str], set[str]]:
    """The names (their source text: ``for j in range(i)``) of the ``stablehlo.while`` loops of
    ``module`` that provably run fewer than ``limit`` times per entry, and of the others. A
    loop is bounded when a counter starting at a known value steps up by a positive constant
    below (``LT``/``LE``, signed) a bound whose greatest value follows from constants and the
    counters of the loops around it (``for j in range(i)`` inside ``for i in range(80)``: at
    most 80 trips); the arguments of a bounded loop that step by a constant are bounded by its
    trip count in turn. Anything else (a bound read from an array, a condition on data, a loop
    in a function called from a loop) is not."""
    found: tuple[set[str], set[str]] = (set(), set())
    for op in module.body.operations:
        if op.operation.name == "func.func":
            _region_bounds(op.operation.regions[0], {}, limit, found)
    return found


def _loop_name(op: ir.Operation) -> str:
    """A loop's name as XLA's ``op_name`` ends: its source text (``for j in range(i)``)."""
    text = str(op.location)
    start = text.find('"')
    name = text[start + 1:text.find('"', start + 1)] if start >= 0 else ""
    return name.split(" @ ", 1)[0].rsplit("/", 1)[-1].strip()


def _region_bounds(region: ir.Region, known: dict[Any, Interval], limit: int,
                   found: tuple[set[str], set[str]]) -> None:
    for block in region.blocks:
        for view in block.operations:
            op = view.operation
            if op.name == "stablehlo.while":
                _while_bounds(op, known, limit, found)
            else:
                for inner in op.regions:
                    _region_bounds(inner, known, limit, found)


def _while_bounds(op: ir.Operation, known: dict[Any, Interval], limit: int,
                  found: tuple[set[str], set[str]]) -> None:
    """Put the loop ``op``'s name in ``found[0]`` when it runs fewer than ``limit`` times (its
    body's and condition's arguments then get what is known of them in ``known``), else in
    ``found[1]``; then its nested loops."""
    cond, body = op.regions[0].blocks[0], op.regions[1].blocks[0]
    returned = list(_terminator(body).operands)
    inits = [_interval(v, known) for v in op.operands]
    steps = [_step(body.arguments[i], returned[i], known) for i in range(len(inits))]
    trips = _trips(cond, steps, inits, returned, body, known)
    found[trips is None or trips >= limit].add(_loop_name(op))
    if trips is not None:
        for block, last in ((cond, trips), (body, max(trips - 1, 0))):  # the condition sees
            for i, arg in enumerate(block.arguments):  # one more value than the body
                init, step = inits[i], steps[i]
                if init is not None and step is not None:
                    reach = step * last
                    known[arg] = (init[0] + min(reach, 0), init[1] + max(reach, 0))
    for region in op.regions:
        _region_bounds(region, known, limit, found)


def _trips(cond: ir.Block, steps: list[int | None], inits: list[Interval | None],
           returned: list[Any], body: ir.Block, known: dict[Any, Interval]) -> int | None:
    """The most iterations of a loop whose condition is ``counter < bound`` (or ``<=``): the
    counter an argument stepping up by a constant, the bound a constant or an argument the body
    returns unchanged; None when the condition is anything else."""
    compare = _terminator(cond).operands[0]
    if not isinstance(compare, ir.OpResult):
        return None
    op = compare.owner.operation
    if op.name != "stablehlo.compare":
        return None
    direction = re.search(r"\b(LT|LE)>", str(op.attributes["comparison_direction"]))
    signed = "compare_type" in op.attributes and re.search(
        r"\bSIGNED\b", str(op.attributes["compare_type"])) is not None
    if not signed or direction is None:
        return None
    lhs, rhs = op.operands
    if not isinstance(lhs, ir.BlockArgument):
        return None
    i = lhs.arg_number
    step, start = steps[i], inits[i]
    if step is None or step <= 0 or start is None:
        return None
    if isinstance(rhs, ir.BlockArgument):
        j = rhs.arg_number
        if steps[j] != 0 or inits[j] is None:  # the bound must not change in the loop
            return None
        bound = inits[j]
    else:
        bound = _interval(rhs, known)
    if bound is None:
        return None
    last = bound[1] + (1 if direction.group(1) == "LE" else 0)
    span = _range(lhs.type)
    if span is None or last - 1 + step > span[1]:
        return None  # the counter could wrap around before it reaches the bound
    return max(0, -(-(last - start[0]) // step))


def _step(arg: Any, returned: Any, known: dict[Any, Interval]) -> int | None:
    """What the body adds to an argument each iteration, when it is a constant (0: returned as
    it is); else None."""
    if returned == arg:
        return 0
    if not isinstance(returned, ir.OpResult):
        return None
    op = returned.owner.operation
    if op.name != "stablehlo.add" or arg not in list(op.operands):
        return None
    other = [v for v in op.operands if v != arg]
    value = _interval(other[0], known) if len(other) == 1 else None
    return value[0] if value is not None and value[0] == value[1] else None


def _interval(value: Any, known: dict[Any, Interval], depth: int = 0) -> Interval | None:
    """The range of an integer scalar: from constants, the arguments of loops around it
    (``known``), and sums, differences, products, maxima, minima, clamps, selects and converts
    of those; None when it is not an integer scalar or depends on anything else."""
    if value in known:
        return known[value]
    span = _range(value.type)
    if depth > 64 or span is None or not isinstance(value, ir.OpResult):
        return None
    found = _computed(value.owner.operation, known, depth)
    # beyond its type's range the value wraps around: nothing is known of it then
    return found if found is not None and span[0] <= found[0] and found[1] <= span[1] else None


def _range(kind: Any) -> Interval | None:
    """The values of a signed (or signless) integer scalar tensor type; None for another."""
    if (not isinstance(kind, ir.RankedTensorType) or kind.shape != []
            or not isinstance(kind.element_type, ir.IntegerType)
            or kind.element_type.is_unsigned or kind.element_type.width < 2):
        return None
    half = 1 << (kind.element_type.width - 1)
    return (-half, half - 1)


def _computed(op: ir.Operation, known: dict[Any, Interval], depth: int) -> Interval | None:
    """``_interval`` of an operation's result, from its operands'."""
    name = op.name
    if name == "stablehlo.constant":
        raw = op.attributes["value"]
        if not isinstance(raw, ir.DenseIntElementsAttr):
            return None
        number = int(raw[0])
        return (number, number)
    ins = [_interval(v, known, depth + 1) for v in op.operands]
    if name in ("stablehlo.convert", "stablehlo.reshape") and ins[0] is not None:
        return ins[0]
    if name == "stablehlo.negate" and ins[0] is not None:
        return (-ins[0][1], -ins[0][0])
    if name == "stablehlo.select" and ins[1] is not None and ins[2] is not None:
        return (min(ins[1][0], ins[2][0]), max(ins[1][1], ins[2][1]))
    if name == "stablehlo.clamp" and ins[0] is not None and ins[1] is not None and (
            ins[2] is not None):
        low, x, high = ins[0], ins[1], ins[2]
        return (min(max(x[0], low[0]), high[1]), max(min(x[1], high[1]), low[0]))
    combine = _COMBINE.get(name)
    if combine is not None and len(ins) == 2 and ins[0] is not None and ins[1] is not None:
        return combine(ins[0], ins[1])
    return None


def _terminator(block: ir.Block) -> ir.Operation:
    ops = list(block.operations)
    return ops[-1].operation
