"""Names a traced function may not rebind: a module global (``global G; G = ...``, ``del G``)
or a variable of an enclosing function (``nonlocal w; w = ...``). Refused before the function
runs, with the name left as it was.

Why refused rather than carried: NumPy rebinds the name on every call, to that call's value. A
compiled function does not run its Python again: the trace sees one rebinding, and the name
would hold a traced value (a dead tracer object) once the trace ends. Binding it after each call
to the value that call computed would cover a plain ``G = a * 2`` in the function's own body,
but not a rebinding under a rolled loop or a traced branch (the converted statement carries
locals, not module names), nor one in a helper of another module, nor one to a Python object
(a list, a counter) that each NumPy call would make anew. One rule for every form: the value is
returned and bound by the caller (``G = jitted(a)``), or, to keep the same array, written into
it in place (``G[...] = ...``), which is carried on every call.

The check reads bytecode: the traced function and the code nested in it (inner functions,
lambdas, comprehensions) up front, each user function the converted code calls before it runs
(``control_flow.runtime.callee``). A helper that runs as plain Python (``loops='unroll'``, or one
called by library code) is not seen that way; ``guard`` puts back a global of the function's
module, or a closure cell of the function, that the trace left holding a traced value, and
refuses the trace.
"""

from __future__ import annotations

import contextlib
import dis
import functools
import itertools
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from reactant_lab.errors import TraceError
from reactant_lab.trace.numpy_mode import ProxyArray, is_traced
from reactant_lab.trace.user_errors import describe
from reactant_lab.trace.user_fn import underlying

_GLOBAL = frozenset({"STORE_GLOBAL", "DELETE_GLOBAL"})
_CELL = frozenset({"STORE_DEREF", "DELETE_DEREF"})
_MISSING = object()


@dataclass(frozen=True)
class Rebinding:
    """One instruction that rebinds a name outside the function."""

    name: str
    """The name rebound."""
    scope: str
    """``'global'`` or ``'nonlocal'`` (a variable of an enclosing function)."""
    deleted: bool
    """True for ``del NAME``."""
    where: traceback.FrameSummary
    """File, line and function of the instruction."""


@functools.lru_cache(maxsize=2048)
def rebindings(code: types.CodeType, outer: frozenset[str] | None = None
               ) -> tuple[Rebinding, ...]:
    """The names ``code`` and the code nested in it rebind outside ``code``: globals, and the
    free variables in ``outer`` (default: all of ``code``'s, the variables of the functions
    around it; a nested function's free variable that is ``code``'s own local is no rebinding
    outside)."""
    escaping = frozenset(code.co_freevars) if outer is None else outer
    found = []
    for ins in dis.get_instructions(code):
        if ins.opname in _GLOBAL or (ins.opname in _CELL and ins.argval in escaping):
            line = ins.positions.lineno if ins.positions is not None else None
            found.append(Rebinding(
                ins.argval, "global" if ins.opname in _GLOBAL else "nonlocal",
                ins.opname.startswith("DELETE"),
                traceback.FrameSummary(code.co_filename, line or code.co_firstlineno,
                                       code.co_name)))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += rebindings(const, frozenset(const.co_freevars) & escaping)
    return tuple(found)


@functools.lru_cache(maxsize=1024)
def _augmented(code: types.CodeType) -> tuple[tuple[str, traceback.FrameSummary], ...]:
    """(parameter, where) per augmented assignment to a parameter of ``code`` (``a -= x``)."""
    params = frozenset(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    found = []
    for ins, after in itertools.pairwise(dis.get_instructions(code)):
        if (ins.opname.startswith("INPLACE_") or (ins.opname == "BINARY_OP"
                                                  and ins.argrepr.endswith("="))) and \
                after.opname in {"STORE_FAST", "STORE_DEREF"} and after.argval in params:
            line = ins.positions.lineno if ins.positions is not None else None
            found.append((after.argval, traceback.FrameSummary(
                code.co_filename, line or code.co_firstlineno, code.co_name)))
    return tuple(found)


def augmented_parameters(fn: Callable[..., Any]) -> tuple[tuple[str, traceback.FrameSummary],
                                                          ...]:
    """(parameter, where) per augmented assignment to a parameter of ``fn`` (``a -= x``): an
    update in place of a NumPy argument, but in JAX code a new value bound to the local name,
    the caller's array untouched."""
    code = getattr(underlying(fn), "__code__", None)
    return _augmented(code) if isinstance(code, types.CodeType) else ()


def check(fn: Callable[..., Any], called: bool = False) -> None:
    """Raise TraceError when ``fn`` (or code nested in it) rebinds a global or a variable of an
    enclosing function; ``called``: ``fn`` is a function the traced one calls."""
    func = underlying(fn)
    code = getattr(func, "__code__", None)
    if not isinstance(code, types.CodeType):
        return
    found = rebindings(code)
    if found:
        raise _refusal(getattr(func, "__qualname__", code.co_name), found, called)


def _refusal(name: str, found: tuple[Rebinding, ...], called: bool) -> TraceError:
    first = found[0]
    what = (f"the global {first.name!r}" if first.scope == "global" else
            f"{first.name!r}, a variable of the function around it (nonlocal {first.name})")
    verb = "deletes" if first.deleted else "rebinds"
    who = f"{name}, called while tracing," if called else name
    others = sorted({r.name for r in found} - {first.name})
    more = f" (and also {', '.join(others)})" if others else ""
    return TraceError(
        f"{who} {verb} {what}{more}, at {describe(first.where)}\nA compiled function does not "
        "run its Python again on each call: the name would be bound once, when the function is "
        f"traced, to a traced value, not on every call as NumPy does. {first.name} is left as it "
        f"was. Return the new value and bind it where you call the function ({first.name} = "
        f"jitted(...)), or keep the same array and update it in place ({first.name}[...] = "
        "new value), which every call carries.")


@contextlib.contextmanager
def guard(fn: Callable[..., Any]) -> Iterator[None]:
    """While a trace of ``fn`` runs: a global of its module or a closure cell of it that the
    trace leaves holding a traced value (rebound by code ``check`` does not see) is put back
    as it was, and the trace refused with TraceError (an error of the trace itself wins)."""
    func = underlying(fn)
    namespace: dict[str, Any] = getattr(func, "__globals__", None) or {}
    before = dict(namespace)
    held = [(name, cell, _contents(cell)) for name, cell in _cells(func, namespace)]
    try:
        yield
    except BaseException:
        _restore(namespace, before, held)
        raise
    leaked = _restore(namespace, before, held)
    if leaked:
        raise TraceError(
            f"Tracing {getattr(func, '__qualname__', fn)} rebound {', '.join(leaked)} to a "
            "traced value (in a function it calls, run as plain Python); it is put back as it "
            "was. A compiled function does not run its Python again on each call. Return the "
            "new value and bind it where you call the function, or update the array in place "
            "(NAME[...] = new value).")


def _cells(func: Any, namespace: dict[str, Any]) -> list[tuple[str, types.CellType]]:
    """(name, closure cell) of ``func`` and of the functions it holds in its cells or reads
    from its module (the helpers it calls directly): the cells a helper run as plain Python
    may rebind."""
    if not isinstance(func, types.FunctionType):
        return []
    cells = list(zip(func.__code__.co_freevars, func.__closure__ or (), strict=True))
    helpers = [_contents(c) for _, c in cells]
    helpers += [namespace.get(n) for n in func.__code__.co_names]
    for helper in helpers:
        if isinstance(helper, types.FunctionType) and helper.__closure__:
            cells += zip(helper.__code__.co_freevars, helper.__closure__, strict=True)
    return cells


def _restore(namespace: dict[str, Any], before: dict[str, Any],
             held: list[tuple[str, types.CellType, Any]]) -> list[str]:
    """Put back what the trace left traced; the names, as the message shows them."""
    leaked = []
    for name, value in list(namespace.items()):
        old = before.get(name, _MISSING)
        if value is not old and _holds_traced(value):
            leaked.append(f"the global {name!r}")
            if old is _MISSING:
                del namespace[name]
            else:
                namespace[name] = old
    for name, cell, old in held:
        value = _contents(cell)
        if value is not old and _holds_traced(value):
            leaked.append(f"the closure variable {name!r}")
            if old is _MISSING:
                del cell.cell_contents
            else:
                cell.cell_contents = old
    return leaked


def _contents(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell: the variable is not bound yet
        return _MISSING


def _holds_traced(value: Any) -> bool:
    """A traced value (NumPy mode's array, a JAX tracer), or a list / tuple / dict of them."""
    if isinstance(value, dict):
        value = tuple(value.values())
    items = value if isinstance(value, list | tuple) else (value,)
    return any(isinstance(v, ProxyArray) or is_traced(v) for v in items)
