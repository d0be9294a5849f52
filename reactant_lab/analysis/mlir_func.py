"""A small parser of one function of printed MLIR: its arguments, results and ops (with regions),
enough to follow SSA values from the arguments to the results. Pure text, no bindings."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypedDict

from reactant_lab.analysis.lexer import tokenize
from reactant_lab.analysis.normalize import paren_end, strip_locations
from reactant_lab.errors import AnalysisError

_FUNC_LINE = re.compile(r'^(\s*)func\.func\s+(?:(?:public|private|nested)\s+)?@("[^"]*"|[\w$.-]+)')
_RESULTS = re.compile(r"^\s*(%[A-Za-z0-9$._-]+(?::\d+)?(?:\s*,\s*%[A-Za-z0-9$._-]+(?::\d+)?)*)"
                      r"\s*=\s*")
_NAME = re.compile(r"%[A-Za-z0-9$._-]+")
_OP = re.compile(r'"?([A-Za-z_][\w$]*(?:\.[\w$]+)*)"?')
_CALLEE = re.compile(r'@("[^"]*"|[\w$.-]+)')
_BLOCK_LABEL = re.compile(r"^\s*\^[\w$.-]+")
_WORD = re.compile(r"[A-Za-z_]\w*")
_BARE = {"return": "func.return", "call": "func.call", "constant": "func.constant"}


@dataclass(frozen=True)
class FuncArg:
    """A block argument of the function."""

    index: int
    """Position (``%argN``)."""
    name: str
    """SSA name, e.g. ``%arg0``."""
    type: str
    """Its type, e.g. ``tensor<4x3xf32>``."""
    path: str | None
    """The name location it carries (``args[0]['w']``), if any."""
    attrs: str
    """Its attribute dictionary as printed (``{tf.aliasing_output = 0 : i32}``), or ''."""


@dataclass(frozen=True)
class FuncResult:
    """A result of the function."""

    index: int
    """Position in the return."""
    type: str
    """Its type."""
    info: str | None
    """``jax.result_info`` (the result's path as JAX printed it), if any."""
    source: str | None
    """Id of the node producing it (see ``Op.inputs``); None if it could not be resolved."""


@dataclass(frozen=True)
class Op:
    """One operation of the function body (region ops, and their regions' terminators, too)."""

    id: str
    """Node id: ``op<N>`` in order of appearance."""
    name: str
    """Op name, e.g. ``stablehlo.add`` (``func.call @f`` for calls)."""
    type: str
    """Result type(s) as printed after ``:`` (the part after ``->`` for function types)."""
    inputs: tuple[str, ...]
    """Producers of the values it uses, one per use: ``arg<N>`` (a function argument),
    ``op<N>`` (an op's result) or ``op<N>.args`` (a block argument of op N's regions)."""
    parent: str | None
    """Id of the region op it is nested in; None at the top level."""
    region: int
    """Index of the region of ``parent`` it sits in (0 at the top level)."""
    line: int
    """1-based line in the module's ``as_text()``."""


@dataclass(frozen=True)
class ParsedFunc:
    """A function of the module, parsed."""

    name: str
    """Symbol name, e.g. ``main``."""
    args: tuple[FuncArg, ...]
    """Block arguments in order."""
    results: tuple[FuncResult, ...]
    """Results in order."""
    ops: tuple[Op, ...]
    """Ops in order of appearance."""
    region_labels: tuple[tuple[str, tuple[str, ...]], ...]
    """(region op id, label of each of its regions, e.g. ('cond', 'do'))."""
    region_locs: tuple[tuple[str, str], ...] = ()
    """(region op id, the name of its location, e.g. ``jit(f)/while``), for the region ops
    whose location is a name (text printed with locations only)."""


_RETURN_LINE = re.compile(r"^\s*(?:func\.)?return\b(.*)$")


def returned_names(text: str, name: str = "main") -> list[str]:
    """The SSA names function ``@name`` returns, in order (``%arg1``, ``%0``, ``%3#1``), read
    from its return line alone: what ``parse_function(text).results`` says a result comes from,
    without parsing every op (a module's text is read this way after every compile). Raises
    AnalysisError when the text has no such function or its return cannot be read."""
    lines = text.splitlines()
    for n, line in enumerate(lines):
        m = _FUNC_LINE.match(line)
        if not (m and _unquote(m.group(2)) == name):
            continue
        close = m.group(1) + "}"
        end = next((k for k in range(n + 1, len(lines))
                    if lines[k] == close or lines[k].startswith(close + " ")), None)
        ret = _RETURN_LINE.match(lines[end - 1]) if end is not None else None
        if ret is None:
            break
        operands = ret.group(1).split(" : ", 1)[0].strip()
        if operands.startswith("loc("):  # `return loc(#loc3)`: nothing returned
            operands = ""
        names = [o.strip() for o in operands.split(",")] if operands else []
        if not all(_NAME.fullmatch(o.split("#", 1)[0]) for o in names):
            break
        return names
    raise AnalysisError(f"no return of a function @{name} could be read in the module")


def parse_function(text: str, name: str = "main") -> ParsedFunc:
    """Parse function ``@name`` of module text (with or without locations)."""
    return _parse_function(text, name)


@lru_cache(maxsize=2)
def _parse_function(text: str, name: str) -> ParsedFunc:
    """parse_function, remembering the last two: a stage's graph, its model and the payload's
    signature each read the same text, and a ParsedFunc is immutable (a 20,000-line function
    parses in about a second and takes some 25 MB, so only the last few are kept)."""
    lines = strip_locations(text).splitlines()
    found = []
    for n, line in enumerate(lines):
        m = _FUNC_LINE.match(line)
        if m:
            found.append(m.group(2))
            if _unquote(m.group(2)) == name:
                return _parse_at(lines, n, len(m.group(1)), name,
                                 text if " loc(" in text else None)
    raise AnalysisError(f"no function @{name} in the module (functions: "
                        f"{', '.join('@' + f for f in found) or 'none'}); pass the module of a "
                        "stage (Stage.ir) or name one of its functions")


def _parse_at(lines: list[str], at: int, indent: int, name: str,
              text: str | None = None) -> ParsedFunc:
    args, result_meta = _signature(lines[at])
    walker = _Walker(args)
    if not lines[at].rstrip().endswith("}"):
        for n in range(at + 1, len(lines)):
            line = lines[n]
            if not walker.stack and line.strip() == "}" and (
                    len(line) - len(line.lstrip())) <= indent:
                break
            walker.line(line, n + 1)
    ops = tuple(Op(o["id"], o["name"], o["type"], tuple(o["inputs"]), o["parent"], o["region"],
                   o["line"]) for o in walker.ops)
    sources = walker.returned + [None] * (len(result_meta) - len(walker.returned))
    results = tuple(FuncResult(i, typ, info, sources[i])
                    for i, (typ, info) in enumerate(result_meta))
    labels = tuple((k, tuple(v)) for k, v in walker.labels.items())
    locs = _region_locs(walker.ends, text) if text is not None else ()
    return ParsedFunc(name, tuple(args), results, ops, labels, locs)


_LOC_ALIAS_LINE = re.compile(r"^\s*#loc\w*\s*=\s*loc\(.*$")
"""The lines ``strip_locations`` drops: line N of its result is line N of the text without them."""
_LOC_ALIAS = re.compile(r"^\s*(#loc[\w$.-]*)\s*=\s*loc\((.*)\)\s*$")


def _region_locs(ends: dict[str, int], text: str) -> tuple[tuple[str, str], ...]:
    """(op id, location name) of the region ops ending on the given lines (1-based, of
    ``strip_locations(text)``): their location is printed after their last region."""
    raw = [line for line in text.splitlines() if not _LOC_ALIAS_LINE.match(line)]
    aliases = {m.group(1): m.group(2) for m in map(_LOC_ALIAS.match, text.splitlines()) if m}
    out = []
    for op_id, end in ends.items():
        loc = _trailing_loc(raw[end - 1]) if end <= len(raw) else None
        found = _loc_name_of(loc, aliases) if loc is not None else None
        if found is not None:
            out.append((op_id, found))
    return tuple(out)


def _trailing_loc(line: str) -> str | None:
    """What is inside the last ``loc(...)`` of a line (outside strings), if any."""
    found, i, inside = None, 0, False
    while i < len(line):
        c = line[i]
        if inside:
            if c == "\\":
                i += 1
            elif c == '"':
                inside = False
        elif c == '"':
            inside = True
        elif line.startswith(" loc(", i):
            end = paren_end(line, i + 4)
            found, i = line[i + 5:end - 1], end
            continue
        i += 1
    return found


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _loc_name_of(loc: str, aliases: dict[str, str], depth: int = 0) -> str | None:
    """The name of a location (what is inside ``loc(...)``): a name location's string, through
    aliases and the callee of a call site."""
    loc = loc.strip()
    if depth > 50:
        return None
    if loc.startswith("#"):
        target = aliases.get(loc)
        return _loc_name_of(target, aliases, depth + 1) if target is not None else None
    if loc.startswith('"'):
        m = _STRING.match(loc)
        return _unquote(m.group(0)) if m else None
    if loc.startswith("callsite(") and " at " in loc:
        return _loc_name_of(loc[len("callsite("):].split(" at ", 1)[0], aliases, depth + 1)
    return None


def _split_top(tokens: Sequence[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Split a token list at commas outside brackets."""
    parts: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for kind, text in tokens:
        if kind != "text":
            parts[-1].append((kind, text))
            continue
        for ch in text:
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append([])
                continue
            parts[-1].append(("text", ch))
    return [p for p in parts if any(k != "text" or t.strip() for k, t in p)]


_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t"}


def _unquote(s: str) -> str:
    """The value of an MLIR string literal (``\\22`` is a hex-escaped byte, ``\\"`` a quote)."""
    if not s.startswith('"'):
        return s
    out = bytearray()
    pos = 0
    body = s[1:-1]
    for m in _ESCAPE.finditer(body):
        out += body[pos:m.start()].encode()
        esc = m.group(1)
        out += (bytes([int(esc, 16)]) if len(esc) == 2 else
                _SIMPLE_ESCAPES.get(esc, esc).encode())
        pos = m.end()
    out += body[pos:].encode()
    return out.decode("utf-8", errors="replace")


def _loc_name(loc: str) -> str | None:
    m = re.fullmatch(r'loc\(("(?:[^"\\]|\\.)*")\)', loc)
    return _unquote(m.group(1)) if m else None


def _arg_list(tokens: Sequence[tuple[str, str]]) -> tuple[list[tuple[str, str]], str]:
    """Tokens inside the parentheses after the function's symbol, and the text after them."""
    inside: list[tuple[str, str]] = []
    after: list[str] = []
    depth, state = 0, "before"
    start = next(i for i, (k, _) in enumerate(tokens) if k == "symbol") + 1
    for kind, text in tokens[start:]:
        if state == "after" or (kind != "text" and state == "before"):
            after.append(text)
            continue
        if kind != "text":
            inside.append((kind, text))
            continue
        for ch in text:
            if state == "before":
                state, depth = ("args", 1) if ch == "(" else (state, depth)
            elif state == "args":
                depth += (ch in "([{") - (ch in ")]}")
                if depth == 0:
                    state = "after"
                else:
                    inside.append(("text", ch))
            else:
                after.append(ch)
    return inside, "".join(after)


def _signature(line: str) -> tuple[list[FuncArg], list[tuple[str, str | None]]]:
    """Arguments and (type, result_info) results from a ``func.func`` line."""
    inside, rest = _arg_list(tokenize(line))
    args: list[FuncArg] = []
    for n, part in enumerate(_split_top(inside)):
        name = next((t for k, t in part if k == "ssa"), f"%arg{n}")
        typ = next((t for k, t in part if k == "type"), "?")
        loc = next((_loc_name(t) for k, t in part if k == "loc"), None)
        after_type = "".join(t for k, t in part if k != "loc").split(typ, 1)[-1]
        args.append(FuncArg(n, name, typ, loc, after_type.strip()))
    results: list[tuple[str, str | None]] = []
    pos = rest.find("->")
    if pos == -1:
        return args, results
    tail = re.sub(r"\s*(attributes\s*\{.*)?\{\s*$", "", rest[pos + 2:]).strip()
    if tail.startswith("(") and tail.endswith(")"):
        tail = tail[1:-1]
    for part in _split_top(tokenize(tail)):
        typ = next((t for k, t in part if k == "type"), "?")
        info: str | None = None
        for i, (k, t) in enumerate(part):
            if k == "key" and t == "jax.result_info":
                info = next((_unquote(v) for kk, v in part[i:] if kk == "str"), None)
        results.append((typ, info))
    return args, results


def split_types(text: str) -> list[str]:
    """The types of a printed type list (``Op.type``): ``tensor<i64>, tensor<4xf64>`` -> two
    types; a trailing ``attributes {...}`` is left out."""
    text = text.split(" attributes {", 1)[0].strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return ["".join(t for _, t in part).strip() for part in _split_top(tokenize(text))]


def _op_type(rest: str, n_results: int = 0) -> str:
    """Result type(s) from the text after an op's name: after the last ' : ', after '->'; of a
    plain type list (``select``'s ``tensor<i1>, tensor<f32>``) the last ``n_results``."""
    if " : " not in rest:
        return ""
    typ = rest.rsplit(" : ", 1)[1].strip()
    if "->" in typ:
        typ = typ.rsplit("->", 1)[1].strip()
        return typ[1:-1] if typ.startswith("(") and typ.endswith(")") else typ
    parts = ["".join(t for _, t in p).strip() for p in _split_top(tokenize(typ))]
    return ", ".join(parts[-n_results:]) if 0 < n_results < len(parts) else typ


def _count(results: re.Match[str] | None) -> int:
    """Number of results an op line defines (``%0:2 = ...`` defines two)."""
    if results is None:
        return 0
    packs = re.findall(r"%[A-Za-z0-9$._-]+(?::(\d+))?", results.group(1))
    return sum(int(n) if n else 1 for n in packs)


class _OpDraft(TypedDict):
    """An op while its function is walked: ``type`` may be filled in when its regions close."""

    id: str
    name: str
    inputs: list[str]
    results: int
    parent: str | None
    region: int
    line: int
    type: str


class _Walker:
    """Line-by-line state: open regions, SSA scopes, ops so far."""

    def __init__(self, args: list[FuncArg]) -> None:
        self.scopes: list[dict[str, str]] = [{a.name: f"arg{a.index}" for a in args}]
        self.stack: list[tuple[str, int]] = []
        self.last_op: dict[int, str] = {}
        self.pending: dict[str, list[str]] = {}
        self.ops: list[_OpDraft] = []
        self.by_id: dict[str, _OpDraft] = {}
        self.labels: dict[str, list[str]] = {}
        self.returned: list[str | None] = []
        self.ends: dict[str, int] = {}
        """Per region op, the line its last region closes on (where its location is)."""

    def resolve(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def uses(self, text: str) -> tuple[list[str | None], list[str]]:
        """(producers of the values used, names declared) in a piece of an op line."""
        tokens = tokenize(text)
        uses: list[str | None] = []
        decls: list[str] = []
        for i, (kind, name) in enumerate(tokens):
            if kind != "ssa":
                continue
            nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
            if (nxt.startswith(":") and not nxt[1:2].isdigit()) or (
                    nxt == " = " and i + 2 < len(tokens) and tokens[i + 2][0] == "ssa"):
                decls.append(name)
            else:
                uses.append(self.resolve(name))
        return uses, decls

    def _open(self, owner: str, label: str, declared: list[str]) -> None:
        labels = self.labels.setdefault(owner, [])
        self.stack.append((owner, len(labels)))
        labels.append(label)
        scope = dict.fromkeys(self.pending.get(owner, []) + declared, f"{owner}.args")
        self.scopes.append(scope)

    def line(self, line: str, number: int) -> None:
        s = line.strip()
        if not s:
            return
        if s.startswith("}"):
            self._close(s, number)
        elif _BLOCK_LABEL.match(line):
            if self.stack:
                owner = self.stack[-1][0]
                self.scopes[-1].update(dict.fromkeys(self.uses(s)[1], f"{owner}.args"))
        elif not self._op_line(line, number) and s.endswith("{"):
            last = self.last_op.get(len(self.stack))
            if last is not None:
                word = _WORD.match(s)
                self._open(last, word.group(0) if word else "region", self.uses(s)[1])

    def _close(self, s: str, number: int) -> None:
        if not self.stack:
            return
        owner, _ = self.stack.pop()
        self.scopes.pop()
        op = self.by_id[owner]
        if not op["type"] and ") : " in s:
            op["type"] = _op_type(s[s.index(") : ") + 1:], op["results"])
        if s.endswith("{"):
            word = _WORD.search(s)
            self._open(owner, word.group(0) if word else "region", self.uses(s)[1])
        else:
            self.ends[owner] = number

    def _op_line(self, line: str, number: int) -> bool:
        """Record the op on ``line``, if there is one; False when the line holds no op."""
        m = _RESULTS.match(line)
        rest = line[m.end():] if m else line.lstrip()
        om = _OP.match(rest)
        if not om or (not m and "." not in om.group(1) and om.group(1) not in _BARE):
            return False
        name = _BARE.get(om.group(1), om.group(1))
        body = rest[om.end():]
        if name == "func.call":
            callee = _CALLEE.search(body)
            name = f"func.call @{_unquote(callee.group(1))}" if callee else name
        uses, decls = self.uses(body)
        if name == "func.return" and not self.stack:
            self.returned = uses
            return True
        opens = body.rstrip().endswith("{")
        parent: str | None
        parent, region = self.stack[-1] if self.stack else (None, 0)
        op: _OpDraft = {"id": f"op{len(self.ops)}", "name": name, "inputs": [u for u in uses if u],
              "results": _count(m),
              "parent": parent, "region": region, "line": number,
              "type": "" if body.rstrip().endswith("({") else _op_type(body, _count(m))}
        self.ops.append(op)
        self.by_id[op["id"]] = op
        if m:
            self.scopes[-1].update(dict.fromkeys(_NAME.findall(m.group(1)), op["id"]))
        self.last_op[len(self.stack)] = op["id"]
        if decls:
            self.pending[op["id"]] = decls
        if opens:
            word = "region" if body.rstrip().endswith("({") else (_WORD.findall(body) or
                                                                  ["region"])[-1]
            self._open(op["id"], word, [])
        return True
