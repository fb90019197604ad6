"""The settings of a run's task (its data and how much of it), declared once."""

from __future__ import annotations

from dataclasses import dataclass

from combee.core.settings import SettingsGroup, setting


@dataclass(frozen=True)
class TaskSettings(SettingsGroup):
    data: str | None = setting(None, "The JSONL file of the jsonl task.")
    scorer: str = setting("exact", "The jsonl task's scorer: exact | numeric | contains.")
    train_limit: int | None = setting(None, "First N training samples.", least=0, none="all")
    val_limit: int | None = setting(None, "First N validation samples.", least=0, none="all")
    test_limit: int | None = setting(None, "First N test samples.", least=0, none="all")
    agent_steps: str = setting(
        "native",
        "agentdojo tasks: how the model acts: native (the endpoint's tool calls) | json (one "
        "JSON-schema reply per step, for an endpoint without tools).",
        choices=("native", "json"),
    )
    feedback: str = setting(
        "verdict",
        "agentdojo tasks: what the reflector reads of the checker: verdict (utility passed or "
        "failed, what a deployment has) | reference (also the task's reference calls and "
        "answer, on the clean environment).",
        choices=("verdict", "reference"),
    )
