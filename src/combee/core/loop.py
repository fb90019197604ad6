"""The training loop: epochs of seeded batches; map concurrently, tally, reduce, apply, validate.

Its parts: the batch sizes (:mod:`combee.core.batch_schedule`), one iteration
(:mod:`combee.core.iteration`), the observer hooks (:mod:`combee.core.loop_observer`) and what
the loop reports (:mod:`combee.core.loop_reports`); their names are importable from here too.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from combee.core.batch_schedule import (
    BatchSchedule,
    FixedBatchSize,
    ProfiledSchedule,
    next_batch_size,
)
from combee.core.evaluate import SampleFailure, evaluate
from combee.core.executor import AsyncioExecutor, Executor, MapOutcome
from combee.core.gate import gate_of
from combee.core.iteration import map_batch, run_iteration, too_many_failures
from combee.core.loop_observer import VALIDATE, LoopObserver, ObserverGroup
from combee.core.loop_reports import IterationReport, LoopOutcome
from combee.core.loop_settings import LoopSettings
from combee.core.loop_state import (
    LoopState,
    part_states,
    restore_parts,
    rng_state,
    set_rng_state,
)
from combee.core.types import Method, Strategy
from combee.tasks.base import Sample, Score

C = TypeVar("C")
U = TypeVar("U")

__all__ = [
    "VALIDATE",
    "BatchSchedule",
    "FixedBatchSize",
    "IterationReport",
    "LoopObserver",
    "LoopOutcome",
    "ObserverGroup",
    "ProfiledSchedule",
    "run_loop",
]


DEFAULT_SETTINGS = LoopSettings()
"""The loop's settings when a caller gives none."""


async def run_loop(
    method: Method[C, U],
    strategy: Strategy,
    context: C,
    train_samples: Sequence[Sample],
    val_samples: Sequence[Sample],
    *,
    schedule: BatchSchedule,
    score: Callable[[str, Sample], Score],
    config: LoopSettings = DEFAULT_SETTINGS,
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
    gate = gate_of(
        method, run_on, score, on=config.gate, validation=val_samples,
        samples=config.gate_samples, margin=config.gate_margin, share=config.gate_share,
        seed=config.seed,
    )  # fmt: skip
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
                batch = order[
                    position : position + next_batch_size(schedule, epoch, order, position)
                ]
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
                    upcoming = order[at : at + next_batch_size(schedule, epoch, order, at)]
                    ahead = (upcoming, asyncio.ensure_future(map_batch(
                        run_on, method, start, upcoming, gate, score, watch.on_sample_done
                    )))  # fmt: skip

            try:
                report = await run_iteration(
                    method, strategy, context, batch, (epoch, iteration), watch, run_on, score,
                    mapped=mapped, after_map=map_ahead, gate=gate,
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
                raise too_many_failures(report, config.max_failed_share)
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
