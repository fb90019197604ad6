"""One iteration of the training loop: map a batch, tally, reduce, apply."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from combee.core.executor import Executor, MapOutcome
from combee.core.loop_observer import LoopObserver
from combee.core.loop_reports import IterationReport
from combee.core.types import Method, Reflection, Screens, Strategy
from combee.errors import RunFailedError
from combee.tasks.base import Sample, Score

C = TypeVar("C")
U = TypeVar("U")


async def run_iteration(
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


def too_many_failures(report: IterationReport[Any, Any], share: float) -> RunFailedError:
    """The error that stops a run whose iteration lost more than ``share`` of its samples."""
    first = report.failures[0]
    return RunFailedError(
        f"iteration {report.iteration} lost {len(report.failures)} of {report.batch_size} "
        f"samples to failed calls, more than the {share:.0%} allowed (max_failed_share); "
        f"the first, in {first.stage}: {first.error}"
    )
