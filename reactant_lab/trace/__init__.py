"""fn + example args -> Traced: pytree paths, static args, preserved results, StableHLO text."""

from __future__ import annotations

import time
import types
from collections.abc import Callable
from typing import Any

from reactant_lab.errors import TraceError
from reactant_lab.trace.jax_mode import fn_name, trace_jax
from reactant_lab.trace.paths import flatten_call
from reactant_lab.trace.specs import (
    ArgSpec,
    CallLayout,
    Computed,
    Preserved,
    ResultSpec,
    SkippedArg,
    Static,
)
from reactant_lab.trace.traced import Traced

__all__ = ["ArgSpec", "CallLayout", "Computed", "Preserved", "ResultSpec", "SkippedArg",
           "Static", "Traced", "trace"]


def trace(fn: Callable[..., Any], *args: Any, trace_scalars: bool = False,
          **kwargs: Any) -> Traced:
    """Trace ``fn(*args, **kwargs)`` to a StableHLO module.

    Array leaves (NumPy / JAX arrays, NumPy scalars) are traced; Python scalars, strings, None and
    other hashable objects are static and baked in (``trace_scalars=True`` traces Python numbers).
    """
    _check_callable(fn)
    start = time.perf_counter()
    flat = flatten_call(args, kwargs, trace_scalars=trace_scalars)
    lowered = trace_jax(fn, flat)
    preserved = {r.path: r.preserved_from for r in lowered.results if r.preserved_from}
    preserved_args = {r.preserved_from for r in lowered.results if r.preserved_from}
    layout = CallLayout(
        in_treedef=flat.treedef, in_slots=flat.slots,
        avals=tuple((a.shape, a.dtype, a.weak_type) for a in flat.linear),
        out_treedef=lowered.out_treedef, out_slots=lowered.out_slots,
        x64=flat.needs_x64, numpy_out=flat.all_numpy, trace_scalars=trace_scalars)
    return Traced(
        fn_name=fn_name(fn), mode="jax", linear_args=flat.linear, skipped_args=flat.skipped,
        linear_results=lowered.results, preserved=types.MappingProxyType(preserved),
        mutated=(), donation_mask=tuple(a.path not in preserved_args for a in flat.linear),
        seconds=time.perf_counter() - start, layout=layout, text=lowered.text, fn=fn)


def _check_callable(fn: Any) -> None:
    if callable(fn):
        return
    hint = (" It looks like the result of calling the function: pass the function itself, "
            "e.g. rl.trace(f, x) rather than rl.trace(f(x))." if hasattr(fn, "shape") else "")
    raise TraceError(f"trace expects a function, got {type(fn).__name__}.{hint}")
