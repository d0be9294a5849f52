"""Run a ``%%reactant_jit`` cell body in the user's namespace: each top-level ``def`` of the cell
is rebound to its wrapper right after it (line numbers unchanged), the last expression's value is
handed back for IPython's display hook, and afterwards the user's names hold their own functions
again."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from IPython.core.error import UsageError

from reactant_lab.notebook.session import CellFunction, CellSession

CELL_SYNTAX = "_reactant_lab_cell_syntax"
"""Set on a SyntaxError in the cell's own code: the error panel's handler shows it as IPython
shows one in a plain cell, at the cell's line and without the frames of the magic that parsed
it."""

WRAP = "__reactant_lab_wrap__"
"""Name of the wrapping function in the user's namespace while the cell runs."""


class NoValue:
    """The cell ends with a statement, not an expression: there is nothing to display."""


def _rebinding(name: str, at: ast.stmt) -> ast.stmt:
    stmt = ast.parse(f"{name} = {WRAP}({name})").body[0]
    for node in ast.walk(stmt):
        ast.copy_location(node, at)  # end_lineno and end_col_offset too, where a node has them
    return stmt


def _bound_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.FunctionDef):
        return [stmt.name]
    targets = (stmt.targets if isinstance(stmt, ast.Assign) else
               [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else [])
    return [t.id for t in targets if isinstance(t, ast.Name)]


def rebind_defs(tree: ast.Module, only: Sequence[str] | None) -> list[str]:
    """After each top-level ``def`` (with ``only``: each top-level statement binding one of those
    names, assignments included), insert ``name = WRAP(name)``; returns the names rebound."""
    body, names = [], []
    for stmt in tree.body:
        body.append(stmt)
        for name in _bound_names(stmt):
            if (only is None and isinstance(stmt, ast.FunctionDef)) or (only and name in only):
                body.append(_rebinding(name, stmt))
                names.append(name)
    tree.body = body
    return names


def cell_number(shell: Any) -> int:
    """The number IPython shows for the cell that is running (``In [n]``): IPython has counted
    the next one already while a cell stored in its history runs."""
    result = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    count = getattr(result, "execution_count", None)
    return count if isinstance(count, int) else int(shell.execution_count)


def run_body(shell: Any, header: str, body: str, session: CellSession,
             only: Sequence[str] | None = None) -> Any:
    """Run ``body`` (the cell after its ``%%`` line ``header``) with its functions wrapped by
    ``session``; returns the last expression's value, or ``NoValue``. Line numbers in tracebacks
    are the cell's own, the ``%%`` line being line 1. ``only`` restricts wrapping to those names,
    which may also name functions of earlier cells."""
    __tracebackhide__ = True
    ns = shell.user_ns
    code = shell.transform_cell(body)
    source = f"{header}\n{code}"
    filename = shell.compile.cache(source, cell_number(shell), raw_code=f"{header}\n{body}")
    try:
        tree = shell.compile.ast_parse("\n" + code, filename=filename)
    except SyntaxError as exc:
        setattr(exc, CELL_SYNTAX, True)
        raise
    defined = rebind_defs(tree, only)
    tree = shell.transform_ast(tree)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    missing = [n for n in only or () if n not in defined and n not in ns]
    if missing:
        raise UsageError(f"--fn {' '.join(missing)}: no such name in the cell or the namespace; "
                         "--fn takes the names of functions defined in this cell or earlier")
    ns[WRAP] = session.wrap
    for name in only or ():
        if name in ns and name not in defined:
            ns[name] = session.wrap(ns[name])
    try:
        exec(shell.compile(tree, filename, "exec"), shell.user_global_ns, ns)
        if last is None:
            return NoValue
        expr = ast.fix_missing_locations(ast.Expression(last.value))
        value = eval(shell.compile(expr, filename, "eval"), shell.user_global_ns, ns)
        return value.fn if isinstance(value, CellFunction) else value
    finally:
        session.close()
        ns.pop(WRAP, None)
        unwrap_names(ns, session)


def unwrap_names(ns: dict[str, Any], session: CellSession) -> None:
    """Put the user's own functions back where the cell left its wrappers."""
    for name, value in list(ns.items()):
        if isinstance(value, CellFunction) and value.session is session:
            ns[name] = value.fn
