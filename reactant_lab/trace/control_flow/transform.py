"""The AST rewrite: each ``for`` / ``while`` / ``if`` of a function becomes a call of a runtime
helper (``__rl_cf__``) with its body as a nested function of the variables it assigns, and each
call's callee goes through ``__rl_cf__.callee`` (user functions are converted when called).

A loop's own ``break`` / ``continue`` become flags (AutoGraph's way): each sets its flag, the
statements after one run under ``if not flag:`` (converted too), a ``while`` tests ``not broke
and cond``, a ``for`` hands its break flag to the runtime, and an ``else:`` runs under ``if not
broke:``. ``a and b`` / ``a or b`` / ``not a`` / ``a if c else b`` call runtime helpers with
the operands as lambdas (lazy, as in Python).

A statement that cannot be handed over (its body returns out of it, deletes or declares names,
has a Python side effect) stays Python, with its own ``break`` / ``continue``; its header still
goes through the runtime so that a traced value there gets an error naming the statement and
the reason.
"""

from __future__ import annotations

import ast
import collections
from typing import Any

from reactant_lab.trace.control_flow.returns import RETURN

RT = "__rl_cf__"
"""Name of the runtime helpers inside converted code (a closure variable)."""
PREFIX = "__rl_"
"""Prefix of every name the rewrite makes; such names are never carried (but for flags)."""
FLAG = PREFIX + "flag_"
"""Prefix of the flags that stand for ``break`` / ``continue`` in a converted loop: carried by
that loop and the statements in its body (as traced booleans when the loop rolls)."""
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


def bound_names(stmts: list[ast.stmt], keep: frozenset[str] = frozenset()) -> list[str]:
    """The names ``stmts`` assign (sorted; the rewrite's own left out, but for the flags of the
    loops around them, ``keep``, and the result of a function whose returns were lifted)."""
    finder = _Bound()
    for stmt in stmts:
        finder.visit(stmt)
    return sorted(n for n in finder.names
                  if not n.startswith(PREFIX) or n in keep or n.startswith(RETURN))


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


def escape(stmts: list[ast.stmt], jumps: bool = True) -> str | None:
    """Why ``stmts`` (a loop body or a branch) cannot become a function of its variables (a
    statement that leaves it or changes how names bind), or None. ``jumps=False``: the loop's
    own ``break`` / ``continue`` do not count (they become flags)."""
    for node in _scope_nodes(stmts):
        if not jumps and isinstance(node, ast.Break | ast.Continue):
            continue
        what = None if getattr(node, "rl_made", False) else _ESCAPES.get(type(node))
        if isinstance(node, ast.Name) and node.id == "super":
            what = "super()"  # needs the method's own frame
        if what is not None:
            return f"`{what}` at line {getattr(node, 'lineno', '?')}"
    return None


def jumps(stmts: list[ast.stmt]) -> list[ast.Break | ast.Continue]:
    """The ``break`` / ``continue`` statements of the loop whose body is ``stmts`` (those of
    nested loops are theirs; those of a nested loop's ``else`` are this loop's)."""
    found: list[ast.Break | ast.Continue] = []
    for stmt in stmts:
        if isinstance(stmt, ast.Break | ast.Continue):
            found.append(stmt)
        elif isinstance(stmt, _SCOPES):
            continue
        else:
            for block in _blocks(stmt):
                found += jumps(block)
    return found


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists of a compound statement that belong to the enclosing loop (of a
    nested loop: only its ``else``)."""
    if isinstance(stmt, _LOOPS):
        return [stmt.orelse]
    blocks = [getattr(stmt, f) for f in ("body", "orelse", "finalbody")
              if isinstance(getattr(stmt, f, None), list)]
    blocks += [h.body for h in getattr(stmt, "handlers", ())]
    blocks += [c.body for c in getattr(stmt, "cases", ())]
    return [b for b in blocks if b and isinstance(b[0], ast.stmt)]


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


_IN_PLACE_METHODS = frozenset({"fill", "sort", "put", "partition", "byteswap"})
"""Methods of NumPy arrays that write the array."""


def _write_targets(node: ast.AST) -> list[ast.expr]:
    """The expressions ``node`` may write in place (tuples flattened): assignment targets, an
    augmented target, ``out=`` arguments, the array of ``x.fill(...)`` / ``x.sort()``."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    elif isinstance(node, ast.Call):
        targets = [k.value for k in node.keywords if k.arg == "out"]
        if isinstance(node.func, ast.Attribute) and node.func.attr in _IN_PLACE_METHODS:
            targets.append(node.func.value)
    flat: list[ast.expr] = []
    while targets:
        t = targets.pop(0)
        if isinstance(t, ast.Tuple | ast.List):
            targets[:0] = t.elts
        else:
            flat.append(t.value if isinstance(t, ast.Starred) else t)
    return flat


def _array_name(node: ast.expr) -> str | None:
    """The name under subscripts and ``.real`` / ``.imag`` / ``.T`` (``w.real[i]``: w)."""
    while isinstance(node, ast.Subscript) or (
            isinstance(node, ast.Attribute) and node.attr in ("real", "imag", "T")):
        node = node.value
    return node.id if isinstance(node, ast.Name) and not node.id.startswith(PREFIX) else None


def written_in_place(stmts: list[ast.stmt]) -> list[str]:
    """The names whose arrays ``stmts`` may write in place, in order of first write: subscript
    targets (``C[i, :i + 1] *= beta``), augmented names (``x += 1``), ``out=`` arguments and
    ``x.fill(...)`` / ``x.sort()``; nested loops included, nested functions not. A guess for
    the runtime (a rolled loop carries those arrays on its first trace), not a promise. A name
    the body also rebinds (``x = A @ x; x /= n``) is left out: it may hold a new array."""
    found: dict[str, None] = {}
    rebound: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            rebound.add(node.id)
        whole = isinstance(node, ast.AugAssign | ast.Call)  # x += 1, out=x: x itself
        for target in _write_targets(node):
            name = _array_name(target) if whole or isinstance(target, ast.Subscript) else None
            if name is not None:
                found[name] = None
        for child in ast.iter_child_nodes(node):
            if not (isinstance(node, ast.AugAssign) and child is node.target):
                visit(child)  # `x += 1` writes x in place: it does not rebind it

    for stmt in stmts:
        visit(stmt)
    return [name for name in found if name not in rebound]


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


def _set(name: str, value: bool, at: ast.AST) -> ast.Assign:
    """``name = value`` at the place of ``at``."""
    return ast.copy_location(ast.Assign(targets=[_name(name, True)], value=_const(value)), at)


def _loaded(nodes: list[ast.AST]) -> collections.Counter[str]:
    """How often each name is read in ``nodes`` (nested scopes included: they may close over it)."""
    return collections.Counter(n.id for node in nodes for n in ast.walk(node)
                               if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))


def _mentions(stmt: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt))


def _assigned_first(body: list[ast.stmt], name: str) -> bool:
    """Whether every iteration of ``body`` assigns ``name`` before it can read it: the first
    top-level statement that mentions it assigns it plainly (``name = ...`` not reading it), or
    is a ``for name in ...`` after which nothing mentions it before assigning it again."""
    for k, stmt in enumerate(body):
        if not _mentions(stmt, name):
            continue
        if isinstance(stmt, ast.Assign):
            stores = all(isinstance(t, ast.Name) or (isinstance(t, ast.Tuple) and all(
                isinstance(e, ast.Name) for e in t.elts)) for t in stmt.targets)
            return stores and not _mentions(stmt.value, name)
        if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) and (
                stmt.target.id == name and not _mentions(stmt.iter, name)):
            rest = body[k + 1:]  # nothing reads what a loop that ran no iteration left
            return not any(_mentions(later, name) for later in rest) or _assigned_first(
                rest, name)
        return False
    return False


def loop_locals(func: ast.AST) -> dict[int, frozenset[str]]:
    """For each loop of ``func`` (by ``id``): the names its body assigns that need not be
    carried: read nowhere else in the function, and assigned before being read in each
    iteration (temporaries, an inner loop's index). They stay local to the body's function."""
    everywhere = _loaded([func])
    out: dict[int, frozenset[str]] = {}
    for loop in ast.walk(func):
        if not isinstance(loop, ast.For | ast.While):
            continue
        outside = everywhere - _loaded(list(loop.body))
        assigned = bound_names(loop.body)
        local = {n for n in assigned if not outside[n] and _assigned_first(loop.body, n)}
        if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and not outside[
                loop.target.id]:
            local.add(loop.target.id)
        out[id(loop)] = frozenset(local)
    return out


def _thunk(body: ast.expr) -> ast.Lambda:
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])
    return ast.copy_location(ast.Lambda(args=args, body=body), body)


_NO_THUNK = (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)
"""Expressions that would mean something else inside a lambda."""


def _def(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None,
                           type_comment=None)


def _unsets(names: list[str]) -> list[ast.stmt]:
    """``if __rl_cf__.unset(n): del n`` for each of ``names``: a variable the runtime hands back
    with no value (Undefined) is deleted, so that reading it raises UnboundLocalError at the
    user's line, as in Python, and the placeholder never reaches user code."""
    out: list[ast.stmt] = []
    for n in names:
        delete = ast.Delete(targets=[ast.Name(id=n, ctx=ast.Del())])
        delete.rl_made = True  # type: ignore[attr-defined]  # not the user's `del` (escape)
        out.append(ast.If(test=_call("unset", _name(n)), body=[delete], orelse=[]))
    return out


def _state_fn(name: str, params: list[str], names: list[str], body: list[ast.stmt],
              result: ast.expr | None = None) -> ast.FunctionDef:
    """``def name(*params, __rl_vars): (names) = __rl_vars; body; return (names)``."""
    head: list[ast.stmt] = ([ast.Assign(targets=[_names_tuple(names, True)],
                                        value=_name(PREFIX + "vars")), *_unsets(names)]
                            if names else [])
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
        self._active: frozenset[str] = frozenset()
        """The flags of the converted loops around the node being visited."""
        self._headers: dict[int, str] = {}
        """id() of an ``if`` the rewrite made -> how messages name it."""
        self._functions: list[str] = []
        """Names of the functions around the node being visited."""
        self._in_class = False
        self._locals: dict[int, frozenset[str]] = {}
        """id() of a loop -> the names its body need not carry (see ``loop_locals``)."""

    def _site(self, node: ast.stmt | ast.expr) -> ast.Constant:
        header = self._headers.get(id(node)) or ast.unparse(node).splitlines()[0].rstrip(":")
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
            after: list[ast.stmt] = [ast.Assign(targets=[_names_tuple(names, True)],
                                                value=call), *_unsets(names)]
        else:
            call.args.insert(-1, _const(()))
            call.args.insert(-1, _const(()))
            after = [ast.Expr(value=call)]
        out = [*fns, *after]
        for stmt in out:  # at the statement's first line: CPython locates a call at its end
            stmt.lineno, stmt.col_offset = node.lineno, node.col_offset
            stmt.end_lineno, stmt.end_col_offset = node.lineno, node.col_offset
        return out

    @staticmethod
    def _writes(call: ast.Call, writes: list[str]) -> None:
        """Hand the loop the values its body's in-place targets hold where it starts
        (``writes=initial(locals(), names)``)."""
        if writes:
            call.keywords.append(ast.keyword(arg="writes", value=_call(
                "initial", ast.Call(func=_name("locals"), args=[], keywords=[]),
                _const(tuple(writes)))))

    def _flags(self, node: ast.For | ast.While, found: list[ast.Break | ast.Continue]
               ) -> tuple[list[ast.stmt], str | None, str | None]:
        """Replace the loop's own ``break`` / ``continue`` by flags (AutoGraph's way): each sets
        its flag, and the statements after one that may have set it run under ``if not flag``.
        Returns the statements to put before the loop and the break and continue flags."""
        brk = FLAG + f"break_{node.lineno}_{self._tick()}" if any(
            isinstance(j, ast.Break) for j in found) else None
        cont = FLAG + f"continue_{node.lineno}_{self._tick()}" if any(
            isinstance(j, ast.Continue) for j in found) else None
        node.body = self._guard(node.body, brk, cont)
        if cont is not None:
            node.body.insert(0, _set(cont, False, node.body[0]))
        return ([_set(brk, False, node)] if brk is not None else []), brk, cont

    def _tick(self) -> int:
        self._count += 1
        return self._count

    def _guard(self, stmts: list[ast.stmt], brk: str | None, cont: str | None
               ) -> list[ast.stmt]:
        skip = cont or brk
        assert skip is not None
        out: list[ast.stmt] = []
        for k, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Break):
                assert brk is not None
                return out + [_set(f, True, stmt) for f in (brk, cont) if f is not None]
            if isinstance(stmt, ast.Continue):
                assert cont is not None
                return [*out, _set(cont, True, stmt)]
            inner = [j for b in _blocks(stmt) for j in jumps(b)] if not isinstance(
                stmt, _SCOPES) else []
            out.append(stmt)
            if not inner:
                continue
            self._guard_blocks(stmt, brk, cont)
            rest = stmts[k + 1:]
            if rest:
                guard = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=_name(skip)),
                               body=self._guard(rest, brk, cont), orelse=[])
                ast.copy_location(guard, rest[0])
                guard.end_lineno, guard.end_col_offset = rest[-1].end_lineno, rest[
                    -1].end_col_offset
                what = "break" if isinstance(inner[0], ast.Break) else "continue"
                self._headers[id(guard)] = (f"the rest of the loop body after the `{what}` "
                                            f"at line {inner[0].lineno}")
                out.append(guard)
            return out
        return out

    def _guard_blocks(self, stmt: ast.stmt, brk: str | None, cont: str | None) -> None:
        """The blocks of a compound statement with the loop's jumps replaced by flags."""
        fields = ("orelse",) if isinstance(stmt, _LOOPS) else ("body", "orelse", "finalbody")
        for f in fields:
            block = getattr(stmt, f, None)
            if isinstance(block, list) and jumps(block):
                setattr(stmt, f, self._guard(block, brk, cont))
        if not isinstance(stmt, _LOOPS):
            for part in [*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())]:
                if jumps(part.body):
                    part.body = self._guard(part.body, brk, cont)

    def _after(self, orelse: list[ast.stmt], brk: str | None) -> list[ast.stmt]:
        """A converted loop's ``else:`` block, rewritten: it runs unless the loop broke."""
        if not orelse:
            return []
        block = orelse
        if brk is not None:
            guard = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=_name(brk)), body=orelse,
                           orelse=[])
            ast.copy_location(guard, orelse[0])
            guard.end_lineno, guard.end_col_offset = orelse[-1].end_lineno, orelse[
                -1].end_col_offset
            self._headers[id(guard)] = f"the `else:` of the loop (line {orelse[0].lineno})"
            block = [guard]
        out: list[ast.stmt] = []
        for stmt in block:
            new = self.visit(stmt)
            out += new if isinstance(new, list) else [new]
        return out

    def visit_For(self, node: ast.For) -> Any:
        site = self._site(node)
        nested = any(isinstance(n, ast.For | ast.While) for stmt in node.body
                     for n in ast.walk(stmt))
        writes = written_in_place(node.body)
        effect = side_effect(node.body)
        blocked = escape(node.body, jumps=False) or effect
        if blocked is not None:
            self.generic_visit(node)
            node.iter = _call("plain_iter", node.iter, _const(blocked), site)
            self.converted += 1
            return node
        found = jumps(node.body)
        pre, brk, cont = self._flags(node, found) if found else ([], None, None)
        orelse, node.orelse = node.orelse, []
        outer = self._active
        self._active = outer | {f for f in (brk, cont) if f is not None}
        self.generic_visit(node)
        self._active = outer
        keep = outer | ({brk} if brk is not None else set())
        names = [n for n in bound_names(
            [ast.Assign(targets=[node.target], value=_const(0)), *node.body], keep)
            if n not in self._locals.get(id(node), ())]
        target = node.target.id if isinstance(node.target, ast.Name) else None
        body_name = self._fresh("for", node)
        body = [ast.Assign(targets=[node.target], value=_name(PREFIX + "i")), *node.body]
        fn = _state_fn(body_name, [PREFIX + "i"], names, body)
        it = node.iter
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and not it.keywords and not any(isinstance(a, ast.Starred) for a in it.args)):
            it = _call("iterate", it.func, *it.args)
        call = _call("for_stmt", it, _name(body_name), _const(target), site)
        if found:
            call.keywords = [ast.keyword(arg="brk", value=_const(brk)),
                             ast.keyword(arg="guarded", value=_const(True))]
        if nested:
            call.keywords.append(ast.keyword(arg="nested", value=_const(True)))
        self._writes(call, writes)
        return [*pre, *self._handover(node, [fn], call, names), *self._after(orelse, brk)]

    def visit_While(self, node: ast.While) -> Any:
        site = self._site(node)
        effect = side_effect(node.body)
        walrus = any(isinstance(n, ast.NamedExpr) for n in ast.walk(node.test))
        blocked = ("its condition assigns a name (:=)" if walrus else
                   escape(node.body, jumps=False) or effect)
        if blocked is not None:
            self.generic_visit(node)
            node.test = _call("plain_cond", node.test, _const(blocked), site)
            self.converted += 1
            return node
        writes = written_in_place(node.body)
        found = jumps(node.body)
        pre, brk, cont = self._flags(node, found) if found else ([], None, None)
        if brk is not None:  # `not broke and test`: the test is not evaluated after a break
            node.test = ast.copy_location(ast.BoolOp(op=ast.And(), values=[
                ast.UnaryOp(op=ast.Not(), operand=_name(brk)), node.test]), node.test)
        orelse, node.orelse = node.orelse, []
        outer = self._active
        self._active = outer | {f for f in (brk, cont) if f is not None}
        self.generic_visit(node)
        self._active = outer
        names = [n for n in bound_names(node.body, outer | ({brk} if brk is not None else set()))
                 if n not in self._locals.get(id(node), ())]
        test_name, body_name = self._fresh("test", node), self._fresh("while", node)
        test = _state_fn(test_name, [], names, [], result=node.test)
        body = _state_fn(body_name, [], names, node.body)
        call = _call("while_stmt", _name(test_name), _name(body_name), site)
        self._writes(call, writes)
        return [*pre, *self._handover(node, [test, body], call, names),
                *self._after(orelse, brk)]

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
        names = bound_names(node.body + node.orelse, self._active)
        then_name, else_name = self._fresh("then", node), self._fresh("else", node)
        then = _state_fn(then_name, [], names, node.body)
        other = _state_fn(else_name, [], names, node.orelse)
        call = _call("if_stmt", node.test, _name(then_name), _name(else_name), site)
        return self._handover(node, [then, other], call, names)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        if not self._functions:  # the outermost function: before anything is rewritten
            self._locals = loop_locals(node)
        self._functions.append(node.name)
        in_class, self._in_class = self._in_class, False
        self.generic_visit(node)
        self._functions.pop()
        self._in_class = in_class
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        in_class, self._in_class = self._in_class, True  # lambdas there do not see its names
        self.generic_visit(node)
        self._in_class = in_class
        return node

    def _thunks_ok(self, node: ast.expr) -> bool:
        return not self._in_class and not any(isinstance(n, _NO_THUNK) for n in ast.walk(node))

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        """``a and b`` / ``a or b`` -> ``and_(lambda: a, lambda: b)``: Python's own result for
        static operands (short-circuit, the operand itself), a logical and / or of traced ones."""
        self.generic_visit(node)
        if not self._thunks_ok(node):
            return node
        self.converted += 1
        attr = "and_" if isinstance(node.op, ast.And) else "or_"
        return ast.copy_location(_call(attr, *[_thunk(v) for v in node.values]), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        self.converted += 1
        return ast.copy_location(_call("not_", node.operand), node)

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        """``a if c else b`` -> ``ifexp(c, lambda: a, lambda: b)``: one of them for a static
        ``c``, both picked from by a ``lax.cond`` for a traced one."""
        site = self._site(node)
        self.generic_visit(node)
        if not self._thunks_ok(node):
            return node
        self.converted += 1
        fn = self._functions[-1] if self._functions else "?"
        return ast.copy_location(_call("ifexp", node.test, _thunk(node.body),
                                       _thunk(node.orelse), site, _const(fn)), node)

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        func = node.func
        if (isinstance(func, ast.Name) and func.id in ("min", "max") and node.args
                and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)):
            self.converted += 1  # min(a, b) of traced scalars: Python's fold, traced
            return ast.copy_location(_call("minmax", func, *node.args), node)
        if isinstance(func, ast.Name) and (func.id in _NOT_WRAPPED or func.id.startswith(PREFIX)):
            return node
        if isinstance(func, ast.Name | ast.Attribute):
            node.func = ast.copy_location(_call("callee", func), func)
            self.converted += 1
        return node
