"""Source provenance: which Python line (file, line, column) each op of a module came from.

A module printed with debug locations names, for each op, where it was traced: ``loc(#loc7)``
after the op, and at the end of the module the aliases ``#loc7 = loc(...)`` built from file
locations ``"file.py":12:8 to :20``, name locations ``"jit(f)/add"(#loc3)``, call sites
``callsite(#callee at #caller)`` and fused locations ``fused[#loc1, #loc2]`` (ops a pass merged).
Each op is resolved to the innermost location in user code: the callee of a call site before its
caller, and files of JAX, jaxlib, NumPy and reactant_lab itself skipped. Ops are keyed by their
1-based line in the text as displayed, ``strip_locations(text)`` (``Op.line`` of
``parse_function``): the ``#loc`` alias lines it drops are not counted. XLA's HLO text names its
instructions' sources in their metadata instead (``analysis.hlo.hlo_frames``), and is read alike.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sysconfig
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from reactant_lab.analysis.hlo import hlo_frames, hlo_opcode, is_hlo
from reactant_lab.analysis.normalize import strip_locations

__all__ = ["LineOp", "LineOps", "Source", "StageOps", "function_code", "is_library_file",
           "main_file", "op_frames", "op_name", "op_source_sets", "op_sources", "ops_for_line",
           "same_file"]


@dataclass(frozen=True, order=True)
class Source:
    """A place in Python source: file name as traced, 1-based line, 1-based column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


_LIBRARIES = ("jax", "jaxlib", "numpy", "IPython", "ipykernel")
_INSTALLED = re.compile(r"[\\/](?:site|dist)-packages[\\/]")


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    """The directories whose frames are not user code: reactant_lab's, the standard library's
    and those of JAX, NumPy and IPython wherever they are (found, not imported)."""
    dirs = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]  # reactant_lab
    paths = sysconfig.get_paths()
    dirs += [paths[k] for k in ("stdlib", "platstdlib") if paths.get(k)]
    for name in _LIBRARIES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):  # pragma: no cover - depends on the installation
            continue
        dirs += list(spec.submodule_search_locations or []) if spec else []
    return tuple(os.path.join(os.path.abspath(d), "") for d in dirs)


@functools.lru_cache(maxsize=4096)
def is_library_file(file: str) -> bool:
    """Whether ``file`` is not the user's code: reactant_lab's, an installed package's (JAX,
    NumPy, IPython, ...: anything under site-packages), or the standard library's."""
    if _INSTALLED.search(file):
        return True
    if not os.path.isabs(file):
        return False
    path = os.path.abspath(file)
    return any(path.startswith(d) for d in _library_dirs())


# ---------------------------------------------------------------- location expressions

_LOC_ALIAS = re.compile(r"^\s*(#loc[\w$.-]*)\s*=\s*loc\((.*)\)\s*$")
_LOC_ALIAS_LINE = re.compile(r"^\s*#loc\w*\s*=\s*loc\(.*$")
_REF = re.compile(r"#loc[\w$.-]*")
_INT = re.compile(r"\d+")
_HEX_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2})|\\(.)")

# A parsed location: ("file", Source) | ("name", child or None) | ("call", callee, caller) |
# ("fused", [members]) | ("ref", "#locN") | ("unknown",)
_Loc = tuple[Any, ...]


def _unescape(s: str) -> str:
    return _HEX_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), s)


class _Parser:
    """Recursive descent over the inside of one ``loc(...)``."""

    def __init__(self, text: str):
        self.t = text
        self.i = 0

    def _ws(self) -> None:
        while self.i < len(self.t) and self.t[self.i] in " \t":
            self.i += 1

    def _eat(self, s: str) -> bool:
        self._ws()
        if self.t.startswith(s, self.i):
            self.i += len(s)
            return True
        return False

    def _expect(self, s: str) -> None:
        if not self._eat(s):
            raise ValueError(f"expected {s!r} at {self.i} in {self.t!r}")

    def _string(self) -> str:
        start = self.i  # at the opening quote
        i = start + 1
        while i < len(self.t) and self.t[i] != '"':
            i += 2 if self.t[i] == "\\" else 1
        self.i = i + 1
        return _unescape(self.t[start + 1:i])

    def _int(self) -> int | None:
        m = _INT.match(self.t, self.i)
        if m is None:
            return None
        self.i = m.end()
        return int(m.group(0))

    def _skip_angle(self) -> None:
        depth = 0
        while self.i < len(self.t):
            c = self.t[self.i]
            if c == '"':
                self._string()
                continue
            depth += {"<": 1, ">": -1}.get(c, 0)
            self.i += 1
            if depth == 0:
                return

    def parse(self) -> _Loc:
        self._ws()
        t, i = self.t, self.i
        if t.startswith("#", i):
            m = _REF.match(t, i)
            if m is None:
                raise ValueError(f"bad reference in {t!r}")
            self.i = m.end()
            return ("ref", m.group(0))
        for word, rule in (("loc(", self._wrapped), ("unknown", self._unknown),
                           ("callsite(", self._callsite), ("fused", self._fused),
                           ('"', self._file_or_name)):
            if t.startswith(word, i):
                if word != '"':
                    self.i += len(word)
                return rule()
        raise ValueError(f"unknown location at {i} in {t!r}")

    def _wrapped(self) -> _Loc:
        inner = self.parse()
        self._expect(")")
        return inner

    def _unknown(self) -> _Loc:
        return ("unknown",)

    def _callsite(self) -> _Loc:
        callee = self.parse()
        self._expect("at")
        caller = self.parse()
        self._expect(")")
        return ("call", callee, caller)

    def _fused(self) -> _Loc:
        self._ws()
        if self.t.startswith("<", self.i):
            self._skip_angle()
        self._expect("[")
        members = [self.parse()]
        while self._eat(","):
            members.append(self.parse())
        self._expect("]")
        return ("fused", members)

    def _file_or_name(self) -> _Loc:
        s = self._string()
        if self.t.startswith(":", self.i) and _INT.match(self.t, self.i + 1):
            self.i += 1
            line = self._int() or 0
            col = self._int() if self._eat(":") else None
            if self._eat("to"):  # a range: `to :C` or `to L:C`
                self._ws()
                self._int()
                if self._eat(":"):
                    self._int()
            return ("file", Source(s, line, col or 0))
        if self.t.startswith("(", self.i):
            self.i += 1
            return ("name", self._wrapped())
        return ("name", None)


def _parse(text: str) -> _Loc:
    try:
        return _Parser(text).parse()
    except (ValueError, IndexError):
        return ("unknown",)


Chain = tuple[Source, ...]
"""The user-code frames of one location: where the op was traced, then the calls leading there."""

MAX_FRAMES = 6
"""Frames kept per chain (the innermost ones)."""


def _user_frames(chain: Chain) -> Chain:
    """The user-code part of a frame chain (innermost first): past the library frames it starts
    with (a NumPy function's own lines), up to the next library frame (the interpreter, IPython
    or a test runner calling the user's code)."""
    out: list[Source] = []
    for f in chain:
        if is_library_file(f.file):
            if out:
                break
            continue
        if f not in out:
            out.append(f)
        if len(out) == MAX_FRAMES:
            break
    return tuple(out)


class _Resolver:
    """Resolves locations (through the module's aliases) to their user-code frame chains."""

    def __init__(self, aliases: dict[str, str]):
        self.aliases = aliases
        self.memo: dict[str, tuple[Chain, ...]] = {}

    def ref(self, name: str) -> tuple[Chain, ...]:
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = ()  # a cycle resolves to nothing
        text = self.aliases.get(name)
        found = self.frames(_parse(text)) if text is not None else ()
        self.memo[name] = found
        return found

    def resolve(self, loc: _Loc) -> tuple[Chain, ...]:
        """One user-code chain per location (several for a fused one); none for a location
        with no frame in user code."""
        out: list[Chain] = []
        for chain in self.frames(loc):
            user = _user_frames(chain)
            if user and user not in out:
                out.append(user)
        return tuple(out)

    def frames(self, loc: _Loc) -> tuple[Chain, ...]:
        """Every frame of each location, innermost first, library frames included."""
        kind = loc[0]
        if kind == "ref":
            return self.ref(loc[1])
        if kind == "file":
            return ((loc[1],),)
        if kind == "name":
            return self.frames(loc[1]) if loc[1] is not None else ()
        if kind == "call":  # the callee's frames, then the caller's
            callee, caller = self.frames(loc[1]), self.frames(loc[2])
            if not callee:
                return caller
            tail = caller[0] if caller else ()
            return tuple(c + tail for c in callee)
        if kind == "fused":
            return tuple(c for member in loc[1] for c in self.frames(member))
        return ()


# ---------------------------------------------------------------- ops and their lines

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_OP_START = re.compile(
    r"^\s*(?:%[\w$.:#-]+(?:\s*,\s*%[\w$.:#-]+)*\s*=\s*)?"
    r"(\"?)([A-Za-z_][\w$]*\.[\w$.]+|return|call)\1[\s(<{:@]")


def _skip_string(s: str, i: int) -> int:
    """Index just past the string whose opening quote is at ``i``."""
    i += 1
    while i < len(s) and s[i] != '"':
        i += 2 if s[i] == "\\" else 1
    return i + 1


def _paren_end(s: str, start: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``start`` (strings skipped), or len(s)."""
    depth, i = 0, start
    while i < len(s):
        c = s[i]
        if c == '"':
            i = _skip_string(s, i)
            continue
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth == 0:
            return i
        i += 1
    return len(s)


_TRAILING_REF = re.compile(r".* loc\((#[\w$.-]*)\)$")


def _trailing_loc(line: str) -> str | None:
    """The inside of the ``loc(...)`` that ends the line (outside strings), if any."""
    s = line.rstrip()
    if not s.endswith(")"):
        return None
    quick = _TRAILING_REF.match(s)  # the common case: ` loc(#locN)` (no string ends in `)`)
    if quick:
        return quick.group(1)
    found, i = None, 0
    while i < len(s):
        if s[i] == '"':
            i = _skip_string(s, i)
        elif s.startswith(" loc(", i):
            end = _paren_end(s, i + 4)
            found = s[i + 5:end] if end == len(s) - 1 else None
            i = end + 1
        else:
            i += 1
    return found


def _op_locations(text: str) -> Iterator[tuple[int, str]]:
    """(displayed line of the op, inside of its ``loc(...)``) for each op whose location is
    printed: at the end of its line, or, for an op with regions, after its last region."""
    owners: list[int] = []  # per open region: the displayed line of the op owning it
    last_op = 0
    shown = 0
    for raw in text.splitlines():
        if _LOC_ALIAS_LINE.match(raw):
            continue
        shown += 1
        starts = _OP_START.match(raw) is not None
        if starts:
            last_op = shown
        bare = _STRING.sub('""', raw) if '"' in raw else raw
        closed = False
        for c in (bare if "{" in bare or "}" in bare else ""):
            if c == "{":
                owners.append(last_op)
            elif c == "}" and owners:
                last_op = owners.pop()
                closed = True
        loc = _trailing_loc(raw) if " loc(" in raw else None
        if loc is None:
            continue
        if starts and not closed:
            yield shown, loc
        elif closed and last_op:
            yield last_op, loc


def op_frames(ir_text: str) -> dict[int, tuple[Chain, ...]]:
    """The user-code frames of each op with a location: displayed line (1-based, of
    ``strip_locations(ir_text)``) -> one chain per location it has (several when a pass fused
    ops), each the frame it was traced in, then the user-code calls leading there."""
    if is_hlo(ir_text):
        chains = {line: _user_frames(tuple(Source(*f) for f in frames))
                  for line, frames in hlo_frames(ir_text).items()}
        return {line: (chain,) for line, chain in chains.items() if chain}
    lines = ir_text.splitlines()
    aliases = {m.group(1): m.group(2) for m in map(_LOC_ALIAS.match, lines) if m}
    resolver = _Resolver(aliases)
    out: dict[int, tuple[Chain, ...]] = {}
    seen: dict[str, tuple[Chain, ...]] = {}
    for line, loc in _op_locations(ir_text):
        found = seen.get(loc)
        if found is None:
            found = seen[loc] = resolver.resolve(_parse(loc))
        if found:
            out[line] = found
    return out


def op_source_sets(ir_text: str) -> dict[int, tuple[Source, ...]]:
    """Where each op with a location was traced: displayed line -> the innermost user-code
    frame of each of its locations (several for an op a pass fused from several lines)."""
    return {line: tuple(dict.fromkeys(c[0] for c in chains))
            for line, chains in op_frames(ir_text).items()}


def op_sources(ir_text: str) -> dict[int, Source]:
    """The Python source of each op of module text printed with locations: displayed line
    (1-based, of ``strip_locations(ir_text)``, as ``Op.line``) -> file, line and column of the
    innermost user-code frame it was traced from (the first, for a fused location). Ops without
    a location in user code are left out."""
    return {line: chains[0][0] for line, chains in op_frames(ir_text).items()}


def op_name(line: str) -> str:
    """The op a line of module text starts (``stablehlo.add``; ``func.return`` for ``return``,
    ``func.call`` for ``call``; the opcode of an HLO instruction), or the line's first word."""
    m = _OP_START.match(line)
    if m is None and "%" in line:
        opcode = hlo_opcode(line)
        if opcode is not None:
            return opcode
    if m is None:
        words = line.split()
        return words[0] if words else ""
    name = m.group(2)
    return {"return": "func.return", "call": "func.call"}.get(name, name)


# ---------------------------------------------------------------- ops of one Python line


@dataclass(frozen=True)
class LineOp:
    """One op traced from a given Python line."""

    line: int
    """Its 1-based line in the stage's text as displayed (locations stripped)."""
    op: str
    """Op name, e.g. ``stablehlo.add``."""
    text: str
    """The op's line as displayed."""
    sources: tuple[Source, ...]
    """Where it was traced (several when a pass fused ops of different lines)."""
    frames: tuple[Chain, ...] = ()
    """Per source, the user-code frames: the source, then the calls leading to it."""


@dataclass(frozen=True)
class StageOps:
    """The ops of one stage that came from the Python line asked about."""

    index: int
    """Stage index (0: the traced module)."""
    name: str
    """Stage (or pass) name."""
    ops: tuple[LineOp, ...]
    """The ops, in text order."""

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[LineOp]:
        return iter(self.ops)

    def counts(self) -> dict[str, int]:
        """Op name -> how many of the ops have it."""
        out: dict[str, int] = {}
        for o in self.ops:
            out[o.op] = out.get(o.op, 0) + 1
        return out

    def merged_with(self, file: str, line: int) -> tuple[int, ...]:
        """Other lines of ``file`` that ops of this one were fused with, sorted."""
        return tuple(sorted({s.line for o in self.ops for s in o.sources
                             if s.line != line and same_file(s.file, file)}))


@dataclass(frozen=True)
class LineOps:
    """For one Python line, its ops in every stage."""

    file: str
    """The file asked about (as given)."""
    line: int
    """The line asked about."""
    stages: tuple[StageOps, ...]
    """One entry per stage, in stage order (an entry may hold no op)."""

    def __iter__(self) -> Iterator[StageOps]:
        return iter(self.stages)

    def __len__(self) -> int:
        return len(self.stages)

    def __getitem__(self, i: int) -> StageOps:
        return self.stages[i]

    def summary(self) -> str:
        """In words: ``line 12: 5 ops in traced, 2 in final (merged with line 13)``."""
        if not self.stages:
            return f"line {self.line}: no stage"
        first, last = self.stages[0], self.stages[-1]
        head = f"line {self.line}: {len(first)} op{'s' if len(first) != 1 else ''} in {first.name}"
        if len(self.stages) > 1:
            head += f", {len(last)} in {last.name}"
        merged = last.merged_with(self.file, self.line)
        if merged:
            head += f" (merged with line{'s' if len(merged) > 1 else ''} " \
                    f"{', '.join(map(str, merged))})"
        return head

    def __repr__(self) -> str:
        rows = [self.summary()]
        for s in self.stages:
            names = ", ".join(f"{n} {op}" for op, n in s.counts().items()) or "none"
            rows.append(f"  stage {s.index} {s.name}: {names}")
        return "\n".join(rows)


def function_code(fn: object) -> tuple[str, int, int] | None:
    """(file, first line, last line) of a Python function's code object (through
    ``functools.partial``, wrappers' ``__wrapped__`` and bound methods), or None."""
    for _ in range(8):
        code = getattr(fn, "__code__", None)
        if code is not None:
            lines = [n for _, _, n in code.co_lines() if n is not None]
            first = code.co_firstlineno
            return code.co_filename, first, max([first, *lines])
        inner = getattr(fn, "__wrapped__", None) or getattr(fn, "func", None) \
            or getattr(fn, "__func__", None)
        if inner is None:
            return None
        fn = inner
    return None


def main_file(sets: Iterable[dict[int, tuple[Source, ...]]]) -> str | None:
    """The file most ops come from (for module text whose function is unknown), or None."""
    counts: dict[str, int] = {}
    for found in sets:
        for srcs in found.values():
            counts[srcs[0].file] = counts.get(srcs[0].file, 0) + 1
    return max(counts, key=lambda f: counts[f]) if counts else None


def same_file(traced: str, asked: str) -> bool:
    """Whether a file name of a location is the file asked for: the same path, or the same
    file name when ``asked`` is a bare name (``kernels.py``)."""
    if traced == asked:
        return True
    if os.sep not in asked and "/" not in asked:
        return os.path.basename(traced) == asked
    return os.path.abspath(traced) == os.path.abspath(asked)


def ops_for_line(stages: Iterable[tuple[str, str]], line: int, file: str) -> LineOps:
    """The ops of each stage (``(name, module text with locations)`` in stage order) traced
    from line ``line`` of ``file``: in it, or in a function it calls (any user-code frame of any
    of an op's locations)."""
    out = []
    for index, (name, ir) in enumerate(stages):
        shown = strip_locations(ir).splitlines()
        ops = []
        for n, chains in sorted(op_frames(ir).items()):
            if any(s.line == line and same_file(s.file, file) for c in chains for s in c):
                text = shown[n - 1] if n <= len(shown) else ""
                inner = tuple(dict.fromkeys(c[0] for c in chains))
                ops.append(LineOp(n, op_name(text), text.strip(), inner, chains))
        out.append(StageOps(index, name, tuple(ops)))
    return LineOps(file, line, tuple(out))


