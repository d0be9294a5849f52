"""Compile isolation for backend: compiling a module XLA might crash on in the compile worker.

XLA can crash while it compiles (XLA:CPU's fusion emitter overflows a compile thread's stack on
a long fused chain: a 376-step NumPy loop unrolled under `all`), which would end this process and
with it a notebook kernel. So a module that might crash XLA compiles in the compile worker (a
second worker process, running jaxlib's XLA client only), and the executable comes back
serialized and is loaded here, still behind JAX's C++ dispatch: JAX's call into XLA
(jax._src.compiler.backend_compile_and_load) is wrapped, per thread, for our compiles only
(``wrap_jax_compile``). Loading costs milliseconds, not a second compile. A crash becomes
CompileCrashedError with a reproducer; before that, a compile with fusion emitters off is tried
and, when it works, used (CompileFallbackWarning). When the executable cannot be loaded here, or
this JAX has no such function to wrap, the worker's compile served as a probe and the module
compiles here again.

REACTANT_LAB_COMPILE_CHECK: 'auto' (default) isolates modules of CHECK_OPS ops or more, or with a
chain of CHECK_CHAIN dependent ops or more; 'always' every module; 'never' none. Only CPU
devices: a worker would hold a GPU of its own.

Only backend and its private modules import this module.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import os
import textwrap
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
from jaxlib.mlir import ir

from reactant_lab._backend_ir import asm
from reactant_lab._backend_text import module_size
from reactant_lab._pass_worker import CompileOutcome
from reactant_lab._worker_client import PassWorker, WorkerCrashed
from reactant_lab.errors import CompileCrashedError, CompileError, CompileFallbackWarning

COMPILE_CHECK_VAR = "REACTANT_LAB_COMPILE_CHECK"
"""Environment variable choosing where modules compile: 'auto', 'always' or 'never'."""
CHECK_CHAIN = 150
"""'auto' isolates modules with a chain of this many dependent ops. The fusion emitter crashed
at a fused chain of ~750 (cov, M=376 under `all`: a 756-op chain; 750 chained
dynamic_update_slice ops feeding a concatenate): a 5x margin."""
CHECK_OPS = 1000
"""...or of this many ops (the cov module that crashed had 4,883): a 5x margin for crashes that
grow with size rather than depth."""
FUSION_EMITTERS = "xla_cpu_use_fusion_emitters"
"""The XLA:CPU option turned off to compile a module whose compile crashed with it on."""
SMALL_LOOP_VAR = "REACTANT_LAB_SMALL_LOOP_BYTES"
"""Environment variable: XLA:CPU's small-loop threshold for our compiles (``cpu_options``)."""
SMALL_LOOP_OPTION = "xla_cpu_small_while_loop_byte_threshold"
"""XLA:CPU's backend option: a while loop whose one iteration accesses fewer bytes than this
(and holds no scatter, sort, FFT or custom call) is compiled into one kernel; above it, each
iteration dispatches the body's kernels one by one (a few microseconds each)."""
SMALL_LOOP_MIN, SMALL_LOOP_MAX = 1 << 18, 1 << 22
"""The bounds of our default for SMALL_LOOP_OPTION: 256 KiB and 4 MiB. XLA's own, 1 KiB, leaves
the loops of NumPy mode's row-by-row kernels dispatching op by op: 80x80 cholesky (3,160
iterations of a small body) took 1.4 ms, 0.3-0.4 ms as one kernel; lu 2.7 -> 0.8 ms, seidel_2d
1.1 -> 0.3-0.4 ms. 64 KiB leaves durbin's loop (n=1000) out (1.5x slower than at 256 KiB)."""
SMALL_LOOP_CORE_BYTES = 1 << 23
"""Our default threshold is this (8 MiB) over the cores this process may run on, within
SMALL_LOOP_MIN and SMALL_LOOP_MAX: 4 MiB on 2 cores, 1 MiB on 8, 256 KiB from 32. A body run as
one kernel runs on one core, where XLA would split each of its kernels over the cores; what one
kernel saves is the dispatch of each kernel in every iteration (a few microseconds each, and
each across the thread pool). The fewer the cores, the larger the body for which the dispatch
costs more than the parallel split gains. Measured on 2 cores (``benchmarks/numpy_speed.py``
with ``REACTANT_LAB_SMALL_LOOP_BYTES`` at 256 KiB and at 4 MiB, twice each): mandelbrot's 50
iterations over a 150x200 complex grid (~1.9 MB an iteration) 6.5-7.2 -> 4.8-5.0 ms (0.83x ->
1.25x NumPy), floyd_warshall 3.6-5.3 -> 3.0 ms, cholesky, trisolv, durbin, pair_matches and
recursive_filter level, the 72 kernels' geometric mean level (3.99x, 3.96x)."""


def default_small_loop_bytes() -> int:
    """Our default for SMALL_LOOP_OPTION on this machine (SMALL_LOOP_CORE_BYTES)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity on this OS
        cores = os.cpu_count() or 1
    return max(SMALL_LOOP_MIN, min(SMALL_LOOP_MAX, SMALL_LOOP_CORE_BYTES // max(cores, 1)))

# XLA:CPU logs how far it got (HLO passes done, code generation started) to the worker's output,
# which is read only after a crash: its last words. (jax sets TF_CPP_MIN_LOG_LEVEL=1 here.)
COMPILER = PassWorker(
    "compile worker", {"TF_CPP_MIN_LOG_LEVEL": "0", "TF_CPP_VMODULE": "cpu_compiler=1"})
"""The compile worker."""


ReproducerWriter = Callable[[str, str, str], "str | None"]
"""``(module text, pipeline, diagnostics) -> directory or None``: the pass reproducer writer."""


class Guard:
    """One compile that runs in the compile worker: what to say if it crashes."""

    def __init__(self, stage: str, reason: str, reproducer: ReproducerWriter | None):
        self.stage, self.reason, self.reproducer = stage, reason, reproducer
        self.note: str | None = None
        """How XLA was worked around, once a compile with fusion emitters off was used."""


class _Current(threading.local):
    guard: Guard | None = None
    """The Guard of the compile this thread is running, if any."""
    ours: bool = False
    """Whether the compile this thread is running is ours (``cpu_options`` applies)."""
    reused: bool = False
    """Whether this thread's last compile of ours was served by ``_EXECUTABLES``."""
    fresh: int = 0
    """How many ``fresh_compiles`` blocks this thread is in (none: executables are reused)."""
    text: str | None = None
    """The module text of this thread's last compile of ours, as XLA was given it (printing a
    module with its locations again costs as much as a small module's XLA compile)."""


EXECUTABLE_CACHE_SIZE = 32
"""How many executables of ours are kept, by what was compiled, for an identical compile to
reuse (least recently used first out)."""

EXECUTABLE_CACHE_MAX_TEXT = 1 << 22
"""Modules whose text is longer (large constants in them) are not kept: their executables hold
the constants too."""

_EXECUTABLES: collections.OrderedDict[bytes, Any] = collections.OrderedDict()
_EXECUTABLES_LOCK = threading.Lock()


def _executable_key(text: str, options: Any, devices: Any, client: Any) -> bytes:
    """What makes two compiles the same: the module's text, every compile option, the devices,
    the client and XLA_FLAGS (which a compile worker reads)."""
    digest = hashlib.sha256(text.encode())
    for part in (options.SerializeAsString(), repr([d.id for d in devices]).encode(),
                 repr(id(client)).encode(), os.environ.get("XLA_FLAGS", "").encode()):
        digest.update(b"\0" + part)
    return digest.digest()


@contextlib.contextmanager
def fresh_compiles() -> Iterator[None]:
    """Compiles in this block run XLA, and pass pipelines run their passes, even when an
    identical one ran before (timing them)."""
    _CURRENT.fresh += 1
    try:
        yield
    finally:
        _CURRENT.fresh -= 1


def reuse_allowed() -> bool:
    """Whether this thread may take an identical earlier compile's or pipeline's result (not in
    a ``fresh_compiles`` block)."""
    return not _CURRENT.fresh


def compiled_text() -> str | None:
    """The module text the calling thread's last ``compile_lowered`` gave XLA (once), or None
    when JAX's compile was not routed through ``wrap_jax_compile``."""
    text, _CURRENT.text = _CURRENT.text, None
    return text


def not_reused() -> None:
    """Say that this thread's compile now starting has reused nothing (yet)."""
    _CURRENT.reused = False


def last_compile_reused() -> bool:
    """Whether this thread's last compile of ours reused an identical earlier compile's
    executable instead of running XLA."""
    return _CURRENT.reused


def forget_executables() -> None:
    """Drop the kept executables (the next compile of each runs XLA again)."""
    with _EXECUTABLES_LOCK:
        _EXECUTABLES.clear()


def small_loop_bytes() -> int:
    """SMALL_LOOP_VAR's value, else ``default_small_loop_bytes()``."""
    raw = os.environ.get(SMALL_LOOP_VAR, "").strip()
    if not raw:
        return default_small_loop_bytes()
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise CompileError(
            f"{SMALL_LOOP_VAR}={raw!r} is not a number of bytes: set it to a whole number "
            f"(1024 is XLA's own default; unset, reactant_lab uses {default_small_loop_bytes()} "
            f"on this machine)")
    return value


def _proto_field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field: its key, its length, its bytes."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while n > 0x7F:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        return bytes(out) + bytes([n])
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def cpu_options(options: Any, platform: str) -> Any:
    """``options`` for our XLA:CPU compiles: SMALL_LOOP_OPTION at ``small_loop_bytes()``,
    unless the user's XLA_FLAGS set it. Other platforms' options are returned as they are.

    The option sits in DebugOptions' ``xla_backend_extra_options`` map, which neither the
    Python CompileOptions nor JAX's ``compiler_options`` (flag-style overrides) can set: the
    entry is appended to the serialized proto as CompileOptionsProto.executable_build_options
    (3) > ExecutableBuildOptionsProto.debug_options (3) > DebugOptions.xla_backend_extra_options
    (500), which protobuf merges into the message.
    """
    if platform != "cpu":
        return options
    data = options.SerializeAsString()
    if SMALL_LOOP_OPTION.encode() in data:
        return options
    entry = _proto_field(1, SMALL_LOOP_OPTION.encode()) + _proto_field(
        2, str(small_loop_bytes()).encode())
    return type(options).ParseFromString(
        data + _proto_field(3, _proto_field(3, _proto_field(500, entry))))


_CURRENT = _Current()


def compile_check_mode() -> str:
    """``REACTANT_LAB_COMPILE_CHECK``: 'auto' (default), 'always' or 'never'."""
    mode = os.environ.get(COMPILE_CHECK_VAR, "").strip().lower() or "auto"
    if mode not in ("auto", "always", "never"):
        raise CompileError(
            f"{COMPILE_CHECK_VAR}={os.environ[COMPILE_CHECK_VAR]!r} is not 'auto', 'always' or "
            "'never'; unset it for 'auto' (modules XLA might crash on compile in a worker "
            "process).")
    return mode


def isolation_reason(text: str) -> str | None:
    """Why a module would compile in the compile worker under the current mode (its size), or
    None when it compiles in this process."""
    mode = compile_check_mode()
    if mode == "never":
        return None
    ops, chain = module_size(text)
    if ops >= CHECK_OPS or mode == "always":
        return f"{ops:,} ops"
    return f"{ops:,} ops, a chain of {chain:,}" if chain >= CHECK_CHAIN else None


def guard_for(text: str, device: Any, stage: str,
              reproducer: ReproducerWriter | None) -> Guard | None:
    """The Guard for compiling ``text`` on ``device``, or None when it compiles here."""
    if device.platform != "cpu" or os.name == "nt":
        return None
    reason = isolation_reason(text)
    return Guard(stage, reason, reproducer) if reason is not None else None


EXCESS_PRECISION = "xla_allow_excess_precision"
"""XLA's option to keep a float16 / bfloat16 intermediate value in float32 instead of rounding
it (on by default): ``overrides(exact_floats=True)`` turns it off for a NumPy kernel."""


def overrides(exact_floats: bool) -> dict[str, Any]:
    """XLA options for one compile: ``exact_floats`` (NumPy mode, where every operation's result
    is rounded to its dtype) turns EXCESS_PRECISION off, unless the user's XLA_FLAGS set it.
    Measured on a TPU v5e: bfloat16 and float16 chains ((a + b) + c, a * b + c) differ from
    NumPy in 20-40% of the elements with it on, in none with it off; on XLA:CPU it keeps the
    bfloat16 rounding of a product cast to float32 (``(a * b).astype(np.float32)``)."""
    if not exact_floats or EXCESS_PRECISION in os.environ.get("XLA_FLAGS", ""):
        return {}
    return {EXCESS_PRECISION: False}


def compile_lowered(lowered: jax.stages.Lowered, module: ir.Module, device: Any,
                    guard: Guard | None, options: dict[str, Any] | None = None
                    ) -> jax.stages.Compiled:
    """``lowered.compile()`` with ``cpu_options`` and the XLA ``options`` (``overrides``), in
    the compile worker when ``guard`` says so; never from or into JAX's persistent cache
    (``wrap_jax_compile``)."""
    _CURRENT.text = None
    if wrap_jax_compile():
        _CURRENT.guard, _CURRENT.ours = guard, True
        try:
            return lowered.compile(compiler_options=options or None)
        finally:
            _CURRENT.guard, _CURRENT.ours = None, False
    if guard is None:  # pragma: no cover - depends on the JAX version
        return lowered.compile(compiler_options=options or None)
    from jax.extend import backend as jex_backend  # no function to wrap: probe, then compile
    from jaxlib import xla_client

    probe = jex_backend.get_compile_options(num_replicas=1, num_partitions=1)
    probe.env_option_overrides = list((options or {}).items())
    _, used = isolated(guard, asm(module), xla_client.DeviceList((device,)), probe,
                       device.client)
    return lowered.compile(compiler_options=dict(used.env_option_overrides) or None)


@functools.cache
def wrap_jax_compile() -> bool:
    """Route JAX's XLA compile through ``cpu_options`` and, while a Guard is set on the calling
    thread, ``isolated``, for our compiles only; False when this JAX has no
    backend_compile_and_load to wrap.

    Our compiles also keep out of JAX's persistent compilation cache (a user's
    ``jax_compilation_cache_dir``): an XLA:CPU executable JAX loads from it serializes without
    its compiled functions, so the twin a guarded call runs (``_backend_run.twin``) failed with
    "Function ... not found". The cache still serves the user's own jax.jit.

    The one use of ``jax._src.compiler.backend_compile_and_load`` and ``_get_cache_key``
    (docs/architecture.md).
    """
    try:
        from jax._src import compiler as jax_compiler
    except ImportError:  # pragma: no cover - private module moved in another JAX version
        return False
    original = getattr(jax_compiler, "backend_compile_and_load", None)
    if original is None:  # pragma: no cover - depends on the JAX version
        return False

    @functools.wraps(original)
    def compile_and_load(client: Any, module: ir.Module, devices: Any, options: Any,
                         host_callbacks: Sequence[Any]) -> Any:
        guard, ours = _CURRENT.guard, _CURRENT.ours
        _CURRENT.guard, _CURRENT.ours = None, False  # one compile per call of compile_lowered
        if not ours:
            return original(client, module, devices, options, host_callbacks)
        options = cpu_options(options, devices[0].platform)
        text = _CURRENT.text = asm(module)
        # An identical compile of ours (the same module under another preset, the same call
        # again) reuses its executable: XLA's executables are immutable and run any number of
        # times. Callbacks live in this process, bound to one executable: never shared.
        key = (None if host_callbacks or len(text) > EXECUTABLE_CACHE_MAX_TEXT
               else _executable_key(text, options, devices, client))
        if key is not None and not _CURRENT.fresh:
            with _EXECUTABLES_LOCK:
                exe = _EXECUTABLES.get(key)
                if exe is not None:
                    _EXECUTABLES.move_to_end(key)
                    _CURRENT.reused = True
                    return exe
        exe = None
        if guard is not None and not host_callbacks:
            exe, options = isolated(guard, text, devices, options, client)
        if exe is None:
            exe = original(client, module, devices, options, host_callbacks)
        if key is not None:
            with _EXECUTABLES_LOCK:
                _EXECUTABLES[key] = exe
                while len(_EXECUTABLES) > EXECUTABLE_CACHE_SIZE:
                    _EXECUTABLES.popitem(last=False)
        return exe

    jax_compiler.backend_compile_and_load = compile_and_load
    cache_key = getattr(jax_compiler, "_get_cache_key", None)
    if cache_key is not None:
        @functools.wraps(cache_key)
        def no_cache_for_ours(*args: Any, **kwargs: Any) -> Any:
            return None if _CURRENT.ours else cache_key(*args, **kwargs)  # None: compile anew

        jax_compiler._get_cache_key = no_cache_for_ours
    return True


def isolated(guard: Guard, text: str, devices: Any, options: Any,
             client: Any) -> tuple[Any | None, Any]:
    """Compile in the worker: (executable loaded here, or None to compile here instead, e.g.
    when XLA refused the module; the options to use). Raises CompileCrashedError."""
    try:
        out = _in_worker(text, options, devices)
    except WorkerCrashed as crash:
        return _after_crash(guard, text, devices, options, client, crash)
    if out.status == "error":
        warnings.warn(f"the compile worker could not run ({out.message.strip()[-300:]}); "
                      "compiling in this process, where an XLA crash would end it",
                      CompileFallbackWarning, stacklevel=2)
    if out.status != "ok":  # XLA refused the module: compile here for XLA's own error
        return None, options
    return _load(client, out.executable, devices, options), options


def _in_worker(text: str, options: Any, devices: Any) -> CompileOutcome:
    return COMPILER.compile(text, options.SerializeAsString(), [d.id for d in devices],
                            len(devices[0].client.devices()))


def _load(client: Any, executable: bytes, devices: Any, options: Any) -> Any | None:
    try:
        return client.deserialize_executable(executable, devices, options)
    except Exception:  # it cannot move here: the worker's compile was a probe, compile again
        return None


def _after_crash(guard: Guard, text: str, devices: Any, options: Any, client: Any,
                 crash: WorkerCrashed) -> tuple[Any | None, Any]:
    """Try without fusion emitters; use that with a warning, else raise CompileCrashedError."""
    retry, retried = _without_fusion_emitters(options), None
    if retry is not None:
        try:
            out = _in_worker(text, retry, devices)
        except WorkerCrashed as again:
            retried = f"with {FUSION_EMITTERS}=false, it crashed too ({again.signal})"
            crash.output = f"{crash.output.strip()}\n{again.output.strip()}"
        else:
            if out.status == "ok":
                where = _write_compile_reproducer(guard, text, options, crash.output)
                guard.note = (
                    f"XLA's compiler crashed ({crash.signal}) on stage {guard.stage!r} "
                    f"({guard.reason}) in the compile worker, so it was compiled with "
                    f"{FUSION_EMITTERS}=false; this executable works, and its kernels may run "
                    f"at another speed. Reproducer of the crash: {where or 'none written'}")
                warnings.warn(guard.note, CompileFallbackWarning, stacklevel=2)
                return _load(client, out.executable, devices, retry), retry
            retried = f"with {FUSION_EMITTERS}=false, XLA refused it: {out.message[:300]}"
    raise _crashed(guard, text, options, crash, retried)


def _without_fusion_emitters(options: Any) -> Any | None:
    """A copy of ``options`` with fusion emitters off, or None when they are off already."""
    from jaxlib import xla_client

    if FUSION_EMITTERS in os.environ.get("XLA_FLAGS", "") or any(
            name == FUSION_EMITTERS for name, _ in options.env_option_overrides):
        return None
    retry = xla_client.CompileOptions.ParseFromString(options.SerializeAsString())
    retry.env_option_overrides = [*options.env_option_overrides, (FUSION_EMITTERS, False)]
    return retry


def _crashed(guard: Guard, text: str, options: Any, crash: WorkerCrashed,
             retried: str | None) -> CompileCrashedError:
    output = crash.output.strip()
    where = _write_compile_reproducer(guard, text, options, output)
    said = output[-2000:] or "(nothing)"
    if output.splitlines()[-1:] and "Compiling:" in output.splitlines()[-1]:
        said += "\n(it died generating code, after XLA's HLO passes)"
    message = (
        f"XLA's compiler crashed ({crash.signal}) compiling stage {guard.stage!r} "
        f"({guard.reason}) in the compile worker; this Python process is unharmed and the next "
        f"compile starts a new worker.{f' Compiled again {retried}.' if retried else ''}\n"
        f"XLA's output:\n{textwrap.indent(said, '  ')}\n"
        + (f"Reproducer: {where} (python {where}/rerun.py compiles it the same way)\n" if where
           else "No reproducer could be written.\n")
        + "Compile an earlier stage (StageTrace.compile(stage)) or another preset, or keep the "
        "module small: a Python loop unrolls into one op chain per step, lax.fori_loop does not.")
    return CompileCrashedError(message, signal=crash.signal, stage=guard.stage, output=output,
                               reproducer=where, retried=retried)


_RERUN_COMPILE = '''"""Rerun the XLA compile that crashed in reactant_lab: python rerun.py

It compiles input.mlir with the same compile options in this process, so expect the same
crash; XLA_FLAGS=--xla_cpu_use_fusion_emitters=false python rerun.py tries without the fusion
emitters.
"""

import pathlib

import jax  # noqa: F401  (registers jax's CPU custom-call targets with XLA)
from jaxlib import xla_client

here = pathlib.Path(__file__).resolve().parent
options = xla_client.CompileOptions.ParseFromString((here / "compile_options.pb").read_bytes())
client = xla_client.make_cpu_client()
devices = xla_client.DeviceList(tuple(client.devices()[:1]))
client.compile_and_load((here / "input.mlir").read_text(), devices, options)
print("XLA compiled input.mlir without crashing")
'''


def _write_compile_reproducer(guard: Guard, text: str, options: Any,
                              output: str) -> str | None:
    """A reproducer directory (the pass reproducers' writer, kept and pruned with them) whose
    rerun.py compiles the module with the same options."""
    where = guard.reproducer(text, "", output) if guard.reproducer is not None else None
    if where is None:
        return None
    try:
        os.remove(os.path.join(where, "pipeline.txt"))
        with open(os.path.join(where, "compile_options.pb"), "wb") as fh:
            fh.write(options.SerializeAsString())
        with open(os.path.join(where, "rerun.py"), "w", encoding="utf-8") as fh:
            fh.write(_RERUN_COMPILE)
    except OSError:
        return None
    return where
