"""Returns out of ``if`` statements, lifted so the ``if`` can be converted (AutoGraph's return
rewrite): ``if c: return a`` followed by ``return b`` becomes ``if c: r = a else: r = b`` and
one ``return r`` at the end, so a helper such as ``def match(x, y): if x + y == 3: return 1;
return 0`` traces to one select when its test is traced.

Only returns reached through ``if`` statements alone are lifted (one inside a loop, ``with``,
``try`` or ``match`` leaves the function as it is: its statement then stays Python and a traced
test there gets an error naming the ``return``). The statements after an ``if`` that returns in
one branch move into the branches that do not return (copied where neither always returns), so
each path assigns the result once and nothing runs after it.
"""

from __future__ import annotations

import ast
import copy

RETURN = "__rl_return_"
"""Prefix of the result variable of a function whose returns were lifted (carried by the
converted ``if`` statements, unlike the rewrite's other names)."""

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _returns(node: ast.AST) -> list[tuple[ast.Return, bool]]:
    """The ``return`` statements of ``node``'s function scope, each with whether only ``if``
    statements lie between it and the function's body."""
    found: list[tuple[ast.Return, bool]] = []

    def visit(stmt: ast.AST, plain: bool) -> None:
        if isinstance(stmt, ast.Return):
            found.append((stmt, plain))
            return
        for child in ast.iter_child_nodes(stmt):
            if not isinstance(child, _SCOPES):
                visit(child, plain and isinstance(stmt, ast.If))

    for stmt in getattr(node, "body", []):
        visit(stmt, True)
    return found


def _has_return(stmt: ast.stmt) -> bool:
    return any(isinstance(n, ast.Return) for n in _walk_scope(stmt))


def _walk_scope(node: ast.AST) -> list[ast.AST]:
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        out.append(n)
        todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, _SCOPES))
    return out


def _block(stmts: list[ast.stmt], result: str, after: list[ast.stmt]
           ) -> tuple[list[ast.stmt], bool]:
    """``stmts``, then ``after`` (what follows them in the enclosing blocks), with each return
    an assignment of ``result`` and nothing after it: the statements after an ``if`` that
    returns move into its branches. Also whether every path through them returns."""
    out: list[ast.stmt] = []
    for k, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Return):
            value = stmt.value if stmt.value is not None else ast.Constant(value=None)
            out.append(ast.copy_location(
                ast.Assign(targets=[ast.Name(id=result, ctx=ast.Store())], value=value), stmt))
            return out, True
        if not (isinstance(stmt, ast.If) and _has_return(stmt)):
            out.append(stmt)
            continue
        rest = [*stmts[k + 1:], *after]
        body, body_returns = _block(stmt.body, result, rest)
        orelse, else_returns = _block(stmt.orelse, result, copy.deepcopy(rest))
        stmt.body = body or [ast.copy_location(ast.Pass(), stmt)]
        stmt.orelse = orelse
        return [*out, stmt], body_returns and else_returns
    if after:
        tail, returns = _block(after, result, [])
        return out + tail, returns
    return out, False


_GROWTH = 8
"""How many times its size a function may grow by the copies of lifted statements (a chain of
``if`` statements that each return on some paths only copies what follows them into both of
their branches); a function that would grow more is left as it is."""


def lift(fn: ast.FunctionDef, index: int) -> bool:
    """Lift the returns of ``fn`` (its nested functions are lifted on their own) where one
    lies inside an ``if`` and all lie under ``if`` statements only; ``index`` makes the result
    variable's name unique. Returns whether ``fn`` changed."""
    found = _returns(fn)
    nested = [r for r, _ in found if not any(r is s for s in fn.body)]
    if not nested or not all(plain for _, plain in found):
        return False
    result = f"{RETURN}{index}"
    end = fn.body[-1]
    body = copy.deepcopy(fn.body)
    if not isinstance(end, ast.Return):
        body.append(ast.copy_location(ast.Return(value=None), end))
    lifted, _ = _block(body, result, [])
    if _size(lifted) > _GROWTH * _size(fn.body) + 100:
        return False
    fn.body = [*lifted, ast.copy_location(
        ast.Return(value=ast.Name(id=result, ctx=ast.Load())), end)]
    return True


def _size(stmts: list[ast.stmt]) -> int:
    return sum(1 for stmt in stmts for _ in ast.walk(stmt))


def lift_all(tree: ast.AST) -> int:
    """Lift the returns of every function in ``tree``; the number of functions changed."""
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    return sum(lift(fn, k) for k, fn in enumerate(functions))
