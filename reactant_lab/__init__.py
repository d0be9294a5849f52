"""reactant_lab: see and measure how array programs compile.

trace -> Traced -> .stages(preset) -> StageTrace -> .compile() -> Compiled, plus Reactant-style
conveniences (jit, explore, code_hlo, code_xla).
"""

from reactant_lab import enzyme
from reactant_lab.analysis.diff import Diff, diff
from reactant_lab.backend import enzyme_available, versions
from reactant_lab.bench import (
    BenchResult,
    BenchRow,
    Roofline,
    ScalingResult,
    bench,
    bench_scaling,
    calibrate,
)
from reactant_lab.bisect import BisectResult, bisect
from reactant_lab.compile import Compiled
from reactant_lab.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    CallInterruptedError,
    CallTimeoutError,
    CompileError,
    ControlFlowError,
    DeviceBusyError,
    DeviceMemoryError,
    DonatedArgumentError,
    DynamicShapeError,
    EnzymeArgumentError,
    ExecutionError,
    LeftRunningError,
    ModuleTextError,
    PassCrashedError,
    PassFailedError,
    PassInterruptedError,
    PassTimeoutError,
    PipelineError,
    ReactantLabError,
    ShardingError,
    SignatureMismatchError,
    TraceError,
    UnassignedVariableError,
    UnknownPassError,
    UnknownPresetError,
    UnknownStageError,
    UnsupportedArgumentError,
    UnsupportedCustomCallError,
    UnsupportedNumpyFunctionError,
    UnsupportedOnDeviceError,
)
from reactant_lab.explore import (
    Exploration,
    ExploreOptions,
    JitFunction,
    ModuleSource,
    code_hlo,
    code_xla,
    explore,
    jit,
)
from reactant_lab.host_memory import (
    AlignedArraysUnavailable,
    aligned_arrays,
    is_aligned,
    use_aligned_arrays,
)
from reactant_lab.render.diff_html import diff_html
from reactant_lab.render.explorer import (
    exploration_html,
    exploration_payload,
    graph_dot,
    graph_svg,
    save_html,
)
from reactant_lab.render.tables import op_table_html
from reactant_lab.stages import PRESETS, STAGES, Stage, StageTrace, run_pipeline
from reactant_lab.trace import ArgSpec, ResultSpec, SkippedArg, Traced, trace
from reactant_lab.verify import StageCheck, Verification

__version__ = "0.1.0"


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext reactant_lab``: register the notebook magics (``%%reactant_jit`` ...)."""
    from reactant_lab.notebook import load_ipython_extension as load

    load(ipython)


def _show_values_as_html() -> None:
    """In a running IPython (a notebook), show benchmark results, diffs and op tables as HTML
    without ``%load_ext``; IPython is not imported when it is not already running."""
    import sys

    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    if shell is not None and hasattr(shell, "display_formatter"):
        from reactant_lab.notebook.formatters import register

        register(shell)


_show_values_as_html()

__all__ = [
    "PRESETS",
    "STAGES",
    "AlignedArraysUnavailable",
    "ArgSpec",
    "ArgumentTypeError",
    "ArgumentValueError",
    "BenchResult",
    "BenchRow",
    "BisectResult",
    "CallInterruptedError",
    "CallTimeoutError",
    "CompileError",
    "Compiled",
    "ControlFlowError",
    "DeviceBusyError",
    "DeviceMemoryError",
    "Diff",
    "DonatedArgumentError",
    "DynamicShapeError",
    "EnzymeArgumentError",
    "ExecutionError",
    "Exploration",
    "ExploreOptions",
    "JitFunction",
    "LeftRunningError",
    "ModuleSource",
    "ModuleTextError",
    "PassCrashedError",
    "PassFailedError",
    "PassInterruptedError",
    "PassTimeoutError",
    "PipelineError",
    "ReactantLabError",
    "ResultSpec",
    "Roofline",
    "ScalingResult",
    "ShardingError",
    "SignatureMismatchError",
    "SkippedArg",
    "Stage",
    "StageCheck",
    "StageTrace",
    "TraceError",
    "Traced",
    "UnassignedVariableError",
    "UnknownPassError",
    "UnknownPresetError",
    "UnknownStageError",
    "UnsupportedArgumentError",
    "UnsupportedCustomCallError",
    "UnsupportedNumpyFunctionError",
    "UnsupportedOnDeviceError",
    "Verification",
    "aligned_arrays",
    "bench",
    "bench_scaling",
    "bisect",
    "calibrate",
    "code_hlo",
    "code_xla",
    "diff",
    "diff_html",
    "enzyme",
    "enzyme_available",
    "exploration_html",
    "exploration_payload",
    "explore",
    "graph_dot",
    "graph_svg",
    "is_aligned",
    "jit",
    "op_table_html",
    "run_pipeline",
    "save_html",
    "trace",
    "use_aligned_arrays",
    "versions",
]
