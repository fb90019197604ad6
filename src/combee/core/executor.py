"""Where the map step runs: the rollouts (and reflections) of a batch, and evaluations.

An :class:`Executor` takes a method, a frozen context and samples, and returns one
:class:`MapOutcome` per sample, in order. :class:`AsyncioExecutor`, the default, runs them as
concurrent tasks on the running event loop (the LLM client bounds how many calls are in
flight). An executor that runs rollouts elsewhere (a process pool, a cluster) implements the
same one method, usually by calling :func:`map_sample` where the work lands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from combee.core.types import Reflection, Trajectory
from combee.errors import LLMCallError, SampleError
from combee.tasks.base import Sample, Score


@dataclass(frozen=True)
class SampleFailure:
    """A sample whose call failed for good; it is skipped, the rest go on."""

    sample_id: str
    stage: str
    error: str
    score: Score | None = None
    """What an empty answer scores, so the sample still counts (as wrong) in an accuracy."""
    kind: str | None = None
    """The error's ``kind`` when it has one: a failed call's (``429``, ``timeout``,
    ``invalid_reply``, ...) or ``invalid_step`` (an agent step that never gave a valid action)."""


@dataclass(frozen=True)
class MapOutcome:
    """What the map step made of one sample: its trajectory (when the rollout worked), its
    reflection (when asked for and it worked), or the failure that stopped it."""

    sample: Sample
    trajectory: Trajectory | None = None
    reflection: Reflection | None = None
    failure: SampleFailure | None = None


class Rollouts(Protocol):
    """The part of a method the map step needs (``reflect`` only when reflections are asked)."""

    async def rollout(self, context: Any, sample: Sample) -> Trajectory: ...

    async def reflect(self, context: Any, trajectory: Trajectory) -> Reflection: ...


class Executor(Protocol):
    """Runs the map step of a batch: ``rollout`` (and ``reflect`` when ``reflect`` is true) of
    every sample against the same ``context``. ``score`` scores an empty answer for a failed
    rollout; ``on_done`` is called once per finished sample (progress display)."""

    async def map(
        self,
        method: Rollouts,
        context: Any,
        samples: Sequence[Sample],
        *,
        reflect: bool,
        score: Callable[[str, Sample], Score] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> list[MapOutcome]: ...


async def map_sample(
    method: Rollouts,
    context: Any,
    sample: Sample,
    *,
    reflect: bool,
    score: Callable[[str, Sample], Score] | None = None,
) -> MapOutcome:
    """One sample's map step; a call that failed for good becomes the outcome's failure."""
    stage = "generate"
    trajectory = None
    try:
        trajectory = await method.rollout(context, sample)
        if not reflect:
            return MapOutcome(sample, trajectory)
        stage = "reflect"
        return MapOutcome(sample, trajectory, await method.reflect(context, trajectory))
    except (LLMCallError, SampleError) as error:
        empty = score("", sample) if score is not None and trajectory is None else None
        return MapOutcome(
            sample,
            trajectory,
            failure=SampleFailure(sample.id, stage, str(error), empty, kind=error.kind),
        )


class AsyncioExecutor:
    """Every sample as a task on the running event loop, all at once. An error that is not one
    sample's failure (an endpoint that is down, a bug) cancels the batch's other samples and is
    raised."""

    async def map(
        self,
        method: Rollouts,
        context: Any,
        samples: Sequence[Sample],
        *,
        reflect: bool,
        score: Callable[[str, Sample], Score] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> list[MapOutcome]:
        async def one(sample: Sample) -> MapOutcome:
            try:
                return await map_sample(method, context, sample, reflect=reflect, score=score)
            finally:
                if on_done is not None:
                    on_done()

        tasks: list[asyncio.Task[MapOutcome]] = []
        try:
            async with asyncio.TaskGroup() as group:
                for sample in samples:
                    tasks.append(group.create_task(one(sample)))
                    # One loop turn per sample: its first step runs and the calls of the samples
                    # before it leave, so the endpoint starts on the first prompts while later
                    # ones are still being built (with all tasks made at once, no call left
                    # before every prompt of the batch was built).
                    await asyncio.sleep(0)
        except BaseExceptionGroup as grouped:
            raise first_error(grouped) from None
        return [task.result() for task in tasks]


T = TypeVar("T")


async def all_or_none(calls: Iterable[Awaitable[T]]) -> list[T]:
    """The results of ``calls`` run concurrently, in order; the first one to fail cancels the
    others and its error is raised on its own. Unlike ``asyncio.gather``, no call is left running
    to fail later with an error nobody reads (printed as a traceback when the run stops)."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_awaited(call)) for call in calls]
    except BaseExceptionGroup as grouped:
        raise first_error(grouped) from None
    return [task.result() for task in tasks]


async def _awaited(call: Awaitable[T]) -> T:
    return await call


def first_error(grouped: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first error inside ``grouped`` (nested groups opened), to raise on its own."""
    error: BaseException = grouped
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error
