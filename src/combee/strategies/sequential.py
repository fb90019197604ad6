"""``sequential``: batch size 1, one curate call per sample (ACE as published)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from combee.core.call_counts import CallRange
from combee.core.types import Method, ReduceTrace, Reflection
from combee.strategies.single_call import curate_once, one_curate_call

C = TypeVar("C")
U = TypeVar("U")


class SequentialStrategy:
    name = "sequential"

    def batch_size(self, requested: int) -> int:
        return 1

    async def reduce(
        self, method: Method[C, U], context: C, reflections: Sequence[Reflection]
    ) -> ReduceTrace[U]:
        return await curate_once(method, context, reflections)

    def reduce_calls(self, n: int) -> dict[str, CallRange]:
        return one_curate_call(n)
