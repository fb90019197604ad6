"""A run directory's layout: the one place that names its files, and reads its config.

Methods name the files of their own contexts (ACE: ``playbook.txt``; GEPA: ``prompt.txt`` and its
state) through their learner's ``context_file`` and ``files``; everything else a run writes is
named here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from combee.errors import ConfigError

MARKER_FILE = ".combee-run"
"""Written first in every run directory: the folder is Combee's to write, clear and resume."""
CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
FAILURES_FILE = "failures.jsonl"
CHECKPOINT_FILE = "checkpoint.json"
RESULTS_FILE = "final_results.json"
PROFILE_FILE = "batch_profile.json"
LOG_FILE = "run.log"
CONTEXTS_DIR = "contexts"
MLFLOW_RUN_FILE = "mlflow_run.json"
"""The MLflow run a tracked run logs to, so that a resume continues it."""
CACHE_FILE = "cache.sqlite"
CACHE_FILES = frozenset({CACHE_FILE, f"{CACHE_FILE}-wal", f"{CACHE_FILE}-shm"})
RUN_FILES = frozenset(
    {
        MARKER_FILE,
        CONFIG_FILE,
        METRICS_FILE,
        FAILURES_FILE,
        CHECKPOINT_FILE,
        RESULTS_FILE,
        PROFILE_FILE,
        LOG_FILE,
        CONTEXTS_DIR,
        MLFLOW_RUN_FILE,
    }
)
"""What every run writes in its directory (the response cache aside)."""


RENAMED_KEYS = {
    "trace_format": "format",
    "trace_limit": "limit",
    "trace_since": "since",
    "trace_tracking_uri": "tracking_uri",
}
"""Keys of ``config.json`` that an earlier version wrote, by the setting's name now."""


def current_keys(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (a run's ``config.json``) with the keys an earlier version wrote under other
    names (:data:`RENAMED_KEYS`) under the names they have now."""
    return {RENAMED_KEYS.get(key, key): value for key, value in config.items()}


def read_config(run_dir: str | os.PathLike[str], *, setting: str = "run_dir") -> dict[str, Any]:
    """The run's ``config.json``, its keys as this version names them (:func:`current_keys`);
    a ConfigError naming the file (and ``setting``) when it is missing or unreadable."""
    path = Path(run_dir) / CONFIG_FILE
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ConfigError(
            f"{path} cannot be read as a run's config ({error})", setting=setting
        ) from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path} is not a run's config (not a JSON object)", setting=setting)
    return current_keys(config)
