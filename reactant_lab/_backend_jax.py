"""JAX's staged API as backend uses it: lower to StableHLO, compile into an Executable, run.

A module compiles behind JAX's C++ dispatch when this JAX allows (``swap_module``), else through
XLA's client alone.

Only backend and its private modules import this module.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import backend as jex_backend
from jax.interpreters import mlir as jax_mlir
from jaxlib.mlir import ir

from reactant_lab._backend_buffers import KeptBuffers, aligned_empty
from reactant_lab._backend_devices import device_errors, in_c_order, strided_complex_params
from reactant_lab._backend_ir import (
    Aval,
    Donation,
    asm,
    donation_plan,
    loop_bounds,
    main_func,
    prepare,
    set_result_names,
)
from reactant_lab._backend_run import (
    LONG_TRIPS,
    long_loop,
    placer,
    run_guarded,
    spin_budget,
    twin,
    twin_client,
)
from reactant_lab._backend_text import compile_message, module_text
from reactant_lab._backend_xla import XlaDump, capture, named_call_sites
from reactant_lab._compile_isolation import (
    Guard,
    ReproducerWriter,
    compile_lowered,
    compiled_text,
    cpu_options,
    guard_for,
    isolated,
    not_reused,
    overrides,
)
from reactant_lab.errors import CompileError, ExecutionError, TraceError

Structure = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]
"""A template function with a call's signature, and its args and kwargs as ShapeDtypeStructs."""


_UNCHANGED = contextlib.nullcontext()


def _x64_state() -> Any:
    """JAX's thread-local state behind ``jax.enable_x64``, when it can be set directly (a
    C++ swap and restore, no hook to call), else None."""
    try:
        from jax._src import config as jax_config
    except ImportError:  # pragma: no cover - a JAX without the private module
        return None
    state = getattr(jax_config, "enable_x64", None)
    if (not hasattr(state, "swap_local") or not hasattr(state, "set_local")
            or getattr(state, "_update_thread_local_hook", None) is not None):
        return None  # pragma: no cover - another JAX: its context manager it is
    return state


_X64 = _x64_state()


def _keep(_: Any) -> None:
    return None


def x64_switch(enabled: bool) -> tuple[Callable[[bool], Any], Callable[[Any], None]]:
    """``(swap, restore)`` for a per-call path that turns 64-bit types on for the call only:
    ``prev = swap(True)`` before, ``restore(prev)`` after (in a ``finally``). JAX's thread-local
    state is swapped directly, two C calls, as ``jax.enable_x64(True)``'s context manager does
    without building it and parsing the value on every call (about 2 us of a small kernel's
    ~30 us call). With ``enabled`` False both do nothing."""
    if not enabled:
        return _keep, _keep
    if _X64 is not None:
        return _X64.swap_local, _X64.set_local

    def swap(_: bool) -> Any:  # pragma: no cover - a JAX without the state: its manager
        scope = jax.enable_x64(True)
        scope.__enter__()
        return scope

    def restore(scope: Any) -> None:  # pragma: no cover
        scope.__exit__(None, None, None)

    return swap, restore


def x64_scope(enabled: bool) -> contextlib.AbstractContextManager[Any]:
    """Trace / run with 64-bit types on when ``enabled`` (leaves the global flag alone otherwise).
    A plain function, not a generator: it wraps every compiled call."""
    if not enabled or jax.config.jax_enable_x64:  # type: ignore[attr-defined]  # JAX adds each flag to Config at run time
        return _UNCHANGED
    scope: contextlib.AbstractContextManager[Any] = jax.enable_x64(True)
    return scope


def register_array_like(cls: type, value_of: Callable[[Any], Any]) -> bool:
    """Let JAX's functions take an instance ``x`` of ``cls`` as the array ``value_of(x)`` (a
    traced value): its abstract value is that array's, and a primitive bound to it binds that
    array, so ``jnp.sin(x)``, ``jax.grad(f)(x)``, ``lax.fori_loop(..., x)`` work on it as on
    the array. Through JAX's tables of Python types (``pytype_aval_mappings``,
    ``register_canonicalize_value_handler``): ``__jax_array__`` alone no longer serves a jitted
    function's arguments, and a pytree registration would make every ``tree_util`` walk see
    the array inside instead of the object. Returns False, registering nothing, on a JAX
    without those tables (JAX then refuses such objects)."""
    try:
        from jax._src import core, dtypes
    except ImportError:  # pragma: no cover - private modules moved in another JAX version
        return False
    avals = getattr(core, "pytype_aval_mappings", None)
    register = getattr(dtypes, "register_canonicalize_value_handler", None)
    typeof = getattr(core, "typeof", None)
    if not isinstance(avals, dict) or register is None or typeof is None:
        return False  # pragma: no cover - another JAX
    avals[cls] = lambda x: typeof(value_of(x))
    register(cls, value_of)
    return True


def abstract_value(aval: Aval, device: Any | None = None,
                   sharding: Any | None = None) -> jax.ShapeDtypeStruct:
    """A ShapeDtypeStruct for (shape, dtype, weak_type), laid out by ``sharding`` (a
    NamedSharding over a mesh) if given, else placed on ``device`` if given."""
    shape, dtype, weak = aval
    if sharding is None and device is not None:
        sharding = jax.sharding.SingleDeviceSharding(device)
    return jax.ShapeDtypeStruct(shape, dtype, weak_type=weak, sharding=sharding)


def lower(fn: Callable[..., Any], avals: Sequence[Aval], *, arg_names: Sequence[str],
          result_names: Sequence[str], module_name: str, x64: bool,
          shardings: Sequence[Any] = (), out_shardings: Sequence[Any] = (),
          platform: str | None = None) -> str:
    """Lower ``fn(*linear) -> list`` to StableHLO text whose block arguments carry their paths;
    with ``shardings`` (a NamedSharding per argument) JAX writes the mesh and the arguments'
    (and the results' it infers) Shardy annotations into the module; ``out_shardings`` (a
    NamedSharding or None per result) annotates the results. ``platform`` ('cpu', 'tpu',
    'cuda', 'rocm'): lower for that platform's compiler, attached or not (a Pallas kernel then
    becomes that platform's custom call); None: the default device's."""
    shards = list(shardings) or [None] * len(avals)
    jitted = (jax.jit(fn, keep_unused=True, out_shardings=list(out_shardings)) if out_shardings
              else jax.jit(fn, keep_unused=True))
    structs = [abstract_value(a, None, s) for a, s in zip(avals, shards, strict=True)]
    with x64_scope(x64), device_errors():  # often the first JAX call to open the devices
        try:
            lowered = (jitted.lower(*structs) if platform is None else
                       jitted.trace(*structs).lower(lowering_platforms=(platform,)))
        except (ValueError, NotImplementedError) as exc:
            refused = _platform_refusal(module_name, exc, platform)
            if refused is None:
                raise
            raise refused from exc
    module = lowered.compiler_ir("stablehlo")
    if module is None:  # pragma: no cover - JAX's jit lowerings always have StableHLO
        raise TraceError(f"JAX gave no StableHLO module for {module_name}")
    with module.context:
        main = main_func(module)
        block = main.regions[0].blocks[0]
        if len(block.arguments) != len(avals):
            raise TraceError(
                f"{module_name} uses values that are neither its arguments nor arrays it reads "
                f"directly from its closure or globals (JAX lowered {len(block.arguments)} "
                f"arguments for {len(avals)} traced leaves): an array held inside a container "
                "or an object, or a traced value kept from another trace (a leaked tracer). "
                "Pass such arrays as arguments, and do not keep traced values between calls.")
        for arg, name in zip(block.arguments, arg_names, strict=True):
            arg.set_location(ir.Location.name(name))
        set_result_names(main, result_names)
        module.operation.attributes["sym_name"] = ir.StringAttr.get(module_name)
        return asm(module)


def _platform_refusal(name: str, exc: Exception, platform: str | None) -> TraceError | None:
    """The TraceError for JAX refusing to lower an op for the platform (a Pallas kernel
    outside interpret mode on the CPU, a primitive without a rule there), else None."""
    message, name = str(exc).strip(), name.removeprefix("reactant_")
    where = platform or jax.default_backend()
    if "interpret mode" in message:
        return TraceError(
            f"{name} calls a Pallas kernel that cannot be lowered for {where} ({message}). "
            "Run it in Pallas' interpret mode here (pallas_call(..., interpret=True)), or trace "
            "it for the platform it is written for to look at its kernel without running it: "
            "rl.trace(f, *args, platform='tpu').")
    if "not found for platform" in message or "lowering rule" in message.lower():
        return TraceError(f"{name} uses an operation JAX cannot lower for {where}: {message}")
    return None


@functools.cache
def _twin_placer() -> Callable[[Any, Aval], Any]:
    """``_backend_run.placer`` of the twins' device."""
    return placer(twin_client().devices()[0])


_MISSING_KERNEL = "NOT_FOUND: Function"
"""XLA's error when a twin lacks a kernel of the executable it was serialized from ("NOT_FOUND:
Function dynamic-update-slice_slice_fusion.36 not found", seen for the adi kernel): jaxlib
0.10.2's XLA:CPU does not serialize every kernel of some executables."""


class _TwinUnusable(Exception):
    """A twin cannot run its executable (``_MISSING_KERNEL``): the guarded call runs the
    executable itself, from then on."""


def _host_value(value: Any, aval: Aval, copy: bool) -> np.ndarray:
    """``value`` as a C-ordered NumPy array of ``aval``'s dtype on a 64-byte boundary, which
    XLA:CPU's clients read where it lies: ``value`` itself when it is one and not ``copy``, else
    an aligned copy made here (a client copies any other array on one of its threads: 10 us for
    160 KB, then ~60 us until the call can read it, the hand-off to a thread on the idle core of
    this machine; the copy here takes 8 us)."""
    host = np.asarray(value, dtype=aval[1])
    if copy or host.ctypes.data % 64 or not host.flags.c_contiguous:
        aligned = aligned_empty(aval)
        np.copyto(aligned, host)
        return aligned
    return host


def _execution_error(exc: Exception) -> ExecutionError:
    """The error for XLA's runtime error ``exc`` (they carry no stable type)."""
    return ExecutionError(f"the compiled executable failed while running: {exc}")


def _check_params(values: Sequence[Any], params: Sequence[Aval]) -> None:
    """Raise TypeError unless each value has its parameter's shape and dtype (a Python number:
    its shape). XLA's client checks them on the CPU, not on a TPU, which ran an executable on a
    buffer of another shape (measured on a TPU v5e with jax 0.10.2)."""
    for i, (v, (shape, dtype, _weak)) in enumerate(zip(values, params, strict=False)):
        have = getattr(v, "dtype", None)
        if tuple(np.shape(v)) != tuple(shape) or (have is not None and have != dtype):
            raise TypeError(f"argument {i} of the executable is {have}{list(np.shape(v))}, "
                            f"compiled for {np.dtype(dtype)}{list(shape)}")


class Executable:
    """A compiled XLA executable for one module, with JAX's fast call path when possible.

    Exactly one of ``jax_compiled`` (JAX's Compiled: its C++ dispatch) and ``raw`` (jaxlib's
    LoadedExecutable, run through XLA's client; jaxlib ships no types for it) is not None.
    """

    def __init__(self, text: str, jax_compiled: jax.stages.Compiled | None, raw: Any,
                 device: Any, x64: bool, structured: bool, params: Sequence[Aval] = (),
                 donated: Sequence[bool] = (), sharded: bool = False,
                 kept: Sequence[int] = ()):
        self.text = text
        """The module text XLA compiled (donation attributes included)."""
        self._compiled = jax_compiled
        self._raw = raw
        self.device = device
        self.x64 = x64
        self.structured = structured
        """True when ``fast_call`` takes the user's own ``(*args, **kwargs)`` pytree."""
        self.params = tuple(params)
        """(shape, dtype, weak_type) of each argument of the module, in order, the donors of
        ``kept`` results last."""
        self.donated = tuple(donated) or (False,) * len(self.params)
        """Per argument of the module: whether its buffer is donated."""
        self.kept = tuple(kept)
        """The results XLA writes into a buffer kept from the call before (``_backend_buffers``):
        the module's last ``len(kept)`` arguments are their donors, which ``call_flat`` and
        ``call_guarded`` add to the values they are given."""
        self._buffers = KeptBuffers(kept, self.params[len(self.params) - len(self.kept):],
                                    str(device))
        self.sharded = sharded
        """Whether it was compiled for a mesh of devices."""
        self.note: str | None = None
        """How XLA was worked around to compile it (after a crash in the compile worker)."""
        self.xla_dump: XlaDump | None = None
        """XLA's module after each of its HLO passes, when the compile kept them."""
        self._dispatch: Callable[..., Any] | None = None
        """JAX's C++ call of ``jax_compiled``, once made (its first call makes it): called
        directly, it spares a NumPy kernel's per-call path the Python wrapper around it."""
        self._twin: list[Any] = []
        """The twin guarded calls run (``_backend_run.twin``; None where there is none), once
        made."""
        self._last_guarded: float | None = None
        """Seconds the last guarded call took, once one ended (``spin_budget``)."""
        self._c_order = strided_complex_params(device.platform, self.params)
        """The arguments copied into C order before a call (complex ones the device's copy
        gets wrong otherwise: ``_backend_devices.STRIDED_COMPLEX_PLATFORMS``)."""

    @property
    def fast_call(self) -> Callable[..., Any] | None:
        """JAX's C++ dispatch for this executable, or None on the fallback path."""
        if self._compiled is None or not self._c_order:
            return self._compiled
        compiled = self._compiled

        def call(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = jax.tree_util.tree_map(in_c_order, (args, kwargs))
            return compiled(*args, **kwargs)
        return call

    def call_flat(self, values: Sequence[Any],
                  offsets: Sequence[int | None] | None = None) -> list[Any]:
        """Run on the module's argument values, in order (the donors of kept results left out:
        they are added here, each at ``offsets[i]`` in its page where a free one is: the page
        offset of the caller's array kept result i is written into); return its results as
        JAX arrays."""
        if self._c_order:
            values = [in_c_order(v) if i in self._c_order else v for i, v in enumerate(values)]
        if self.kept:
            values = [*values, *self._buffers.donors("device", self._new_donor, offsets)]
        outs = self._call_flat(values)
        if self.kept:
            self._buffers.keep("device", outs)
        return outs

    def _new_donor(self, aval: Aval) -> Any:
        return placer(self.device)(aligned_empty(aval), aval)

    def _call_flat(self, values: Sequence[Any]) -> list[Any]:
        try:
            if self._compiled is not None:
                if self._dispatch is not None:
                    return list(self._dispatch(*values))
                if self.structured:  # JAX's dispatch takes the pytree of the values
                    args, kwargs = jax.tree_util.tree_unflatten(self._compiled.in_tree, values)
                    return jax.tree_util.tree_leaves(self._compiled(*args, **kwargs))
                out = self._compiled(*values)  # JAX's Compiled makes its C++ call on the first
                self._dispatch = getattr(self._compiled, "_call", None)
                return list(out)
            _check_params(values, self.params)
            bufs = [jax.device_put(v, self.device) for v in values]
            results = self._raw.execute_sharded(bufs)
            return [a[0] for a in results.disassemble_into_single_device_arrays()]
        except (TypeError, ValueError):  # JAX's own checks of the arguments
            raise
        except Exception as exc:
            raise _execution_error(exc) from exc

    @functools.cached_property
    def long_loop(self) -> str | None:
        """Why a call may not end, or run very long (``_backend_run.long_loop``: a while loop
        whose trip count XLA cannot tell, or a huge one, unless ``_loop_bounds`` shows it
        short), in words; None when it will end."""
        if "while" not in self.text:  # XLA itself adds only loops of known length
            return None
        try:
            hlo = self.hlo_text()
        except CompileError:  # a platform that prints no HLO: assume the worst
            return "a while loop"
        if long_loop(hlo) is None:  # XLA bounds them all (the parse below takes 3-7 ms)
            return None
        bounded, unbounded = self._loop_bounds()
        if not unbounded:  # each of ours provably short (for j in range(i)); XLA's known
            return None
        return long_loop(hlo, skip=bounded - unbounded)  # those neither can bound

    def _loop_bounds(self) -> tuple[set[str], set[str]]:
        """The names of the module's while loops that run fewer than ``LONG_TRIPS`` times, and
        of the others (``_backend_ir.loop_bounds``: XLA cannot tell the trip count of ``for j
        in range(i)`` inside ``for i in range(80)``, which is at most 80)."""
        try:
            with jax_mlir.make_ir_context() as ctx:
                ctx.allow_unregistered_dialects = True
                return loop_bounds(ir.Module.parse(self.text), LONG_TRIPS)
        except Exception:  # a module this context does not parse: assume the worst
            return set(), {"a while loop"}

    def call_guarded(self, values: Sequence[Any], *, x64: bool, limit: float | None,
                     name: str, on_host: bool,
                     offsets: Sequence[int | None] | None = None) -> list[Any]:
        """``call_flat(values, offsets)``, ended, with the caller waiting where Ctrl-C and ``limit``
        (seconds) stop it (``_backend_run.run_guarded``; ``name`` names the function in its
        errors). On the CPU it runs the executable's twin, whose results stay on the twin's
        device when ``on_host`` (the caller reads them as NumPy arrays)."""
        twin = self._guarded_twin()
        where = None if twin is not None else str(self.device)

        def work() -> list[Any]:
            with x64_scope(x64):
                if twin is not None:
                    try:
                        return self._run_twin(twin, values, on_host, offsets)
                    except _TwinUnusable:
                        self._twin[0] = None  # from now on the executable itself
                return list(jax.block_until_ready(self.call_flat(values, offsets)))

        start = time.perf_counter()
        outs = list(run_guarded(work, limit=limit, name=name, loop=self.long_loop, where=where,
                                spin=spin_budget(self._last_guarded)))
        self._last_guarded = time.perf_counter() - start
        if self._twin and self._twin[0] is not None:  # a donated JAX array is given up, as
            # JAX's dispatch does
            for value, donated in zip(values, self.donated[:len(values)], strict=True):
                if donated and isinstance(value, jax.Array):
                    value.delete()
        return outs

    def _guarded_twin(self) -> Any | None:
        """The twin (made on first use), or None: not on the CPU, sharded, or not serializable
        (host callbacks): guarded calls then run the executable itself."""
        if not self._twin:
            made = None
            if self.device.platform == "cpu" and not self.sharded:
                options = cpu_options(jex_backend.get_compile_options(
                    num_replicas=1, num_partitions=1), "cpu")
                with contextlib.suppress(Exception):  # whatever stops it, run the executable
                    exe: Any = (self._raw if self._compiled is None
                                else self._compiled.runtime_executable())
                    made = twin(exe.serialize(), options)
            self._twin.append(made)
        return self._twin[0]

    def _run_twin(self, twin_exe: Any, values: Sequence[Any], on_host: bool,
                  offsets: Sequence[int | None] | None = None) -> list[Any]:
        """Run the twin on ``values`` (the caller checked their shapes and dtypes; donated ones
        are copied, so no buffer of the caller's is given up); results on this executable's
        device unless ``on_host``."""
        put = _twin_placer()
        n = len(values)
        bufs = [put(_host_value(v, aval, donated), aval)
                for v, aval, donated in zip(values, self.params[:n], self.donated[:n],
                                            strict=True)]
        if self.kept:
            bufs += self._buffers.donors("twin", lambda aval: put(aligned_empty(aval), aval),
                                         offsets)
        try:
            outs = [a[0] for a in twin_exe.execute_sharded(bufs)
                    .disassemble_into_single_device_arrays()]
        except Exception as exc:
            if _MISSING_KERNEL in str(exc):
                raise _TwinUnusable(str(exc)) from exc
            raise _execution_error(exc) from exc
        if self.kept:
            self._buffers.keep("twin", outs)
        if on_host:
            return outs
        put = placer(self.device)
        return [put(np.asarray(a), (a.shape, a.dtype, False)) for a in outs]

    def hlo_text(self) -> str:
        """XLA's optimized HLO."""
        if self._compiled is None:
            text: str = self._raw.get_hlo_text()
            return text
        hlo = self._compiled.as_text()
        if hlo is None:  # JAX's word for a backend that cannot print its executables
            raise CompileError(f"XLA's optimized HLO is not available on {self.device.platform}; "
                               "Compiled.as_text() gives the StableHLO module that was compiled")
        return hlo

    def cost_analysis(self) -> dict[str, float]:
        """XLA's cost model: flops, transcendentals, bytes accessed."""
        raw = self._compiled.cost_analysis() if self._compiled is not None else (
            self._raw.cost_analysis())
        if isinstance(raw, list | tuple):
            raw = raw[0] if raw else {}
        return {k: float(v) for k, v in dict(raw or {}).items()}

    def memory_analysis(self) -> dict[str, int]:
        """Argument / output / alias / temp / code bytes of the executable."""
        stats = (self._compiled.memory_analysis() if self._compiled is not None else
                 self._raw.get_compiled_memory_stats())
        names = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
                 "temp_size_in_bytes", "generated_code_size_in_bytes")
        return {n: int(getattr(stats, n)) for n in names if hasattr(stats, n)}


def compile_module(text: str, *, avals: Sequence[Aval], out_avals: Sequence[Aval],
                   device: Any, x64: bool, donate: Sequence[bool],
                   structure: Structure | None, stage: str = "final",
                   reproducer: ReproducerWriter | None = None,
                   shardings: Sequence[Any] = (),
                   template: Prelowering | None = None,
                   exact_floats: bool = False, xla_passes: bool = False,
                   keep: Sequence[int] = ()) -> Executable:
    """Compile module text for ``device``; ``stage`` names it in errors, and ``reproducer``
    (stages.reproducer.write_reproducer) writes a directory when XLA crashes on it.

    ``structure`` (a template function with the call's signature, and its args and kwargs as
    ShapeDtypeStructs on ``device``) lets JAX's C++ call path take the user's own pytree; without
    it the executable takes the flat linear values. A module XLA might crash on compiles in the
    compile worker (reactant_lab/_compile_isolation.py).

    ``shardings`` (a NamedSharding per argument, all over one mesh) compiles the module for that
    mesh: XLA's Shardy partitioner partitions it, and the executable runs on every device of
    the mesh. Only JAX's dispatch runs such an executable.

    ``template``: ``prelower``'s handle for this same signature, lowered while the passes ran.

    ``exact_floats``: round every float16 / bfloat16 intermediate value as NumPy does (NumPy
    mode): XLA's excess precision is off for this compile (``_compile_isolation.overrides``).

    ``xla_passes``: keep XLA's module after each of its HLO passes (``Executable.xla_dump``,
    ``_backend_xla``); the op locations of inlined calls are then put in the form XLA keeps as
    its instructions' source lines (``_backend_xla.named_call_sites``).

    ``keep``: results XLA writes into a buffer kept from the call before (``_backend_buffers``;
    flat calls only, ``structure`` None): the module gets a donor argument for each, last.
    """
    text = module_text(text)
    if keep and structure is not None:
        raise CompileError("kept result buffers need the flat call path (structure=None)")
    donation = donation_plan(donate, avals, out_avals, keep)
    avals = [*avals, *(out_avals[k] for k in keep)]
    donate = [*donate, *(True for _ in keep)]
    guard = guard_for(text, device, stage, reproducer)
    if xla_passes:
        text = named_call_sites(text)
    with capture(xla_passes, len(text)) as dump:
        options = {**overrides(exact_floats), **(dump.options if dump is not None else {})}
        exe = _compile(text, donation, avals, out_avals, device, x64, structure, guard,
                       shardings, template, options, donate, keep)
        exe.note = guard.note if guard is not None else None
        exe.xla_dump = dump.read() if dump is not None else None
    return exe


def _compile(text: str, donation: Donation, avals: Sequence[Aval], out_avals: Sequence[Aval],
             device: Any, x64: bool, structure: Structure | None, guard: Guard | None,
             shardings: Sequence[Any], template: Prelowering | None, options: dict[str, Any],
             donate: Sequence[bool], keep: Sequence[int]) -> Executable:
    """``compile_module``'s compile: through JAX's lowering when it can, else XLA's client."""
    not_reused()  # until a compile served from the kept executables says otherwise
    if not os.environ.get("REACTANT_LAB_RAW_EXECUTE"):
        compiled = _compile_via_jax(text, donation, avals, out_avals, device, x64, structure,
                                    guard, shardings, template, options)
        if compiled is not None:
            return Executable(*compiled, None, device, x64, structure is not None, avals,
                              donate, bool(shardings), keep)
    if shardings:
        raise CompileError("a sharded module compiles only through JAX's lowering, which this "
                           "JAX does not offer (or REACTANT_LAB_RAW_EXECUTE is set)")
    with jax_mlir.make_ir_context():
        text = asm(prepare(text, donation))
    return Executable(text, None, _compile_raw(text, device, guard, options), device, x64,
                      False, avals, donate, kept=keep)


def _template_lowering(avals: Sequence[Aval], out_avals: Sequence[Aval], device: Any,
                       x64: bool, structure: Structure | None,
                       shardings: Sequence[Any] = ()) -> jax.stages.Lowered:
    """JAX's lowering of a function of the signature (``structure``'s, else one of the linear
    values giving ``out_avals``), whose module ``_compile_via_jax`` swaps for ours."""
    if structure is None:
        def template(*_: Any) -> list[jax.Array]:
            # jnp.zeros lowers to a broadcast of one zero; a NumPy array would be a dense
            # constant of the result's size to build and print (60 ms for 128 MB), only to be
            # swapped away with the module.
            return [jnp.zeros(s, d) for s, d, _w in out_avals]
        shards = list(shardings) or [None] * len(avals)
        structure = template, tuple(abstract_value(a, device, s)
                                    for a, s in zip(avals, shards, strict=True)), {}
    fn, args, kwargs = structure
    with x64_scope(x64):
        return jax.jit(fn, keep_unused=True).lower(*args, **kwargs)


PRELOWER_DELAY = 0.002
"""Seconds the prelowering thread waits before it starts (see ``Prelowering``)."""


class Prelowering:
    """``_template_lowering`` run on a thread of its own, started before the module to compile
    exists: a first call's pass pipeline runs in the pass worker, and this process lowers the
    template meanwhile (a few milliseconds of JAX tracing and lowering off the first call)."""

    def __init__(self, avals: Sequence[Aval], out_avals: Sequence[Aval], device: Any,
                 x64: bool, structure: Structure | None, shardings: Sequence[Any] = ()):
        self._lowered: jax.stages.Lowered | None = None

        def run() -> None:
            # First let the caller go on to hand the passes to the worker: a thread started
            # holding the GIL keeps it for Python's switch interval (5 ms), which the caller
            # would spend waiting before it could even send them.
            time.sleep(PRELOWER_DELAY)
            # Any failure leaves None: the compile then lowers again on its own thread, where
            # the error (if it is one) surfaces as usual.
            with contextlib.suppress(Exception):
                self._lowered = _template_lowering(avals, out_avals, device, x64, structure,
                                                   shardings)

        self._thread = threading.Thread(target=run, name="reactant_lab-prelower", daemon=True)
        self._thread.start()

    def take(self) -> jax.stages.Lowered | None:
        """The lowering (once: its module is then swapped), or None if it failed."""
        self._thread.join()
        lowered, self._lowered = self._lowered, None
        return lowered


def _compile_via_jax(text: str, donation: Donation, avals: Sequence[Aval],
                     out_avals: Sequence[Aval], device: Any, x64: bool,
                     structure: Structure | None, guard: Guard | None,
                     shardings: Sequence[Any] = (), template: Prelowering | None = None,
                     options: dict[str, Any] | None = None
                     ) -> tuple[str, jax.stages.Compiled] | None:
    """Compile through a JAX lowering of the same signature whose module is swapped for ours
    (``options``: XLA options for this compile).

    This gives our executable JAX's C++ dispatch (a few microseconds a call). Returns (text
    compiled, JAX's Compiled), or None when this JAX version's lowering object does not have the
    expected shape.
    """
    lowered = template.take() if template is not None else None
    if lowered is None:
        lowered = _template_lowering(avals, out_avals, device, x64, structure, shardings)
    with x64_scope(x64):
        module = swap_module(lowered, text, donation)
        if module is None:
            return None
        try:
            compiled = compile_lowered(lowered, module, device, guard, options)
        except CompileError:
            raise
        except Exception as exc:
            raise CompileError(compile_message(text, exc)) from exc
        return compiled_text() or asm(module), compiled


def swap_module(lowered: jax.stages.Lowered, text: str, donation: Donation) -> ir.Module | None:
    """Put our module (``text``, prepared in the lowering's MLIR context) in place of the one JAX
    lowered, and return it; None when this JAX's lowering has no module to swap, or passes
    constants as extra arguments (our module takes none).

    The one use of JAX's private ``Lowered._lowering._hlo`` (docs/architecture.md).
    """
    lowering: Any = getattr(lowered, "_lowering", None)
    if lowering is None or not hasattr(lowering, "_hlo") or getattr(
            lowering, "const_args", None):
        return None
    with lowering._hlo.context:
        module = prepare(text, donation)
    lowering._hlo = module
    return module


def _compile_raw(text: str, device: Any, guard: Guard | None,
                 xla_options: dict[str, Any] | None = None) -> Any:
    """jaxlib's LoadedExecutable of module text, compiled by XLA's client (in the compile worker
    when ``guard`` says so), with the XLA options ``xla_options``."""
    from jaxlib import xla_client

    client, devices = device.client, xla_client.DeviceList((device,))
    options = cpu_options(jex_backend.get_compile_options(num_replicas=1, num_partitions=1),
                          device.platform)
    options.env_option_overrides = [*options.env_option_overrides,
                                    *(xla_options or {}).items()]
    if guard is not None:
        exe, options = isolated(guard, text, devices, options, client)
        if exe is not None:
            return exe
    try:
        return client.compile_and_load(text, devices, options)
    except Exception as exc:
        raise CompileError(compile_message(text, exc)) from exc


_Rule = Callable[..., Any]


class _ReplacedRules:
    """Rules of a JAX table replaced while any use of ``held`` is open, on every thread: the
    first use to open installs them, the last to close puts JAX's own back (nested and
    concurrent uses share them). Only rules at least as correct as JAX's belong here."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.saved: dict[Any, _Rule] = {}

    @contextlib.contextmanager
    def held(self, table: dict[Any, _Rule], wrap: dict[Any, Callable[[_Rule], _Rule]]
             ) -> Iterator[None]:
        """While open, each primitive ``p`` of ``wrap`` that ``table`` has a rule for runs
        ``wrap[p](JAX's rule)``."""
        with self.lock:
            if self.depth == 0:
                self.saved = {p: table[p] for p in wrap if p in table}
                for p, rule in self.saved.items():
                    table[p] = wrap[p](rule)
            self.depth += 1
        try:
            yield
        finally:
            with self.lock:
                self.depth -= 1
                if self.depth == 0:
                    table.update(self.saved)


_UNIT_RESHAPES = _ReplacedRules()
"""The reshape batching rule ``batch_axis_kept_by_unit_reshapes`` replaces."""

_KEPT_CARRIES = _ReplacedRules()
"""The dead-code rules ``without_dead_code`` replaces."""


def _unit_reshape_rule(default: Callable[..., Any]) -> Callable[..., Any]:
    """JAX's batching rule for ``reshape``, except that a reshape adding or dropping only
    size-1 axes (``x[:, j]`` of an (n, 1) column) keeps the batch axis where it is, after the
    same axes of size over 1, instead of moving it to the front: the element order is the
    same, so it is still a reshape, and no transpose is needed in or out."""
    def rule(axis_data: Any, batched_args: Any, batch_dims: Any, *, new_sizes: Any,
             dimensions: Any, sharding: Any) -> Any:
        (operand,), (bdim,) = batched_args, batch_dims
        if bdim is not None and dimensions is None and sharding is None:
            shape = tuple(operand.shape)
            per_call = shape[:bdim] + shape[bdim + 1:]
            if [d for d in per_call if d != 1] == [d for d in new_sizes if d != 1]:
                before = sum(1 for d in per_call[:bdim] if d != 1)
                at, seen = len(new_sizes), 0
                for pos, d in enumerate(new_sizes):
                    if seen == before:
                        at = pos
                        break
                    seen += d != 1
                out = (*new_sizes[:at], shape[bdim], *new_sizes[at:])
                return operand.reshape(out), at
        return default(axis_data, batched_args, batch_dims, new_sizes=new_sizes,
                       dimensions=dimensions, sharding=sharding)
    return rule


@contextlib.contextmanager
def batch_axis_kept_by_unit_reshapes() -> Iterator[None]:
    """While open, ``jax.vmap`` batches reshapes that only add or drop size-1 axes with the batch
    axis kept in place (``_unit_reshape_rule``), on every thread (the rule is correct for any
    such reshape). A loop batched along its slot axis (NumPy mode's column loops) then needs no
    transposes: a 400x300 upwind sweep over columns ran 1.2-1.5x faster so. Nested uses keep
    it until the outermost ends; a JAX without the batching table it replaces keeps its own
    rule."""
    try:
        from jax._src.interpreters import batching
        from jax._src.lax import lax as lax_internal
        table, prim = batching.fancy_primitive_batchers, lax_internal.reshape_p
    except (ImportError, AttributeError):  # pragma: no cover - another JAX
        yield
        return
    with _UNIT_RESHAPES.held(table, {prim: _unit_reshape_rule}):
        yield


def _index_dtype(starts: Sequence[Any]) -> np.dtype:
    """The dtype of a window's start indices (the first that has one; int32 otherwise)."""
    return next((np.dtype(s.dtype) for s in starts if hasattr(s, "dtype")), np.dtype(np.int32))


def _window_slice_rule(default: _Rule) -> _Rule:
    """JAX's batching rule for ``dynamic_slice``, except that a batched operand sliced at
    unbatched starts (a slab's element ``B[i, j]`` at the enclosing loop's ``i``) stays a
    ``dynamic_slice``, over the whole batch axis from 0, instead of a gather: the same clamped
    window of every batch member, an op XLA slices in place."""
    def rule(axis_data: Any, batched_args: Any, batch_dims: Any, *, slice_sizes: Any) -> Any:
        operand, *starts = batched_args
        bdim, *start_dims = batch_dims
        if (bdim is not None and starts and len(starts) == operand.ndim - 1
                and all(d is None for d in start_dims)):
            from jax._src.lax import slicing
            zero = np.zeros((), _index_dtype(starts))
            sizes = (*slice_sizes[:bdim], operand.shape[bdim], *slice_sizes[bdim:])
            return slicing.dynamic_slice_p.bind(operand, *starts[:bdim], zero, *starts[bdim:],
                                                slice_sizes=sizes), bdim
        return default(axis_data, batched_args, batch_dims, slice_sizes=slice_sizes)
    return rule


def _window_update_rule(default: _Rule) -> _Rule:
    """JAX's batching rule for ``dynamic_update_slice``, except that a batched operand updated
    at unbatched starts stays a ``dynamic_update_slice`` over the whole batch axis (the update
    broadcast or moved to the operand's batch axis), instead of a scatter."""
    def rule(axis_data: Any, batched_args: Any, batch_dims: Any) -> Any:
        operand, update, *starts = batched_args
        bdim, update_dim, *start_dims = batch_dims
        if (bdim is not None and starts and len(starts) == operand.ndim - 1
                and all(d is None for d in start_dims)):
            from jax._src.lax import slicing
            if update_dim is None:
                shape = (*update.shape[:bdim], operand.shape[bdim], *update.shape[bdim:])
                update = jax.lax.broadcast_in_dim(
                    update, shape, tuple(d for d in range(len(shape)) if d != bdim))
            elif update_dim != bdim:
                perm = [d for d in range(update.ndim) if d != update_dim]
                perm.insert(bdim, update_dim)
                update = jax.lax.transpose(update, perm)
            zero = np.zeros((), _index_dtype(starts))
            return slicing.dynamic_update_slice_p.bind(
                operand, update, *starts[:bdim], zero, *starts[bdim:]), bdim
        return default(axis_data, batched_args, batch_dims)
    return rule


def _select_in_place_rule(default: _Rule) -> _Rule:
    """JAX's batching rule for ``select_n``, except that when the batched operands share one
    batch axis and the others (a mask of the frame, a zero fill) have the same per-call shape,
    those are broadcast along that axis instead of every operand moved to the front: no
    transposes around a column slab's select."""
    def rule(axis_data: Any, batched_args: Any, batch_dims: Any) -> Any:
        dims = {d for d in batch_dims if d is not None}
        if len(dims) == 1 and None in batch_dims and axis_data.explicit_mesh_axis is None:
            (bdim,) = dims
            size = next(x.shape[bdim] for x, d in zip(batched_args, batch_dims, strict=True)
                        if d is not None)
            per_call = {tuple(np.shape(x)[:d]) + tuple(np.shape(x)[d + 1:]) if d is not None
                        else tuple(np.shape(x)) for x, d in zip(batched_args, batch_dims,
                                                               strict=True)}
            if len(per_call) == 1 and per_call != {()}:
                (shape,) = per_call
                full = (*shape[:bdim], size, *shape[bdim:])
                kept = tuple(k for k in range(len(full)) if k != bdim)
                args = [x if d is not None else jax.lax.broadcast_in_dim(x, full, kept)
                        for x, d in zip(batched_args, batch_dims, strict=True)]
                return jax.lax.select_n(*args), bdim
        return default(axis_data, batched_args, batch_dims)
    return rule


def unbatched(x: Any) -> Any | None:
    """``x``, a value made inside a function ``jax.vmap`` is tracing, as the enclosing trace's
    value when it does not vary along the batch (it was made from unbatched values only), else
    None."""
    from jax._src.interpreters import batching

    if not isinstance(x, batching.BatchTracer):
        return x
    return x.val if x.batch_dim is None else None  # None: JAX's NotMapped


_IN_PLACE = _ReplacedRules()
"""The batching rules ``batch_rules_in_place`` replaces."""


@contextlib.contextmanager
def batch_rules_in_place() -> Iterator[None]:
    """While open, ``jax.vmap`` batches, on every thread, a ``dynamic_slice`` or
    ``dynamic_update_slice`` of a batched operand at unbatched starts as the same op over the
    whole batch axis (``_window_slice_rule``, ``_window_update_rule``) instead of JAX's gather
    or scatter, and a ``select_n`` of operands batched on one axis with unbatched ones of the
    same shape on that axis (``_select_in_place_rule``) instead of moving them all to the
    front: a batched loop's slabs read and written at an enclosing loop's index (trmm's
    ``B[i, j]`` over j, inside the loop over i) keep plain windows, and masked column slabs no
    transposes; fewer ops to lower and compile. A JAX without the table keeps its own rules."""
    try:
        from jax._src.interpreters import batching
        from jax._src.lax import lax as lax_internal
        from jax._src.lax import slicing
        table = batching.fancy_primitive_batchers
        wrap: dict[Any, Callable[[_Rule], _Rule]] = {
            slicing.dynamic_slice_p: _window_slice_rule,
            slicing.dynamic_update_slice_p: _window_update_rule,
            lax_internal.select_n_p: _select_in_place_rule}
    except (ImportError, AttributeError):  # pragma: no cover - another JAX
        yield
        return
    with _IN_PLACE.held(table, wrap):
        yield


def without_dead_code(closed: Any) -> Any:
    """The closed jaxpr ``closed`` with the equations none of its results need removed (inside
    scans, conditionals and calls too, by JAX's own dead-code elimination), every input kept:
    for a trace that left a loop it traced unused (see ``trace.control_flow.carry``).

    A loop or a conditional that is needed keeps every value it carries or gives, used or not:
    its location names each of them in order (``trace.control_flow.names``), which the dataflow
    graph reads back; JAX's rules would drop the unused ones (a loop's index)."""
    from jax._src.interpreters import partial_eval as pe

    n_consts = len(closed.jaxpr.constvars)
    as_args = pe.convert_constvars_jaxpr(closed.jaxpr)
    with _carries_kept():
        kept, _ = pe.dce_jaxpr(as_args, [True] * len(as_args.outvars), instantiate=True)
    return jax.extend.core.ClosedJaxpr(pe.convert_invars_to_constvars(kept, n_consts),
                                       closed.consts)


@contextlib.contextmanager
def _carries_kept() -> Iterator[None]:
    """While open, JAX's dead-code rules for scans and conditionals keep every carried value of
    a scan and every result of a conditional that is needed at all (see ``without_dead_code``),
    on every thread: as correct as JAX's, only keeping more."""
    try:
        from jax._src.interpreters import partial_eval as pe
        from jax._src.lax.control_flow import conditionals, loops
        wrap = {loops.scan_p: lambda rule: _keeping(rule, "num_carry"),
                conditionals.cond_p: lambda rule: _keeping(rule, None)}
    except (ImportError, AttributeError):  # pragma: no cover - another JAX
        yield
        return
    with _KEPT_CARRIES.held(pe.dce_rules, wrap):
        yield


def _keeping(rule: _Rule, count: str | None) -> _Rule:
    """``rule`` (a dead-code rule) with the first ``eqn.params[count]`` outputs (all of them
    when ``count`` is None) counted as used whenever any output is."""
    def kept(used_outputs: list[bool], eqn: Any) -> Any:
        if any(used_outputs):
            n = len(used_outputs) if count is None else int(eqn.params[count])
            used_outputs = [True] * n + list(used_outputs[n:])
        return rule(used_outputs, eqn)
    return kept
