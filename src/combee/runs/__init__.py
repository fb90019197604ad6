"""Run directories: configuration, per-iteration metrics, context versions and final results."""

from combee.runs.logfile import logging_to
from combee.runs.recorder import ProfileRecorder, RunRecorder, usage_delta, usage_totals
from combee.runs.run_dir import PROFILE_FILE, RESULTS_FILE, RunDir, check_run_dir

__all__ = [
    "PROFILE_FILE",
    "RESULTS_FILE",
    "ProfileRecorder",
    "RunDir",
    "RunRecorder",
    "check_run_dir",
    "logging_to",
    "usage_delta",
    "usage_totals",
]
