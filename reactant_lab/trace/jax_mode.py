"""JAX mode: trace a function of arrays to a jaxpr, find preserved results, lower to StableHLO."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactant_lab.trace import captures
from reactant_lab.trace.lowering import CallOutput, Lowered, lower_call, output_of
from reactant_lab.trace.paths import FlatCall


def fn_name(fn: Callable[..., Any]) -> str:
    """A readable name for ``fn`` (functools.partial and callables included)."""
    inner = getattr(fn, "func", fn)
    return getattr(inner, "__name__", type(inner).__name__)


def trace_jax(fn: Callable[..., Any], flat: FlatCall) -> Lowered:
    """Trace ``fn`` on ``flat``'s avals and lower it; Python runs the function exactly once."""

    def call(*linear: Any) -> CallOutput:
        args, kwargs, *captured = flat.rebuild(linear)
        run = captures.rebind(fn, captured[0]) if captured else fn
        return output_of(run(*args, **kwargs))

    return lower_call(fn_name(fn), flat, call, x64=flat.needs_x64, mode="jax")
