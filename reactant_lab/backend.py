"""The only module that talks to jaxlib's MLIR / XLA bindings and to enzyme-ad.

Everything above it sees module text, plain tuples and the small classes defined here.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import numpy as np
from jax.interpreters import mlir as jax_mlir
from jaxlib.mlir import ir, passmanager

from reactant_lab import _pass_worker
from reactant_lab.errors import (
    CompileError,
    ExecutionError,
    ModuleTextError,
    PassWorkerError,
    PipelineError,
    UnknownPassError,
)

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


@contextlib.contextmanager
def x64_scope(enabled: bool) -> Iterator[None]:
    """Trace / run with 64-bit types on when ``enabled`` (leaves the global flag alone otherwise)."""
    if not enabled or jax.config.jax_enable_x64:
        yield
        return
    with jax.enable_x64(True):
        yield


# ---------------------------------------------------------------- pass pipelines
#
# Passes run in a worker process (reactant_lab/_pass_worker.py) so that a crash in C++ ends the
# worker, not the user's kernel: it becomes a PassCrash here. REACTANT_LAB_INPROCESS_PASSES=1 runs
# them in this process instead (to debug a pass with gdb, or to save the ~0.5 ms a stage that the
# worker costs); a crash then ends the process, but faulthandler prints its Python traceback and
# MLIR's last output stays in a log file named on stderr.

MAX_NESTING = 1000
"""Deepest bracket nesting (``{ [ ( <``) accepted in module text. MLIR's recursive-descent
parser overflows its stack at about 4,000 levels; real modules nest a few dozen."""

_WORKER = _pass_worker.PassWorker()


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
    UnknownPassError (the pipeline does not parse), PassRunFailure (a pass failed) or PassCrash.
    """
    text = module_text(text)
    mode = "enzyme" if use_enzyme and _enzyme_call is not None else "upstream"
    if inprocess_passes():
        out = _pass_worker.run_in_process(mode, text, pipeline)
    else:
        try:
            out = _WORKER.run(mode, text, pipeline, on_wait=on_wait)
        except _pass_worker.WorkerCrashed as exc:
            raise PassCrash(str(exc), exc.output.strip(), exc.signal) from None
    if out.status != "ok":
        raise _failure(out, mode, text, pipeline)
    # enzyme-ad renames @main to a private @main_<n>; make it the public entry point again or
    # the next stage's inliner / symbol-dce deletes it.
    return _restore_main(out.text, out.entry)


def _failure(out: _pass_worker.Outcome, mode: str, text: str, pipeline: str) -> Exception:
    diagnostics, message = out.diagnostics.strip(), out.text.strip()
    if out.status == "bad-pipeline":
        return UnknownPassError(_parse_error_message(pipeline, f"{message}\n{diagnostics}"))
    if out.status == "bad-module":
        return ModuleTextError(_unparsable_message(text, f"{diagnostics}\n{message}".strip()))
    if out.status == "error":
        return PassWorkerError(
            f"the pass worker could not run the pipeline:\n{message[-2000:]}\nCheck the "
            "installation (enzyme-ad, jaxlib), or set REACTANT_LAB_INPROCESS_PASSES=1 to run "
            "passes in this process.")
    if mode == "upstream":  # jaxlib's message carries the diagnostics
        return PassRunFailure(message, f"{diagnostics}\n{message}".strip())
    return PassRunFailure(message, diagnostics or message)


def _restore_main(text: str, name: str) -> str:
    if name == "main":
        return text
    text = re.sub(rf"func\.func (?:private |public )?@{re.escape(name)}\(",
                  "func.func public @main(", text, count=1)
    return re.sub(rf"@{re.escape(name)}\b", "@main", text)


def _parse_error_message(pipeline: str, detail: str) -> str:
    bad = re.search(r"'([^']+)' does not refer to a registered pass", detail)
    opt = re.search(r"no such option (\S+)", detail)
    what = (f"unknown pass '{bad.group(1)}'" if bad else
            f"unknown option '{opt.group(1)}'" if opt else "the pipeline does not parse")
    return (f"Pass pipeline error: {what}.\n  pipeline: {pipeline[:300]}\n  MLIR says: "
            f"{detail.strip()[:600]}\nCheck the pass name and its options "
            "(reactant_lab.PRESETS shows pipelines that work).")


def _unparsable_message(text: str, detail: str) -> str:
    """'the module text does not parse' with MLIR's first error, its line and a caret."""
    found = re.search(r'"[^"\n]*":(\d+):(\d+)\)?:? ?(?:error: )?([^\n]*)', detail)
    where = ""
    if found:
        line, column = int(found.group(1)), int(found.group(2))
        lines = text.splitlines()
        source = lines[line - 1] if 0 < line <= len(lines) else ""
        where = (f": line {line}, column {column}: {found.group(3).strip()}\n"
                 f"  {line:>5} | {source[:200]}\n        | {' ' * (column - 1)}^")
    return (f"the module text does not parse{where}\nMLIR says:\n  {detail[:1500]}\n"
            "Fix the text: it must be one whole MLIR module in dialects reactant_lab's passes "
            "know (stablehlo, chlo, func, arith, enzyme, ...), as printed by jax or MLIR.")


def module_text(source: object) -> str:
    """``source`` as module text that is safe to hand to MLIR: a str (UTF-8 bytes are decoded)
    nested at most MAX_NESTING deep. Raises ModuleTextError otherwise."""
    if isinstance(source, bytes | bytearray | memoryview):
        try:
            source = bytes(source).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModuleTextError(f"module text given as bytes is not UTF-8 ({exc}); pass a str "
                                  "of MLIR text, e.g. pathlib.Path(f).read_text()") from None
    if not isinstance(source, str):
        raise ModuleTextError(f"expected the module as a str of MLIR text, not "
                              f"{type(source).__name__} ({str(source)[:80]!r}); pass the text "
                              "itself, e.g. traced.text or pathlib.Path(f).read_text()")
    deepest = _deepest_nesting(source, MAX_NESTING)
    if deepest is not None:
        depth, line = deepest
        raise ModuleTextError(
            f"the module text nests brackets {depth:,} levels deep (at line {line}); "
            f"reactant_lab accepts at most {MAX_NESTING:,} because MLIR's parser crashes at "
            "about 4,000. Real modules nest a few dozen levels: check how the text was made.")
    return source


_OPEN, _CLOSE = b"{[(<", b"}])>"
_STEP = np.zeros(256, np.int32)
_STEP[list(_OPEN)], _STEP[list(_CLOSE)] = 1, -1


def _deepest_nesting(text: str, limit: int) -> tuple[int, int] | None:
    """(depth, line) of the deepest bracket nesting when it exceeds ``limit``, else None.

    Counts ``{ [ ( <`` against their closers; the ``>`` of ``->`` closes nothing, and a closer
    without an opener is ignored. Brackets inside string literals count too: they come in pairs
    in real modules.
    """
    if sum(text.count(c) for c in "{[(<") <= limit:
        return None
    codes = np.frombuffer(text.encode("ascii", "replace"), np.uint8)
    step = _STEP[codes]
    step[1:][(codes[1:] == ord(">")) & (codes[:-1] == ord("-"))] = 0
    total = np.cumsum(step)
    depth = total - np.minimum.accumulate(np.minimum(total, 0))  # a running sum floored at 0
    at = int(depth.argmax())
    if depth[at] <= limit:
        return None
    return int(depth[at]), text.count("\n", 0, at) + 1


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
            raise UnknownPassError(_parse_error_message(
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


# ---------------------------------------------------------------- lowering


def abstract_value(aval: tuple, device: Any | None = None) -> jax.ShapeDtypeStruct:
    """A ShapeDtypeStruct for (shape, dtype, weak_type), placed on ``device`` if given."""
    shape, dtype, weak = aval
    sharding = jax.sharding.SingleDeviceSharding(device) if device is not None else None
    return jax.ShapeDtypeStruct(shape, dtype, weak_type=weak, sharding=sharding)


def lower(fn: Callable, avals: Sequence[tuple], *, arg_names: Sequence[str],
          result_names: Sequence[str], module_name: str, x64: bool) -> str:
    """Lower ``fn(*linear) -> list`` to StableHLO text whose block arguments carry their paths."""
    with x64_scope(x64):
        lowered = jax.jit(fn, keep_unused=True).lower(*[abstract_value(a, None) for a in avals])
    module = lowered.compiler_ir("stablehlo")
    with module.context:
        main = _main_func(module)
        block = main.regions[0].blocks[0]
        if len(block.arguments) != len(avals):
            raise CompileError(
                f"JAX lowered {module_name} with {len(block.arguments)} arguments for "
                f"{len(avals)} traced leaves (it hoisted constants). Pass the captured arrays "
                "as arguments instead of closing over them.")
        for arg, name in zip(block.arguments, arg_names, strict=True):
            arg.set_location(ir.Location.name(name))
        _set_result_names(main, result_names)
        module.operation.attributes["sym_name"] = ir.StringAttr.get(module_name)
        return module.operation.get_asm(enable_debug_info=True)


def _main_func(module: ir.Module) -> ir.Operation:
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(
                op.attributes["sym_name"]).value == "main":
            return op.operation
    raise CompileError("the module has no func.func @main; reactant_lab compiles @main")


def _set_result_names(main: ir.Operation, names: Sequence[str]) -> None:
    old = main.attributes.get("res_attrs", None)
    new = []
    for i, name in enumerate(names):
        entries = {}
        if old is not None:
            attrs = ir.DictAttr(ir.ArrayAttr(old)[i])
            entries = {attrs[j].name: attrs[j].attr for j in range(len(attrs))}
        entries["jax.result_info"] = ir.StringAttr.get(name)
        new.append(ir.DictAttr.get(entries))
    if new:
        main.attributes["res_attrs"] = ir.ArrayAttr.get(new)


# ---------------------------------------------------------------- devices, compile, run


def resolve_device(device: Any | None) -> Any:
    """A jax Device from None (the default device), 'cpu', 'gpu' / 'cuda', or a Device."""
    if device is None:
        return jax.devices()[0]
    if isinstance(device, str):
        kind = {"cuda": "gpu", "rocm": "gpu"}.get(device.lower(), device.lower())
        try:
            return jax.devices(kind)[0]
        except RuntimeError:
            have = sorted({d.platform for d in jax.devices()})
            raise PipelineError(
                f"no {device!r} device is attached (available: {', '.join(have)}). "
                "Use device='cpu' or leave device unset.") from None
    if isinstance(device, jax.Device):
        return device
    raise PipelineError(f"device must be None, 'cpu', 'gpu' or a jax.Device, not {device!r}")


def platform(device: Any) -> str:
    """'cpu' or 'cuda' / 'rocm' / 'tpu' for pass options that depend on the target."""
    return "cuda" if device.platform == "gpu" else device.platform


class Executable:
    """A compiled XLA executable for one module, with JAX's fast call path when possible."""

    def __init__(self, text: str, jax_compiled: Any | None, raw: Any | None, device: Any,
                 x64: bool, structured: bool):
        self.text = text
        """The module text XLA compiled (donation attributes included)."""
        self._compiled = jax_compiled
        self._raw = raw
        self.device = device
        self.x64 = x64
        self.structured = structured
        """True when ``fast_call`` takes the user's own ``(*args, **kwargs)`` pytree."""

    @property
    def fast_call(self) -> Callable | None:
        """JAX's C++ dispatch for this executable, or None on the fallback path."""
        return self._compiled

    def call_flat(self, values: Sequence[Any]) -> list[Any]:
        """Run on linear argument values; return the module's results as JAX arrays."""
        try:
            if self._compiled is not None:
                return list(self._compiled(*values))
            bufs = [jax.device_put(v, self.device) for v in values]
            results = self._raw.execute_sharded(bufs)
            return [a[0] for a in results.disassemble_into_single_device_arrays()]
        except (TypeError, ValueError):
            raise
        except Exception as exc:  # XLA runtime errors carry no stable type
            raise ExecutionError(f"the compiled executable failed while running: {exc}") from exc

    def hlo_text(self) -> str:
        """XLA's optimized HLO."""
        if self._compiled is not None:
            return self._compiled.as_text()
        return self._raw.get_hlo_text()

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


def compile_module(text: str, *, avals: Sequence[tuple], out_avals: Sequence[tuple],
                   device: Any, x64: bool, donate: Sequence[bool],
                   structure: tuple[Callable, tuple, dict] | None) -> Executable:
    """Compile module text for ``device``.

    ``structure`` (a template function with the call's signature, and its args and kwargs as
    ShapeDtypeStructs on ``device``) lets JAX's C++ call path take the user's own pytree; without
    it the executable takes the flat linear values.
    """
    text = module_text(text)
    donation = _donation_plan(donate, avals, out_avals)
    if not os.environ.get("REACTANT_LAB_RAW_EXECUTE"):
        compiled = _compile_via_jax(text, donation, avals, out_avals, device, x64, structure)
        if compiled is not None:
            return Executable(*compiled, None, device, x64, structure is not None)
    with jax_mlir.make_ir_context():
        text = _prepare(text, donation).operation.get_asm(enable_debug_info=True)
    return Executable(text, None, _compile_raw(text, device), device, x64, False)


def _compile_via_jax(text: str, donation: list[tuple[str, Any]], avals: Sequence[tuple],
                     out_avals: Sequence[tuple], device: Any, x64: bool,
                     structure: tuple | None) -> tuple[str, Any] | None:
    """Compile through a JAX lowering of the same signature whose module is swapped for ours.

    This gives our executable JAX's C++ dispatch (a few microseconds a call). Returns (text
    compiled, JAX's Compiled), or None when this JAX version's lowering object does not have the
    expected shape.
    """
    if structure is None:
        def template(*_):
            return [np.zeros(s, d) for s, d, _w in out_avals]
        args, kwargs = tuple(abstract_value(a, device) for a in avals), {}
    else:
        template, args, kwargs = structure
    with x64_scope(x64):
        lowered = jax.jit(template, keep_unused=True).lower(*args, **kwargs)
        lowering = getattr(lowered, "_lowering", None)
        if lowering is None or not hasattr(lowering, "_hlo") or getattr(
                lowering, "const_args", None):
            return None
        with lowering._hlo.context:
            module = _prepare(text, donation)
        lowering._hlo = module
        try:
            compiled = lowered.compile()
        except Exception as exc:
            raise CompileError(_compile_message(text, exc)) from exc
        return module.operation.get_asm(enable_debug_info=True), compiled


def _prepare(text: str, donation: list[tuple[str, Any]]) -> ir.Module:
    """Parse module text in the current context for XLA: drop Enzyme's analysis hints (XLA does
    not know their dialect) and add the donation attributes."""
    ctx = ir.Context.current
    ctx.allow_unregistered_dialects = True
    try:
        module = ir.Module.parse(text)
    except ir.MLIRError as exc:
        raise CompileError(_compile_message(text, exc)) from None
    finally:
        ctx.allow_unregistered_dialects = False

    def drop_hints(op: ir.Operation) -> ir.WalkResult:
        for name in list(op.attributes.keys()):
            if name.startswith("enzymexla."):
                del op.attributes[name]
        return ir.WalkResult.ADVANCE

    module.operation.walk(drop_hints)
    if donation:
        _apply_donation(module, donation)
    return module


def _compile_raw(text: str, device: Any) -> Any:
    from jax.extend import backend as jex_backend
    from jaxlib import xla_client

    client = device.client
    options = jex_backend.get_compile_options(num_replicas=1, num_partitions=1)
    try:
        return client.compile_and_load(text, xla_client.DeviceList((device,)), options)
    except Exception as exc:
        raise CompileError(_compile_message(text, exc)) from exc


def _compile_message(text: str, exc: Exception) -> str:
    ops = sorted(set(re.findall(r"\b(enzyme\w*\.\w+|llvm\.\w+)", text)))[:8]
    hint = (f" The module still holds ops XLA cannot compile ({', '.join(ops)}): compile a "
            "later stage, or use a preset that ends with 'jit lowering'.") if ops else ""
    return f"XLA could not compile the module: {str(exc).strip()[:1500]}{hint}"


def _donation_plan(donate: Sequence[bool], avals: Sequence[tuple],
                   out_avals: Sequence[tuple]) -> list[tuple[str, Any]]:
    """Per argument, the donation attribute to add: ``tf.aliasing_output`` paired with a result
    of the same type, ``jax.buffer_donor`` when none is left, or nothing (empty list: no
    donation at all)."""
    if not any(donate):
        return []
    free = list(range(len(out_avals)))
    plan: list[tuple[str, Any]] = []
    for aval, wanted in zip(avals, donate, strict=True):
        match = next((k for k in free if out_avals[k][:2] == aval[:2]), None) if wanted else None
        if not wanted:
            plan.append(("", None))
        elif match is None:
            plan.append(("jax.buffer_donor", True))
        else:
            free.remove(match)
            plan.append(("tf.aliasing_output", match))
    return plan


def _apply_donation(module: ir.Module, plan: list[tuple[str, Any]]) -> None:
    main = _main_func(module)
    old = ir.ArrayAttr(main.attributes["arg_attrs"]) if "arg_attrs" in main.attributes else None
    new = []
    for i, (name, value) in enumerate(plan):
        entries = {}
        if old is not None:
            d = ir.DictAttr(old[i])
            entries = {d[j].name: d[j].attr for j in range(len(d))}
        if name == "jax.buffer_donor":
            entries[name] = ir.BoolAttr.get(True)
        elif name:
            entries[name] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), value)
        new.append(ir.DictAttr.get(entries))
    main.attributes["arg_attrs"] = ir.ArrayAttr.get(new)
