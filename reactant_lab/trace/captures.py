"""Arrays a function reads from outside its arguments (closure cells, module globals) become
linear arguments, as Reactant traces the function object itself: their paths are ``fn.G``
(a global) and ``fn.<closure>.w`` (a closure variable), a changed value is a new input on the
next call, and an in-place update is written back into the very array the function reads. A
function that rebinds such a name (``global G; G = ...``) is refused before it runs (see
``rebinding``)."""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

CLOSURE = "<closure>."
"""Key prefix of a closure variable (``<closure>.w``); a global's key is its name (``G``)."""

_LOAD = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})


def capture_path(key: str) -> str:
    """``fn.G`` / ``fn.<closure>.w``: the path of a captured array."""
    return "fn." + key


def _is_capturable(value: Any) -> bool:
    return (isinstance(value, np.ndarray | jax.Array)
            and not isinstance(value, jax.core.Tracer))


def _function(fn: Any) -> types.FunctionType | None:
    """The plain Python function behind ``fn`` (partials and bound methods unwrapped)."""
    while isinstance(fn, functools.partial | types.MethodType):
        fn = fn.func if isinstance(fn, functools.partial) else fn.__func__
    return fn if isinstance(fn, types.FunctionType) else None


@functools.lru_cache(maxsize=1024)
def _global_names(code: types.CodeType) -> frozenset[str]:
    """Names read as globals by ``code`` and the code nested in it (lambdas, comprehensions,
    inner functions)."""
    loads = {ins.argval for ins in dis.get_instructions(code) if ins.opname in _LOAD}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            loads |= _global_names(const)
    return frozenset(loads)


def find(fn: Callable[..., Any]) -> dict[str, Any]:
    """Key -> array, for every array ``fn`` reads from a closure cell or a module global."""
    func = _function(fn)
    if func is None:
        return {}
    found: dict[str, Any] = {}
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=True):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell: the variable is not bound yet
            continue
        if _is_capturable(value):
            found[CLOSURE + name] = value
    namespace = func.__globals__
    for name in sorted(_global_names(func.__code__)):
        value = namespace.get(name)
        if _is_capturable(value):
            found[name] = value
    return found


def read(fn: Callable[..., Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The current values of the captured arrays ``keys`` (for a call of a compiled ``fn``)."""
    func = _function(fn)
    assert func is not None  # keys came from find(fn)
    cells = dict(zip(func.__code__.co_freevars, func.__closure__ or (), strict=True))
    out = {}
    for key in keys:
        if key.startswith(CLOSURE):
            cell = cells[key[len(CLOSURE):]]
            try:
                out[key] = cell.cell_contents
            except ValueError:
                out[key] = None
        else:
            out[key] = func.__globals__.get(key)
    return out


def rebind(fn: Callable[..., Any], values: dict[str, Any]) -> Callable[..., Any]:
    """``fn`` as it would run with its captured arrays replaced by ``values`` (traced values):
    a copy of the function with new closure cells and a globals dict overlaying the replaced
    names; the user's own function and namespace are left alone."""
    if not values:
        return fn
    if isinstance(fn, functools.partial):
        return functools.partial(rebind(fn.func, values), *fn.args, **fn.keywords)
    if isinstance(fn, types.MethodType):
        return types.MethodType(rebind(fn.__func__, values), fn.__self__)
    func = fn
    assert isinstance(func, types.FunctionType)
    closure = func.__closure__
    if closure is not None:
        closure = tuple(
            types.CellType(values[CLOSURE + name]) if CLOSURE + name in values else cell
            for name, cell in zip(func.__code__.co_freevars, closure, strict=True))
    namespace = func.__globals__
    replaced = {k: v for k, v in values.items() if not k.startswith(CLOSURE)}
    if replaced:
        namespace = {**namespace, **replaced}
    new = types.FunctionType(func.__code__, namespace, func.__name__, func.__defaults__,
                             closure)
    new.__kwdefaults__ = func.__kwdefaults__
    new.__qualname__ = func.__qualname__
    new.__dict__.update(func.__dict__)
    return new
