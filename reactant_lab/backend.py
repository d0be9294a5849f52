"""The only module that talks to jaxlib's MLIR / XLA bindings and to enzyme-ad.

Everything above it sees module text, plain tuples and the small classes it offers. Its parts
live in private modules that only backend imports: _backend_text (module text: checks, size,
messages), _backend_ir (edits to MLIR modules), _backend_jax (lowering, compiling, Executable),
_backend_run (guarded calls: Ctrl-C and time limits), _backend_buffers (result buffers kept
between calls), _compile_isolation (the compile worker),
_backend_enzyme (Enzyme ops in a JAX trace: enzyme.autodiff / enzyme.fwddiff as primitives),
_backend_kernels (kernels custom calls carry: a Pallas TPU kernel's Mosaic module as MLIR),
_backend_devices (an accelerator another process holds; arguments a platform's copy to the
device gets wrong), _backend_xla (XLA's own HLO passes, dumped per compile and read back),
_pass_worker and _worker_client (the worker process and its driver).

Native crashes never end the caller's process. Passes run in a worker process. XLA compiles a
module in this process when it is small, and in a compile worker when a crash is plausible
(REACTANT_LAB_COMPILE_CHECK=auto: 1,000 ops or a chain of 150 dependent ops; XLA:CPU's fusion
emitter overflowed its stack at a fused chain of ~750) or asked for (=always); the executable is
then serialized there and loaded here behind JAX's C++ dispatch. That was chosen over a probe
compile in the worker followed by a compile here: loading costs milliseconds where a probe
doubles the compile (a 60 s compile would take 120 s). A crash is retried once with
xla_cpu_use_fusion_emitters=false (per compile, through the compile options' overrides), whose
executable is used with a CompileFallbackWarning; when that crashes too, CompileCrashedError
names the stage and the signal and leaves a reproducer. A probe is the fallback when an
executable cannot be loaded here or this JAX has no compile function to wrap.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import jax
from jax.interpreters import mlir as jax_mlir
from jaxlib.mlir import ir, passmanager

from reactant_lab import _backend_ir, _pass_worker, _worker_client
from reactant_lab._backend_devices import device_errors, held_device_error, transfer_ready
from reactant_lab._backend_enzyme import (
    FlatFunction,
    autodiff,
    batch,
    batched_results,
    fwddiff,
    is_tracer,
    vmap,
)
from reactant_lab._backend_ir import Aval
from reactant_lab._backend_jax import (
    Executable,
    Prelowering,
    Structure,
    abstract_value,
    batch_axis_kept_by_unit_reshapes,
    batch_rules_in_place,
    compile_module,
    lower,
    register_array_like,
    unbatched,
    without_dead_code,
    x64_scope,
    x64_switch,
)
from reactant_lab._backend_kernels import mosaic_kernel_text
from reactant_lab._backend_run import LEFT as LEFT_RUNNING
from reactant_lab._backend_run import refuse_if_busy
from reactant_lab._backend_text import (
    MAX_NESTING,
    compile_message,
    hex_bool_constants,
    main_reads_every_arg,
    module_size,
    module_text,
    parse_error_message,
    restore_main,
    unparsable_message,
)
from reactant_lab._backend_text import deepest_nesting as _deepest_nesting  # noqa: F401 - tests reach it here
from reactant_lab._backend_xla import DIR_PREFIX as XLA_DUMP_PREFIX
from reactant_lab._backend_xla import DumpedPass, XlaDump
from reactant_lab._compile_isolation import (
    CHECK_CHAIN,
    CHECK_OPS,
    COMPILE_CHECK_VAR,
    FUSION_EMITTERS,
    SMALL_LOOP_CORE_BYTES,
    SMALL_LOOP_MAX,
    SMALL_LOOP_MIN,
    SMALL_LOOP_OPTION,
    SMALL_LOOP_VAR,
    ReproducerWriter,
    compile_check_mode,
    default_small_loop_bytes,
    forget_executables,
    fresh_compiles,
    isolation_reason,
    last_compile_reused,
    reuse_allowed,
    small_loop_bytes,
)
from reactant_lab._compile_isolation import COMPILER as _COMPILER  # noqa: F401 - tests and benchmarks stop it
from reactant_lab.errors import (
    CompileError,
    ModuleTextError,
    PassWorkerError,
    PipelineError,
    UnknownPassError,
)

__all__ = [
    "CHECK_CHAIN",
    "CHECK_OPS",
    "COMPILE_CHECK_VAR",
    "DEVICE_VAR",
    "FUSION_EMITTERS",
    "LEFT_RUNNING",
    "MAX_NESTING",
    "SMALL_LOOP_CORE_BYTES",
    "SMALL_LOOP_MAX",
    "SMALL_LOOP_MIN",
    "SMALL_LOOP_OPTION",
    "SMALL_LOOP_VAR",
    "XLA_DUMP_PREFIX",
    "Aval",
    "DumpedPass",
    "Executable",
    "FlatFunction",
    "PassCrash",
    "PassRunFailure",
    "PassTimeout",
    "Prelowering",
    "ReproducerWriter",
    "Structure",
    "XlaDump",
    "abstract_value",
    "autodiff",
    "batch",
    "batch_axis_kept_by_unit_reshapes",
    "batch_rules_in_place",
    "batched_results",
    "check_parses",
    "check_pipeline",
    "compile_check_mode",
    "compile_module",
    "default_small_loop_bytes",
    "device_errors",
    "enzyme_available",
    "enzyme_unavailable_reason",
    "forget_executables",
    "fresh_compiles",
    "fwddiff",
    "held_device_error",
    "inprocess_passes",
    "is_tracer",
    "isolation_reason",
    "last_compile_reused",
    "lower",
    "module_size",
    "module_text",
    "mosaic_kernel_text",
    "pattern_error",
    "platform",
    "refuse_if_busy",
    "register_array_like",
    "resolve_device",
    "run_pipeline",
    "runnable_passes",
    "small_loop_bytes",
    "transfer_ready",
    "transform_patterns",
    "unbatched",
    "upstream_pass_available",
    "versions",
    "vmap",
    "without_dead_code",
    "worker_pid",
    "x64_scope",
    "x64_switch",
]

try:  # enzyme-ad ships for Python 3.11 only; everything but the Enzyme passes works without it.
    if os.environ.get("REACTANT_LAB_NO_ENZYME"):
        raise ImportError("disabled by REACTANT_LAB_NO_ENZYME")
    from enzyme_ad.jax import enzyme_call as _enzyme_call
    _ENZYME_REASON: str | None = None
except ImportError as _exc:  # pragma: no cover - depends on the installation
    _enzyme_call = None
    _ENZYME_REASON = (f"enzyme-ad is not importable ({_exc}); it ships for Python 3.11 with "
                      "jax>=0.8: pip install 'enzyme-ad==0.0.16'")


def _hide_own_frames() -> None:
    """Keep reactant_lab's frames out of the source locations JAX records, so op locations point
    at the user's code only."""
    try:
        from jax._src import source_info_util
    except ImportError:  # pragma: no cover - private module moved in another JAX version
        return
    if hasattr(source_info_util, "register_exclusion"):
        source_info_util.register_exclusion(os.path.dirname(os.path.abspath(__file__)) + os.sep)


_hide_own_frames()


def enzyme_available() -> bool:
    """True when the Enzyme-JAX passes can run."""
    return _enzyme_call is not None


def enzyme_unavailable_reason() -> str | None:
    """Why the Enzyme-JAX passes cannot run, or None when they can."""
    return _ENZYME_REASON


def versions() -> dict[str, str]:
    """Versions of the compiler stack in use."""
    from importlib import metadata

    out = {"jax": jax.__version__}
    for dist in ("jaxlib", "enzyme-ad"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


# ---------------------------------------------------------------- pass pipelines
#
# Passes run in a worker process (reactant_lab/_pass_worker.py) so that a crash in C++ ends the
# worker, not the user's kernel: it becomes a PassCrash here. REACTANT_LAB_INPROCESS_PASSES=1 runs
# them in this process instead (to debug a pass with gdb, or to save the ~0.5 ms a stage that the
# worker costs); a crash then ends the process, but faulthandler prints its Python traceback and
# MLIR's last output stays in a log file named on stderr.

_WORKER = _worker_client.PassWorker()


class _PipelineResults:
    """The texts the latest pipelines gave, by (mode, pipeline, module text), up to ``budget``
    bytes of keys and results together, the least recently used dropped first. Passes are
    deterministic, so a cell run again, a stage view opened again or a bisection's repeated
    prefix takes the text from here instead of the worker. Only runs that succeeded are kept: a
    failure or a crash runs again (and is reported again)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._texts: collections.OrderedDict[tuple[str, str, str], str] = (
            collections.OrderedDict())
        self._size = 0
        self._lock = threading.Lock()  # pipelines run from any thread (the worker has its own)

    def get(self, key: tuple[str, str, str]) -> str | None:
        with self._lock:
            out = self._texts.get(key)
            if out is not None:
                self._texts.move_to_end(key)
            return out

    @staticmethod
    def _bytes(key: tuple[str, str, str], out: str) -> int:
        return sys.getsizeof(key[1]) + sys.getsizeof(key[2]) + sys.getsizeof(out)

    def put(self, key: tuple[str, str, str], out: str) -> None:
        size = self._bytes(key, out)
        if size > self.budget // 4:
            return
        with self._lock:
            if key in self._texts:
                return
            self._texts[key] = out
            self._size += size
            while self._size > self.budget:
                self._size -= self._bytes(*self._texts.popitem(last=False))

    def clear(self) -> None:
        with self._lock:
            self._texts.clear()
            self._size = 0


_PIPELINE_RESULTS = _PipelineResults(64 << 20)


def transform_patterns(*, no_nan: bool) -> str:
    """The enzyme-hlo pattern list of the installed enzyme-ad (its own default, not Reactant's)."""
    if _enzyme_call is None:
        return ""
    from enzyme_ad.jax import optimization_passes

    found = re.search(r"enzyme-hlo-generate-td\{patterns=([^}]*)\}",
                      optimization_passes(no_nan=no_nan, inline=False))
    if found is None:  # pragma: no cover - would mean enzyme-ad changed its pipeline format
        raise PipelineError("enzyme-ad's optimization_passes() has no enzyme-hlo-generate-td step")
    return found.group(1)


class PassRunFailure(Exception):
    """A pipeline parsed but a pass failed; ``diagnostics`` is what MLIR printed."""

    def __init__(self, message: str, diagnostics: str):
        super().__init__(message)
        self.diagnostics = diagnostics


class PassCrash(PassRunFailure):
    """The pass worker died while running the pipeline; ``signal`` says how ('SIGSEGV', ...)."""

    def __init__(self, message: str, diagnostics: str, signal: str):
        super().__init__(message, diagnostics)
        self.signal = signal


class PassTimeout(PassRunFailure):
    """The pipeline ran past the pass time limit; the worker running it was stopped."""

    def __init__(self, message: str, diagnostics: str, seconds: float, limit: float):
        super().__init__(message, diagnostics)
        self.seconds = seconds
        self.limit = limit


PASS_TIME_LIMIT_VAR = "REACTANT_LAB_PASS_TIMEOUT"
_DEFAULT_PASS_TIME_LIMIT = 600.0


def pass_time_limit() -> float | None:
    """Seconds one pass pipeline may run in the worker before it is stopped: 600 by default,
    ``REACTANT_LAB_PASS_TIMEOUT`` when set (``0`` or ``none``: no limit). Passes run in this
    process (REACTANT_LAB_INPROCESS_PASSES) have no limit."""
    text = os.environ.get(PASS_TIME_LIMIT_VAR, "").strip().lower()
    if not text:
        return _DEFAULT_PASS_TIME_LIMIT
    if text in ("0", "none", "off"):
        return None
    try:
        limit = float(text)
    except ValueError:
        raise PipelineError(f"{PASS_TIME_LIMIT_VAR}={text!r} is not a number of seconds; set it "
                            "to e.g. 600, or to 0 for no limit") from None
    if not math.isfinite(limit) or limit < 0:
        raise PipelineError(f"{PASS_TIME_LIMIT_VAR}={text!r} must be a positive, finite number "
                            "of seconds (or 0 for no limit)")
    return limit or None


def inprocess_passes() -> bool:
    """Whether passes run in this process: ``REACTANT_LAB_INPROCESS_PASSES=1``, or Windows (the
    worker speaks over POSIX pipes)."""
    return os.name == "nt" or os.environ.get("REACTANT_LAB_INPROCESS_PASSES", "") not in ("", "0")


def worker_pid() -> int | None:
    """The pass worker's process id, or None when none is running."""
    return _WORKER.pid


def run_pipeline(text: str, pipeline: str, *, use_enzyme: bool = True,
                 on_wait: Callable[[float], None] | None = None) -> str:
    """Run ``pipeline`` (comma-separated passes) on module text; return the new text.

    ``on_wait(seconds)`` is called about twice a second while the worker runs. Raises
    ModuleTextError (the text is not a str, nests too deeply or does not parse),
    UnknownPassError (the pipeline does not parse), PassRunFailure (a pass failed), PassCrash,
    or PassTimeout when it runs past ``pass_time_limit()``.
    """
    text = module_text(text)
    mode = "enzyme" if use_enzyme and _enzyme_call is not None else "upstream"
    in_process = inprocess_passes()
    limit = None if in_process else pass_time_limit()  # a bad setting is refused every time
    key = (mode, pipeline, text)
    reuse = isinstance(pipeline, str) and reuse_allowed()
    kept = _PIPELINE_RESULTS.get(key) if reuse else None
    if kept is not None:
        return kept
    if in_process:
        out = _pass_worker.run_in_process(mode, text, pipeline)
    else:
        try:
            out = _WORKER.run(mode, text, pipeline, on_wait=on_wait, timeout=limit)
        except _worker_client.WorkerCrashed as exc:
            raise PassCrash(str(exc), exc.output.strip(), exc.signal) from None
        except _worker_client.WorkerTimedOut as exc:
            raise PassTimeout(str(exc), exc.output.strip(), exc.seconds, exc.limit) from None
    if out.status != "ok":
        raise _failure(out, mode, text, pipeline)
    # enzyme-ad renames @main to a private @main_<n>; make it the public entry point again or
    # the next stage's inliner / symbol-dce deletes it. Its MLIR prints boolean constants as
    # lists: back to hex, as jaxlib writes them.
    restored = restore_main(out.text, out.entry)
    result = hex_bool_constants(restored) if mode == "enzyme" else restored
    _PIPELINE_RESULTS.put(key, result)
    return result


def _failure(out: _pass_worker.Outcome, mode: str, text: str, pipeline: str) -> Exception:
    diagnostics, message = out.diagnostics.strip(), out.text.strip()
    if out.status == "bad-pipeline":
        return UnknownPassError(parse_error_message(pipeline, f"{message}\n{diagnostics}"))
    if out.status == "bad-module":
        return ModuleTextError(unparsable_message(text, f"{diagnostics}\n{message}".strip()))
    if out.status == "error":
        return PassWorkerError(
            f"the pass worker could not run the pipeline:\n{message[-2000:]}\nCheck the "
            "installation (enzyme-ad, jaxlib), or set REACTANT_LAB_INPROCESS_PASSES=1 to run "
            "passes in this process.")
    if mode == "upstream":  # jaxlib's message carries the diagnostics
        return PassRunFailure(message, f"{diagnostics}\n{message}".strip())
    return PassRunFailure(message, diagnostics or message)


_T = TypeVar("_T")


def _edit_module(text: str, edit: Callable[[ir.Module], _T],
                 changed: Callable[[_T], bool] = bool) -> tuple[str, _T]:
    """Parse module ``text``, apply ``edit`` to it; (the module printed again, what it returned).
    When ``changed(what it returned)`` is false the edit left the module as it was, and
    ``text`` itself is given back unprinted (printing a module holding a large folded constant
    again costs tens of milliseconds)."""
    text = module_text(text)
    with jax_mlir.make_ir_context() as ctx:
        ctx.allow_unregistered_dialects = True
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as exc:
            raise CompileError(compile_message(text, exc)) from None
        result = edit(module)
        return (_backend_ir.asm(module) if changed(result) else text), result


def drop_main_results(text: str, drop: Sequence[int]) -> str:
    """``text`` with results ``drop`` of ``@main`` removed (their return operands, types and
    attributes), as Reactant removes results the passes reduced to an unchanged argument."""
    return _edit_module(text, lambda m: _backend_ir.drop_results(m, drop),
                        changed=lambda _: bool(drop))[0]


def drop_unused_main_args(text: str) -> tuple[str, list[int]]:
    """``text`` with the arguments ``@main`` never reads removed, and their indices (text
    unchanged and [] when there are none)."""
    text = module_text(text)
    if main_reads_every_arg(text):  # the common case, without parsing the module
        return text, []
    edited, unused = _edit_module(text, _backend_ir.drop_unused_args)
    return (edited, unused) if unused else (text, [])


def check_parses(text: str) -> None:
    """Raise ModuleTextError (MLIR's first error, with line and column) unless ``text`` parses."""
    run_pipeline(text, "")


_PROBE_MODULE = "module {\n  func.func public @main() {\n    return\n  }\n}\n"
_TRIO = ("enzyme-hlo-generate-td{{patterns={}}},transform-interpreter,"
         "enzyme-hlo-remove-transform")


def pattern_error(patterns: Sequence[str]) -> str | None:
    """Why the installed enzyme-ad rejects this enzyme-hlo pattern list, or None if it parses."""
    try:
        run_pipeline(_PROBE_MODULE, _TRIO.format(";".join(patterns)))
    except PassRunFailure as exc:
        return f"{exc}\n{exc.diagnostics}"
    except UnknownPassError as exc:
        return str(exc)
    return None


def check_pipeline(passes: Sequence[str]) -> None:
    """Raise UnknownPassError if a pass or an option of ``passes`` does not exist here."""
    if _enzyme_call is not None:
        # Parsing is what is checked: failing on an empty module says nothing about the real one.
        with contextlib.suppress(PassRunFailure):
            run_pipeline(_PROBE_MODULE, ",".join(passes))
        return
    for pass_text in passes:
        name = re.split(r"[{(]", pass_text, maxsplit=1)[0]
        if not upstream_pass_available(pass_text) and upstream_pass_available(name):
            raise UnknownPassError(parse_error_message(
                pass_text, f"pass {name} exists but does not take the options in {pass_text}"))


def runnable_passes(passes: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split passes into those that can run here and those that need enzyme-ad."""
    if _enzyme_call is not None:
        return list(passes), []
    ok = [p for p in passes if upstream_pass_available(p)]
    missing = dict.fromkeys(re.split(r"[{(]", p, maxsplit=1)[0] for p in passes if p not in ok)
    return ok, list(missing)


@functools.lru_cache(maxsize=256)
def upstream_pass_available(pass_text: str) -> bool:
    """Whether jaxlib's own PassManager (no enzyme-ad) knows this pass (parsing only: safe here)."""
    with jax_mlir.make_ir_context():
        try:
            passmanager.PassManager.parse(f"builtin.module({pass_text})")
        except (ValueError, ir.MLIRError):
            return False
    return True


# ---------------------------------------------------------------- devices


DEVICE_VAR = "REACTANT_LAB_DEVICE"
"""Environment variable naming the platform whose first device is the default ('cpu', 'tpu',
'gpu'): where ``device=`` is left unset, reactant_lab compiles and runs there."""


def resolve_device(device: Any | None) -> Any:
    """A jax Device from None (the default device: REACTANT_LAB_DEVICE's platform when set, else
    JAX's default device), 'cpu', 'gpu' / 'cuda', 'tpu', or a Device. An accelerator another
    process holds is a DeviceBusyError (JAX opens its devices here, often)."""
    with device_errors():
        return _resolve_device(device)


def _resolve_device(device: Any | None) -> Any:
    if device is None:
        chosen = os.environ.get(DEVICE_VAR, "").strip()
        if chosen:
            return _device_of(chosen, f"{DEVICE_VAR}={chosen!r}")
        # jax.config.update("jax_default_device", ...) sets it; Config declares no such attribute
        default = getattr(jax.config, "jax_default_device", None)
        if isinstance(default, jax.Device):
            return default
        return _device_of(default, f"jax_default_device={default!r}") if default \
            else jax.devices()[0]
    if isinstance(device, str):
        return _device_of(device, f"device={device!r}")
    if isinstance(device, jax.Device):
        return device
    raise PipelineError(f"device must be None, 'cpu', 'gpu', 'tpu' or a jax.Device, not "
                        f"{device!r}")


def _device_of(platform: str, given: str) -> Any:
    """The first device of ``platform`` ('cuda' and 'rocm' are JAX's 'gpu'); ``given`` says
    where the name came from, for the error."""
    kind = {"cuda": "gpu", "rocm": "gpu"}.get(platform.lower(), platform.lower())
    try:
        return jax.devices(kind)[0]
    except RuntimeError as exc:
        if held_device_error(exc) is not None:
            raise
        have = sorted({d.platform for d in jax.devices()})
        raise PipelineError(
            f"no {platform!r} device is attached ({given}; available: {', '.join(have)}). "
            f"Use device='cpu', or leave device unset and {DEVICE_VAR} unset.") from None


@functools.cache
def memory_bytes(device: Any) -> int | None:
    """Bytes of memory ``device``'s buffers can use: its allocator's limit where JAX exposes it
    (``memory_stats()['bytes_limit']`` on GPU and TPU), the machine's physical memory for the
    CPU; None when neither is known."""
    try:
        stats = device.memory_stats()
    except Exception:  # a backend without memory statistics
        stats = None
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"])
    if device.platform != "cpu":
        return None
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # not a POSIX system
        return None


def out_of_memory(exc: BaseException) -> bool:
    """Whether XLA's error ``exc`` says it ran out of memory (RESOURCE_EXHAUSTED)."""
    text = str(exc)
    return "RESOURCE_EXHAUSTED" in text or "Out of memory allocating" in text


def platform(device: Any) -> str:
    """'cpu' or 'cuda' / 'rocm' / 'tpu' for pass options that depend on the target."""
    return "cuda" if device.platform == "gpu" else device.platform
