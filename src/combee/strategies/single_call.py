"""The one-curate-call reduction shared by ``sequential`` and ``naive``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from combee.core.types import Method, ReduceTrace, Reflection

C = TypeVar("C")
U = TypeVar("U")


async def curate_once(
    method: Method[C, U], context: C, reflections: Sequence[Reflection]
) -> ReduceTrace[U]:
    """All reflections in one curate call, no merge."""
    trace: ReduceTrace[U] = ReduceTrace()
    if reflections:
        trace.levels.append([list(range(len(reflections)))])
        trace.update = await method.curate(context, reflections)
    return trace
