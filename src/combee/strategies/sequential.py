"""``sequential``: batch size 1, one curate call per sample (ACE as published)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from combee.core.types import Method, ReduceTrace, Reflection
from combee.strategies.single_call import curate_once

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
