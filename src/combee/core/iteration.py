"""One iteration of the training loop: map a batch, tally, reduce, apply."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from combee.core.executor import Executor, MapOutcome, all_or_none
from combee.core.gate import GATE, OutcomeGate
from combee.core.loop_observer import LoopObserver
from combee.core.loop_reports import IterationReport
from combee.core.types import Method, Reflection, Screens, Strategy
from combee.errors import RunFailedError
from combee.tasks.base import Sample, Score

C = TypeVar("C")
U = TypeVar("U")


async def map_batch(
    executor: Executor,
    method: Method[Any, Any],
    context: Any,
    batch: Sequence[Sample],
    gate: OutcomeGate[Any, Any] | None,
    score: Callable[[str, Sample], Score],
    on_done: Callable[[], None],
) -> list[MapOutcome]:
    """The map step of ``batch``: rollouts and reflections of the samples it learns from, and
    rollouts alone of those ``gate`` holds out (last, in the batch's order)."""
    learn, held = gate.hold_out(batch) if gate is not None else (list(batch), [])
    if not held:
        return await executor.map(
            method, context, learn, reflect=True, score=score, on_done=on_done
        )
    learned, scored = await all_or_none([
        executor.map(method, context, learn, reflect=True, score=score, on_done=on_done),
        executor.map(method, context, held, reflect=False, score=score, on_done=on_done),
    ])  # fmt: skip
    return [*learned, *scored]


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
    gate: OutcomeGate[C, U] | None = None,
) -> IterationReport[C, U]:
    """One batch: its map (or the one already ``mapped``, by :func:`map_batch`), then
    ``after_map`` (the pipeline starts the next batch there), tally, reduce, the ``gate``'s
    check, and apply."""
    started = time.perf_counter()
    watch.on_phase("generate + reflect")
    if mapped is None:
        mapped = map_batch(executor, method, snapshot, batch, gate, score, watch.on_sample_done)
    outcomes = await mapped
    if after_map is not None:
        after_map()
    held_out = len(gate.hold_out(batch)[1]) if gate is not None else 0
    held = outcomes[len(outcomes) - held_out :] if held_out else []
    trajectories = [o.trajectory for o in outcomes if o.trajectory is not None]
    reflections: list[Reflection] = [o.reflection for o in outcomes if o.reflection is not None]
    failures = [o.failure for o in outcomes if o.failure is not None]
    screened: dict[str, int] = {}
    extra: dict[str, Any] = {}
    if isinstance(method, Screens):  # a method may keep out reflections it must not learn from
        reflections, screened = method.screen(reflections)
    if screened:
        extra["screened_out"] = screened
    if held:  # rolled out for the gate, not learned from (a failed one is counted as failed)
        extra["held_out"] = sum(1 for o in held if o.failure is None)
    context = method.tally(snapshot, reflections)
    watch.on_phase("reduce")
    trace = await strategy.reduce(method, context, reflections)
    update = trace.update
    if update is not None and gate is not None:
        watch.on_phase(GATE)
        update, checked = await gate.check(snapshot, context, update, len(batch), held)
        if checked is not None:
            extra["gate"] = checked.to_dict()
    if update is not None:
        context = method.apply(context, update)
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
        extra=extra,
    )


def too_many_failures(report: IterationReport[Any, Any], share: float) -> RunFailedError:
    """The error that stops a run whose iteration lost more than ``share`` of its samples."""
    first = report.failures[0]
    return RunFailedError(
        f"iteration {report.iteration} lost {len(report.failures)} of {report.batch_size} "
        f"samples to failed calls, more than the {share:.0%} allowed (max_failed_share); "
        f"the first, in {first.stage}: {first.error}"
    )
