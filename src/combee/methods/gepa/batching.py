"""GEPA's iterations on Combee's batch schedule.

:class:`IterationClock` is a gepa callback. As an iteration starts it asks the run's
:class:`combee.core.batch_schedule.BatchSchedule` (a fixed size, or the batch size controller)
for the minibatch size and sets the :class:`ResizableBatchSampler`; as it ends it tells the
schedule how long the iteration took, leaving out the validation of accepted candidates (a cost
the batch size does not drive), and reports the iteration to the run's observer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from combee.core.batch_schedule import BatchSchedule
from combee.core.loop_observer import LoopObserver
from combee.core.loop_reports import IterationReport
from combee.core.types import ReduceTrace
from combee.methods.gepa.sampler import ResizableBatchSampler
from combee.methods.gepa.usage import Levels


@dataclass(frozen=True)
class IterationTiming:
    iteration: int
    batch_size: int
    seconds: float
    """Wall time of the iteration without the validation of accepted candidates."""
    validation_seconds: float
    accepted: bool


class IterationClock:
    """Drives the sampler from ``schedule`` and times each iteration (see the module)."""

    def __init__(
        self,
        sampler: ResizableBatchSampler,
        schedule: BatchSchedule,
        *,
        train_size: int,
        validation_seconds: Callable[[], float],
        observer: LoopObserver | None = None,
        component: str = "system_prompt",
        reduce_levels: Callable[[], Levels] = list,
    ) -> None:
        self.sampler = sampler
        self.schedule = schedule
        self.train_size = train_size
        self.validation_seconds = validation_seconds
        self.observer = observer or LoopObserver()
        self.component = component
        self.reduce_levels = reduce_levels
        """The reflection's reduce calls since it was last asked (see ``ReduceLog.take``)."""
        self.timings: list[IterationTiming] = []
        self._started: float | None = None
        self._validation_before = 0.0
        self._epoch = 1

    def on_iteration_start(self, event: Any) -> None:
        epoch, _ = self.sampler.position(self.train_size)
        self._epoch = epoch
        # gepa's minibatches run on across epoch boundaries (the sampler completes one from the
        # next epoch), so no iteration is cut short: the whole training set is always "left".
        self.sampler.size = self.schedule.next_size(epoch=epoch, remaining=self.train_size)
        self._started = time.perf_counter()
        self._validation_before = self.validation_seconds()
        self.reduce_levels()  # calls before this iteration are not its own
        self.observer.on_iteration_start(epoch, int(event["iteration"]), self.sampler.size)

    def on_iteration_end(self, event: Any) -> None:
        if self._started is None:
            return
        wall = time.perf_counter() - self._started
        validation = self.validation_seconds() - self._validation_before
        timing = IterationTiming(
            iteration=int(event["iteration"]),
            batch_size=self.sampler.size,
            seconds=max(0.0, wall - validation),
            validation_seconds=validation,
            accepted=bool(event["proposal_accepted"]),
        )
        self._started = None
        self.timings.append(timing)
        self.schedule.record(size=timing.batch_size, wall_s=timing.seconds)
        state = event["state"]
        scores = list(state.program_full_scores_val_set)
        best = max(range(len(scores)), key=scores.__getitem__) if scores else 0
        report: IterationReport[str, str] = IterationReport(
            epoch=self._epoch,
            iteration=timing.iteration,
            batch_size=timing.batch_size,
            wall_s=timing.seconds,
            trajectories=[],
            reflections=[],
            failures=[],
            trace=ReduceTrace(levels=self.reduce_levels()),
            context=str(state.program_candidates[best][self.component]),
            val_accuracy=scores[best] if scores else None,
            extra={
                "accepted": timing.accepted,
                "candidates": len(state.program_candidates),
                "metric_calls": int(state.total_num_evals),
                "validation_s": round(validation, 4),
            },
        )
        self.observer.on_iteration_end(report)
