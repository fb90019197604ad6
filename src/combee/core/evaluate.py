"""Run the generator over samples through an executor and score it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from combee.core.executor import AsyncioExecutor, Executor, Rollouts, SampleFailure
from combee.core.types import Trajectory
from combee.tasks.base import Sample, Score, accuracy

__all__ = ["Evaluation", "SampleFailure", "evaluate"]


@dataclass
class Evaluation:
    trajectories: list[Trajectory] = field(default_factory=list)
    failures: list[SampleFailure] = field(default_factory=list)

    @property
    def scores(self) -> list[Score]:
        return [t.score for t in self.trajectories]

    @property
    def samples(self) -> int:
        return len(self.trajectories) + len(self.failures)

    def accuracy(self) -> float:
        """Accuracy over all samples; a failed sample counts as wrong."""
        failed = [f.score or Score(False, 0, 1) for f in self.failures]
        return accuracy(self.scores + failed)


async def evaluate(
    method: Rollouts,
    context: Any,
    samples: Sequence[Sample],
    *,
    score: Callable[[str, Sample], Score] | None = None,
    on_done: Callable[[], None] | None = None,
    executor: Executor | None = None,
) -> Evaluation:
    """Roll out every sample against ``context`` (concurrently with the default executor).

    ``score`` scores an empty answer for a failed sample so it counts as wrong with its weight.
    """
    outcomes = await (executor or AsyncioExecutor()).map(
        method, context, samples, reflect=False, score=score, on_done=on_done
    )
    result = Evaluation()
    for outcome in outcomes:
        if outcome.failure is not None:
            result.failures.append(outcome.failure)
        elif outcome.trajectory is not None:
            result.trajectories.append(outcome.trajectory)
    return result
