"""The training loop: epochs of seeded batches; map concurrently, tally, reduce, apply, validate."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from combee.core.controller import BatchDecision
from combee.core.evaluate import Evaluation, SampleFailure, evaluate
from combee.core.executor import AsyncioExecutor, Executor, MapOutcome
from combee.core.loop_state import (
    LoopState,
    part_states,
    restore_parts,
    rng_state,
    set_rng_state,
)
from combee.core.types import Method, ReduceTrace, Reflection, Screens, Strategy, Trajectory
from combee.errors import ConfigError, RunFailedError
from combee.tasks.base import Sample, Score

C = TypeVar("C")
U = TypeVar("U")


@runtime_checkable
class BatchSchedule(Protocol):
    """Chooses each iteration's batch size and learns from how long iterations took."""

    def next_size(self, *, epoch: int, remaining: int) -> int: ...

    def record(self, *, size: int, wall_s: float) -> None: ...


@runtime_checkable
class ProfiledSchedule(BatchSchedule, Protocol):
    """A schedule that profiles batch sizes (the controller): what it measured and chose, for
    the run's profile file and results; optional."""

    decisions: Sequence[Any]

    @property
    def chosen(self) -> int | None: ...

    def profile(self) -> dict[str, Any]: ...


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
    max_failed_share: float = 0.5
    """The run stops with :class:`RunFailedError` when an iteration loses more than this share
    of its samples to failed calls (1.0: never)."""
    pipeline: bool = False
    """Start the next batch's map (rollouts and reflections) as soon as this batch's map is done,
    against this batch's starting context, so it overlaps this batch's reduce: each pipelined
    batch learns from a context one update old (``staleness`` 1 in its report)."""


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
    extra: dict[str, Any] = field(default_factory=dict)
    """Method-specific figures for the run's metrics (GEPA: candidates, acceptance)."""


@dataclass
class LoopOutcome(Generic[C]):
    final_context: C
    best_context: C
    best_val_accuracy: float | None
    iterations: int
    train_seconds: float
    failures: list[SampleFailure] = field(default_factory=list)


VALIDATE = "validate"
"""The label of the loop's validation, as a phase and as an evaluation."""


class LoopObserver:
    """Hooks for progress display and run recording; every hook is optional.

    The training loop calls the iteration hooks, and the evaluation hooks around each validation
    (label :data:`VALIDATE`, between an iteration's start and end); the run engine
    (:mod:`combee.api`) also calls the run-level ones (test evaluations, batch size decisions).
    """

    def on_run_start(self, config: Mapping[str, Any]) -> None:
        """The run's settings, as ``config.json`` records them, once they are all resolved."""
        return None

    def on_plan(self, plan: Any) -> None:
        """The run's plan (:class:`combee.plan.RunPlan`): the calls it will make, before the
        first."""
        return None

    def on_iteration_start(self, epoch: int, iteration: int, batch_size: int) -> None:
        return None

    def on_sample_done(self) -> None:
        return None

    def on_phase(self, phase: str) -> None:
        return None

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        return None

    def on_evaluation_start(self, label: str, samples: int) -> None:
        return None

    def on_evaluation_end(self, label: str, evaluation: Evaluation, seconds: float) -> None:
        return None

    def on_batch_decision(self, decision: BatchDecision) -> None:
        return None

    def on_checkpoint(self, state: LoopState[Any]) -> None:
        """Where the loop stands after an iteration (its metrics already reported)."""
        return None

    def on_run_end(self, summary: Mapping[str, Any] | None) -> None:
        """The run's final results (``final_results.json``), once written; None when the run
        stopped on an error or an interrupt (it may be resumed)."""
        return None


class ObserverGroup(LoopObserver):
    """Several observers as one, called in order."""

    def __init__(self, observers: Sequence[LoopObserver]) -> None:
        self.observers = list(observers)

    def on_run_start(self, config: Mapping[str, Any]) -> None:
        for observer in self.observers:
            observer.on_run_start(config)

    def on_plan(self, plan: Any) -> None:
        for observer in self.observers:
            observer.on_plan(plan)

    def on_iteration_start(self, epoch: int, iteration: int, batch_size: int) -> None:
        for observer in self.observers:
            observer.on_iteration_start(epoch, iteration, batch_size)

    def on_sample_done(self) -> None:
        for observer in self.observers:
            observer.on_sample_done()

    def on_phase(self, phase: str) -> None:
        for observer in self.observers:
            observer.on_phase(phase)

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        for observer in self.observers:
            observer.on_iteration_end(report)

    def on_evaluation_start(self, label: str, samples: int) -> None:
        for observer in self.observers:
            observer.on_evaluation_start(label, samples)

    def on_evaluation_end(self, label: str, evaluation: Evaluation, seconds: float) -> None:
        for observer in self.observers:
            observer.on_evaluation_end(label, evaluation, seconds)

    def on_batch_decision(self, decision: BatchDecision) -> None:
        for observer in self.observers:
            observer.on_batch_decision(decision)

    def on_checkpoint(self, state: LoopState[Any]) -> None:
        for observer in self.observers:
            observer.on_checkpoint(state)

    def on_run_end(self, summary: Mapping[str, Any] | None) -> None:
        for observer in self.observers:
            observer.on_run_end(summary)


async def run_loop(
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
    executor: Executor | None = None,
    resume: LoopState[C] | None = None,
) -> LoopOutcome[C]:
    """Learn a context from ``train_samples``; keep the best one on ``val_samples``.

    The map step of every batch (and each validation) runs on ``executor`` (default: concurrent
    tasks on this event loop); the reduce runs here, with ``strategy``. After each iteration
    the observer gets a :class:`LoopState`; given back as ``resume`` (with the same samples
    and settings), the loop continues from there as if it had never stopped.
    """
    watch = observer or LoopObserver()
    run_on = executor or AsyncioExecutor()
    rng = random.Random(config.seed)
    parts: dict[str, object] = {"strategy": strategy, "schedule": schedule, "method": method}
    best_context, best_val = context, None
    iteration = 0
    all_failures: list[SampleFailure] = []
    first_epoch, earlier_s = 1, 0.0
    if resume is not None:
        context, best_context, best_val = resume.context, resume.best_context, resume.best_val
        iteration, first_epoch, earlier_s = resume.iteration, resume.epoch, resume.train_seconds
        all_failures = list(resume.failures)
        set_rng_state(rng, resume.rng)
        restore_parts(parts, resume.parts)
    started = time.perf_counter() - earlier_s
    index_of = {id(sample): index for index, sample in enumerate(train_samples)}
    for epoch in range(first_epoch, config.epochs + 1):
        if resume is not None and epoch == resume.epoch:
            order = [train_samples[index] for index in resume.order]
            position = resume.position
        else:
            order = list(train_samples)
            rng.shuffle(order)
            position = 0
        ahead: tuple[list[Sample], asyncio.Task[list[MapOutcome]]] | None = None
        while position < len(order):
            mapped: asyncio.Task[list[MapOutcome]] | None = None
            if ahead is not None:  # pipelined: this batch was mapped during the last reduce
                batch, mapped = ahead
                ahead = None
            else:
                batch = order[position : position + _next_size(schedule, epoch, order, position)]
            position += len(batch)
            iteration += 1
            watch.on_iteration_start(epoch, iteration, len(batch))

            def map_ahead(
                start: C = context,
                at: int = position,
                epoch: int = epoch,
                order: list[Sample] = order,
            ) -> None:
                nonlocal ahead
                if config.pipeline and at < len(order):
                    upcoming = order[at : at + _next_size(schedule, epoch, order, at)]
                    ahead = (upcoming, asyncio.ensure_future(run_on.map(
                        method, start, upcoming, reflect=True, score=score,
                        on_done=watch.on_sample_done,
                    )))  # fmt: skip

            try:
                report = await _iteration(
                    method, strategy, context, batch, (epoch, iteration), watch, run_on, score,
                    mapped=mapped, after_map=map_ahead,
                )  # fmt: skip
            except BaseException:
                if ahead is not None:
                    ahead[1].cancel()
                raise
            if config.pipeline:
                report.extra["staleness"] = 0 if mapped is None else 1
            schedule.record(size=len(batch), wall_s=report.wall_s)
            context = report.context
            all_failures.extend(report.failures)
            if len(report.failures) > config.max_failed_share * len(batch):
                if ahead is not None:
                    ahead[1].cancel()
                watch.on_iteration_end(report)  # what it did learn is kept
                raise _too_many_failures(report, config.max_failed_share)
            epoch_done = position >= len(order)
            due = config.val_every > 0 and iteration % config.val_every == 0
            if val_samples and (due or epoch_done):
                watch.on_phase(VALIDATE)
                # Announced as an evaluation: its samples are counted as its own, not training's.
                watch.on_evaluation_start(VALIDATE, len(val_samples))
                validating = time.perf_counter()
                validation = await evaluate(
                    method, context, val_samples, score=score, executor=run_on,
                    on_done=watch.on_sample_done,
                )  # fmt: skip
                watch.on_evaluation_end(VALIDATE, validation, time.perf_counter() - validating)
                report.val_accuracy = validation.accuracy()
                # A score taken while calls fail says nothing about the context.
                whole = not validation.failures
                if not whole:
                    report.extra["val_failed_samples"] = len(validation.failures)
                if whole and (best_val is None or report.val_accuracy > best_val):
                    best_context, best_val = context, report.val_accuracy
            watch.on_iteration_end(report)
            watch.on_checkpoint(
                LoopState(
                    epoch=epoch,
                    iteration=iteration,
                    position=position,
                    order=[index_of[id(sample)] for sample in order],
                    rng=rng_state(rng),
                    context=context,
                    best_context=best_context,
                    best_val=best_val,
                    train_seconds=time.perf_counter() - started,
                    failures=list(all_failures),
                    parts=part_states(parts),
                )
            )
    if best_val is None:
        best_context = context
    return LoopOutcome(
        final_context=context,
        best_context=best_context,
        best_val_accuracy=best_val,
        iterations=iteration,
        train_seconds=time.perf_counter() - started,
        failures=all_failures,
    )


def _next_size(schedule: BatchSchedule, epoch: int, order: Sequence[Sample], at: int) -> int:
    size = schedule.next_size(epoch=epoch, remaining=len(order) - at)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(
            f"schedule {type(schedule).__name__} asked for {size!r} samples; "
            "a batch needs a whole number of at least 1",
            setting="batch_size",
        )
    return size


def _too_many_failures(report: IterationReport[Any, Any], share: float) -> RunFailedError:
    first = report.failures[0]
    return RunFailedError(
        f"iteration {report.iteration} lost {len(report.failures)} of {report.batch_size} "
        f"samples to failed calls, more than the {share:.0%} allowed (max_failed_share); "
        f"the first, in {first.stage}: {first.error}"
    )


async def _iteration(
    method: Method[C, U],
    strategy: Strategy,
    snapshot: C,
    batch: Sequence[Sample],
    position: tuple[int, int],
    watch: LoopObserver,
    executor: Executor,
    score: Callable[[str, Sample], Score],
    *,
    mapped: Awaitable[list[MapOutcome]] | None = None,
    after_map: Callable[[], None] | None = None,
) -> IterationReport[C, U]:
    """One batch: its map (or the one already ``mapped``), then ``after_map`` (the pipeline
    starts the next batch there), tally, reduce and apply."""
    started = time.perf_counter()
    watch.on_phase("generate + reflect")
    if mapped is None:
        mapped = executor.map(
            method, snapshot, batch, reflect=True, score=score, on_done=watch.on_sample_done
        )
    outcomes = await mapped
    if after_map is not None:
        after_map()
    trajectories = [o.trajectory for o in outcomes if o.trajectory is not None]
    reflections: list[Reflection] = [o.reflection for o in outcomes if o.reflection is not None]
    failures = [o.failure for o in outcomes if o.failure is not None]
    screened: dict[str, int] = {}
    if isinstance(method, Screens):  # a method may keep out reflections it must not learn from
        reflections, screened = method.screen(reflections)
    context = method.tally(snapshot, reflections)
    watch.on_phase("reduce")
    trace = await strategy.reduce(method, context, reflections)
    if trace.update is not None:
        context = method.apply(context, trace.update)
    epoch, iteration = position
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
        extra={"screened_out": screened} if screened else {},
    )
