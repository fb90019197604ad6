"""``combee``: augmented shuffle + scan reduce over a batch of reflections."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, TypeVar

from combee.core.call_counts import CallRange
from combee.core.capacity import SizesCalls, choose_groups, sqrt_groups
from combee.core.loop_state import rng_state, set_rng_state
from combee.core.scan import scan_reduce
from combee.core.types import Method, ReduceTrace, Reflection
from combee.strategies.settings import CombeeSettings

C = TypeVar("C")
U = TypeVar("U")


class CombeeStrategy:
    """Duplicate each reflection ``duplication`` (p) times, shuffle (seeded), curate the groups
    concurrently against the same context, merge their local updates (more levels past
    ``fan_in``); ``combee`` holds these settings (:class:`CombeeSettings`), kept whole as
    :attr:`settings`.

    ``groups``: ``capacity`` (the default) deals the copies into as many groups as keep each
    within what one curate call can handle, as the method measures it (never fewer than
    ``floor(sqrt(n))``; see :mod:`combee.core.capacity`); ``sqrt`` is the paper's
    ``floor(sqrt(n))``."""

    name = "combee"

    def __init__(self, combee: CombeeSettings = CombeeSettings(), *, seed: int = 0) -> None:
        self.settings = combee
        self._rng = random.Random(seed)

    def batch_size(self, requested: int) -> int:
        return requested

    def state(self) -> Any:
        """The shuffle generator's state, for a run's checkpoint."""
        return rng_state(self._rng)

    def restore(self, state: Any) -> None:
        set_rng_state(self._rng, state)

    def reduce_calls(self, n: int) -> dict[str, CallRange]:
        """The curate steps are the level-1 groups: ``floor(sqrt(n))`` under ``sqrt``; under
        ``capacity`` sized at run time on the replies, from that many to one per copy
        (``p * n``). The merge steps over two or more updates: at least one, at most one fewer
        than the groups (each such step leaves one update fewer)."""
        if not n:
            return {}
        least = sqrt_groups(n)
        most = (
            least if self.settings.groups == "sqrt" else max(least, self.settings.duplication * n)
        )
        if most == 1:
            return {"curate": CallRange.exactly(1)}
        return {"curate": CallRange(least, most), "merge": CallRange(min(1, least - 1), most - 1)}

    async def reduce(
        self, method: Method[C, U], context: C, reflections: Sequence[Reflection]
    ) -> ReduceTrace[U]:
        async def curate(group: Sequence[Reflection]) -> U:
            return await method.curate(context, group)

        async def merge(updates: Sequence[U]) -> U:
            return await method.merge(context, updates)

        sizer = (
            method
            if self.settings.groups == "capacity" and isinstance(method, SizesCalls)
            else None
        )

        capacity = None
        if sizer is not None and reflections:
            capacity = sizer.call_capacity(context, reflections)
        first = choose_groups(
            len(reflections),
            p=self.settings.duplication,
            fan_in=self.settings.fan_in,
            rule=self.settings.groups,
            capacity=capacity,
        )
        merge_limits: list[int] = []

        def fan_in(updates: Sequence[U]) -> int:
            # Sized on the updates themselves: a merged update holds many local ones.
            limit = self.settings.fan_in
            if sizer is not None:
                fits = sizer.merge_capacity(context, updates)
                limit = (
                    self.settings.fan_in
                    if fits is None
                    else max(2, min(self.settings.fan_in, fits))
                )
            merge_limits.append(limit)
            return limit

        trace = await scan_reduce(
            reflections,
            curate,
            merge,
            p=self.settings.duplication,
            fan_in=fan_in,
            rng=self._rng,
            groups=first.count,
        )
        trace.groups = {**first.to_dict(), "fan_in": merge_limits or [first.fan_in]}
        return trace
