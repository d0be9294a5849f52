"""The AST rewrite: each ``for`` / ``while`` / ``if`` of a function becomes a call of a runtime
helper (``__rl_cf__``) with its body as a nested function of the variables it assigns, and each
call's callee goes through ``__rl_cf__.callee`` (user functions are converted when called).

A statement that cannot be handed over (its body breaks, continues or returns out of it, deletes
or declares names, has an ``else``) stays Python; its header still goes through the runtime so
that a traced value there gets an error naming the statement and the reason.
"""

from __future__ import annotations

import ast
from typing import Any

RT = "__rl_cf__"
"""Name of the runtime helpers inside converted code (a closure variable)."""
PREFIX = "__rl_"
"""Prefix of every name the rewrite makes; such names are never carried."""
_NOT_WRAPPED = frozenset({"super", "locals", "globals", "vars", "dir", "eval", "exec", "range",
                          "len", "isinstance", "print", "int", "float", "bool", "tuple", "list",
                          "dict", "zip", "enumerate", "min", "max", "abs", "sum", "type"})


class _Bound(ast.NodeVisitor):
    """Names a block binds in its own scope (nested functions, classes, lambdas and
    comprehensions have their own)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store | ast.Del):
            self.names.add(node.id)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.names.add(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]  # same handling

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.names.add(node.name)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        pass

    def visit_ListComp(self, node: Any) -> None:
        pass

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    def visit_alias(self, node: ast.alias) -> None:
        self.names.add((node.asname or node.name).split(".")[0])

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.names.add(node.name)
        self.generic_visit(node)


def bound_names(stmts: list[ast.stmt]) -> list[str]:
    """The names ``stmts`` assign (sorted; the rewrite's own left out)."""
    finder = _Bound()
    for stmt in stmts:
        finder.visit(stmt)
    return sorted(n for n in finder.names if not n.startswith(PREFIX))


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.While, ast.AsyncFor)
_ESCAPES = {ast.Return: "return", ast.Yield: "yield", ast.YieldFrom: "yield from",
            ast.Await: "await", ast.Global: "global", ast.Nonlocal: "nonlocal",
            ast.Break: "break", ast.Continue: "continue", ast.Delete: "del"}


def _scope_nodes(stmts: list[ast.stmt]) -> Any:
    """The nodes of ``stmts`` in this function's scope; of a nested loop only those that leave
    it (return, yield, await: its break and continue are its own)."""
    todo: list[ast.AST] = []

    def push(node: ast.AST) -> None:
        if isinstance(node, _SCOPES):
            return
        if isinstance(node, _LOOPS):
            todo.extend(n for n in ast.walk(node)
                        if isinstance(n, ast.Return | ast.Yield | ast.YieldFrom | ast.Await))
            return
        todo.append(node)

    for stmt in stmts:
        push(stmt)
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            push(child)


def escape(stmts: list[ast.stmt]) -> str | None:
    """Why ``stmts`` (a loop body or a branch) cannot become a function of its variables (a
    statement that leaves it or changes how names bind), or None."""
    for node in _scope_nodes(stmts):
        what = _ESCAPES.get(type(node))
        if isinstance(node, ast.Name) and node.id == "super":
            what = "super()"  # needs the method's own frame
        if what is not None:
            return f"`{what}` at line {getattr(node, 'lineno', '?')}"
    return None


_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update",
                       "add", "discard", "setdefault", "popitem", "appendleft"})
"""Methods of Python containers that change them (NumPy arrays have none of these)."""


def side_effect(stmts: list[ast.stmt]) -> str | None:
    """A Python side effect in ``stmts`` that tracing the body once (or both branches) would
    get wrong: printing, changing a list / dict / set, setting an attribute."""
    for node in ast.walk(ast.Module(body=stmts, type_ignores=[])):
        what = None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "print":
                what = "print(...)"
            elif isinstance(func, ast.Attribute) and func.attr in _MUTATORS:
                what = f".{func.attr}(...)"
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and node.attr not in ("real", "imag")):
            what = f"setting .{node.attr}"
        if what is not None:
            return f"a Python side effect ({what} at line {getattr(node, 'lineno', '?')})"
    return None


def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _rt(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_name(RT), attr=attr, ctx=ast.Load())


def _call(attr: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=_rt(attr), args=list(args), keywords=[])


def _names_tuple(names: list[str], store: bool = False) -> ast.Tuple:
    return ast.Tuple(elts=[_name(n, store) for n in names], ctx=ast.Store() if store else ast.Load())


def _const(value: Any) -> ast.Constant:
    return ast.Constant(value=value)


def _def(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None,
                           type_comment=None)


def _state_fn(name: str, params: list[str], names: list[str], body: list[ast.stmt],
              result: ast.expr | None = None) -> ast.FunctionDef:
    """``def name(*params, __rl_vars): (names) = __rl_vars; body; return (names)``."""
    head: list[ast.stmt] = ([ast.Assign(targets=[_names_tuple(names, True)],
                                        value=_name(PREFIX + "vars"))] if names else [])
    # locals() rather than the names: a name the body deleted (an `except ... as e`) is
    # handed back as Undefined
    everything = _call("initial", ast.Call(func=_name("locals"), args=[], keywords=[]),
                       _const(tuple(names)))
    tail = ast.Return(value=result if result is not None else everything)
    return _def(name, [*params, PREFIX + "vars"], head + body + [tail])


class Rewrite(ast.NodeTransformer):
    """Rewrites one function's loops, branches and calls (see the module docstring)."""

    def __init__(self, filename: str):
        self.filename = filename
        self.converted = 0
        """How many statements and calls were rewritten."""
        self._count = 0

    def _site(self, node: ast.stmt) -> ast.Constant:
        header = ast.unparse(node).splitlines()[0].rstrip(":")
        return _const((self.filename, node.lineno, header[:80]))

    def _fresh(self, kind: str, node: ast.stmt) -> str:
        self._count += 1
        return f"{PREFIX}{kind}_{node.lineno}_{self._count}"

    def _handover(self, node: ast.stmt, fns: list[ast.stmt], call: ast.Call,
                  names: list[str]) -> list[ast.stmt]:
        """The nested functions, then ``(names) = call`` (or just the call)."""
        self.converted += 1
        if names:
            names_const = _const(tuple(names))
            call.args.insert(-1, _call("initial", ast.Call(func=_name("locals"), args=[],
                                                            keywords=[]), names_const))
            call.args.insert(-1, names_const)
            last: ast.stmt = ast.Assign(targets=[_names_tuple(names, True)], value=call)
        else:
            call.args.insert(-1, _const(()))
            call.args.insert(-1, _const(()))
            last = ast.Expr(value=call)
        out = [*fns, last]
        for stmt in out:  # at the statement's first line: CPython locates a call at its end
            stmt.lineno, stmt.col_offset = node.lineno, node.col_offset
            stmt.end_lineno, stmt.end_col_offset = node.lineno, node.col_offset
        return out

    def visit_For(self, node: ast.For) -> Any:
        site = self._site(node)
        effect = side_effect(node.body)
        self.generic_visit(node)
        reason = ("it has an `else` clause" if node.orelse else escape(node.body) or effect)
        if reason is not None:
            node.iter = _call("plain_iter", node.iter, _const(f"{reason}"), site)
            self.converted += 1
            return node
        names = bound_names([ast.Assign(targets=[node.target], value=_const(0)), *node.body])
        target = node.target.id if isinstance(node.target, ast.Name) else None
        body_name = self._fresh("for", node)
        body = [ast.Assign(targets=[node.target], value=_name(PREFIX + "i")), *node.body]
        fn = _state_fn(body_name, [PREFIX + "i"], names, body)
        it = node.iter
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and not it.keywords and not any(isinstance(a, ast.Starred) for a in it.args)):
            it = _call("iterate", it.func, *it.args)
        call = _call("for_stmt", it, _name(body_name), _const(target), site)
        return self._handover(node, [fn], call, names)

    def visit_While(self, node: ast.While) -> Any:
        site = self._site(node)
        effect = side_effect(node.body)
        self.generic_visit(node)
        walrus = any(isinstance(n, ast.NamedExpr) for n in ast.walk(node.test))
        reason = ("it has an `else` clause" if node.orelse else
                  "its condition assigns a name (:=)" if walrus else escape(node.body) or effect)
        if reason is not None:
            node.test = _call("plain_cond", node.test, _const(reason), site)
            self.converted += 1
            return node
        names = bound_names(node.body)
        test_name, body_name = self._fresh("test", node), self._fresh("while", node)
        test = _state_fn(test_name, [], names, [], result=node.test)
        body = _state_fn(body_name, [], names, node.body)
        call = _call("while_stmt", _name(test_name), _name(body_name), site)
        return self._handover(node, [test, body], call, names)

    def visit_If(self, node: ast.If) -> Any:
        site = self._site(node)
        effect = side_effect(node.body + node.orelse)
        self.generic_visit(node)
        walrus = any(isinstance(n, ast.NamedExpr) for n in ast.walk(node.test))
        reason = ("its condition assigns a name (:=)" if walrus else
                  escape(node.body) or escape(node.orelse) or effect)
        if reason is not None:
            node.test = _call("plain_cond", node.test, _const(reason), site)
            self.converted += 1
            return node
        names = bound_names(node.body + node.orelse)
        then_name, else_name = self._fresh("then", node), self._fresh("else", node)
        then = _state_fn(then_name, [], names, node.body)
        other = _state_fn(else_name, [], names, node.orelse)
        call = _call("if_stmt", node.test, _name(then_name), _name(else_name), site)
        return self._handover(node, [then, other], call, names)

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and (func.id in _NOT_WRAPPED or func.id.startswith(PREFIX)):
            return node
        if isinstance(func, ast.Name | ast.Attribute):
            node.func = ast.copy_location(_call("callee", func), func)
            self.converted += 1
        return node
