"""How agent episodes went on a split: mean reward, success rate with a 95% interval, which
task instances the learned playbook won or lost against the start, and the steps that never
gave a valid action."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from combee.core.evaluate import Evaluation, SampleFailure
from combee.errors import InvalidStepError
from combee.tasks.agent import Episode, episode_record
from combee.tasks.traces.next_action import wilson_interval

TEST_EPISODES_FILE = "test_episodes.jsonl"
"""The test episodes with the learned context, in a run directory (as ``episodes.jsonl``)."""
BASELINE_TEST_EPISODES_FILE = "baseline_test_episodes.jsonl"
"""The test episodes with the start context (``baseline=True``)."""


def episode_summary(prefix: str, evaluation: Evaluation) -> dict[str, Any]:
    """``{prefix}_mean_reward``, ``{prefix}_success_rate`` and its ``_interval_95``,
    ``{prefix}_episodes`` (n); an episode that failed to run counts as reward 0, no success.
    ``{prefix}_invalid_steps``: episodes lost to a step that never gave a valid action. Under
    an attack (episodes whose ``meta["attack_succeeded"]`` is set), also
    ``{prefix}_attack_success_rate`` over ``{prefix}_attacked_episodes``."""
    rewards = [float(t.details.get("reward", t.score.correct)) for t in evaluation.trajectories]
    successes = sum(t.score.correct for t in evaluation.trajectories)
    n = len(rewards) + len(evaluation.failures)
    low, high = wilson_interval(successes, n)
    summary: dict[str, Any] = {
        f"{prefix}_episodes": n,
        f"{prefix}_mean_reward": sum(rewards) / n if n else None,
        f"{prefix}_success_rate": successes / n if n else None,
        f"{prefix}_success_interval_95": [round(low, 4), round(high, 4)],
        f"{prefix}_invalid_steps": invalid_steps(evaluation.failures),
    }
    attacked = [
        bool(episode.meta["attack_succeeded"])
        for t in evaluation.trajectories
        if isinstance(episode := t.details.get("episode"), Episode)
        and "attack_succeeded" in episode.meta
    ]
    if attacked:
        summary[f"{prefix}_attacked_episodes"] = len(attacked)
        summary[f"{prefix}_attack_success_rate"] = sum(attacked) / len(attacked)
    return summary


def paired_outcomes(before: Evaluation, after: Evaluation) -> dict[str, int]:
    """Task instances that failed before and succeeded after (``gained``), and the reverse."""
    was = {t.sample.id: t.score.correct for t in before.trajectories}
    now = {t.sample.id: t.score.correct for t in after.trajectories}
    for failure in before.failures:
        was[failure.sample_id] = False
    for failure in after.failures:
        now[failure.sample_id] = False
    shared = was.keys() & now.keys()
    return {
        "gained": sum(1 for i in shared if now[i] and not was[i]),
        "lost": sum(1 for i in shared if was[i] and not now[i]),
    }


def has_episodes(evaluation: Evaluation) -> bool:
    """Whether the evaluation's rollouts were agent episodes."""
    return any("episode" in t.details for t in evaluation.trajectories)


def invalid_steps(failures: Iterable[SampleFailure]) -> int:
    """How many of ``failures`` were an agent step that never gave a valid action."""
    return sum(1 for failure in failures if failure.kind == InvalidStepError.kind)


def episode_lines(evaluation: Evaluation) -> str:
    """The evaluation's episodes as JSON Lines, one :func:`~combee.tasks.agent.episode_record`
    each (the format of ``episodes.jsonl``), in sample order."""
    return "".join(
        json.dumps(episode_record(t.sample, episode), ensure_ascii=False) + "\n"
        for t in evaluation.trajectories
        if isinstance(episode := t.details.get("episode"), Episode)
    )
