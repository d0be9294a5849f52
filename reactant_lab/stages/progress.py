"""Say on stderr that a long stage is still running (and how to stop it), at growing intervals."""

from __future__ import annotations

import os
import sys
from typing import TextIO

AFTER_SECONDS = float(os.environ.get("REACTANT_LAB_PROGRESS_AFTER", "5"))
"""A stage running longer than this many seconds gets a line on stderr
(``REACTANT_LAB_PROGRESS_AFTER`` sets it)."""


class StageProgress:
    """Called with the seconds a stage has run; prints a line at ``after`` seconds, then at
    doubling intervals (at most a minute apart)."""

    def __init__(self, stage: str, ops: int | None, *, after: float | None = None,
                 stream: TextIO | None = None):
        self.stage = stage
        self.ops = ops
        self._next = AFTER_SECONDS if after is None else after
        self._stream = stream
        self.lines = 0
        """How many lines were printed."""

    def __call__(self, seconds: float) -> None:
        if seconds < self._next:
            return
        size = f" (module of {self.ops:,} ops)" if self.ops is not None else ""
        print(f"reactant_lab: stage {self.stage!r} running for {seconds:.0f} s{size}… Ctrl-C "
              "stops it.", file=self._stream or sys.stderr, flush=True)
        self.lines += 1
        self._next = seconds + min(max(seconds, 1.0), 60.0)
