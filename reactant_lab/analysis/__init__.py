"""Pure functions on IR text: normalization, op metrics, lexer, diffs, dataflow graphs, the
collectives of partitioned HLO (no UI, no compiler bindings)."""

from reactant_lab.analysis.collectives import Collective, CollectiveReport, collective_report
from reactant_lab.analysis.diff import Diff, diff
from reactant_lab.analysis.graph import Dataflow, Signature, dataflow, signature_of
from reactant_lab.analysis.lexer import tokenize
from reactant_lab.analysis.metrics import OpTable, op_table
from reactant_lab.analysis.normalize import normalize, same_structure, strip_locations
from reactant_lab.analysis.ops import op_counts, op_delta, total_ops

__all__ = ["Collective", "CollectiveReport", "Dataflow", "Diff", "OpTable", "Signature",
           "collective_report", "dataflow", "diff", "normalize", "op_counts", "op_delta",
           "op_table", "same_structure", "signature_of", "strip_locations", "tokenize",
           "total_ops"]
