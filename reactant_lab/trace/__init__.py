"""fn + example args -> Traced: pytree paths, static args, preserved results, StableHLO text."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import inspect
import time
import traceback
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from reactant_lab import backend, checks
from reactant_lab.errors import TraceError
from reactant_lab.trace import captures, control_flow, rebinding
from reactant_lab.trace.cache import SignatureCache
from reactant_lab.trace.jax_mode import fn_name, trace_jax
from reactant_lab.trace.lowering import Lowered
from reactant_lab.trace.numpy_mode import JaxCodeError, trace_numpy
from reactant_lab.trace.paths import FlatCall, flatten_call
from reactant_lab.trace.python_names import python_names
from reactant_lab.trace.specs import (
    ArgSpec,
    CallLayout,
    Computed,
    Forwarded,
    Preserved,
    ResultSpec,
    SkippedArg,
    Static,
    UpdatedArg,
)
from reactant_lab.trace.traced import Traced
from reactant_lab.trace.user_errors import describe
from reactant_lab.trace.user_fn import check_callable, check_traceable

LOOPS = control_flow.LOOPS

__all__ = ["LOOPS", "MODES", "ArgSpec", "CallLayout", "Computed", "Forwarded", "Preserved", "ResultSpec",
           "SignatureCache", "SkippedArg", "Static", "Traced", "UpdatedArg", "flatten_for",
           "trace"]

MODES = ("auto", "numpy", "jax")
PLATFORMS = ("cpu", "tpu", "cuda", "rocm")
"""The platforms ``trace(platform=...)`` lowers for (JAX's lowering platforms)."""


def trace(fn: Callable[..., Any], *args: Any, trace_scalars: bool | str = False, mode: str = "auto",
          loops: str = "auto", in_shardings: Mapping[str, Any] | None = None, mesh: Any = None,
          out_shardings: Mapping[str, Any] | None = None, platform: str | None = None,
          **kwargs: Any) -> Traced:
    """Trace ``fn(*args, **kwargs)`` to a StableHLO module.

    Array leaves (NumPy / JAX arrays, NumPy scalars) are traced; Python scalars, strings, None and
    other hashable objects are static and baked in (``trace_scalars=True`` traces Python numbers;
    ``trace_scalars='floats'`` traces Python floats and complex numbers, and keeps ints and
    bools, which often decide shapes and trip counts, static).

    ``mode``: ``'numpy'`` traces a plain NumPy kernel through proxy arrays (in-place updates of
    NumPy arguments become ``resargs`` results, written back into the caller's arrays by the
    compiled call; JAX functions it calls get the traced values); ``'jax'`` traces JAX code;
    ``'auto'`` picks NumPy mode when the array arguments are NumPy arrays (or there are none),
    and falls back to JAX mode when the function turns out to be JAX code (it hands arrays to
    JAX functions and updates none in place), never where that would drop an in-place update.

    ``loops``: ``'auto'`` turns each Python ``for`` over a ``range`` of at least
    ``control_flow.ROLL_THRESHOLD`` iterations into one ``stablehlo.while`` when its body allows
    (else unrolls it, noted in ``Traced.loop_notes``; in NumPy mode, one whose iterations are
    independent runs batched instead, and one whose products and reductions read nothing it
    updates has them hoisted ahead of it, both noted), and each ``if`` / ``while`` on a traced
    value into ``stablehlo.case`` / ``stablehlo.while``, in ``fn`` and the user functions it
    calls; ``'roll'`` raises where a loop cannot roll; ``'unroll'`` runs every loop as Python.
    See docs/loops.md.

    Sharding: JAX arrays placed with a NamedSharding over a mesh of several devices are traced
    with it; ``in_shardings`` (argument path -> ``jax.sharding.PartitionSpec`` over ``mesh``, a
    jax.sharding.Mesh or axis sizes such as ``{"data": 4, "model": 2}``) shards NumPy arguments.
    The module then carries the mesh (``sdy.mesh``) and each argument's ``sdy.sharding``;
    ``linear_args`` show each argument's sharding, the others are replicated.
    ``out_shardings`` (result path such as ``"result"`` or ``"result[0]"`` -> PartitionSpec
    over the arguments' mesh, or NamedSharding) annotates computed results; the others are
    left to the partitioner.

    ``platform`` ('cpu', 'tpu', 'cuda', 'rocm') lowers for that platform's compiler whether or
    not one is attached: a Pallas kernel becomes that platform's custom call (on TPU,
    ``tpu_custom_call`` carrying the Mosaic kernel, which the explorer decodes), to look at and
    stage on any machine; compiling it needs a device of that platform.
    """
    _check_callable(fn)
    check_traceable(fn)
    checks.scalars(trace_scalars)
    if mode not in MODES:
        raise TraceError(f"unknown trace mode {mode!r}; valid modes: {', '.join(MODES)}")
    if platform is not None and platform not in PLATFORMS:
        raise TraceError(f"unknown platform {platform!r}; valid platforms: "
                         f"{', '.join(PLATFORMS)} (or None: the default device's)")
    start = time.perf_counter()
    with _no_collection():
        flat = flatten_for(fn, args, kwargs, trace_scalars=trace_scalars,
                           in_shardings=in_shardings, mesh=mesh, out_shardings=out_shardings,
                           platform=platform)
        run, why = control_flow.converted(fn, loops)
        with control_flow.tracing(loops) as notes, rebinding.guard(fn):
            lowered, used, flat = _lower(run, flat, mode, (args, kwargs, trace_scalars, {
                "in_shardings": in_shardings, "mesh": mesh, "out_shardings": out_shardings,
                "platform": platform}),
                fn)
    if why is not None:
        notes.insert(0, f"{fn_name(fn)} runs as Python: {why}")
    preserved = {r.path: r.preserved_from for r in lowered.results
                 if r.preserved_from and not r.view}
    # Nor is an argument donated when a result is a view of it.
    preserved_args = {r.preserved_from for r in lowered.results if r.preserved_from}
    layout = CallLayout(
        in_treedef=flat.treedef, in_slots=flat.slots,
        avals=tuple((a.shape, a.dtype, a.weak_type) for a in flat.linear),
        out_treedef=lowered.out_treedef, out_slots=lowered.out_slots,
        x64=flat.needs_x64 or used == "numpy",
        numpy_out=flat.all_numpy or (used == "numpy" and not flat.linear_values),
        trace_scalars=trace_scalars, writeback=lowered.writeback,
        layout_deps=lowered.layout_deps, captures=flat.captures, shardings=flat.shardings,
        in_shardings=flat.in_shardings)
    return Traced(
        fn_name=fn_name(fn), mode=used, linear_args=flat.linear, skipped_args=flat.skipped,
        linear_results=lowered.results, preserved=types.MappingProxyType(preserved),
        mutated=tuple(flat.linear[a].path for a, _ in lowered.writeback),
        donation_mask=tuple(a.path not in preserved_args for a in flat.linear),
        seconds=time.perf_counter() - start, layout=layout, ir=lowered.text, fn=fn,
        platform=platform, loop_notes=tuple(notes), names=types.MappingProxyType(python_names(
            fn, [*(a.path for a in flat.linear), *(s.path for s in flat.skipped)],
            [r.path for r in lowered.results])))


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """Python's cyclic garbage collector off while a call traces: tracing allocates many small
    objects, and each full collection it triggers walks the whole heap of the process (JAX's,
    MLIR's, the user's): adi's trace 0.65 -> 0.50 s measured side by side, up to half of a loop
    kernel's first trace in a fresh process. Restored as it was after, also on an error; the
    cycles the trace left are collected by the next collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _lower(fn: Callable[..., Any], flat: FlatCall, mode: str,
           call: tuple[tuple[Any, ...], dict[str, Any], bool | str, dict[str, Any]],
           source: Callable[..., Any]) -> tuple[Lowered, str, FlatCall]:
    """Trace in the requested mode; 'auto' tries NumPy mode for NumPy arrays, then JAX mode.
    Returns the lowering, the mode used and the flattened call it was traced for. ``fn`` is
    ``source`` (the user's function) with its control flow converted."""
    if mode == "numpy" or (mode == "auto" and (flat.all_numpy or not flat.linear_values)):
        # no array at all (a kernel of static Python numbers that makes its own arrays): NumPy
        # mode too, so its NumPy calls are traced rather than run once and baked in
        args, kwargs, trace_scalars, sharded = call
        numpy_flat = flat
        if any(a.weak_type for a in flat.linear):
            # Traced Python numbers are float64 / int64 in NumPy, as NumPy mode runs.
            with backend.x64_scope(True):
                numpy_flat = flatten_for(fn, args, kwargs, trace_scalars=trace_scalars,
                                         **sharded)
        try:
            return trace_numpy(fn, numpy_flat, jax_fallback=mode == "auto"), "numpy", numpy_flat
        except JaxCodeError as exc:
            if mode == "numpy":
                raise
            if exc.updated:
                raise _update_then_jax(fn_name(fn), exc, ()) from exc.__cause__
            may = () if exc.finished else _arrays_updated_by_name(source, args, kwargs)
            if may:  # JAX mode's own error, if it fails too, says more than this refusal
                trace_jax(fn, flat)
                raise _update_then_jax(fn_name(fn), exc, may) from exc.__cause__
    return trace_jax(fn, flat), "jax", flat


def flatten_for(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *,
                trace_scalars: bool | str = False, in_shardings: Mapping[str, Any] | None = None,
                mesh: Any = None, out_shardings: Mapping[str, Any] | None = None,
                platform: str | None = None) -> FlatCall:
    """``fn(*args, **kwargs)`` flattened, with the arrays ``fn`` reads from its closure and its
    module's globals as further linear arguments (paths ``fn.NAME``); ``in_shardings``,
    ``mesh`` and ``out_shardings`` as in ``trace``. Raises TraceError, before anything runs,
    when ``fn`` rebinds a global or a variable of an enclosing function (``rebinding``)."""
    rebinding.check(fn)
    flat = flatten_call(args, kwargs, trace_scalars=trace_scalars, captured=captures.find(fn),
                        in_shardings=in_shardings, mesh=mesh, out_shardings=out_shardings)
    return dataclasses.replace(flat, platform=platform) if platform is not None else flat


def _arrays_updated_by_name(fn: Callable[..., Any], args: tuple[Any, ...],
                            kwargs: dict[str, Any]
                            ) -> tuple[tuple[str, traceback.FrameSummary], ...]:
    """The augmented assignments (``a -= x``) of ``fn`` to a parameter given a NumPy array:
    each an update in place that NumPy would make, and JAX mode would lose."""
    found = rebinding.augmented_parameters(fn)
    if not found:
        return ()
    try:
        given = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError):  # no signature, or a call that does not bind: keep them all
        return found
    return tuple((p, w) for p, w in found if isinstance(given.get(p), np.ndarray))


def _update_then_jax(name: str, exc: JaxCodeError,
                     may: tuple[tuple[str, traceback.FrameSummary], ...]) -> TraceError:
    """mode='auto' cannot fall back to JAX mode once the function updated an argument in place,
    nor when it has an augmented assignment to a parameter (``a -= x``) that the NumPy-mode
    attempt did not reach: JAX mode would silently drop the update."""
    where = [f"  {path} is updated at {line}" for path, line in exc.updated]
    if not exc.updated:
        where += [f"  {param} may be updated at {describe(line)}" for param, line in may]
    handed = str(exc).split("\nIt is JAX code")[0]
    lines = "\n".join(where)
    return TraceError(
        f"{name} updates its arguments in place, and JAX fails on its arrays:\n{lines}\n"
        f"{handed}\nNumPy mode hands its arrays to JAX functions as their traced values, but "
        "this use fails (the error it raised is chained below); JAX mode cannot update "
        "arguments in place (the update would be lost). Use NumPy functions there (np.sin "
        "rather than jnp.sin), or write the function as JAX code: a = a + 1 instead of "
        "a += 1, and return the new value.")


def _check_callable(fn: Any) -> None:
    check_callable(fn, "trace")
