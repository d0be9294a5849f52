"""Comparing what a call leaves for the user to see with a reference: tolerances that follow the
dtype, outcomes (every result leaf and every array argument after the call), the references
(NumPy eager, ``jax.jit``, the traced module) and the comparison itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from reactant_lab import backend
from reactant_lab.analysis.precision import reduced_precision_dots
from reactant_lab.errors import ReactantLabError, TraceError
from reactant_lab.trace.traced import Traced

if TYPE_CHECKING:
    from reactant_lab.compile import Compiled

REFERENCES = ("auto", "numpy", "jax", "stage0")


# -- tolerances ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tolerance:
    """How close a value must be to the reference: ``|got - want| <= rtol * (|want| + scale)``
    with ``scale`` the largest finite magnitude in the reference value (so cancellation near zero
    in a large-valued result is judged against the result's size); exact for integers and bools.
    Non-finite reference elements must be matched exactly (NaN matches NaN)."""

    rtol: float
    """Relative tolerance (0: exact)."""

    def holds(self, got: np.ndarray, want: np.ndarray) -> np.ndarray:
        """Elementwise: whether ``got`` is close enough to ``want`` (NaN matches NaN)."""
        if self.rtol == 0:
            return np.asarray(got == want)
        return np.asarray(relative_error(got, want) <= self.rtol)


def relative_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise ``|got - want| / (|want| + max|want|)``, the measure ``Tolerance`` bounds:
    0 where equal (NaN with NaN, inf with the same inf), inf where a non-finite reference
    element is not matched or the reference is all zeros and ``got`` is not."""
    g, w = _wide(got), _wide(want)
    finite = np.isfinite(w)
    scale = float(np.max(np.abs(w[finite]), initial=0.0))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(g - w)
        denom = np.abs(w) + scale
        rel = np.where(diff == 0, 0.0, np.where(denom > 0, diff / np.where(denom > 0, denom, 1),
                                                 np.inf))
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    rel = np.where(finite, np.where(np.isnan(rel), np.inf, rel), np.where(same, 0.0, np.inf))
    return np.asarray(rel, dtype=np.float64)


def _wide(a: np.ndarray) -> np.ndarray:
    """``a`` as complex128 or float64 (bools and integers as numbers)."""
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


_RTOL = {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-4, "complex64": 1e-4,
         "float64": 1e-9, "complex128": 1e-9}


def tolerance_for(dtype: Any) -> Tolerance:
    """The tolerance for values of ``dtype``: 1e-2 for 16-bit floats, 1e-4 for float32 and
    complex64, 1e-9 for float64 and complex128, exact otherwise."""
    return Tolerance(_RTOL.get(np.dtype(dtype).name, 0.0))


TOLERANCE_TEXT = ("|got − want| ≤ rtol·(|want| + max|want|) per value, by dtype: rtol 1e-2 for "
                  "16-bit floats, 1e-4 for float32/complex64, 1e-9 for float64/complex128; "
                  "integers and bools exact; NaN must match NaN")


_NUMPY_NAMES = {"f32": "float32", "complex<f32>": "complex64", "f64": "float64",
                "complex<f64>": "complex128", "f16": "float16", "bf16": "bfloat16"}


def precision_floors(ir: str, platform: str) -> tuple[dict[str, float], str | None]:
    """The tolerances module ``ir`` needs on ``platform`` beyond its dtypes' (dtype name ->
    least rtol), and the words saying why (None when it needs none): a TPU computes float32
    dots at DEFAULT precision in one bfloat16 pass, so their results are verified as
    bfloat16's."""
    reduced = reduced_precision_dots(ir, platform)
    floors: dict[str, float] = {}
    for _, r in reduced:
        name = _NUMPY_NAMES.get(r.element_type, r.element_type)
        floors[name] = max(floors.get(name, 0.0), r.rtol)
    if not floors:
        return {}, None
    widened = ", ".join(f"rtol {v:g} for {k}" for k, v in floors.items())
    why = (f"widened to {widened}: {len(reduced)} dot(s) at DEFAULT precision, which a "
           f"{platform.upper()} computes in {reduced[0][1].computes} (ask for "
           "precision=jax.lax.Precision.HIGHEST for full precision)")
    return floors, why


# -- outcomes --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    """What one call leaves for the user to see, on the host: each result leaf and the final
    value of each NumPy array argument (a NumPy kernel updates its arguments in place)."""

    names: tuple[str, ...]
    """One name per value: ``result[0]``, ``argument args[0]`` ..."""
    values: tuple[np.ndarray, ...] = field(repr=False)
    """The values, as NumPy arrays (a scalar result as a 0-d array)."""
    weak: tuple[bool, ...] = field(default=(), repr=False)
    """Per value: whether it has no dtype of its own (a Python number, or JAX's weakly typed
    array for one), so only its value is compared. Empty: none is."""


_ARRAYS = (np.ndarray, np.generic, jax.Array)


def fresh_inputs(args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A copy of each NumPy array leaf of the call, laid out in memory as the original (C, F or
    the same strides: a trace may depend on it) and read-only where it is, so a run cannot touch the
    caller's arrays; other leaves (JAX arrays are immutable) are kept."""
    def copy(leaf: Any) -> Any:
        if not isinstance(leaf, np.ndarray):
            return leaf
        new = _same_layout_copy(leaf)
        if not leaf.flags.writeable:
            new.flags.writeable = False
        return new
    copied: tuple[tuple[Any, ...], dict[str, Any]] = jax.tree_util.tree_map(copy, (args, kwargs))
    return copied


def _same_layout_copy(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` with its strides: C and F order kept by ``copy('K')``; a strided or
    reversed view copied into a fresh buffer spanning the same elements."""
    if a.flags.c_contiguous or a.flags.f_contiguous or a.size == 0 or \
            any(s % a.itemsize for s in a.strides):
        return a.copy(order="K")
    low = sum(s * (n - 1) for s, n in zip(a.strides, a.shape, strict=True) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(a.strides, a.shape, strict=True) if s > 0)
    buffer = np.empty((high - low) // a.itemsize + 1, dtype=a.dtype)
    view = np.lib.stride_tricks.as_strided(buffer[-low // a.itemsize:], a.shape, a.strides)
    view[...] = a
    return view


def outcome(call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
            ) -> Outcome:
    """Run ``call`` on fresh copies of the inputs; what it returned and left in the arrays."""
    a, k = fresh_inputs(args, kwargs)
    result = jax.block_until_ready(call(*a, **k))
    return outcome_of(result, a, k)


def outcome_of(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
    """The outcome of a call that returned ``result`` and left ``args`` / ``kwargs`` so."""
    names, values, weak = [], [], []
    for path, leaf in jax.tree_util.tree_leaves_with_path(result):
        names.append(f"result{jax.tree_util.keystr(path)}")
        values.append(np.asarray(leaf))
        weak.append((isinstance(leaf, int | float | complex) and not isinstance(leaf, bool))
                    or bool(getattr(leaf, "weak_type", False)))
    for path, leaf in jax.tree_util.tree_leaves_with_path((args, kwargs)):
        if isinstance(leaf, np.ndarray):
            names.append(f"argument {_arg_name(path)}")
            values.append(np.array(leaf))
            weak.append(False)
    return Outcome(tuple(names), tuple(values), tuple(weak))


def _arg_name(path: tuple[Any, ...]) -> str:
    where, rest = path[0], path[1:]
    head = "kwargs" if getattr(where, "idx", 0) == 1 else "args"
    return head + jax.tree_util.keystr(tuple(rest))


def reference_name(traced: Traced, reference: str) -> str:
    """'numpy', 'jax' or 'stage0': what ``reference`` ('auto' included) stands for here."""
    if reference not in REFERENCES:
        raise ReactantLabError(f"unknown reference {reference!r}; valid: {', '.join(REFERENCES)}")
    if reference == "auto":
        return "numpy" if traced.mode == "numpy" else "jax"
    if reference == "numpy" and traced.mode != "numpy":
        raise TraceError(f"reference='numpy' runs NumPy code eagerly, but {traced.fn_name} was "
                         "traced as JAX code (JAX mode): use reference='jax' (jax.jit) or "
                         "'stage0' (the traced module)")
    if reference == "jax" and traced.mode == "numpy":
        raise TraceError(f"reference='jax' runs the function under jax.jit, which NumPy code "
                         f"such as {traced.fn_name} (traced in NumPy mode) cannot run under: "
                         "use reference='numpy' (NumPy eager) or 'stage0' (the traced module)")
    return reference


REFERENCE_LABELS = {"numpy": "NumPy eager", "jax": "jax.jit", "stage0": "the traced module"}


def reference_outcome(traced: Traced, args: tuple[Any, ...], kwargs: dict[str, Any],
                      reference: str, stage0: Callable[[], Compiled] | None = None,
                      device: Any | None = None) -> Outcome:
    """The reference outcome: the function run eagerly by NumPy, under ``jax.jit`` (every
    leaf that is not an array static) on ``device`` (``backend.resolve_device``: the device the
    stages run on, so that the reference and the stages meet the same XLA backend), or the
    traced module (stage 0, compiled by ``stage0()``). A reference that fails raises TraceError
    naming it."""
    fn = traced.fn
    if reference in ("numpy", "jax") and fn is None:
        raise TraceError("the traced call keeps no function to run as a reference; use "
                         "reference='stage0'")
    if reference == "stage0":
        if stage0 is None:
            raise ReactantLabError("reference='stage0' needs the traced module compiled")
        return outcome(stage0(), args, kwargs)
    assert fn is not None
    try:
        if reference == "numpy":
            with np.errstate(all="ignore"):
                return outcome(fn, args, kwargs)
        with backend.x64_scope(traced.layout.x64), \
                jax.default_device(backend.resolve_device(device)):
            return outcome(_jitted(fn, args, kwargs), args, kwargs)
    except ReactantLabError:
        raise
    except Exception as exc:
        raise TraceError(
            f"the reference run of {traced.fn_name} ({REFERENCE_LABELS[reference]}) failed: "
            f"{first_line(exc)}. Fix the function, or compare with the traced "
            "module instead (reference='stage0').") from exc


def _jitted(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
            ) -> Callable[..., Any]:
    """``fn`` under ``jax.jit`` for calls of this structure: the array leaves are its inputs,
    every other leaf (a Python number, a string, a list's length...) is baked in, as in the
    trace; no static leaf needs to be hashable."""
    leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
    dynamic = [i for i, leaf in enumerate(leaves) if isinstance(leaf, _ARRAYS)]

    def on_arrays(*arrays: Any) -> Any:
        full = list(leaves)
        for i, value in zip(dynamic, arrays, strict=True):
            full[i] = value
        a, k = jax.tree_util.tree_unflatten(tree, full)
        return fn(*a, **k)

    jitted = jax.jit(on_arrays)

    def call(*a: Any, **k: Any) -> Any:
        now = jax.tree_util.tree_leaves((a, k))
        return jitted(*[now[i] for i in dynamic])
    return call


# -- comparison ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """How an outcome differs from the reference."""

    ok: bool
    """Every value within its dtype's tolerance (and of the reference's shape and dtype)."""
    max_abs: float
    """Largest absolute difference over all values (0 when equal; inf for a shape or dtype
    mismatch, or a NaN / inf where the reference has none)."""
    max_rel: float
    """Largest ``|got - want| / (|want| + max|want|)``: the measure the tolerance bounds, so a
    float value is ok exactly when this is at most its dtype's rtol."""
    first_bad: str | None = None
    """The first value that is off, with where and what: for the user to read."""


def compare(got: Outcome, want: Outcome, floors: dict[str, float] | None = None) -> Comparison:
    """Compare value by value, each within the tolerance of the reference value's dtype (of the
    coarser of the two dtypes where one side has none of its own: ``Outcome.weak``), or the
    least rtol ``floors`` gives that dtype (``precision_floors``)."""
    if got.names != want.names:
        return Comparison(False, float("inf"), float("inf"),
                          f"different outputs: {list(got.names)} vs {list(want.names)}")
    max_abs = max_rel = 0.0
    first_bad: str | None = None
    for i, (name, g, w) in enumerate(zip(want.names, got.values, want.values, strict=True)):
        weak = _flag(got.weak, i) or _flag(want.weak, i)
        if g.shape != w.shape or (g.dtype != w.dtype and not weak):
            bad = f"{name}: {g.dtype}{list(g.shape)}, reference {w.dtype}{list(w.shape)}"
            return Comparison(False, float("inf"), float("inf"), first_bad or bad)
        if w.size == 0:
            continue
        rtol = max(tolerance_for(g.dtype).rtol, tolerance_for(w.dtype).rtol,
                   *((floors or {}).get(d.name, 0.0) for d in (g.dtype, w.dtype)))
        if _numeric(w.dtype) and _numeric(g.dtype):
            rel = relative_error(g, w)
            holds = rel <= rtol if rtol else np.asarray(g == w)
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.abs(_wide(g) - _wide(w))
            max_abs = max(max_abs, float(np.where(rel == 0, 0.0,
                                                  np.where(np.isnan(diff), np.inf, diff)).max()))
            max_rel = max(max_rel, float(rel.max()))
        else:
            holds = np.asarray(g == w)
        if not holds.all() and first_bad is None:
            where = tuple(int(k) for k in np.argwhere(~holds)[0])
            first_bad = (f"{name}{list(where) if where else ''}: got {_show(g[where])}, "
                         f"reference {_show(w[where])} ({int((~holds).sum())} of {w.size} "
                         "values off)")
    return Comparison(first_bad is None, max_abs, max_rel, first_bad)


def _flag(flags: tuple[bool, ...], i: int) -> bool:
    return flags[i] if i < len(flags) else False


def _numeric(dtype: np.dtype) -> bool:
    return dtype.kind in "biufc" or dtype.name in _RTOL


def _show(value: Any) -> str:
    item = value.item() if isinstance(value, np.generic | np.ndarray) else value
    return repr(item)


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its type when it has none), named by its type
    where that is not one of ours (an XLA or JAX error)."""
    text = str(exc).strip()
    line = text.splitlines()[0][:400] if text else ""
    if isinstance(exc, ReactantLabError):
        return line or type(exc).__name__
    return f"{type(exc).__name__}: {line}" if line else type(exc).__name__
