"""Run the generator over samples concurrently and score it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from combee.core.types import Method, Trajectory
from combee.errors import LLMCallError
from combee.tasks.base import Sample, Score, accuracy


@dataclass(frozen=True)
class SampleFailure:
    """A sample whose call failed for good; it is skipped, the rest go on."""

    sample_id: str
    stage: str
    error: str
    score: Score | None = None
    """What an empty answer scores, so the sample still counts (as wrong) in an accuracy."""


@dataclass
class Evaluation:
    trajectories: list[Trajectory] = field(default_factory=list)
    failures: list[SampleFailure] = field(default_factory=list)

    @property
    def scores(self) -> list[Score]:
        return [t.score for t in self.trajectories]

    def accuracy(self) -> float:
        """Accuracy over all samples; a failed sample counts as wrong."""
        failed = [f.score or Score(False, 0, 1) for f in self.failures]
        return accuracy(self.scores + failed)


async def evaluate(
    method: Method[Any, Any],
    context: Any,
    samples: Sequence[Sample],
    *,
    score: Callable[[str, Sample], Score] | None = None,
    on_done: Callable[[], None] | None = None,
) -> Evaluation:
    """Roll out every sample against ``context`` concurrently (the LLM layer bounds concurrency).

    ``score`` scores an empty answer for a failed sample so it counts as wrong with its weight.
    """

    async def one(sample: Sample) -> Trajectory | SampleFailure:
        try:
            return await method.rollout(context, sample)
        except LLMCallError as error:
            empty = score("", sample) if score is not None else None
            return SampleFailure(sample.id, "generate", str(error), empty)
        finally:
            if on_done is not None:
                on_done()

    result = Evaluation()
    for outcome in await asyncio.gather(*(one(s) for s in samples)):
        if isinstance(outcome, SampleFailure):
            result.failures.append(outcome)
        else:
            result.trajectories.append(outcome)
    return result
