"""Module text for backend: checks before MLIR sees it, its size, and messages about it.

The messages explain what MLIR or XLA said about the text. Plain text work: no bindings here.

Only backend and its private modules import this module.
"""

from __future__ import annotations

import re

import numpy as np

from reactant_lab.errors import ModuleTextError

MAX_NESTING = 1000
"""Deepest bracket nesting (``{ [ ( <``) accepted in module text. MLIR's recursive-descent
parser overflows its stack at about 4,000 levels; real modules nest a few dozen."""


def module_text(source: object) -> str:
    """``source`` as module text that is safe to hand to MLIR: a str (UTF-8 bytes are decoded)
    nested at most MAX_NESTING deep. Raises ModuleTextError otherwise."""
    if isinstance(source, bytes | bytearray | memoryview):
        try:
            source = bytes(source).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModuleTextError(f"module text given as bytes is not UTF-8 ({exc}); pass a str "
                                  "of MLIR text, e.g. pathlib.Path(f).read_text()") from None
    if not isinstance(source, str):
        raise ModuleTextError(f"expected the module as a str of MLIR text, not "
                              f"{type(source).__name__} ({str(source)[:80]!r}); pass the text "
                              "itself, e.g. traced.ir or pathlib.Path(f).read_text()")
    deepest = deepest_nesting(source, MAX_NESTING)
    if deepest is not None:
        depth, line = deepest
        raise ModuleTextError(
            f"the module text nests brackets {depth:,} levels deep (at line {line}); "
            f"reactant_lab accepts at most {MAX_NESTING:,} because MLIR's parser crashes at "
            "about 4,000. Real modules nest a few dozen levels: check how the text was made.")
    return source


_OPEN, _CLOSE = b"{[(<", b"}])>"
_STEP = np.zeros(256, np.int8)
_STEP[list(_OPEN)], _STEP[list(_CLOSE)] = 1, -1


def deepest_nesting(text: str, limit: int) -> tuple[int, int] | None:
    """(depth, line) of the deepest bracket nesting when it exceeds ``limit``, else None.

    Counts ``{ [ ( <`` against their closers; the ``>`` of ``->`` closes nothing, and a closer
    without an opener is ignored. Brackets inside string literals count too: they come in pairs
    in real modules.
    """
    text = _without_hex_payloads(text)
    if sum(text.count(c) for c in "{[(<") <= limit:
        return None
    codes = np.frombuffer(text.encode("ascii", "replace"), np.uint8)
    where = np.flatnonzero(_STEP[codes])  # the brackets alone: a module is mostly other text
    step = _STEP[codes[where]].astype(np.int32)
    step[(codes[where] == ord(">")) & (where > 0) & (codes[where - 1] == ord("-"))] = 0
    total = np.cumsum(step)
    depth = total - np.minimum.accumulate(np.minimum(total, 0))  # a running sum floored at 0
    deepest = int(depth.argmax())
    if depth[deepest] <= limit:
        return None
    return int(depth[deepest]), text.count("\n", 0, int(where[deepest])) + 1


def _without_hex_payloads(text: str) -> str:
    """``text`` with the payloads of its ``"0x..."`` string literals dropped (the quotes kept):
    a folded constant's megabytes of hex hold no bracket and no line break, and counting
    brackets through them cost ~25 ms a call on a 16 MB module. (A payload ends at the next
    quote: an escaped one inside a longer string only leaves more of it counted.)"""
    if '"0x' not in text:
        return text
    pieces: list[str] = []
    pos = 0
    while (start := text.find('"0x', pos)) >= 0:
        end = text.find('"', start + 3)
        if end < 0:
            break
        pieces.append(text[pos:start + 1])
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


_BOOL_LIST_END = re.compile(r"\]> : tensor<((?:\d+x)*)i1>")
_BOOL_LIST_MIN = 4096
"""Characters of a boolean list literal from which ``hex_bool_constants`` rewrites it."""


def hex_bool_constants(text: str) -> str:
    """``text`` with each large boolean constant written as MLIR's hex literal (one byte per
    value, as jaxlib prints it) instead of a list of ``true`` / ``false``.

    enzyme-ad's MLIR prints i1 constants as lists: a 1024x1024 mask becomes 6.4 MB of text that
    every later stage parses again (0.15 s a pass step, against 0.05 s from hex) and that the
    stage table and saved explorers keep. The hex form is the one jaxlib writes and enzyme-ad
    reads back to the same module (tested); a literal that is not a full list of the tensor's
    values is left as it is. Literals are found with ``str.find`` and read as byte strings: a
    regex over megabytes of ``true, false`` took ~60 ms a stage.
    """
    if "xi1>" not in text:
        return text
    pieces: list[str] = []
    done = pos = 0
    while (start := text.find("dense<[", pos)) >= 0:
        end = text.find("]>", start)
        if end < 0:
            break
        pos = end + 2
        found = _BOOL_LIST_END.match(text, end) if end - start >= _BOOL_LIST_MIN else None
        if found is None:
            continue
        dims = found.group(1)
        count = int(np.prod([int(d) for d in dims.split("x") if d], dtype=np.int64))
        data = _bool_list_bytes(text[start + 6:end + 1], count)
        if data is None:
            continue
        pieces += [text[done:start], f'dense<"0x{data.hex().upper()}"> : tensor<{dims}i1>']
        done = pos = found.end()
    return "".join(pieces) + text[done:] if pieces else text


def _bool_list_bytes(body: str, count: int) -> bytes | None:
    """One byte (0 or 1) per value of a (nested) list literal of ``true`` / ``false``, or None
    when ``body`` is not a list of exactly ``count`` such words. (Byte-string work in C: the
    brackets, commas and spaces dropped, each word replaced by its byte, nothing else left.)"""
    try:
        letters = body.encode("ascii").translate(None, b"[], \n")
    except UnicodeEncodeError:
        return None
    bits = letters.replace(b"true", b"\x01").replace(b"false", b"\x00")
    if len(bits) != count or bits.translate(None, b"\x00\x01"):
        return None
    return bits


# An op line as analysis.ops counts them (the layering keeps backend from importing it).
_OP_LINE = re.compile(r"^\s*(?:%[\w$.:#-]+(?:\s*,\s*%[\w$.:#-]+)*\s*=\s*)?"
                      r"(\"?)([A-Za-z_][\w$]*\.[\w$.]+|return)\1[\s(<{:@]")
_DEFINES = re.compile(r"^\s*(%[\w$.-]+(?::\d+)?(?:\s*,\s*%[\w$.-]+)*)\s*=(.*)$")
_VALUE = re.compile(r"%([\w$.-]+)")


def module_size(text: str) -> tuple[int, int]:
    """(ops, the most ops on one def-use path) of module text; ops are counted as in the stage
    table (module and function shells left out), nested regions' ops inline in the path."""
    depth: dict[str, int] = {}
    ops = chain = 0
    for line in text.splitlines():
        op = _OP_LINE.match(line)
        if op is None or op.group(2) == "func.func":
            continue
        ops += 1
        found = _DEFINES.match(line)
        if found is None:
            continue
        level = 1 + max((depth.get(v, 0) for v in _VALUE.findall(found.group(2))), default=0)
        for name in _VALUE.findall(found.group(1)):
            depth[name] = level
        chain = max(chain, level)
    return ops, chain


_MAIN_LINE = re.compile(r"^  func\.func public @main\((.*)$", re.MULTILINE)
_MAIN_END = re.compile(r"^  }", re.MULTILINE)


def main_reads_every_arg(text: str) -> bool:
    """Whether the printed ``@main`` of ``text`` surely reads each of its arguments: each
    ``%argN`` of its one-line signature appears again in its body (regions nested in it number
    their block arguments on from @main's, so the name is @main's argument). False also where
    the text is not laid out as MLIR prints a module (then the module itself says)."""
    line = _MAIN_LINE.search(text)
    if line is None:
        return False
    n = len(re.findall(r"%arg\d+:", line.group(1)))
    if not n:
        return True
    end = _MAIN_END.search(text, line.end())
    if end is None:
        return False
    read = {int(m) for m in re.findall(r"%arg(\d+)(?![\w$.-])", text[line.end():end.start()])}
    return all(i in read for i in range(n))


def restore_main(text: str, name: str) -> str:
    """``text`` with its entry function ``name`` (enzyme-ad's private @main_<n>) renamed to the
    public @main again."""
    if name == "main":
        return text
    text = re.sub(rf"func\.func (?:private |public )?@{re.escape(name)}\(",
                  "func.func public @main(", text, count=1)
    return re.sub(rf"@{re.escape(name)}\b", "@main", text)


def parse_error_message(pipeline: str, detail: str) -> str:
    """The UnknownPassError message for a pipeline MLIR could not parse."""
    bad = re.search(r"'([^']+)' does not refer to a registered pass", detail)
    opt = re.search(r"no such option (\S+)", detail)
    what = (f"unknown pass '{bad.group(1)}'" if bad else
            f"unknown option '{opt.group(1)}'" if opt else "the pipeline does not parse")
    return (f"Pass pipeline error: {what}.\n  pipeline: {pipeline[:300]}\n  MLIR says: "
            f"{detail.strip()[:600]}\nCheck the pass name and its options "
            "(reactant_lab.PRESETS shows pipelines that work).")


def unparsable_message(text: str, detail: str) -> str:
    """'the module text does not parse' with MLIR's first error, its line and a caret."""
    found = re.search(r'"[^"\n]*":(\d+):(\d+)\)?:? ?(?:error: )?([^\n]*)', detail)
    where = ""
    if found:
        line, column = int(found.group(1)), int(found.group(2))
        lines = text.splitlines()
        source = lines[line - 1] if 0 < line <= len(lines) else ""
        where = (f": line {line}, column {column}: {found.group(3).strip()}\n"
                 f"  {line:>5} | {source[:200]}\n        | {' ' * (column - 1)}^")
    return (f"the module text does not parse{where}\nMLIR says:\n  {detail[:1500]}\n"
            "Fix the text: it must be one whole MLIR module in dialects reactant_lab's passes "
            "know (stablehlo, chlo, func, arith, enzyme, ...), as printed by jax or MLIR.")


_NATIVE_FRAME = re.compile(r"[ \t]*@[ \t]+0x[0-9a-fA-F]+\b[^\n]*\n?")
"""A line of a native stack trace XLA appends to some errors (``@ 0x7f… xla::Foo()``)."""

_WIDE_TYPES = re.compile(r"While rewriting computation to not contain X(?:64|\{64\|128\}) "
                         r"element types|Only F32 and C64 types are implemented|"
                         r"Unexpected operand type for FFT: (?:f64|c128)")
"""How XLA's TPU compiler says it has no implementation of an op for 64-bit types (measured on
a TPU v5e with jax 0.10.2: an int64 matrix product, a float64 LU factorization, float64 and
complex128 FFTs)."""


def xla_error_text(exc: BaseException, limit: int = 1500) -> str:
    """XLA's error message without the native stack frames it appends, at most ``limit``
    characters."""
    return _NATIVE_FRAME.sub("", str(exc)).strip()[:limit]


def compile_message(text: str, exc: Exception) -> str:
    """The CompileError message for a module XLA refused, naming ops it cannot compile."""
    said = xla_error_text(exc)
    if _WIDE_TYPES.search(said):
        return (f"XLA could not compile the module: {said} The device's compiler has no "
                "implementation of this op for 64-bit types (a TPU computes float64 in "
                "software and lacks some ops for it, and for int64). What to do: compute this "
                "part in float32 / int32 / complex64 (cast the arrays, e.g. "
                "a.astype(np.float32)), or run the function on the CPU (device='cpu').")
    ops = sorted(set(re.findall(r"(?<![#\w.])(enzyme\w*\.\w+|llvm\.\w+)", text)))[:8]
    hint = (f" The module still holds ops XLA cannot compile ({', '.join(ops)}): compile a "
            "later stage, or use a preset that ends with 'jit lowering'.") if ops else ""
    enzyme = [op for op in ops if op in ("enzyme.autodiff", "enzyme.fwddiff", "enzyme.batch")]
    if enzyme:
        hint = (f" The module still holds {', '.join(enzyme)}: only the 'enzyme (AD)' stage "
                "differentiates enzyme.autodiff / enzyme.fwddiff and only the 'batch' stage "
                "expands enzyme.batch, and this module has not been through them (as in "
                "Reactant, the presets no_enzyme, none, canonicalize and noopt leave them in, "
                "just_batch the AD ops) and XLA cannot compile them. Use optimize='all' (or "
                "only_enzyme, after_enzyme, before_enzyme), or compile a stage after them.")
    return f"XLA could not compile the module: {said}{hint}"
