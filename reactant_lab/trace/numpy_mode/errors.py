"""The errors NumPy mode raises, each naming the user's line and saying what to do instead."""

from __future__ import annotations

from typing import Any

from reactant_lab.errors import (
    DynamicShapeError,
    TraceError,
    UnsupportedNumpyFunctionError,
)
from reactant_lab.trace.user_errors import calling_user_frame, control_flow_error, describe

# Functions whose result shape depends on the values: no static-shape equivalent exists.
_DATA_DEPENDENT = frozenset({
    "nonzero", "argwhere", "flatnonzero", "unique", "unique_values", "unique_counts",
    "unique_inverse", "unique_all", "extract", "compress", "trim_zeros",
    "setdiff1d", "intersect1d", "union1d", "setxor1d", "where"})


class ImmutableError(TraceError, TypeError):
    """A write into something NumPy cannot write into either (a NumPy scalar, a JAX array, a
    Python number): a TypeError, as NumPy raises."""


class JaxCodeError(TraceError):
    """The kernel is JAX code: JAX failed on a NumPy-mode array it was handed (or ``x.at``,
    which an ndarray lacks), or, for mode='auto', it handed arrays to JAX and updated none."""

    updated: tuple[tuple[str, str], ...] = ()
    """(argument path, where) of each argument the function had already updated in place."""
    finished: bool = False
    """True when the function ran to its end (it handed arrays to JAX and updated none in
    place); False when JAX failed on the way."""


def numpy_name(func: Any) -> str:
    """``np.linalg.solve`` / ``np.add`` / ``np.random.rand``: how the user wrote it."""
    name = getattr(func, "__name__", repr(func))
    module = (getattr(func, "__module__", None) or "numpy").split(".")
    public = [m for m in module[1:] if not m.startswith("_")]
    return "np." + ".".join([*public, name]) if module[0] == "numpy" else f"{'.'.join(module)}.{name}"


def unsupported(func: Any, detail: str = "") -> UnsupportedNumpyFunctionError:
    """No traced equivalent of ``func`` (a function, a ufunc or a ufunc method)."""
    name = func if isinstance(func, str) else numpy_name(func)
    frame = calling_user_frame()
    short = name.rsplit(".", 1)[-1]
    why = detail or (" (its result's shape depends on the values, which are only known when the "
                     "compiled code runs)" if short in _DATA_DEPENDENT else "")
    message = (f"{name} has no traced equivalent in reactant_lab's NumPy mode{why}; called at "
               f"{describe(frame)}\nRewrite it with supported NumPy functions (np.where, "
               "reductions with where=, slicing), compute it outside the kernel and pass the "
               "result in, or write the function with jax.numpy and trace it in JAX mode.")
    return UnsupportedNumpyFunctionError(message, name, frame.filename if frame else None,
                                         frame.lineno if frame else None)


def random_in_kernel(func: Any) -> UnsupportedNumpyFunctionError:
    """``np.random`` called inside a traced kernel."""
    name = numpy_name(func) if not isinstance(func, str) else func
    frame = calling_user_frame()
    message = (f"{name} was called inside a traced kernel, at {describe(frame)}\nRandom draws "
               "would be baked into the compiled code as constants, the same on every call. Draw "
               "the random values outside the kernel and pass them in as an argument.")
    return UnsupportedNumpyFunctionError(message, name, frame.filename if frame else None,
                                         frame.lineno if frame else None)


def concrete_value_needed(fn_name: str, what: str) -> TraceError:
    """``x.item()`` / ``x.tolist()`` on a traced array."""
    return control_flow_error(
        fn_name, calling_user_frame(),
        f"{what} needs the value of a traced array, which is only known when the compiled code "
        "runs.", mode="numpy")


def array_conversion(what: str) -> TraceError:
    """A traced array converted to a real NumPy array (np.asarray from library code, etc.)."""
    return TraceError(
        f"A traced array ({what}) was converted to a NumPy array at {describe(calling_user_frame())}"
        "\nIn NumPy mode arrays are traced, not computed: keep them in NumPy functions, methods "
        "and operators. Arrays the kernel creates with np.zeros / np.array / ... are traced only "
        "when called as np.<name> (not `from numpy import zeros`); NumPy constants made outside "
        "the kernel cannot be indexed by traced values (pass them in as arguments instead).")


def immutable(path: str | None, reason: str, dtype: Any = None) -> ImmutableError:
    """A write into an argument that cannot be updated in place, or into a NumPy scalar the
    kernel computed (``dtype`` its type)."""
    where = describe(calling_user_frame())
    if path is None and dtype is not None:
        return ImmutableError(
            f"'numpy.{dtype.name}' object does not support item assignment, at {where}: it is "
            f"{reason}; NumPy's reductions (a.sum(), a.max(axis=None)), a[i, j] with an index "
            "per axis, and arithmetic on such scalars give scalars, not arrays.\nWrite into an "
            "array instead, e.g. t = np.asarray(t) for a 0-d array, or keepdims=True.")
    return ImmutableError(
        f"{path or 'a kernel array'} is {reason}, so it cannot be updated in place, at {where}"
        "\nPass a writable NumPy array to have it updated, or work on a copy (x = x.copy()).")


def negative_integer_power(exponent: Any) -> ValueError:
    """``x ** n`` of integers with a negative static ``n``: NumPy's ValueError, with the line."""
    return ValueError(
        f"Integers to negative integer powers are not allowed: an integer array to the power "
        f"{exponent!r}, at {describe(calling_user_frame())}\nRaise a float instead "
        "(a.astype(np.float64) ** n, or np.float_power(a, n)), as NumPy requires.")


def dynamic_shape(what: str) -> DynamicShapeError:
    """An operation whose result shape would depend on traced values."""
    return DynamicShapeError(
        f"{what} at {describe(calling_user_frame())}\nWith a traced boolean mask, a[mask] has a "
        "shape only known when the compiled code runs. Supported: a[mask] = value, "
        "a[mask] op= value, a[mask] = b[mask] (elementwise arithmetic on such selections "
        "included) and reductions of a selection (a[mask].sum(), .mean(), .max(), ...). "
        "Otherwise use np.where(mask, a, other) or a reduction with where=mask.")
