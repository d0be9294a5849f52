"""A user function -> the same function with its loops, branches and calls routed through the
runtime helpers: its source parsed, rewritten (``transform``) and compiled under its own file
name and line numbers, then bound to its own globals, closure cells and defaults."""

from __future__ import annotations
import __future__

import ast
import functools
import inspect
import linecache
import re
import textwrap
import types
from collections.abc import Callable
from typing import Any

from reactant_lab.trace.control_flow import returns
from reactant_lab.trace.control_flow.transform import RT, Rewrite
from reactant_lab.trace.user_errors import is_user_file

_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag

_MADE: set[types.CodeType] = set()
"""Code objects made by the rewrite (never rewritten again)."""


_DEF_LINE = re.compile(r"^\s*(?:async\s+)?def\s|^\s*@")
"""A line that starts a function's source: its ``def`` or a decorator."""


def source_lines(code: types.CodeType) -> tuple[list[str], int]:
    """``inspect.getsourcelines(code)``: the lines of the function ``code`` was compiled from and
    the number of the first. Read from the line cache directly: for a code object,
    ``inspect.getmodule`` first scans every loaded module's file (a realpath of each: 0.07-0.1 s
    on a process's first call with JAX loaded). Falls back to ``inspect`` where the line cache
    has no source (a loader-only module)."""
    file = code.co_filename
    linecache.checkcache(file)
    lines = linecache.getlines(file)
    if not lines:
        return inspect.getsourcelines(code)
    at = code.co_firstlineno - 1
    if not 0 <= at < len(lines):
        raise OSError(f"line {at + 1} is past the end of {file}")
    while at > 0 and not _DEF_LINE.match(lines[at]):
        at -= 1
    return inspect.getblock(lines[at:]), at + 1


@functools.lru_cache(maxsize=2048)
def rewritten_code(code: types.CodeType) -> tuple[types.CodeType | None, str | None]:
    """(the rewritten code, None), (None, None) when nothing needs rewriting, or (None, why
    not)."""
    if code.co_name == "<lambda>":
        return None, None
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return None, f"{code.co_name} is a generator or async function"
    try:
        lines, start = source_lines(code)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError) as exc:
        return None, f"the source of {code.co_qualname} is not available ({type(exc).__name__})"
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, ast.FunctionDef) or fn.name != code.co_name:
        return None, f"the source of {code.co_qualname} could not be matched to its code"
    fn.decorator_list = []
    ast.increment_lineno(tree, start - 1)
    returns.lift_all(fn)
    rewrite = Rewrite(code.co_filename)
    fn = rewrite.visit(fn)
    if not rewrite.converted:
        return None, None
    return _compile(code, fn), None


_DEFINED = "__rl_defined"
"""The name the function is defined under inside the factory: its own name there would make a
call of itself (recursion) read a cell of the factory instead of the global or closure
variable the original reads."""


def _compile(code: types.CodeType, fn: ast.FunctionDef) -> types.CodeType:
    """Compile ``fn`` inside a factory whose parameters are ``code``'s closure variables and the
    runtime, so the function reads them as closure cells; return the function's code."""
    params = [ast.arg(arg=name) for name in (*code.co_freevars, RT)]
    fn.name = _DEFINED
    factory = ast.FunctionDef(
        name="__rl_factory", body=[fn, ast.Return(value=ast.Name(id=fn.name, ctx=ast.Load()))],
        args=ast.arguments(posonlyargs=[], args=params, vararg=None, kwonlyargs=[],
                           kw_defaults=[], kwarg=None, defaults=[]),
        decorator_list=[], returns=None, type_comment=None, lineno=fn.lineno, col_offset=0)
    module = ast.Module(body=[factory], type_ignores=[])
    _fix_locations(factory, fn)
    compiled = compile(module, code.co_filename, "exec", flags=code.co_flags & _FUTURE_FLAGS,
                       dont_inherit=True)
    outer = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    made = next(c for c in outer.co_consts
                if isinstance(c, types.CodeType) and c.co_name == _DEFINED)
    made = _qualnames(made.replace(co_name=code.co_name), code.co_qualname, _DEFINED)
    _remember(made)
    return made


def _qualnames(code: types.CodeType, qualname: str, defined: str) -> types.CodeType:
    """``code`` named ``qualname``, its nested code named under it (not under the factory's
    ``defined``): op locations show these names."""
    consts = tuple(
        _qualnames(c, qualname + c.co_qualname.split(defined, 1)[-1], c.co_qualname)
        if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_qualname=qualname, co_consts=consts)


def _fix_locations(node: ast.AST, parent: ast.AST) -> None:
    """Give every node made by the rewrite its statement's location, and keep each node's
    range valid (the compiler checks it)."""
    if "lineno" in node._attributes:
        if getattr(node, "lineno", None) is None:
            # the statement's first line only: CPython places calls and method loads at the
            # end of a node's range
            line, col = getattr(parent, "lineno", 1), getattr(parent, "col_offset", 0)
            node.lineno, node.col_offset = line, col  # type: ignore[attr-defined]  # has one
            node.end_lineno, node.end_col_offset = line, col  # type: ignore[attr-defined]
        start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]  # set above
        end = (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]  # set above
        valid = None not in end and end >= start
        node.end_lineno, node.end_col_offset = end if valid else start  # type: ignore[attr-defined]
        parent = node
    for child in ast.iter_child_nodes(node):
        _fix_locations(child, parent)


def _remember(code: types.CodeType) -> None:
    _MADE.add(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _remember(const)


def convert_function(fn: types.FunctionType, runtime: Any) -> tuple[Callable[..., Any],
                                                                      str | None]:
    """``fn`` rewritten (or ``fn`` itself and why not, None when it has nothing to rewrite)."""
    if fn.__code__ in _MADE:
        return fn, None
    code, why = rewritten_code(fn.__code__)
    if code is None:
        return fn, why
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True))
    cells[RT] = types.CellType(runtime)
    closure = tuple(cells[name] for name in code.co_freevars)
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__dict__.update(fn.__dict__)
    new.__annotations__ = fn.__annotations__
    return new, None


def convert(fn: Any, runtime: Any) -> tuple[Any, str | None]:
    """``fn`` (a function, a functools.partial or a bound method of one) with its control flow
    converted; anything else as it is. Returns it and a note when it could not be."""
    if isinstance(fn, functools.partial):
        inner, why = convert(fn.func, runtime)
        if inner is fn.func:
            return fn, why
        return functools.partial(inner, *fn.args, **fn.keywords), why
    if isinstance(fn, types.MethodType):
        inner, why = convert(fn.__func__, runtime)
        return (fn if inner is fn.__func__ else types.MethodType(inner, fn.__self__)), why
    if isinstance(fn, types.FunctionType):
        return convert_function(fn, runtime)
    return fn, None


def is_user_function(fn: Any) -> bool:
    """A plain function (or bound method of one) defined in the user's code."""
    func = fn.__func__ if isinstance(fn, types.MethodType) else fn
    return (isinstance(func, types.FunctionType) and func.__code__ not in _MADE
            and is_user_file(func.__code__.co_filename))
