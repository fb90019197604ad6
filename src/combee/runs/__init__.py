"""Run directories: configuration, per-iteration metrics, context versions and final results."""

from typing import TYPE_CHECKING

from combee.lazy import lazy_exports

if TYPE_CHECKING:
    from combee.runs.checkpoint import (
        keep_iterations_up_to,
        resume_point,
        saved_run_id,
        saved_usage,
    )
    from combee.runs.layout import (
        CACHE_FILE,
        CHECKPOINT_FILE,
        CONFIG_FILE,
        METRICS_FILE,
        PROFILE_FILE,
        RESULTS_FILE,
        read_config,
    )
    from combee.runs.logfile import logging_to
    from combee.runs.recorder import ProfileRecorder, RunRecorder, usage_delta, usage_totals
    from combee.runs.run_dir import RunDir, check_run_dir, missing_folders

_EXPORTS = {
    "keep_iterations_up_to": "combee.runs.checkpoint",
    "resume_point": "combee.runs.checkpoint",
    "saved_run_id": "combee.runs.checkpoint",
    "saved_usage": "combee.runs.checkpoint",
    "CACHE_FILE": "combee.runs.layout",
    "CHECKPOINT_FILE": "combee.runs.layout",
    "CONFIG_FILE": "combee.runs.layout",
    "METRICS_FILE": "combee.runs.layout",
    "PROFILE_FILE": "combee.runs.layout",
    "RESULTS_FILE": "combee.runs.layout",
    "read_config": "combee.runs.layout",
    "logging_to": "combee.runs.logfile",
    "ProfileRecorder": "combee.runs.recorder",
    "RunRecorder": "combee.runs.recorder",
    "usage_delta": "combee.runs.recorder",
    "usage_totals": "combee.runs.recorder",
    "RunDir": "combee.runs.run_dir",
    "check_run_dir": "combee.runs.run_dir",
    "missing_folders": "combee.runs.run_dir",
}
"""Public name -> its module, imported when first used."""

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "CACHE_FILE",
    "CHECKPOINT_FILE",
    "CONFIG_FILE",
    "METRICS_FILE",
    "PROFILE_FILE",
    "RESULTS_FILE",
    "ProfileRecorder",
    "RunDir",
    "RunRecorder",
    "check_run_dir",
    "keep_iterations_up_to",
    "logging_to",
    "missing_folders",
    "read_config",
    "resume_point",
    "saved_run_id",
    "saved_usage",
    "usage_delta",
    "usage_totals",
]
