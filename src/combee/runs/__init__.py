"""Run directories: configuration, per-iteration metrics, context versions and final results."""

from combee.runs.recorder import RunRecorder
from combee.runs.run_dir import RunDir

__all__ = ["RunDir", "RunRecorder"]
