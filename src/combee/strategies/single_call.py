"""The one-curate-call reduction shared by ``sequential`` and ``naive`` (and the one curate
call of ``topk`` and the ``summarize`` strategies)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TypeVar

from combee.core.call_counts import CallRange
from combee.core.types import Method, ReduceTrace, Reflection
from combee.errors import LLMCallError

log = logging.getLogger(__name__)

C = TypeVar("C")
U = TypeVar("U")


async def curate_once(
    method: Method[C, U], context: C, reflections: Sequence[Reflection]
) -> ReduceTrace[U]:
    """All reflections in one curate call, no merge. A call that fails for good costs this
    iteration its update (logged), not the run, as a failed call of a scan level does."""
    trace: ReduceTrace[U] = ReduceTrace()
    if reflections:
        trace.levels.append([list(range(len(reflections)))])
        trace.update = await curate_or_skip(method, context, reflections)
    return trace


async def curate_or_skip(
    method: Method[C, U], context: C, reflections: Sequence[Reflection]
) -> U | None:
    """One curate call; None (logged) when it fails for good."""
    try:
        return await method.curate(context, reflections)
    except LLMCallError as error:
        log.warning(
            "the curate call over %d reflections failed and is skipped: %s", len(reflections), error
        )
        return None


def one_curate_call(n: int) -> dict[str, CallRange]:
    """The reduce steps of a strategy that curates once: one curate step (none without
    reflections)."""
    return {"curate": CallRange.exactly(1)} if n else {}
