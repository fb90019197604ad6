"""The settings of learning from traces (``combee.learn``, ``combee learn``), declared once:
the keyword, the ``config.json`` key, the resume and the flag all take these names."""

from __future__ import annotations

from dataclasses import dataclass

from combee.declare import SettingsGroup, setting
from combee.tasks.traces.formats import FORMATS


@dataclass(frozen=True)
class LearnSettings(SettingsGroup):
    OWNER = "learn"

    format: str = setting(
        "auto",
        f"How the trace files are read: auto (detected per file) or {', '.join(FORMATS)}.",
        choices=("auto", *FORMATS),
    )
    holdout_tasks: int = setting(
        0,
        "Task ids, chosen by the seed, whose traces stay out of learning (config.json names "
        "them as held_out_tasks, for eval-traces).",
        least=0,
    )
    limit: int | None = setting(
        None, "Learn from only N traces, spread over the tasks by the seed.", least=1, none="all"
    )
    contrast: bool = setting(
        False, "Show a trace beside a recorded trace of the same task with the other outcome."
    )
    transcript_tokens: int = setting(
        3000,
        "Tokens of trajectory the reflector sees; a longer one is cut, keeping the decisions, "
        "the errors and the end.",
        least=1,
    )
    since: str | None = setting(
        None, "mlflow:EXPERIMENT traces: only those after this ISO time.", none="all"
    )
    tracking_uri: str | None = setting(
        None,
        "The MLflow tracking server, e.g. http://127.0.0.1:5000: mlflow:EXPERIMENT traces are "
        "read from it (and a tracked run logs to it).",
        none="MLFLOW_TRACKING_URI",
        envvar="MLFLOW_TRACKING_URI",
    )


READ_SETTINGS = ("format", "since", "tracking_uri")
"""The settings that say how trace files are read (traces already loaded need none)."""
