"""The settings of a run's task (its data and how much of it), declared once."""

from __future__ import annotations

from dataclasses import dataclass

from combee.declare import SettingsGroup, setting
from combee.tasks.sample_size import DEFAULT_MAX_SAMPLE_CHARS

FOLLOWS = "as many as the training limit, all without one"
"""What a validation or test limit not given means: a small run is small throughout."""


@dataclass(frozen=True)
class TaskSettings(SettingsGroup):
    data: str | None = setting(None, "The JSONL file of the jsonl task.")
    scorer: str = setting("exact", "The jsonl task's scorer: exact | numeric | contains.")
    train_limit: int | None = setting(
        None,
        "First N training samples; validation and test take as many unless given.",
        least=0,
        none="all",
    )
    val_limit: int | None = setting(
        None, "First N validation samples (0: none).", least=0, none=FOLLOWS
    )
    test_limit: int | None = setting(None, "First N test samples (0: none).", least=0, none=FOLLOWS)
    max_sample_chars: int = setting(
        DEFAULT_MAX_SAMPLE_CHARS,
        "Most characters one sample (question, context and answer) may hold; a longer one is "
        "refused, naming its file and line.",
        least=1,
    )
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

    def split_limits(self) -> tuple[int | None, int | None, int | None]:
        """The train, validation and test limits (None: the whole split). A validation or test
        limit not given follows the training limit; one given, 0 included, is kept."""
        train = self.train_limit
        return (
            train,
            train if self.val_limit is None else self.val_limit,
            train if self.test_limit is None else self.test_limit,
        )
