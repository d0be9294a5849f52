"""Presets table, pipeline splitting, and the stage-by-stage runner -> StageTrace."""

from reactant_lab.stages.pipeline import group_steps, split_passes
from reactant_lab.stages.presets import PRESETS, STAGES, StageSpec
from reactant_lab.stages.runner import (
           Stage,
           StageTrace,
           plan,
           run_on_text,
           run_pipeline,
           run_stages,
)

__all__ = ["PRESETS", "STAGES", "Stage", "StageSpec", "StageTrace", "group_steps", "plan",
           "run_on_text", "run_pipeline", "run_stages", "split_passes"]
