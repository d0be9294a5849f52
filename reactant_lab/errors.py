"""The one exception hierarchy of reactant_lab: every error a user can cause is a ReactantLabError."""

from __future__ import annotations


class ReactantLabError(Exception):
    """Base class of every error reactant_lab raises on purpose."""


class ArgumentTypeError(ReactantLabError, TypeError):
    """An argument or option of a reactant_lab function (not of the traced function) of the
    wrong type, e.g. a str where an Exploration is expected."""


class ArgumentValueError(ReactantLabError, ValueError):
    """An argument or option of a reactant_lab function with a value it cannot take, e.g. a
    negative count."""


class TraceError(ReactantLabError):
    """Tracing the user's function failed."""


class ControlFlowError(TraceError):
    """Python control flow (if / while / bool / int) on a value only known when the code runs."""

    def __init__(self, message: str, filename: str | None = None, lineno: int | None = None):
        super().__init__(message)
        self.filename = filename
        """The user's file where the traced value was used as a Python value."""
        self.lineno = lineno
        """The line in that file."""


class UnassignedVariableError(ControlFlowError, UnboundLocalError):
    """A variable read where it may have no value, depending on values only known when the code
    runs (assigned in one branch of an ``if`` on a traced value, or by a loop whose trip count
    is traced): Python would raise UnboundLocalError for some inputs, compiled code cannot."""

    def __init__(self, message: str, name: str, filename: str | None = None,
                 lineno: int | None = None):
        super().__init__(message, filename, lineno)
        self.name = name
        """The variable."""


class UnsupportedArgumentError(TraceError, TypeError):
    """An argument leaf that can neither be traced nor baked in as a static value."""

    def __init__(self, message: str, path: str, leaf_type: type):
        super().__init__(message)
        self.path = path
        """Where the leaf sits in the arguments, e.g. ``args[0]['w']``."""
        self.leaf_type = leaf_type
        """The type that is not supported."""


class ShardingError(TraceError, ValueError):
    """A sharding that cannot be used: a PartitionSpec that does not divide a dimension, an axis
    name the mesh does not have, a mesh larger than the devices present, arguments on different
    meshes."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path
        """The argument the sharding was given for, e.g. ``args[0]['w']`` (None: the mesh)."""


class UnsupportedNumpyFunctionError(TraceError):
    """NumPy mode: a NumPy function (or np.random) without a traced equivalent."""

    def __init__(self, message: str, function: str, filename: str | None = None,
                 lineno: int | None = None):
        super().__init__(message)
        self.function = function
        """The NumPy function, e.g. ``np.unique``."""
        self.filename = filename
        """The user's file that called it."""
        self.lineno = lineno
        """The line in that file."""


class DynamicShapeError(TraceError):
    """NumPy mode: an operation whose result shape depends on traced values (``a[mask]``)."""


class PipelineError(ReactantLabError, ValueError):
    """A preset name, pass name or pass option that does not exist."""


class UnknownPresetError(PipelineError):
    """An ``optimize=`` value that is not one of the presets."""


class UnknownPassError(PipelineError):
    """A pass pipeline naming a pass or an option that is not registered."""


class ModuleTextError(PipelineError):
    """Module text that cannot be handed to MLIR: not a str, nested too deeply, or unparsable."""


class PassFailedError(ReactantLabError):
    """A pass ran and failed; carries everything needed to reproduce it."""

    def __init__(
        self,
        message: str,
        *,
        stage: str,
        pass_name: str,
        diagnostics: str,
        last_good_ir: str,
        reproducer: str | None,
    ):
        super().__init__(message)
        self.stage = stage
        """Name of the stage that failed."""
        self.pass_name = pass_name
        """The pass (or pass pipeline) of that stage."""
        self.diagnostics = diagnostics
        """MLIR's own diagnostics, as printed by the pass manager."""
        self.last_good_ir = last_good_ir
        """The module text before the failing stage."""
        self.reproducer = reproducer
        """Directory holding input.mlir, pipeline.txt and rerun.py, or None if it could not be written."""


class PassCrashedError(PassFailedError):
    """A pass (or MLIR's parser) crashed the pass worker process; this process is unharmed."""

    def __init__(self, message: str, *, signal: str, stage: str, pass_name: str,
                 diagnostics: str, last_good_ir: str, reproducer: str | None):
        super().__init__(message, stage=stage, pass_name=pass_name, diagnostics=diagnostics,
                         last_good_ir=last_good_ir, reproducer=reproducer)
        self.signal = signal
        """How the worker died: 'SIGSEGV', 'SIGABRT', ... or 'exit status N'."""


class PassTimeoutError(PassFailedError):
    """A stage ran past the pass time limit (``REACTANT_LAB_PASS_TIMEOUT``); the pass worker
    running it was stopped and this process is unharmed."""

    def __init__(self, message: str, *, seconds: float, limit: float, stage: str,
                 pass_name: str, diagnostics: str, last_good_ir: str, reproducer: str | None):
        super().__init__(message, stage=stage, pass_name=pass_name, diagnostics=diagnostics,
                         last_good_ir=last_good_ir, reproducer=reproducer)
        self.seconds = seconds
        """How long it ran."""
        self.limit = limit
        """The limit it ran past, in seconds."""


class PassWorkerError(ReactantLabError, RuntimeError):
    """The pass worker process could not run a request (a broken installation, not a pass)."""


class PassInterruptedError(KeyboardInterrupt):
    """Ctrl-C while a stage ran in the pass worker: the worker was stopped.

    Deliberately a KeyboardInterrupt and not a ReactantLabError, so that ``except Exception``
    does not swallow the user's Ctrl-C.
    """

    def __init__(self, message: str, *, stage: str, seconds: float):
        super().__init__(message)
        self.stage = stage
        """The stage that was running."""
        self.seconds = seconds
        """How long it had run."""


class UnknownStageError(ReactantLabError, IndexError, KeyError):
    """A StageTrace was asked for a stage index or name it does not have."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class CompileError(ReactantLabError):
    """XLA refused to compile a stage's module."""


class CompileCrashedError(CompileError):
    """XLA's compiler crashed the compile worker process; this process is unharmed."""

    def __init__(self, message: str, *, signal: str, stage: str, output: str,
                 reproducer: str | None, retried: str | None):
        super().__init__(message)
        self.signal = signal
        """How the worker died: 'SIGSEGV', 'SIGABRT', ... or 'exit status N'."""
        self.stage = stage
        """Name of the stage whose module was compiled."""
        self.output = output
        """What XLA / LLVM printed in the dying process (often nothing for a stack overflow)."""
        self.reproducer = reproducer
        """Directory holding input.mlir, compile_options.pb and rerun.py, or None if it could
        not be written."""
        self.retried = retried
        """How the module was compiled again after the crash and how that ended, or None."""


class UnsupportedOnDeviceError(CompileError):
    """A module the device's XLA compiler is known not to take (it would abort the process):
    refused before XLA compiles it, with a reproducer."""

    def __init__(self, message: str, *, op: str, dtype: str, device: str, stage: str,
                 todo: str, reproducer: str | None):
        super().__init__(message)
        self.op = op
        """The op, e.g. ``stablehlo.abs``."""
        self.dtype = dtype
        """Its operand's element type as MLIR prints it, e.g. ``complex<f64>``."""
        self.device = device
        """The device it was to compile for, e.g. ``TPU_0(process=0,(0,0,0,0))``."""
        self.stage = stage
        """Name of the stage whose module it was."""
        self.todo = todo
        """What to do instead."""
        self.reproducer = reproducer
        """Directory holding input.mlir, why.txt and rerun.py, or None if it could not be
        written."""


class UnsupportedCustomCallError(CompileError):
    """A module calls a custom call that the device's XLA does not implement (a Pallas TPU
    kernel's ``tpu_custom_call`` compiled for the CPU)."""

    def __init__(self, message: str, *, target: str, device: str,
                 platform: str | None = None):
        super().__init__(message)
        self.target = target
        """The custom call's target, e.g. ``tpu_custom_call``."""
        self.device = device
        """The device it was compiled for, e.g. ``TFRT_CPU_0``."""
        self.platform = platform
        """The platform that implements the target ('tpu', 'gpu'), when known."""


class CompileFallbackWarning(UserWarning):
    """XLA crashed on a module, and it was compiled another way (e.g. without XLA:CPU's fusion
    emitters); the executable works, and may run at another speed."""


class EnzymeArgumentError(ReactantLabError, TypeError, ValueError):
    """``reactant_lab.enzyme``'s gradient, vjp, jvp or batch refused its arguments, or what the
    function returned (an integer input to differentiate, a tangent or cotangent of another
    shape or dtype, a tuple where one scalar was due): the mistakes jax.grad / jax.vjp / jax.jvp /
    jax.vmap refuse. Both a TypeError and a ValueError, so that code catching the class JAX
    raises for the same mistake (it uses both) catches this one."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path
        """The offending value, e.g. ``args[0]['k']``, ``tangents[1]``, ``result[0]`` (None
        where it is an option, such as ``out_axes``)."""


class EnzymeUnavailableWarning(UserWarning):
    """enzyme-ad is not installed (or disabled): ``reactant_lab.enzyme`` runs JAX's own
    transformation (jax.grad, jax.vjp, jax.jvp) instead of emitting Enzyme ops."""


class DeviceMemoryError(ReactantLabError, MemoryError):
    """A module whose buffers cannot fit in the device's memory: refused before XLA compiles or
    runs it, or XLA ran out of memory (RESOURCE_EXHAUSTED) compiling or running it. A
    MemoryError, as NumPy raises for an array it cannot allocate."""

    def __init__(self, message: str, *, stage: str, when: str, needed: int | None,
                 available: int | None):
        super().__init__(message)
        self.stage = stage
        """Name of the stage whose module it was."""
        self.when = when
        """'before compiling', 'before running', 'compiling' or 'running'."""
        self.needed = needed
        """Bytes the module needed (or XLA failed to allocate), when known."""
        self.available = available
        """Bytes of memory the device has, when known."""


class DeviceBusyError(ReactantLabError, RuntimeError):
    """JAX could not open the accelerator because another process holds it (a TPU opens in one
    process at a time: a notebook kernel or a test run that used it). A RuntimeError, as JAX's
    own error is."""

    def __init__(self, message: str, *, platform: str, cause: str):
        super().__init__(message)
        self.platform = platform
        """The platform JAX could not open ('tpu')."""
        self.cause = cause
        """JAX's own words."""


class SignatureMismatchError(ReactantLabError, TypeError):
    """A compiled function was called with arguments of another structure, shape or dtype."""


class DonatedArgumentError(ReactantLabError, RuntimeError):
    """A buffer given up by an earlier call with ``donate=True`` was used again."""


class ExecutionError(ReactantLabError, RuntimeError):
    """The compiled executable failed while running."""


class CallTimeoutError(ExecutionError, TimeoutError):
    """A compiled call ran past its time limit (``timeout=``); the caller's arrays are as they
    were before it."""

    def __init__(self, message: str, *, fn_name: str, limit: float, seconds: float,
                 left_running: bool):
        super().__init__(message)
        self.fn_name = fn_name
        """The function that was called."""
        self.limit = limit
        """The limit it ran past, in seconds."""
        self.seconds = seconds
        """How long the caller waited."""
        self.left_running = left_running
        """Whether the computation still runs (XLA cannot stop one), on a background thread
        or on the device."""


class CallInterruptedError(KeyboardInterrupt):
    """Ctrl-C (or a signal handler raising KeyboardInterrupt) while a compiled call ran; the
    caller's arrays are as they were before it.

    Deliberately a KeyboardInterrupt and not a ReactantLabError, so that ``except Exception``
    does not swallow the user's Ctrl-C.
    """

    def __init__(self, message: str, *, fn_name: str, seconds: float, left_running: bool):
        super().__init__(message)
        self.fn_name = fn_name
        """The function that was called."""
        self.seconds = seconds
        """How long it had run."""
        self.left_running = left_running
        """Whether the computation still runs (XLA cannot stop one)."""


class LeftRunningError(ExecutionError):
    """A call was refused because of interrupted computations that still run: too many in this
    process (``MAX_LEFT_RUNNING``, for a call that may not end), or one on the call's device,
    which runs its computations one after another (the call would wait for it, out of Ctrl-C's
    reach). Restarting the process ends them."""


class AnalysisError(ReactantLabError, ValueError):
    """An analysis (diff, op metrics, dataflow graph) was asked for something the IR lacks."""


class GraphTooLargeError(AnalysisError):
    """A dataflow graph would have more ops than asked for; draw a summary or a slice instead."""


class RenderError(ReactantLabError, RuntimeError):
    """Rendering (Graphviz layout, HTML report) failed."""


class CliError(ReactantLabError):
    """A command-line argument that does not name something loadable, or user code the command
    ran (the file on import, the MAKE_ARGS function, the function while traced) that failed."""
