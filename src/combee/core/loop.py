"""The training loop: epochs of seeded batches; map concurrently, tally, reduce, apply, validate."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from combee.core.evaluate import SampleFailure, evaluate
from combee.core.types import Method, ReduceTrace, Reflection, Strategy, Trajectory
from combee.errors import LLMCallError
from combee.tasks.base import Sample, Score

C = TypeVar("C")
U = TypeVar("U")


class BatchSchedule(Protocol):
    """Chooses each iteration's batch size and learns from how long iterations took."""

    def next_size(self, *, epoch: int, remaining: int) -> int: ...

    def record(self, *, size: int, wall_s: float) -> None: ...


@dataclass
class FixedBatchSize:
    size: int

    def next_size(self, *, epoch: int, remaining: int) -> int:
        return min(self.size, remaining)

    def record(self, *, size: int, wall_s: float) -> None:
        return None


@dataclass(frozen=True)
class LoopConfig:
    epochs: int = 1
    seed: int = 0
    val_every: int = 0
    """Validate every this many iterations (0: only at the end of each epoch)."""


@dataclass
class IterationReport(Generic[C, U]):
    epoch: int
    iteration: int
    batch_size: int
    wall_s: float
    trajectories: list[Trajectory]
    reflections: list[Reflection]
    failures: list[SampleFailure]
    trace: ReduceTrace[U]
    context: C
    val_accuracy: float | None = None


@dataclass
class TrainResult(Generic[C]):
    final_context: C
    best_context: C
    best_val_accuracy: float | None
    iterations: int
    train_seconds: float
    failures: list[SampleFailure] = field(default_factory=list)


class LoopObserver:
    """Hooks for progress display and run recording; every hook is optional."""

    def on_iteration_start(self, epoch: int, iteration: int, batch_size: int) -> None:
        return None

    def on_sample_done(self) -> None:
        return None

    def on_phase(self, phase: str) -> None:
        return None

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        return None


async def train(
    method: Method[C, U],
    strategy: Strategy,
    context: C,
    train_samples: Sequence[Sample],
    val_samples: Sequence[Sample],
    *,
    schedule: BatchSchedule,
    score: Callable[[str, Sample], Score],
    config: LoopConfig = LoopConfig(),
    observer: LoopObserver | None = None,
) -> TrainResult[C]:
    """Learn a context from ``train_samples``; keep the best one on ``val_samples``."""
    watch = observer or LoopObserver()
    rng = random.Random(config.seed)
    best_context, best_val = context, None
    iteration = 0
    all_failures: list[SampleFailure] = []
    started = time.perf_counter()
    for epoch in range(1, config.epochs + 1):
        order = list(train_samples)
        rng.shuffle(order)
        position = 0
        while position < len(order):
            size = strategy.batch_size(
                schedule.next_size(epoch=epoch, remaining=len(order) - position)
            )
            batch = order[position : position + size]
            position += len(batch)
            iteration += 1
            watch.on_iteration_start(epoch, iteration, len(batch))
            report = await _iteration(method, strategy, context, batch, epoch, iteration, watch)
            schedule.record(size=len(batch), wall_s=report.wall_s)
            context = report.context
            all_failures.extend(report.failures)
            epoch_done = position >= len(order)
            due = config.val_every > 0 and iteration % config.val_every == 0
            if val_samples and (due or epoch_done):
                watch.on_phase("validate")
                validation = await evaluate(method, context, val_samples, score=score)
                report.val_accuracy = validation.accuracy()
                if best_val is None or report.val_accuracy > best_val:
                    best_context, best_val = context, report.val_accuracy
            watch.on_iteration_end(report)
    if best_val is None:
        best_context = context
    return TrainResult(
        final_context=context,
        best_context=best_context,
        best_val_accuracy=best_val,
        iterations=iteration,
        train_seconds=time.perf_counter() - started,
        failures=all_failures,
    )


async def _iteration(
    method: Method[C, U],
    strategy: Strategy,
    snapshot: C,
    batch: Sequence[Sample],
    epoch: int,
    iteration: int,
    watch: LoopObserver,
) -> IterationReport[C, U]:
    started = time.perf_counter()
    watch.on_phase("generate + reflect")

    async def map_one(sample: Sample) -> tuple[Trajectory | None, Reflection | SampleFailure]:
        stage = "generate"
        trajectory = None
        try:
            trajectory = await method.rollout(snapshot, sample)
            stage = "reflect"
            return trajectory, await method.reflect(snapshot, trajectory)
        except LLMCallError as error:
            return trajectory, SampleFailure(sample.id, stage, str(error))
        finally:
            watch.on_sample_done()

    outcomes = await asyncio.gather(*(map_one(s) for s in batch))
    trajectories = [t for t, _ in outcomes if t is not None]
    reflections = [r for _, r in outcomes if isinstance(r, Reflection)]
    failures = [r for _, r in outcomes if isinstance(r, SampleFailure)]
    context = method.tally(snapshot, reflections)
    watch.on_phase("reduce")
    trace = await strategy.reduce(method, context, reflections)
    if trace.update is not None:
        context = method.apply(context, trace.update)
    return IterationReport(
        epoch=epoch,
        iteration=iteration,
        batch_size=len(batch),
        wall_s=time.perf_counter() - started,
        trajectories=trajectories,
        reflections=reflections,
        failures=failures,
        trace=trace,
        context=context,
    )
