"""The one exception hierarchy of reactant_lab: every error a user can cause is a ReactantLabError."""

from __future__ import annotations


class ReactantLabError(Exception):
    """Base class of every error reactant_lab raises on purpose."""


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


class UnsupportedArgumentError(TraceError, TypeError):
    """An argument leaf that can neither be traced nor baked in as a static value."""

    def __init__(self, message: str, path: str, leaf_type: type):
        super().__init__(message)
        self.path = path
        """Where the leaf sits in the arguments, e.g. ``args[0]['w']``."""
        self.leaf_type = leaf_type
        """The type that is not supported."""


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


class EnzymeUnavailableError(ReactantLabError):
    """An Enzyme-JAX pass was asked for but enzyme-ad is not importable here."""


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


class CompileError(ReactantLabError):
    """XLA refused to compile a stage's module."""


class SignatureMismatchError(ReactantLabError, TypeError):
    """A compiled function was called with arguments of another structure, shape or dtype."""


class DonatedArgumentError(ReactantLabError, RuntimeError):
    """A buffer given up by an earlier call with ``donate=True`` was used again."""


class ExecutionError(ReactantLabError, RuntimeError):
    """The compiled executable failed while running."""


class AnalysisError(ReactantLabError, ValueError):
    """An analysis (diff, op metrics, dataflow graph) was asked for something the IR lacks."""


class GraphTooLargeError(AnalysisError):
    """A dataflow graph would have more ops than asked for; draw a summary or a slice instead."""


class RenderError(ReactantLabError, RuntimeError):
    """Rendering (Graphviz layout, HTML report) failed."""
