"""Pure functions on IR text: normalization, op metrics (no UI, no compiler bindings)."""

from reactant_lab.analysis.normalize import normalize, same_structure, strip_locations
from reactant_lab.analysis.ops import op_counts, op_delta, total_ops

__all__ = ["normalize", "op_counts", "op_delta", "same_structure", "strip_locations", "total_ops"]
