"""The names the user wrote for a call's leaves: the traced function's parameter names in place of
``args[i]`` / ``kwargs['k']`` (``args[0]['w1']`` -> ``p['w1']``, ``args[3]`` of ``f(x, *rest)``
-> ``rest[2]``), and the variable its ``return`` statements hand back in place of ``result``
(``return t`` -> ``t``; ``return u, v`` -> ``result[1]`` is ``v``). A mutated argument's
``resargs`` result takes the argument's name. Labels only: a function whose signature or
source cannot be read keeps its paths."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from reactant_lab.trace.control_flow.convert import source_lines

_ARGS = re.compile(r"^args\[(\d+)\](.*)$", re.DOTALL)
_KWARGS = re.compile(r"^kwargs\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\](.*)$", re.DOTALL)
_RESULT = re.compile(r"^result(?:\[(\d+)\])?(.*)$", re.DOTALL)
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def python_names(fn: Callable[..., Any] | None, arg_paths: Iterable[str],
                 result_paths: Iterable[str]) -> dict[str, str]:
    """Path -> the name the user wrote, for each argument path (linear or static) and result
    path that ``fn``'s signature or source names differently; a path it does not name is
    absent."""
    if fn is None:
        return {}
    out: dict[str, str] = {}
    params = _parameters(fn)
    if params is not None:
        for path in arg_paths:
            name = _arg_name(path, params)
            if name is not None and name != path:
                out[path] = name
    returned = _returned(fn)
    for path in result_paths:
        name = (out.get(path[3:]) if path.startswith(("resargs", "reskwargs"))
                else _result_name(path, returned))
        if name is not None and name != path:
            out[path] = name
    return out


def _parameters(fn: Callable[..., Any]) -> list[inspect.Parameter] | None:
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        return None


def _arg_name(path: str, params: list[inspect.Parameter]) -> str | None:
    """``args[1]['w']`` -> ``p['w']`` when the second positional parameter is ``p``."""
    m = _ARGS.match(path)
    if m is not None:
        index, rest = int(m.group(1)), m.group(2)
        positional = [p for p in params if p.kind in _POSITIONAL]
        if index < len(positional):
            return positional[index].name + rest
        star = next((p for p in params if p.kind == inspect.Parameter.VAR_POSITIONAL), None)
        return None if star is None else f"{star.name}[{index - len(positional)}]{rest}"
    m = _KWARGS.match(path)
    if m is None:
        return None
    key, rest = str(ast.literal_eval(m.group(1))), m.group(2)
    if any(p.name == key and p.kind in _KEYWORD for p in params):
        return key + rest
    star = next((p for p in params if p.kind == inspect.Parameter.VAR_KEYWORD), None)
    return None if star is None else f"{star.name}[{m.group(1)}]{rest}"


def _result_name(path: str, returned: list[ast.expr] | None) -> str | None:
    """``result`` -> ``t`` when every ``return`` hands back ``t``; ``result[1]...`` -> ``v...``
    when every ``return`` is a tuple (or list) display whose second item is ``v``."""
    m = _RESULT.match(path)
    if m is None or not returned:
        return None
    index, rest = m.group(1), m.group(2)
    if index is None:
        found = {r.id for r in returned if isinstance(r, ast.Name)}
        whole = len(found) == 1 and all(isinstance(r, ast.Name) for r in returned)
        return found.pop() + rest if whole and not rest else None
    k = int(index)
    items = [r.elts[k] if isinstance(r, ast.Tuple | ast.List) and k < len(r.elts)
             and not any(isinstance(e, ast.Starred) for e in r.elts[:k + 1]) else None
             for r in returned]
    names = {e.id for e in items if isinstance(e, ast.Name)}
    if len(names) == 1 and all(isinstance(e, ast.Name) for e in items):
        return names.pop() + rest
    return None


def _returned(fn: Callable[..., Any]) -> list[ast.expr] | None:
    """The expressions ``fn``'s own ``return`` statements hand back (a bare ``return``: None
    as a constant), or None when its source cannot be read."""
    code = _code_of(fn)
    if code is None or code.co_name == "<lambda>":
        return None
    try:
        lines, _ = source_lines(code)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    node = next((n for n in ast.walk(tree)
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                 and n.name == code.co_name), None)
    if node is None:
        return None
    return [r.value if r.value is not None else ast.Constant(None) for r in _returns(node.body)]


def _code_of(fn: object) -> types.CodeType | None:
    """The code object of a function, through ``functools.partial``, wrappers' ``__wrapped__``
    and bound methods."""
    for _ in range(8):
        code = getattr(fn, "__code__", None)
        if isinstance(code, types.CodeType):
            return code
        fn = getattr(fn, "__wrapped__", None) or getattr(fn, "func", None) \
            or getattr(fn, "__func__", None)
        if fn is None:
            return None
    return None


def _returns(body: list[ast.stmt]) -> Iterator[ast.Return]:
    """The ``return`` statements of a function body, not of the functions nested in it."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.Return):
            yield node
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
                            | ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))
