"""What a run resolves from its arguments before it connects to a model: its settings, task,
method, strategy and samples (the training run and its plan resolve them alike)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from combee.core.types import Strategy
from combee.engine.resolve import limited, strategy_of, task_of
from combee.errors import ConfigError
from combee.settings import RunSettings, run_settings
from combee.tasks.agent import AgentTask
from combee.tasks.base import Sample, Splits, Task
from combee.tasks.sample_size import check_sample_sizes


@dataclass(frozen=True)
class Prepared:
    settings: RunSettings
    task: Task
    method: Any
    """The method as given, or ``ace-agent`` for ``ace`` on an agent task."""
    method_options: Mapping[str, Any] | None
    strategy: Strategy
    splits: Splits
    """The task's whole splits."""
    train: list[Sample]
    val: list[Sample]
    test: list[Sample]
    """The samples the run uses: the splits within their limits."""

    @property
    def sizes(self) -> dict[str, int]:
        return {"train": len(self.train), "val": len(self.val), "test": len(self.test)}


def prepared(
    task: str | Task,
    *,
    method: Any,
    strategy: str | Strategy,
    given: Mapping[str, Any],
    method_options: Mapping[str, Any] | None = None,
) -> Prepared:
    """The run's settings (``given`` checked against their declarations), task, method,
    strategy and samples; a ConfigError naming the setting at fault."""
    settings = run_settings(given)
    the_task = task_of(
        task,
        data=settings.data,
        scorer=settings.scorer,
        seed=settings.seed,
        agent_steps=settings.agent_steps,
        feedback=settings.feedback,
    )
    if isinstance(the_task, AgentTask):  # episodes of the task's agent are the rollouts
        method = "ace-agent" if method == "ace" else method
        agent_options = {
            "agent": the_task.agent,
            "playbook_text": the_task.playbook_text,
            "max_threads": the_task.max_threads,
        }
        method_options = {**agent_options, **(method_options or {})}
    the_strategy = strategy_of(strategy, settings, given)
    splits = the_task.load()
    train_limit, val_limit, test_limit = settings.split_limits()
    train_set = limited(splits.train, train_limit)
    if not train_set:
        raise ConfigError("has no training samples with these limits", setting="task")
    val_set, test_set = limited(splits.val, val_limit), limited(splits.test, test_limit)
    check_sample_sizes([*train_set, *val_set, *test_set], settings.max_sample_chars, the_task.name)
    return Prepared(
        settings=settings,
        task=the_task,
        method=method,
        method_options=method_options,
        strategy=the_strategy,
        splits=splits,
        train=train_set,
        val=val_set,
        test=test_set,
    )
