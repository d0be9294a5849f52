"""Find the pass, and the enzyme-hlo patterns inside it, that make a program wrong, slow, or slow
to compile: ``bisect``, its ``BisectResult`` and the reproducer's ``rerun``.

Two searches: the first pass (at pass granularity) whose module is bad, by binary search over
the passes that changed the module (assuming that once bad, later modules stay bad); inside the
enzyme-hlo pattern pass, the minimal set of patterns that is bad, by delta debugging (a culprit
can be a pair that is bad only together). Each distinct module is compiled once: most pattern
subsets give a module already measured, and cost one pass run.
"""

from reactant_lab.bisect.core import DEFAULT_THRESHOLD, METRICS, bisect
from reactant_lab.bisect.judge import COMPILE_FLOOR_S
from reactant_lab.bisect.reproducer import rerun
from reactant_lab.bisect.result import BisectResult
from reactant_lab.bisect.search import ddmin, first_bad

__all__ = ["COMPILE_FLOOR_S", "DEFAULT_THRESHOLD", "METRICS", "BisectResult", "bisect", "ddmin",
           "first_bad", "rerun"]
