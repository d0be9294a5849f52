"""The ``numba`` baseline: the user's own, unmodified NumPy function under ``numba.njit``.

Numba comes from an optional extra (``pip install reactant-lab[numba]``) and is imported only
here, only when the baseline runs, so the rest of reactant_lab works without it.
"""

from __future__ import annotations

import importlib.util
import re
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from reactant_lab.bench.measure import Inputs, Variant, copies, copy_inputs
from reactant_lab.errors import ReactantLabError
from reactant_lab.trace import Traced
from reactant_lab.trace.control_flow.convert import is_user_function
from reactant_lab.verify import compare, outcome_of, reference_outcome

NOT_INSTALLED = "numba is not installed: pip install reactant-lab[numba]"
JAX_CODE = ("numba runs NumPy code only: the function is JAX code (traced in JAX mode), with no "
            "NumPy version for numba.njit to compile")
REASON_CHARS = 400
"""A reason longer than this is cut at its last whole sentence within it."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PIPELINE = re.compile(r"^Failed in [\w ]+ pipeline \(step: [^)]*\)$")
_FUNCTION = re.compile(r"\b\w*Function\(<(?:built-in )?function ([\w.]+)(?: at 0x[0-9a-f]+)?>\)")
_WHERE = re.compile(r'^File "[^"]*", line (\d+):$')


def available() -> bool:
    """Whether numba can be found (without importing it: that takes a while)."""
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):
        return False


def whole(text: str, limit: int = REASON_CHARS) -> str:
    """``text`` within ``limit`` characters, cut after its last whole sentence that fits (at a
    word, with an ellipsis, when not even the first sentence does)."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rfind(". ")
    if cut > 0:
        return text[:cut + 1]
    space = text[:limit].rfind(" ")
    return text[:space if space > 0 else limit].rstrip(",;:") + "…"


def refusal(exc: BaseException) -> str:
    """Why numba refused the code, in one line: its first meaningful line (not the "Failed in
    nopython mode pipeline" header), the signature it found no implementation for, and the line
    of the user's code it stopped at."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines()]
    start = next((i for i, line in enumerate(lines) if line and not _PIPELINE.match(line)), None)
    if start is None:
        return type(exc).__name__
    first = lines[start]
    if first.endswith(":"):  # "No implementation of function f found for signature:"
        sig = next((line for line in lines[start + 1:start + 4] if line.startswith(">>>")), None)
        first = f"{first} {sig.removeprefix('>>>').strip()}" if sig else first.rstrip(":")
    first = whole(_FUNCTION.sub(r"\1", first))
    return f"{type(exc).__name__}: {first}{_where(lines)}"


def _where(lines: list[str]) -> str:
    """`` (line N: code)`` for the last place in the message numba points at, else ''."""
    spots = [i for i, line in enumerate(lines) if _WHERE.match(line)]
    if not spots:
        return ""
    at = spots[-1]
    match = _WHERE.match(lines[at])
    assert match is not None
    code = ""
    for i in range(at + 1, min(len(lines), at + 12)):
        if lines[i] == "^":
            code = next((c for c in reversed(lines[at + 1:i]) if c and c != "<source elided>"), "")
            break
    return f" (line {match.group(1)}" + (f": {whole(code, 120)})" if code else ")")


def _place(leaf: Any) -> Any:
    """A writeable copy of a NumPy array; a NumPy scalar stays one (numba types it as a scalar,
    as the reference call does)."""
    return np.array(leaf) if isinstance(leaf, np.ndarray) else leaf


def numba_variant(fn: Callable[..., Any], traced: Traced, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[Variant, float] | str:
    """(the variant, its compile seconds) or why it cannot run: ``numba.njit(fn)`` compiled by a
    first call on copies of the inputs (timed apart), its result checked against NumPy's."""
    if traced.mode != "numpy":
        return JAX_CODE
    try:
        import numba
    except ModuleNotFoundError as exc:
        if exc.name == "numba":
            return NOT_INSTALLED
        return f"numba cannot be imported: {refusal(exc)}"
    except ImportError as exc:  # e.g. a NumPy newer than the installed numba supports
        return f"numba cannot be imported: {refusal(exc)}"
    try:
        jitted = numba.njit(with_jitted_helpers(fn, numba.njit))
    except Exception as exc:  # e.g. not a Python function
        return f"numba.njit refuses the function: {refusal(exc)}"
    first: Inputs = copy_inputs((args, kwargs), _place)
    start = time.perf_counter()
    try:
        with np.errstate(all="ignore"):
            result = jitted(*first[0], **first[1])
    except Exception as exc:  # numba's refusal: TypingError, UnsupportedError, ...
        if not jitted.signatures:
            return f"numba cannot compile the function: {refusal(exc)}"
        return f"the function compiled by numba failed: {refusal(exc)}"
    compile_s = _compile_seconds(jitted, time.perf_counter() - start)
    checked = _check(result, first, traced, args, kwargs)
    if checked is not None:
        return checked
    variant = Variant("numba", jitted, copies((args, kwargs), _place),
                      (lambda: copy_inputs((args, kwargs), _place)) if traced.mutated else None)
    return variant, compile_s


def with_jitted_helpers(fn: Any, njit: Callable[[Any], Any],
                        seen: frozenset[int] = frozenset()) -> Any:
    """``fn`` with the helper functions of the user's code it calls by global name under
    ``njit`` too, as a numba user decorates them (numba calls no plain Python function: a
    kernel calling ``larger(a, b)`` was refused, "Untyped global name 'larger'"); ``fn`` itself
    when it calls none (or is no plain function). The helpers' own helpers likewise; a function
    already on the way (recursion) is left as it is."""
    if not isinstance(fn, types.FunctionType):
        return fn
    seen = seen | {id(fn)}
    names = [n for n in fn.__code__.co_names
             if isinstance(fn.__globals__.get(n), types.FunctionType)
             and id(fn.__globals__[n]) not in seen and is_user_function(fn.__globals__[n])]
    if not names:
        return fn
    scope = dict(fn.__globals__)
    for name in names:
        scope[name] = njit(with_jitted_helpers(scope[name], njit, seen))
    copy = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__, copy.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    copy.__module__ = fn.__module__
    return copy


def _compile_seconds(jitted: Any, first_call_s: float) -> float:
    """Numba's own count of the compile (the first call less its run), else the first call."""
    try:
        timers = jitted.get_metadata(jitted.signatures[0])["timers"]
        return min(float(timers["compiler_lock"]), first_call_s)
    except Exception:  # metadata layout of another numba version
        return first_call_s


def _check(result: Any, inputs: Inputs, traced: Traced, args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> str | None:
    """Why numba's outcome (result and arguments after the call) is not NumPy's, else None."""
    try:
        want = reference_outcome(traced, args, kwargs, "numpy")
    except ReactantLabError as exc:
        return f"numba's result cannot be checked: {exc}"
    got = outcome_of(result, *inputs)
    verdict = compare(got, want)
    if verdict.ok:
        return None
    return f"numba's result differs from NumPy's eager one: {verdict.first_bad}"
