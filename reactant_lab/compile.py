"""A stage's module -> ``Compiled``: an XLA executable called like the traced function."""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import operator
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jax
import numpy as np

from reactant_lab import backend, device_memory, device_support, host_memory
from reactant_lab.analysis.collectives import CollectiveReport, collective_report
from reactant_lab.analysis.custom_calls import CustomCall, custom_calls
from reactant_lab.analysis.mlir_func import returned_names
from reactant_lab.analysis.normalize import strip_locations
from reactant_lab.errors import (
    AnalysisError,
    CompileError,
    ExecutionError,
    SignatureMismatchError,
    UnsupportedArgumentError,
    UnsupportedCustomCallError,
)
from reactant_lab.stages.reproducer import write_reproducer
from reactant_lab.stages.xla import XlaStages, xla_stages
from reactant_lab.trace import captures
from reactant_lab.trace.numpy_mode import check_independent
from reactant_lab.trace.paths import FlatCall, flatten_call, is_none, layouts_hold, memory_layout
from reactant_lab.trace.paths import static_key as _static_key
from reactant_lab.trace.specs import (
    ArgSpec,
    ArgView,
    CallLayout,
    Computed,
    Constant,
    Forwarded,
    OutSlot,
    Preserved,
    SkippedArg,
    Static,
    UpdatedArg,
)
from reactant_lab.trace.traced import Traced

_LEFT_RUNNING = backend.LEFT_RUNNING
"""The interrupted computations that still run: each call checks its device against them when
there are any (``Compiled._refuse_if_busy``)."""


class Compiled:
    """An executable for one call signature of a traced function.

    Call it with arguments of the traced structure, shapes and dtypes; static (skipped) values
    must match too. NumPy arrays come back for NumPy arrays in; a preserved result is the very
    argument object. A NumPy-mode kernel's updated arguments are written into the caller's arrays
    in place, only once the whole call has succeeded (on any failure they are left as they were).
    """

    def __init__(self, traced: Traced, executable: backend.Executable, stage: str,
                 compile_seconds: float, donate: bool | str, layout: CallLayout | None = None,
                 donated_args: tuple[bool, ...] | None = None,
                 used_args: tuple[int, ...] | None = None, timeout: float | None = None):
        self.traced = traced
        """The traced call this was compiled from."""
        self.stage = stage
        """Name of the stage whose module was compiled."""
        self.compile_seconds = compile_seconds
        """Wall time of XLA compilation."""
        self.reused = False
        """Whether XLA did not run: an identical earlier compile's executable was reused (the
        same module, options and device; ``backend.fresh_compiles`` turns that off)."""
        self.donate = donate
        """What is donated to the executable: True (every argument not preserved), 'updated'
        (the arguments a NumPy kernel updates in place), 'auto' (those, but for the ones its
        first call's arrays let XLA read in place) or False."""
        self.donated_args: tuple[bool, ...] = donated_args if donated_args is not None else (
            (False,) * len(traced.linear_args))
        """Per linear argument: whether its buffer is donated."""
        self.used_args = used_args
        """The linear arguments the executable takes, when it takes fewer than the trace has
        (those its module never reads are not passed, e.g. an output array a NumPy kernel
        overwrites whole); None when it takes them all."""
        self.device = executable.device
        """The device it runs on."""
        self.notes: tuple[str, ...] = ()
        """What to know about how it was compiled: what the device computes another way
        (float64 emulated on a TPU), how XLA was worked around (a compile without its fusion
        emitters after a crash)."""
        self._exe = executable
        self._layout: CallLayout = traced.layout if layout is None else layout
        self.forwarded: tuple[tuple[str, str], ...] = _forwarded_paths(traced, self._layout)
        """(result path, argument path) per result the passes reduced to an argument returned
        unchanged: preserved after the pipeline, not computed by the executable (compare
        ``traced.preserved``, decided from the traced function)."""
        self._signature = _layout_signature(traced)
        self._plain_treedef, self._linear_pos, self._statics = _plain_plan(traced.layout)
        self._leaves_linear = not self._statics and self._linear_pos == list(
            range(len(self._linear_pos)))
        """True when a matching call's plain leaves are its linear values, in order."""
        self._paths = [a.path for a in traced.linear_args]
        self._targets = [arg for arg, _ in self._layout.writeback]
        """The linear arguments a NumPy kernel updates in place."""
        self.kept: tuple[str, ...] = tuple(
            self._paths[arg] for arg, k in self._layout.writeback if k in executable.kept)
        """Paths of the updated arguments whose new value XLA computes into a buffer kept from
        the call before (``KEPT_RESULT_MIN_BYTES`` or more, on the CPU), then written into the
        caller's array (copied, or its pages traded: ``_spares``): no memory allocated and
        faulted in on each call, at the cost of holding that buffer while this executable
        lives."""
        computed = [s.index for s in self._layout.out_slots if isinstance(s, Computed)]
        written = [k for _, k in self._layout.writeback]
        self._spares = frozenset(k for k in executable.kept
                                 if k not in computed and written.count(k) == 1)
        """The kept results that only become an updated argument's new value: nothing reads them
        after the write-back, which may trade their memory pages for the caller's
        (``host_memory.swap_pages``) instead of copying."""
        self._offsets = _spare_offsets(self._layout.writeback, executable.kept, self._spares)
        """Per kept result, where in its page the caller's array it is traded into starts
        (None for the others): the executable is handed the kept buffer that starts there,
        whose pages can trade with it."""
        # Under 64-bit mode NumPy float64 is not silently cast to a float32 signature, so a dtype
        # mismatch is caught. JAX arrays cannot be 64-bit without it, so their fast path skips
        # the (small) cost; weakly typed Python scalars would turn 64-bit under it.
        layout = self._layout
        self._x64 = layout.x64 or (layout.numpy_out and not any(w for *_, w in layout.avals))
        self._unused = [(i, *layout.avals[i][:2]) for i in range(len(layout.avals))
                        if used_args is not None and i not in used_args]
        """(index, shape, dtype) of each linear argument the executable does not take (e.g. an
        array a kernel overwrites whole): JAX's dispatch cannot check those, so the call does."""
        self._scalars = [s.scalar for s in layout.out_slots if isinstance(s, Computed)]
        self._to_host: Callable[[Any, bool], Any] = (
            _to_numpy if layout.numpy_out else lambda a, _: a)
        """A computed result as the caller gets it: NumPy for NumPy callers."""
        self._one_leaf = layout.out_treedef.num_nodes == layout.out_treedef.num_leaves == 1
        """True when the result is a single leaf (one array or scalar), rebuilt without JAX."""
        self.array_positions: tuple[int, ...] = tuple(self._linear_pos)
        """The positions of ``call_arrays``' NumPy arrays (the others are its static values)."""
        self._timeout = check_timeout(timeout)
        self._plan_calls(self._timeout is not None or executable.long_loop is not None)

    def _plan_calls(self, guarded: bool) -> None:
        """Choose the call paths: JAX's dispatch on this thread, or (``guarded``) the
        executable's guarded call behind the full signature check."""
        exe, layout = self._exe, self._layout
        self.guarded = guarded
        """Whether each call runs where Ctrl-C and ``timeout`` stop it: on a runner thread (on
        the CPU, on a twin of the executable that nothing else waits for), this thread waiting.
        True when the executable may not end (a loop whose length XLA cannot tell, or a very
        long one: ``long_loop``) or a time limit is set. The hand-off costs 20-120 us a call
        here (``benchmarks/guarded_calls.py``)."""
        structured = exe.structured and not guarded
        self._call = self._fast_call if structured else self._flat_call
        self._takes_leaves = not structured and not layout.captures
        """Whether ``call_flattened`` can use its caller's leaves (captures are not in them)."""
        self._run_exe: Callable[[Sequence[Any], Sequence[int | None] | None], list[Any]] = (
            self._run_guarded if guarded else exe.call_flat)
        taken = range(len(layout.avals)) if self.used_args is None else self.used_args
        self._taken = [(i, *layout.avals[i][:2]) for i in taken]
        """(index, shape, dtype) of each linear argument the executable takes."""
        order = [s for s in layout.in_slots if isinstance(s, int)]
        self._order = order if exe.structured and order != sorted(order) else None
        """The module's argument order, where it is not the linear arguments' (JAX's pytree)."""
        n_plain = len(self._linear_pos) + len(self._statics)
        self.array_args = n_plain if (
            not guarded and self._takes_leaves and layout.numpy_out
            and self._plain_treedef == jax.tree_util.tree_structure(((0,) * n_plain, {}))
        ) else None
        """The number of positional arguments ``call_arrays`` takes, when the call is only
        positional: a NumPy array per linear argument, a Python value per static one (syrk's
        ``alpha``), no keyword and no container (else None: ``call_arrays`` is then the plain
        call)."""
        self.call_arrays: Callable[[tuple[Any, ...]], Any] = (
            self._lean_call() if self.array_args is not None else lambda args: self(*args))
        """``self(*args)`` for positional NumPy arrays (``type(a) is np.ndarray``, which
        ``jit`` checks) and static values: a NumPy kernel's per-call path, a few microseconds
        over the executable's own call (see ``_lean_call``)."""
        # The common case (JAX arrays in and out, no 64-bit) goes straight to JAX's C++ dispatch
        # (not when the trace's views depend on the arguments' memory layout: that is checked).
        self._direct = exe.fast_call if (
            structured and not self._x64 and not layout.numpy_out
            and not layout.layout_deps) else None

    @property
    def timeout(self) -> float | None:
        """Seconds a call may run before CallTimeoutError (None: no limit)."""
        return self._timeout

    @property
    def long_loop(self) -> str | None:
        """Why a call may not end, in words (a while loop whose trip count XLA cannot tell,
        e.g. "the loop `while a[0] >= 0`", or one of a million iterations or more), or None."""
        return self._exe.long_loop

    def with_timeout(self, seconds: float | None) -> Compiled:
        """The same executable with another time limit per call (None: none)."""
        new = copy.copy(self)
        new._timeout = check_timeout(seconds)
        new._plan_calls(new._timeout is not None or self._exe.long_loop is not None)
        return new

    def unguarded(self) -> Compiled:
        """The same executable called on the calling thread, with no time limit: for calls
        known to end (``bench`` times it after a guarded first call on the same inputs)."""
        new = copy.copy(self)
        new._timeout = None
        new._plan_calls(False)
        return new

    def _run_guarded(self, values: Sequence[Any],
                     offsets: Sequence[int | None] | None = None) -> list[Any]:
        """The executable's guarded call on the linear values it takes (``offsets``:
        ``_offsets``)."""
        if self._order is not None:
            values = [values[i] for i in self._order]
        return self._exe.call_guarded(values, x64=self._x64, limit=self._timeout,
                                      name=self.traced.fn_name, on_host=self._layout.numpy_out,
                                      offsets=offsets)

    def _refuse_if_busy(self) -> None:
        """Refuse the call while an interrupted computation still runs on this executable's
        device (``backend.refuse_if_busy``: the call would wait for it, out of Ctrl-C's
        reach). Called when ``backend.LEFT_RUNNING`` is not empty, which it almost never is."""
        backend.refuse_if_busy(str(self.device), self.traced.fn_name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _LEFT_RUNNING:
            self._refuse_if_busy()
        if self._direct is not None:
            try:
                return self._direct(*args, **kwargs)
            except (TypeError, ValueError, RuntimeError) as exc:
                self._check(args, kwargs)
                self._out_of_memory(exc)
                raise
        return self._call(*args, **kwargs)

    def call_flattened(self, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Any],
                       treedef: Any) -> Any:
        """``self(*args, **kwargs)``, given ``(leaves, treedef)`` of
        ``jax.tree_util.tree_flatten((args, kwargs))``: a caller that flattened the call
        already (``jit``, comparing its leaves' kinds) spares it a second flattening."""
        if self._takes_leaves and not _LEFT_RUNNING:  # else the full call (a busy device)
            return self._run_flat(args, kwargs, leaves, treedef)
        return self(*args, **kwargs)

    def _lean_call(self) -> Callable[[tuple[Any, ...]], Any]:
        """``call_arrays`` for a call of one NumPy array per linear argument: its structure is
        known from the count, so it is not flattened. The checks are ``_run_flat``'s (memory
        layouts, shapes and dtypes of the arrays the executable does not take, the updated
        arrays' writability and independence; JAX checks the rest), each falling back to the
        full check to explain a failure; a single computed result and a single updated array
        skip the general rebuild and write-back."""
        layout, n, used, x64 = self._layout, self.array_args, self.used_args, self._x64
        deps, unused, writeback = layout.layout_deps, self._unused, layout.writeback
        n_linear = len(self._linear_pos)
        others = [(i, [j for j in range(n_linear) if j != i]) for i in self._targets]
        linear_of = None if self._leaves_linear else _taker(tuple(self._linear_pos))
        # The static values, compared by value: ``jit`` takes this path only for arguments of
        # the types traced (1 == 1.0 == True is no match then); a NaN never matches, and goes
        # the full way, which keys it as the same value.
        statics_of = _taker(tuple(i for i, _ in self._statics)) if self._statics else None
        static_values = tuple(key[1] for _, key in self._statics)
        call_flat, asarray, offsets = self._exe.call_flat, np.asarray, self._offsets
        take = None if used is None else _taker(used)
        swap, restore = backend.x64_switch(bool(x64))
        slots = layout.out_slots
        single = slots[0] if self._one_leaf and isinstance(slots[0], Computed) else None
        index, scalar = (single.index, single.scalar) if single is not None else (0, False)
        # One updated array: written here (as _write_back does it), without its loops.
        arg, k = writeback[0] if len(writeback) == 1 else (-1, -1)
        spare = k in self._spares
        name = self.traced.fn_name

        def call(given: tuple[Any, ...]) -> Any:
            if len(given) != n or _LEFT_RUNNING:  # the full call (it refuses a busy device)
                return self(*given)
            if statics_of is not None and statics_of(given) != static_values:
                raise SignatureMismatchError(f"{name} was compiled for other static values")
            args = given if linear_of is None else linear_of(given)
            if deps and not layouts_hold(deps, args):
                raise SignatureMismatchError(self._layout_mismatch(list(args)))
            if unused and not _shapes_hold(unused, args):
                self._check(given, {})  # raises: an array is never a Python number
            if others and not _writable_apart(others, args):
                self._check_targets(list(args))  # raises, explaining which and why
            try:
                prev = swap(True)  # 64-bit types on for the call only
                try:
                    outs = call_flat(args if take is None else take(args), offsets(args))
                finally:
                    restore(prev)
            except (TypeError, ValueError, RuntimeError) as exc:
                self._check(given, {})
                self._out_of_memory(exc)
                raise
            if single is None:
                result = self._rebuild(args, outs)
            else:  # _to_numpy, inline
                result = asarray(outs[index])[()] if scalar else _owned(outs[index])
            if k >= 0:
                host, target = asarray(outs[k]), args[arg]
                if host.dtype != target.dtype:  # as _write_back
                    raise TypeError(f"{name}'s new value of an updated argument is "
                                    f"{host.dtype}, the caller's array {target.dtype}")
                copy_into(target, host, spare)
            elif writeback:
                self._write_back(args, outs)
            return result
        return call

    def _fast_call(self, *args: Any, **kwargs: Any) -> Any:
        fast = self._exe.fast_call
        assert fast is not None  # a structured executable is JAX's, with its dispatch
        if self._layout.layout_deps:  # JAX checks shapes and dtypes, not memory layouts
            leaves, treedef = jax.tree_util.tree_flatten(self._call_tree(args, kwargs))
            if treedef == self._plain_treedef:
                linear = [leaves[i] for i in self._linear_pos]
                if not layouts_hold(self._layout.layout_deps, linear):
                    raise SignatureMismatchError(self._layout_mismatch(linear))
        try:
            with backend.x64_scope(self._x64):
                out = fast(*args, **kwargs)
        except (TypeError, ValueError, RuntimeError) as exc:
            # JAX's dispatch rejected the call: find out why in our own terms, else re-raise.
            self._check(args, kwargs)
            self._out_of_memory(exc)
            raise exc from None
        if self._layout.numpy_out:  # every result is Computed on this path, in slot order
            leaves, tree = jax.tree_util.tree_flatten(out)
            return jax.tree_util.tree_unflatten(tree, [
                _to_numpy(v, scalar) for v, scalar in zip(leaves, self._scalars, strict=True)])
        return out

    def _flat_call(self, *args: Any, **kwargs: Any) -> Any:
        leaves, treedef = jax.tree_util.tree_flatten(self._call_tree(args, kwargs))
        return self._run_flat(args, kwargs, leaves, treedef)

    def _run_flat(self, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Any],
                  treedef: Any) -> Any:
        # Cheap checks first (structure and static values); JAX checks shapes and dtypes of the
        # values the executable takes (a guarded call, without JAX's dispatch, checks them
        # here), this call those of the ones it does not. Anything off is explained by the full
        # check.
        if treedef != self._plain_treedef or (self._statics and any(
                _static_key(leaves[i]) != key for i, key in self._statics)):
            self._check(args, kwargs)
            raise SignatureMismatchError(f"{self.traced.fn_name} was compiled for structure "
                                         f"{self._plain_treedef}, called with {treedef}")
        linear = leaves if self._leaves_linear else [leaves[i] for i in self._linear_pos]
        if self._layout.layout_deps and not layouts_hold(self._layout.layout_deps, linear):
            raise SignatureMismatchError(self._layout_mismatch(linear))
        for i, shape, dtype in self._unused:
            value = linear[i]
            if getattr(value, "shape", None) != shape or getattr(value, "dtype", None) != dtype:
                self._check(args, kwargs)  # raises on a real mismatch (a Python number may pass)
                break
        if self.guarded and not _arrays_hold(self._taken, linear):
            self._check(args, kwargs)  # raises on a real mismatch (a Python number may pass)
        if self._targets:
            self._check_targets(linear)
        try:
            with backend.x64_scope(self._x64):
                outs = self._run_exe(linear if self.used_args is None
                                     else [linear[i] for i in self.used_args],
                                     self._offsets(linear))
        except (TypeError, ValueError, RuntimeError) as exc:
            self._check(args, kwargs)
            self._out_of_memory(exc)
            raise
        result = self._rebuild(linear, outs)
        if self._targets:
            self._write_back(linear, outs)
        return result

    def _out_of_memory(self, exc: BaseException) -> None:
        """Raise XLA's running out of memory (``exc``) as a DeviceMemoryError."""
        oom = device_memory.explained(exc, self.traced.fn_name, self.device, self.stage,
                                      "running")
        if oom is not None:
            raise oom from None

    def _check_targets(self, linear: list[Any]) -> None:
        """Every updated argument must be a writable NumPy array sharing no element with
        another argument."""
        for arg in self._targets:
            target = linear[arg]
            if not isinstance(target, np.ndarray) or not target.flags.writeable:
                path = self._paths[arg]
                raise UnsupportedArgumentError(
                    f"{path} must be a writable NumPy array: {self.traced.fn_name} updates it in "
                    f"place, and a {type(target).__name__} cannot be. Pass a writable NumPy "
                    "array (e.g. np.array(x)).", path, type(target))
        check_independent(linear, self._paths, self._targets)

    def _write_back(self, linear: Sequence[Any], outs: list[Any]) -> None:
        """Copy each updated argument's new value into the caller's array, in place; every
        result is fetched and its dtype checked first, so a failure leaves all of them untouched.
        (``copy_into``: assignment, in two halves at once for a large array, or a trade of
        memory pages for a result nothing else reads.)"""
        copies = [(linear[arg], np.asarray(outs[k]), k in self._spares)
                  for arg, k in self._layout.writeback]
        for target, host, _ in copies:
            if host.dtype != target.dtype:  # never a silent cast into the caller's array
                raise TypeError(f"{self.traced.fn_name}'s new value of an updated argument is "
                                f"{host.dtype}, the caller's array {target.dtype}")
        for target, host, spare in copies:
            copy_into(target, host, spare)

    def _captured(self) -> dict[str, Any] | None:
        """The current values of the arrays the function reads from outside, if it reads any."""
        if not self._layout.captures:
            return None
        fn = self.traced.fn
        assert fn is not None  # captures are found in the traced function
        return captures.read(fn, self._layout.captures)

    def _call_tree(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """``(args, kwargs)``, with the captured arrays' current values when there are some."""
        captured = self._captured()
        return (args, kwargs) if captured is None else (args, kwargs, captured)

    def _layout_mismatch(self, linear: list[Any]) -> str:
        lines = [f"{self.traced.fn_name} was traced for arguments laid out another way in "
                 "memory, and its views depend on it (a reshape or ravel is a view of one layout "
                 "and a copy of another). reactant_lab.jit traces again for each layout."]
        for i, layout in self._layout.layout_deps:
            now = memory_layout(linear[i])
            if now != layout:
                lines.append(f"  {self.traced.linear_args[i].path}: traced for "
                             f"{_layout_name(layout)}, called with {_layout_name(now)}")
        return "\n".join(lines)

    def _check(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> FlatCall:
        with backend.x64_scope(self._x64):  # Python numbers canonicalize as when called
            flat = flatten_call(args, kwargs, trace_scalars=self._layout.trace_scalars,
                                captured=self._captured(),
                                in_shardings=dict(self._layout.in_shardings) or None)
        if flat.signature() != self._signature:
            raise SignatureMismatchError(self._mismatch(flat))
        return flat

    def _rebuild(self, linear: Sequence[Any], outs: list[Any]) -> Any:
        to_host = self._to_host
        leaves = []
        for slot in self._layout.out_slots:
            if isinstance(slot, Computed):
                leaves.append(to_host(outs[slot.index], slot.scalar))
            elif isinstance(slot, Preserved | UpdatedArg):
                leaves.append(linear[slot.arg])
            elif isinstance(slot, Forwarded):
                leaves.append(self._forward(linear[slot.arg], slot))
            elif isinstance(slot, ArgView):
                view = linear[slot.arg]
                for op in slot.ops:
                    view = op.get(view)
                leaves.append(view)
            elif isinstance(slot, Constant):  # a new array on every call, as NumPy's
                leaves.append(np.array(slot.value, order="K") if self._layout.numpy_out
                              else jax.device_put(backend.transfer_ready(self.device)(
                                  slot.value), self.device))
            else:
                leaves.append(slot.value)
        if self._one_leaf:
            return leaves[0]
        return jax.tree_util.tree_unflatten(self._layout.out_treedef, leaves)

    def _forward(self, value: Any, slot: Forwarded) -> Any:
        """A result the passes reduced to argument ``slot.arg``: for NumPy callers a new array
        (taken before any write-back), for JAX callers the argument itself."""
        dtype = self._layout.avals[slot.arg][1]
        if self._layout.numpy_out:
            host = np.asarray(value, dtype=dtype)  # the caller's own array: copied
            return host[()] if slot.scalar else np.array(host)
        if isinstance(value, jax.Array):
            return value
        where = self._layout.shardings[slot.arg] if self._layout.shardings else self.device
        with backend.x64_scope(self._x64):
            return jax.device_put(backend.transfer_ready(self.device)(
                np.asarray(value, dtype=dtype)), where)

    def _mismatch(self, flat: FlatCall) -> str:
        t = self.traced
        head = (f"{t.fn_name} was compiled for another call signature (Compiled does not "
                "recompile; reactant_lab.jit does, once per signature).")
        if flat.treedef != self._layout.in_treedef:
            return (f"{head}\n  compiled for structure {self._layout.in_treedef}\n"
                    f"  called with structure  {flat.treedef}")
        lines = [head]
        old: ArgSpec | SkippedArg
        new: ArgSpec | SkippedArg
        for old, new in zip(t.linear_args, flat.linear, strict=False):
            if (old.shape, old.dtype, old.weak_type) != (new.shape, new.dtype, new.weak_type):
                lines.append(f"  {old.path}: compiled for {old.dtype}{list(old.shape)}, "
                             f"called with {new.dtype}{list(new.shape)}")
            elif old.sharding != new.sharding:
                lines.append(f"  {old.path}: compiled for sharding {old.sharding or 'none'}, "
                             f"called with {new.sharding or 'no sharding (one device)'}")
        if len(t.linear_args) != len(flat.linear):
            lines.append(f"  {len(t.linear_args)} traced leaves compiled, {len(flat.linear)} given")
        for old, new in zip(t.skipped_args, flat.skipped, strict=False):
            if old.value_repr != new.value_repr or old.path != new.path:
                lines.append(f"  static {old.path}: compiled with {old.value_repr}, called with "
                             f"{new.value_repr} (static values are baked into the module)")
        if len(lines) == 1:
            lines.append("  a static value differs in type (e.g. 1 vs 1.0) or a leaf changed "
                         "from static to traced")
        return "\n".join(lines)

    def device_runner(self, *args: Any, **kwargs: Any) -> Callable[[], None]:
        """A call of the executable alone on ``args``, placed on its device once: no checks, no
        transfers back, no write-back (what timing a stage's module measures), on the calling
        thread even when ``guarded``: for inputs a call has ended on. Not for a donating
        executable, whose inputs are consumed by the first call."""
        run, place = self.device_call(*args, **kwargs)
        a, k = place()

        def runner() -> None:
            jax.block_until_ready(run(*a, **k))
        return runner

    def device_call(self, *args: Any, **kwargs: Any
                    ) -> tuple[Callable[..., Any], Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]]:
        """``(run, place)`` for this call's arguments (checked against the signature once):
        ``place()`` copies the arrays the executable takes onto its device (a call of NumPy
        arrays makes these host-to-device copies first) and returns them as ``(args, kwargs)``
        for ``run``, not waiting for the copies; ``run(*args, **kwargs)`` runs the executable
        alone on them, on the calling thread, and returns its results (computed results and
        updated arguments' new values) left on the device: no checks, no copies back, no
        write-back. What ``bench`` times of a NumPy kernel, its copies timed apart. Not for a
        donating executable, whose inputs are consumed by the first call."""
        if _LEFT_RUNNING:
            self._refuse_if_busy()
        if any(self.donated_args):
            raise CompileError("device_runner reuses its inputs, which a donating executable "
                               "consumes; compile with donate=False to time it")
        self._check(args, kwargs)
        exe, x64 = self._exe, self._x64
        fast = exe.fast_call
        shardings = self._layout.shardings
        ready = backend.transfer_ready(self.device)
        if exe.structured and fast is not None:  # JAX's dispatch takes the user's own pytree
            def put(leaf: Any, where: Any) -> Any:
                return jax.device_put(ready(leaf), where) if isinstance(
                    leaf, np.ndarray | np.generic | jax.Array) else leaf
            tree = (args, kwargs)

            def place_tree() -> tuple[tuple[Any, ...], dict[str, Any]]:
                placed: tuple[tuple[Any, ...], dict[str, Any]]
                with backend.x64_scope(x64):
                    if shardings:  # structured calls have no captures: slots are the leaves
                        leaves, treedef = jax.tree_util.tree_flatten(tree, is_leaf=is_none)
                        placed = jax.tree_util.tree_unflatten(treedef, [
                            leaf if isinstance(s, Static) else put(leaf, shardings[s])
                            for leaf, s in zip(leaves, self._layout.in_slots, strict=True)])
                    else:
                        placed = jax.tree_util.tree_map(lambda leaf: put(leaf, self.device), tree)
                return placed
            return _in_scope(fast, x64), place_tree
        leaves = jax.tree_util.tree_leaves(self._call_tree(args, kwargs))
        positions = self._linear_pos if self.used_args is None else [
            self._linear_pos[i] for i in self.used_args]
        targets = (list(range(len(self._linear_pos))) if self.used_args is None
                   else list(self.used_args))
        values = [(leaves[i], shardings[j] if shardings else self.device)
                  for i, j in zip(positions, targets, strict=True)]

        def place_flat() -> tuple[tuple[Any, ...], dict[str, Any]]:
            with backend.x64_scope(x64):
                return tuple(jax.device_put(ready(v), where) for v, where in values), {}
        return _in_scope(lambda *linear: exe.call_flat(linear), x64), place_flat

    def as_text(self, debug_info: bool = False) -> str:
        """The StableHLO module that was compiled (with donation attributes, if any)."""
        return self._exe.text if debug_info else strip_locations(self._exe.text)

    def hlo_text(self) -> str:
        """XLA's optimized HLO of the executable."""
        return self._exe.hlo_text()

    @functools.cached_property
    def xla(self) -> XlaStages | None:
        """XLA's own pipeline for this executable: the HLO it began with, the module after each
        of its passes that changed it, the last being ``hlo_text()``, where the compile's time
        went, and (on the CPU) each kernel's LLVM IR. None when the compile did not keep them
        (``compile(xla_passes=False)``: ``rl.jit``'s compiles) or XLA wrote none (an executable
        from JAX's persistent compilation cache). Its stages are numbered from 0; an
        ``Exploration`` numbers them after its MLIR stages (``Exploration.xla_stages``)."""
        dump = self._exe.xla_dump
        if dump is None:
            return None
        try:
            optimized: str | None = self.hlo_text()
        except CompileError:  # a platform that prints no HLO: the last pass's module stands
            optimized = None
        return xla_stages(dump, optimized)

    def cost_analysis(self) -> dict[str, float]:
        """XLA's cost model: ``flops``, ``transcendentals``, ``bytes accessed``, ..."""
        return self._exe.cost_analysis()

    def memory_analysis(self) -> dict[str, int]:
        """Argument, output, alias, temp and generated-code bytes."""
        return self._exe.memory_analysis()

    @property
    def devices(self) -> tuple[Any, ...]:
        """The devices the executable runs on: its arguments' mesh for a sharded call, else
        its one device."""
        found = {d for s in self._layout.shardings if s is not None for d in s.device_set}
        return tuple(sorted(found, key=lambda d: d.id)) if found else (self.device,)

    @property
    def placement(self) -> str:
        """Where it runs, in words: its device (``cpu:0``), or ``8 devices (cpu:0 to cpu:7)``."""
        devices = self.devices
        return (str(devices[0]) if len(devices) == 1 else
                f"{len(devices)} devices ({devices[0]} to {devices[-1]})")

    def collectives(self) -> CollectiveReport:
        """The collectives of XLA's per-device (partitioned) HLO: each all-reduce, all-gather,
        reduce-scatter, collective-permute and all-to-all with its shape, bytes and devices,
        their counts, and the memory per device (``memory_analysis()``). An executable for one
        device has none."""
        return collective_report(self.hlo_text(), self.memory_analysis())

    def __repr__(self) -> str:
        return (f"<Compiled {self.traced.fn_name} stage={self.stage!r} device={self.device} "
                f"compile={self.compile_seconds * 1e3:.1f} ms>")


def _in_scope(call: Callable[..., Any], x64: bool) -> Callable[..., Any]:
    """``call`` run with 64-bit types on when ``x64`` (as the traced call had them)."""
    if not x64:
        return call

    def scoped(*args: Any, **kwargs: Any) -> Any:
        with backend.x64_scope(True):
            return call(*args, **kwargs)
    return scoped


def _taker(used: tuple[int, ...]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """``lambda args: tuple(args[i] for i in used)``, at C speed where it can be."""
    if len(used) > 1:
        return operator.itemgetter(*used)
    if not used:
        return lambda args: ()
    i = used[0]
    return lambda args: (args[i],)


def _layout_name(layout: Any) -> str:
    if layout in ("C", "F"):
        return f"a {layout}-contiguous array"
    if layout is None:
        return "a value that is not a NumPy array"
    return f"a non-contiguous array with element strides {layout}"


def _writable_apart(targets: Sequence[tuple[int, Sequence[int]]], args: tuple[Any, ...]) -> bool:
    """Whether each updated array ``args[i]`` of ``targets`` (``(i, the others' positions)``)
    is writable and shares no memory with the others: two arrays that each own their memory
    are apart (two allocations), else a bounds test decides (``np.may_share_memory``; where the
    bounds meet, the caller's full check tells)."""
    for i, rest in targets:
        target = args[i]
        flags = target.flags
        if not flags.writeable:
            return False
        owns = flags.owndata
        for j in rest:
            other = args[j]
            if not (owns and other.flags.owndata and other is not target) and \
                    np.may_share_memory(target, other):
                return False
    return True


def _shapes_hold(expected: Sequence[tuple[int, tuple[int, ...], Any]],
                 args: Sequence[Any]) -> bool:
    """Whether each ``args[i]`` has the shape and dtype ``(i, shape, dtype)`` says (an array;
    AttributeError for a Python number)."""
    for i, shape, dtype in expected:  # a loop: a generator would cost more than the checks
        value = args[i]
        if value.shape != shape or value.dtype != dtype:
            return False
    return True


def _arrays_hold(expected: Sequence[tuple[int, tuple[int, ...], Any]],
                 args: Sequence[Any]) -> bool:
    """``_shapes_hold``, False where a value is not an array."""
    try:
        return _shapes_hold(expected, args)
    except AttributeError:
        return False


def _to_numpy(value: Any, scalar: bool) -> Any:
    """A result of the executable as a NumPy caller gets it: a NumPy scalar where NumPy gives
    one (``a.sum()`` is an ``np.float64``; ``a[0, ...]`` a 0-d array): the trace says which
    (Computed.scalar), else a writable array over the result's own memory (``_owned``)."""
    return np.asarray(value)[()] if scalar else _owned(value)


VIEW_MIN_BYTES = 1 << 17
"""Results from this size up are handed over as views of XLA's buffer; smaller ones are copied,
which is faster below it (a copy of 1,000 float64 takes 0.7 us, making the view 3 us) and gives
the caller an array that owns its memory, as NumPy's own results do."""

_VIEWABLE = frozenset("biufc")
"""Kinds of dtype NumPy describes in full by ``dtype.str`` (not ml_dtypes' bfloat16 and
float8s, which read back as raw bytes): a writable view is made only of these."""


class _HostMemory:
    """The base of a writable NumPy array over a result's host memory: it keeps JAX's read-only
    view of that memory (and through it the buffer) alive as long as the array."""

    __slots__ = ("__array_interface__", "_view")

    def __init__(self, view: np.ndarray):
        self._view = view
        self.__array_interface__ = {"version": 3, "shape": view.shape, "typestr": view.dtype.str,
                                    "strides": view.strides, "data": (view.ctypes.data, False)}


def _owned(value: Any) -> np.ndarray:
    """A writable NumPy array of one executable result, without a copy where it can be.

    On the host a result's NumPy view is XLA's own output buffer (64-byte aligned); JAX marks
    it read-only because a ``jax.Array`` is immutable, but this Array is the call's own: no one
    else holds it, or can. So the caller's array is made writable over that memory instead of
    copying it (``np.array``: a full copy, 3-4 ms per 32 MB here). The memory lives as long as
    the array (``_HostMemory``). Anything else is copied: a result under ``VIEW_MIN_BYTES``, a
    value that is not a jax.Array, a dtype NumPy cannot describe by itself."""
    if not isinstance(value, jax.Array):
        return np.array(value)
    view = np.asarray(value)
    if (view.nbytes < VIEW_MIN_BYTES or view.flags.writeable or not view.flags.c_contiguous
            or view.dtype.kind not in _VIEWABLE):
        # in C order, as NumPy's results: a TPU's float64 results of 16 KB came back in
        # Fortran order (jax 0.10.2, TPU v5e)
        return np.array(view, order="C")
    return np.asarray(_HostMemory(view))


def _layout_signature(traced: Traced) -> tuple[Hashable, ...]:
    layout = traced.layout
    return FlatCall(layout.in_treedef, layout.in_slots, (), traced.linear_args,
                    traced.skipped_args, layout.captures).signature()


def _plain_plan(layout: CallLayout) -> tuple[Any, list[int], list[tuple[int, Any]]]:
    """Tree structure of a matching call flattened the plain way (None is no leaf), positions of
    the linear leaves in it, and (position, key) of each static leaf to compare."""
    placeholders = [None if isinstance(s, Static) and s.value is None else 0
                    for s in layout.in_slots]
    plain = jax.tree_util.tree_structure(
        jax.tree_util.tree_unflatten(layout.in_treedef, placeholders))
    kept = [s for s in layout.in_slots if not (isinstance(s, Static) and s.value is None)]
    linear_pos = [i for _, i in sorted((s, i) for i, s in enumerate(kept) if isinstance(s, int))]
    statics = [(i, _static_key(s.value)) for i, s in enumerate(kept) if isinstance(s, Static)]
    return plain, linear_pos, statics


def _structure(layout: CallLayout, out_avals: list[backend.Aval],
               device: Any) -> backend.Structure | None:
    """Template and abstract args letting JAX's dispatch take the user's own pytree, or None
    when the call has static leaves other than None, or results that are not all computed."""
    if layout.writeback or layout.captures or any(
            isinstance(s, Static) and s.value is not None for s in layout.in_slots):
        return None
    if any(isinstance(s, Preserved | ArgView | Forwarded | UpdatedArg | Constant) or (
            isinstance(s, Static) and s.value is not None) for s in layout.out_slots):
        return None

    def template(*_args: Any, **_kwargs: Any) -> Any:
        leaves = [jax.numpy.zeros(*out_avals[s.index][:2]) if isinstance(s, Computed) else None
                  for s in layout.out_slots]  # a broadcast, not a dense constant (see backend)
        return jax.tree_util.tree_unflatten(layout.out_treedef, leaves)

    shardings = layout.shardings or (None,) * len(layout.avals)
    leaves = [None if isinstance(s, Static) else backend.abstract_value(
        layout.avals[s], device, shardings[s]) for s in layout.in_slots]
    args, kwargs = jax.tree_util.tree_unflatten(layout.in_treedef, leaves)
    return template, args, kwargs


def _spare_offsets(writeback: Sequence[tuple[int, int]], kept: Sequence[int],
                   spares: Collection[int]
                   ) -> Callable[[Sequence[Any]], list[int | None] | None]:
    """For a call's linear arguments, per kept result, where in its page the caller's array it
    is traded into starts when it is a spare (``host_memory.page_offset``; None for the
    others); None at once when no kept result is a spare."""
    targets = [next(arg for arg, j in writeback if j == k) if k in spares else None
               for k in kept]
    if not any(a is not None for a in targets):
        return lambda _: None
    page_offset = host_memory.page_offset

    def offsets(linear: Sequence[Any]) -> list[int | None] | None:
        return [None if a is None else page_offset(linear[a]) for a in targets]
    return offsets


KEPT_RESULT_MIN_BYTES = host_memory.SWAP_MIN_BYTES
"""From this size up (1 MiB), an updated array's new value is computed into a buffer kept from
a call before (``backend.compile_module``'s ``keep``), not into memory XLA:CPU allocates, and
faults in, anew on every call (``benchmarks/in_place_floor.py``: ~7,800 page faults for 32 MB),
nor into a copy of the caller's array donated for it (which JAX makes on every call); and that
buffer's pages can trade with the caller's array's (``host_memory.swap_pages``, from the same
size up). It was 4 MiB, past which the page faults began: gemm's 500x500 C (2 MB) then took a
copy in and a copy out, and ran 0.5 ms slower (4.4-5.4 against 5.1-6.0 ms, alternating)."""


def kept_results(layout: CallLayout, out_avals: Sequence[backend.Aval],
                 device: Any) -> tuple[int, ...]:
    """The results XLA writes into a buffer kept between calls: the new values of updated arrays
    of ``KEPT_RESULT_MIN_BYTES`` or more, on the CPU (an accelerator's allocator keeps its
    memory), on one device."""
    if device.platform != "cpu" or layout.shardings:
        return ()
    return tuple(k for _, k in layout.writeback
                 if math.prod(out_avals[k][0]) * np.dtype(out_avals[k][1]).itemsize
                 >= KEPT_RESULT_MIN_BYTES)


def _kept(layout: CallLayout, out_avals: Sequence[backend.Aval], device: Any,
          donate: bool | str) -> tuple[int, ...]:
    """``kept_results`` where ``donate`` leaves updated arrays to them: 'auto' and False
    ('updated' and True donate the caller's arrays as asked)."""
    return kept_results(layout, out_avals, device) if donate in ("auto", False) else ()


def _result_paths(traced: Traced, dropped: Collection[int]) -> list[str]:
    """The path of each result ``_out_avals`` lists, less the ``dropped`` ones."""
    computed = {r.index: r.path for r in traced.linear_results if r.index is not None}
    return [computed[i] for k, i in enumerate(sorted(computed)) if k not in dropped]


def _out_avals(traced: Traced) -> list[backend.Aval]:
    # An argument updated in place and also returned shares its resargs result's index.
    computed = {r.index: r for r in traced.linear_results if r.index is not None}
    return [(computed[i].shape, computed[i].dtype, False) for i in sorted(computed)]


def prelower(traced: Traced, device: Any | None = None,
             donate: bool | str = False) -> backend.Prelowering:
    """Start lowering, on a thread, the JAX template ``compile_traced`` swaps the module of
    ``traced``'s final stage into (for a module that keeps every result and argument, as most
    do): what this process does while the pass worker runs a first call's passes. ``donate``
    as ``compile_traced``'s."""
    dev = backend.resolve_device(device)
    layout = traced.layout
    out_avals = _out_avals(traced)
    donors = [out_avals[k] for k in _kept(layout, out_avals, dev, donate)]
    return backend.Prelowering([*layout.avals, *donors], out_avals, dev, layout.x64,
                               _structure(layout, out_avals, dev), layout.shardings)


def compile_traced(traced: Traced, ir: str, *, device: Any | None = None,
                   donate: bool | str = False, stage_name: str = "final",
                   in_place: Collection[int] = (),
                   prelowered: backend.Prelowering | None = None,
                   timeout: float | None = None, xla_passes: bool = False) -> Compiled:
    """Compile a stage's module of ``traced`` for ``device``.

    ``donate``: True gives every argument's buffer that is not returned unchanged to the
    executable; ``'updated'`` only those of the arguments a NumPy kernel updates in place (the
    copy JAX makes of the caller's array becomes the result's buffer, which is then written back:
    half the peak memory of an in-place update, and no user-visible effect); ``'auto'`` those
    but the linear arguments in ``in_place`` (arrays XLA reads where they lie, see
    ``host_memory.read_in_place``: donating one would make JAX copy it first) and those whose
    new value XLA computes into a buffer kept between calls (``kept_results``, with False
    too); False none.

    As Reactant's ``compile_mlir!``, results the passes reduced to an argument returned
    unchanged are removed from ``@main`` first: the call hands them back without computing or
    copying them on the device, and their arguments are not donated.

    ``prelowered``: ``prelower(traced, device)``'s template, used when the module kept every
    result and argument (its signature is then the template's).

    ``timeout``: seconds each call may run before CallTimeoutError (``Compiled.guarded``).

    ``xla_passes``: keep XLA's module after each of its HLO passes (``Compiled.xla``), read from
    XLA's dump of this compile (a temporary directory, removed).
    """
    dev = backend.resolve_device(device)
    check_custom_calls(traced.fn_name, ir, dev, stage_name)
    layout, drop = after_pipeline(traced.layout, returned_arguments(ir, len(traced.linear_args)))
    if drop:
        ir = backend.drop_main_results(ir, drop)
    kept_args = {s.arg for s in layout.out_slots if isinstance(s, Forwarded)}
    if donate not in (True, False, "updated", "auto"):
        raise CompileError(f"donate must be True, False, 'updated' or 'auto', not {donate!r}")
    updated = None
    if donate in ("updated", "auto"):
        updated = {arg for arg, _ in layout.writeback}
        if donate == "auto":
            updated -= set(in_place)
    dropped = set(drop)
    out_avals = [a for k, a in enumerate(_out_avals(traced)) if k not in dropped]
    # 'auto' computes a large updated array's new value into a buffer kept between calls, not
    # into a copy of the caller's array donated for it (which JAX would make on every call);
    # 'updated' and True donate as asked.
    keep = _kept(layout, out_avals, dev, donate)
    kept_args |= {arg for arg, k in layout.writeback if k in keep}
    mask = tuple(bool(d) and i not in kept_args and (updated is None or i in updated)
                 for i, d in enumerate(traced.donation_mask)) \
        if donate else (False,) * len(traced.linear_args)
    structure = _structure(layout, out_avals, dev)
    used: tuple[int, ...] | None = None
    if structure is None:  # the flat call path: arguments @main never reads are not passed
        ir, unused = backend.drop_unused_main_args(ir)
        if unused:
            used = tuple(i for i in range(len(layout.avals)) if i not in set(unused))
            mask = tuple(m and i in used for i, m in enumerate(mask))
    avals = layout.avals if used is None else [layout.avals[i] for i in used]
    if not layout.shardings:  # a sharded call's buffers are split over its devices
        device_memory.check_results(traced.fn_name, ir, [
            (path, *aval[:2]) for path, aval in zip(_result_paths(traced, dropped), out_avals,
                                                    strict=True)],
            [a[:2] for a in avals], dev, stage_name)
    device_support.check_supported(traced.fn_name, ir, dev, stage_name)
    start = time.perf_counter()
    try:
        exe = backend.compile_module(
            ir, avals=avals, out_avals=out_avals, device=dev, x64=layout.x64,
            donate=mask if used is None else [mask[i] for i in used], structure=structure,
            stage=stage_name, reproducer=write_reproducer,
            shardings=layout.shardings if used is None or not layout.shardings
            else [layout.shardings[i] for i in used],
            template=prelowered if not drop and used is None else None,
            exact_floats=traced.mode == "numpy", xla_passes=xla_passes, keep=keep)
    except CompileError as exc:
        unsupported = _unregistered_call(exc, traced.fn_name, ir, dev, stage_name)
        if unsupported is not None:
            raise unsupported from exc
        oom = device_memory.explained(exc, traced.fn_name, dev, stage_name, "compiling")
        if oom is None:
            raise
        raise oom from None
    if not layout.shardings:
        device_memory.check_plan(traced.fn_name, exe.memory_analysis(), dev, stage_name)
    seconds = time.perf_counter() - start
    compiled = Compiled(traced, exe, stage_name, seconds, donate, layout, mask, used, timeout)
    compiled.reused = backend.last_compile_reused()
    compiled.notes = (*device_support.compile_notes(ir, dev), *([exe.note] if exe.note else []))
    return compiled


_UNREGISTERED = re.compile(r"No registered implementation for (?:\w+ )?custom call to (\S+) for")


def check_custom_calls(name: str, ir: str, device: Any, stage: str) -> None:
    """Raise UnsupportedCustomCallError, before XLA sees the module, when it calls a custom
    call that only another platform's XLA implements (a Pallas TPU kernel on the CPU)."""
    if "custom_call" not in ir:
        return
    for call in custom_calls(ir):
        if call.platform is not None and call.platform != device.platform:
            raise _unsupported(name, call.target, call, device, stage)


def _unregistered_call(exc: CompileError, name: str, ir: str, device: Any,
                       stage: str) -> UnsupportedCustomCallError | None:
    """The UnsupportedCustomCallError for XLA's refusal ``exc`` of a custom call target it has
    no implementation of on ``device``, else None."""
    found = _UNREGISTERED.search(str(exc))
    if found is None:
        return None
    target = found.group(1)
    call = next((c for c in custom_calls(ir) if c.target == target), None)
    return _unsupported(name, target, call, device, stage)


def _unsupported(name: str, target: str, call: CustomCall | None, device: Any,
                 stage: str) -> UnsupportedCustomCallError:
    platform = call.platform if call is not None else None
    kernel = call.kernel if call is not None else None
    what = f" (the Pallas TPU kernel {kernel.name})" if kernel and kernel.name else ""
    where = (f"only {platform.upper()}'s XLA implements it" if platform else
             f"{device.platform.upper()}'s XLA has no implementation of it")
    advice = ("Compile it for a TPU (device='tpu' on a machine with one), or run the kernel "
              "here in Pallas' interpret mode: pallas_call(..., interpret=True)"
              if target == "tpu_custom_call" else
              f"Compile it for a device whose XLA registers {target}, or call a function "
              "this device implements instead")
    return UnsupportedCustomCallError(
        f"{name}'s module (stage {stage!r}) calls the custom call {target}{what}, and "
        f"{where}: it cannot be compiled for {device} ({device.platform}). {advice}. Its "
        "stages can still be looked at without compiling (traced.stages(...), or the "
        "explorer of its module text).", target=target, device=str(device), platform=platform)


def check_timeout(seconds: Any) -> float | None:
    """``seconds`` as a time limit: a positive number, or None for none."""
    if seconds is None:
        return None
    number = isinstance(seconds, int | float | np.integer | np.floating)
    if isinstance(seconds, bool) or not number or math.isnan(seconds) or seconds <= 0:
        raise ExecutionError(f"timeout must be a positive number of seconds or None, not "
                             f"{seconds!r}")
    return float(seconds)


def returned_arguments(ir: str, n_args: int) -> dict[int, int]:
    """``@main`` result index -> argument index, for each result that is an argument returned
    unchanged (empty when the module cannot be read that way)."""
    try:
        names = returned_names(ir)
    except AnalysisError:
        return {}
    found = {}
    for index, name in enumerate(names):
        if name.startswith("%arg") and name[4:].isdigit() and int(name[4:]) < n_args:
            found[index] = int(name[4:])
    return found


def after_pipeline(layout: CallLayout, returned: dict[int, int]) -> tuple[CallLayout, list[int]]:
    """``layout`` with each computed result that ``@main`` returns as an unchanged argument made
    ``Forwarded``, and each in-place update that writes an argument's own value dropped; the
    other results renumbered. Also returns the ``@main`` results to remove."""
    drop = {k for k, arg in returned.items()
            if any(isinstance(s, Computed) and s.index == k for s in layout.out_slots)
            or (arg, k) in layout.writeback}
    # A result that is also another argument's write-back value stays (it is that update).
    drop -= {k for a, k in layout.writeback if returned.get(k) != a}
    if not drop:
        return layout, []
    new_index = {k: k - sum(d < k for d in drop) for k in range(layout.n_outputs)}
    slots: list[OutSlot] = []
    for s in layout.out_slots:
        if isinstance(s, Computed) and s.index in drop:
            slots.append(Forwarded(returned[s.index], s.scalar))
        elif isinstance(s, Computed):
            slots.append(Computed(new_index[s.index], s.scalar))
        else:
            slots.append(s)
    writeback = tuple((a, new_index[k]) for a, k in layout.writeback if k not in drop)
    return dataclasses.replace(layout, out_slots=tuple(slots), writeback=writeback), sorted(drop)


def _forwarded_paths(traced: Traced, layout: CallLayout) -> tuple[tuple[str, str], ...]:
    paths = [r.path for r in traced.linear_results]
    return tuple((paths[i], traced.linear_args[s.arg].path)
                 for i, s in enumerate(_result_slots(layout)) if isinstance(s, Forwarded))


def _result_slots(layout: CallLayout) -> list[OutSlot]:
    """The out slots of array results, in the order of ``Traced.linear_results``."""
    return [s for s in layout.out_slots if not isinstance(s, Static)]


PARALLEL_COPY_MIN = 16 << 20
"""From this many bytes up, an updated array's new value is copied into the caller's array in two
halves at once (``copy_into``): one thread's copy of a 32 MB array took 4.1 ms here, two threads'
2.9 ms (an 8 MB one 0.65 against 0.56 ms: below this size the second thread gains nothing); and
with non-temporal stores (``host_memory.stream_copy``), which leave the target out of the cache:
two threads copied 16 MB in 0.76 ms where two threads of NumPy's copy took 1.03 ms, 64 MB in 3.2
against 4.9 ms (the source just written, as a result is)."""

_copier: list[ThreadPoolExecutor] = []
_copier_lock = threading.Lock()


def _second_copier() -> ThreadPoolExecutor:
    """The thread that copies the other halves, started on the first large copy."""
    with _copier_lock:
        if not _copier:
            _copier.append(ThreadPoolExecutor(1, thread_name_prefix="reactant_lab-copy"))
        return _copier[0]


def copy_into(target: np.ndarray, host: np.ndarray, spare: bool = False) -> None:
    """``target[...] = host`` (same shape, same dtype: the caller checked), a large one in two
    halves, split along the axis ``target`` strides most over, copied at once by this thread and
    a second one (NumPy's copy and ``host_memory.stream_copy`` release the GIL), each with
    non-temporal stores where both halves are C-contiguous. Both halves are written, or the error
    of either is raised after both have run. ``spare``: nothing reads ``host`` afterwards, so
    its memory pages may trade places with ``target``'s instead (``host_memory.swap_pages``:
    a 32 MB array in 0.3 ms, where the two copying threads take ~3 ms)."""
    if spare and host_memory.swap_pages(target, host):  # it refuses what it cannot trade
        return
    if host.nbytes < PARALLEL_COPY_MIN or (os.cpu_count() or 1) < 2 or target.ndim == 0:
        target[...] = host
        return
    axis = max(range(target.ndim), key=lambda a: abs(target.strides[a]) * (target.shape[a] > 1))
    half = target.shape[axis] // 2
    if half == 0:
        target[...] = host
        return
    first = (slice(None),) * axis + (slice(0, half),)
    rest = (slice(None),) * axis + (slice(half, None),)
    done = _second_copier().submit(_assign, target[first], host[first])
    try:
        _assign(target[rest], host[rest])
    finally:
        done.result()


def _assign(target: np.ndarray, value: np.ndarray) -> None:
    if not host_memory.stream_copy(target, value):
        target[...] = value
