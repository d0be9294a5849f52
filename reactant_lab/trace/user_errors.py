"""Turn errors raised inside the user's function while tracing into messages about the user's code."""

from __future__ import annotations

import contextlib
import functools
import itertools
import linecache
import os
import sys
import sysconfig
import traceback
from collections.abc import Iterable, Iterator
from types import TracebackType

import jax

from reactant_lab.errors import ControlFlowError, ReactantLabError, ShardingError, TraceError

_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.abspath(file)) + os.sep
    for m in (jax, sys.modules["numpy"], sys.modules["reactant_lab"])
    if (file := getattr(m, "__file__", None)))
# Installed packages and the standard library count as library code too when deciding whose call
# NumPy mode intercepts (opt_einsum, called by JAX, must get real NumPy arrays).
_INSTALLED_DIRS = _LIBRARY_DIRS + tuple(sorted({
    os.path.abspath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib")
    if (p := sysconfig.get_paths().get(key))}))
_JAX_DIR = _LIBRARY_DIRS[0]
_CONTROL_FLOW = (jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError,
                 jax.errors.ConcretizationTypeError)
_ADVICE = {
    "jax": (
        "The value is only known when the compiled code runs, so Python cannot branch or loop "
        "on it.\n"
        "  - for a branch, use jax.lax.cond(pred, true_fn, false_fn, ...) or jnp.where(pred, a, b);\n"
        "  - for a loop, use jax.lax.while_loop / jax.lax.fori_loop;\n"
        "  - if the value is really a constant, pass it as a Python scalar (a static argument)."),
    "numpy": (
        "The value is only known when the compiled code runs, so Python cannot branch or loop "
        "on it.\n"
        "  - for a branch, compute both sides and pick with np.where(cond, a, b) (in JAX code: "
        "jax.lax.cond or jnp.where);\n"
        "  - loop over static ranges (Python ints, array shapes), not over traced values (in JAX "
        "code: jax.lax.while_loop / jax.lax.fori_loop);\n"
        "  - if the value is really a constant, pass it as a Python scalar (a static argument)."),
}


def _is_library(filename: str, dirs: tuple[str, ...]) -> bool:
    return filename.startswith("<frozen") or os.path.abspath(filename).startswith(dirs)


def _innermost_user(frames: Iterable[traceback.FrameSummary]) -> traceback.FrameSummary | None:
    found = None
    for frame in frames:
        if not _is_library(frame.filename, _LIBRARY_DIRS):
            found = frame
    return found


def user_frame(tb: TracebackType | None) -> traceback.FrameSummary | None:
    """The innermost frame of ``tb`` that is the user's code (not JAX, NumPy or reactant_lab)."""
    return _innermost_user(traceback.extract_tb(tb))


def calling_user_frame() -> traceback.FrameSummary | None:
    """The innermost frame of the current stack that is the user's code."""
    return _innermost_user(traceback.extract_stack())


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    """True for code that is neither reactant_lab, JAX, NumPy, an installed package nor the
    standard library: the code NumPy mode traces."""
    return not _is_library(filename, _INSTALLED_DIRS)


def called_jax(tb: TracebackType | None, own_dir: str) -> bool:
    """True when code other than JAX itself and ``own_dir`` (the caller's own package) calls
    into JAX somewhere along ``tb``."""
    frames = [os.path.abspath(f.filename) for f in traceback.extract_tb(tb)]
    return any(b.startswith(_JAX_DIR) and not a.startswith((_JAX_DIR, own_dir))
               for a, b in itertools.pairwise(frames))


def describe(frame: traceback.FrameSummary | None) -> str:
    """``file:line in func`` and the source line, for messages."""
    if frame is None:
        return "an unknown place in your function"
    line = (frame.line or linecache.getline(frame.filename, frame.lineno or 0)).strip()
    return f"{frame.filename}:{frame.lineno} in {frame.name}()\n    {line}"


def control_flow_error(fn_name: str, frame: traceback.FrameSummary | None, what: str,
                       mode: str = "jax") -> ControlFlowError:
    """The ControlFlowError for a traced value used as a Python value at ``frame``."""
    message = (f"Python control flow on a traced value while tracing {fn_name}, at "
               f"{describe(frame)}\n{what}\n{_ADVICE[mode]}")
    return ControlFlowError(message, frame.filename if frame else None,
                            frame.lineno if frame else None)


@contextlib.contextmanager
def user_code_errors(fn_name: str, mode: str = "jax") -> Iterator[None]:
    """Re-raise control flow on traced values as ControlFlowError; annotate other user errors."""
    try:
        yield
    except _CONTROL_FLOW as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise control_flow_error(fn_name, user_frame(exc.__traceback__), first, mode) from None
    except jax.errors.TracerArrayConversionError as exc:
        frame = user_frame(exc.__traceback__)
        raise TraceError(
            f"A traced value was converted to a NumPy array while tracing {fn_name}, at "
            f"{describe(frame)}\nUse jax.numpy instead of numpy on traced values, or pass NumPy "
            "arrays so the function is traced in NumPy mode.") from None
    except ReactantLabError:
        raise
    except Exception as exc:
        frame = user_frame(exc.__traceback__)
        if any(c.__name__ == "ShardingTypeError" for c in type(exc).__mro__):
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ShardingError(
                f"{fn_name} does not type-check under its arguments' shardings (the sharding "
                f"rules of a mesh whose axes are Explicit), at {describe(frame)}:\n  {first}\n"
                "Reshard an operand first (jax.sharding.reshard(x, P(...))), place the arguments "
                "so that the dimensions combined agree, or use a mesh of Auto axes "
                "(jax.sharding.Mesh), whose partitioner inserts the collectives itself."
            ) from exc
        exc.add_note(f"(raised while reactant_lab traced {fn_name}, at {describe(frame)})")
        raise
