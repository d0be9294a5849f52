"""What each stage did to the answer and to the speed: compile a stage's module, run it on the
example inputs, compare what the user would see with a reference and time the executable.

The building blocks (``Outcome``, ``reference_outcome``, ``compare``, ``check_module``) serve
``StageTrace.verify`` and the bisection in ``reactant_lab.bisect``; both compare on the same
terms: every result leaf and the final value of every array argument (a NumPy kernel updates
them in place), each within a tolerance that follows its dtype.
"""


from reactant_lab.verify.compare import (
    REFERENCE_LABELS,
    REFERENCES,
    TOLERANCE_TEXT,
    Comparison,
    Outcome,
    Tolerance,
    compare,
    fresh_inputs,
    outcome,
    outcome_of,
    precision_floors,
    reference_name,
    reference_outcome,
    relative_error,
    tolerance_for,
)
from reactant_lab.verify.stages import (
    CELLS,
    SLOWER,
    StageCheck,
    Verification,
    check_module,
    run_samples,
    run_timer,
    verify_stages,
)

__all__ = ["CELLS", "REFERENCES", "REFERENCE_LABELS", "SLOWER", "TOLERANCE_TEXT", "Comparison",
           "Outcome", "StageCheck", "Tolerance", "Verification", "check_module", "compare",
           "fresh_inputs", "outcome", "outcome_of", "precision_floors", "reference_name", "reference_outcome",
           "relative_error", "run_samples", "run_timer", "tolerance_for", "verify_stages"]
