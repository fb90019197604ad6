"""Scan reduce: aggregate many items through a tree of small concurrent calls.

Level 1 curates ``k`` augmented-shuffled groups of the ``n`` items concurrently (the paper's
``floor(sqrt(n))`` unless the caller chose a count, see :mod:`combee.core.capacity`);
the resulting local updates are merged by one call, or, when there are more than ``fan_in`` of
them, by further levels of about ``sqrt(m)`` concurrent merges each until one update remains.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from combee.core.capacity import SINGLE_CALL_BELOW, sqrt_groups
from combee.core.shuffle import augmented_groups, group_sizes
from combee.core.types import ReduceTrace
from combee.errors import LLMCallError

T = TypeVar("T")
U = TypeVar("U")

log = logging.getLogger(__name__)

__all__ = ["SINGLE_CALL_BELOW", "level_one_groups", "merge_groups", "scan_reduce"]


def level_one_groups(
    n: int, *, p: int, rng: random.Random, count: int | None = None
) -> list[list[int]]:
    """The level-1 groups for ``n`` items: ``count`` augmented-shuffled groups (default: one
    group for ``n < 4``, else ``floor(sqrt(n))``); one group is the items once each."""
    k = sqrt_groups(n) if count is None else count
    if k <= 1:
        return [list(range(n))]
    return augmented_groups(n, p=p, k=k, rng=rng)


def merge_groups(m: int, *, fan_in: int) -> list[list[int]]:
    """Split ``m`` updates into contiguous groups for one merge level: one group when
    ``m <= fan_in``, else ``floor(sqrt(m))`` balanced groups (never more than ``fan_in`` each)."""
    if m <= fan_in:
        return [list(range(m))]
    k = max(math.isqrt(m), math.ceil(m / fan_in))
    groups: list[list[int]] = []
    start = 0
    for size in group_sizes(m, k):
        groups.append(list(range(start, start + size)))
        start += size
    return groups


DEFAULT_FAN_IN = 32
"""The most updates one merge call reads, unless told otherwise."""


async def scan_reduce(
    items: Sequence[T],
    curate: Callable[[Sequence[T]], Awaitable[U]],
    merge: Callable[[Sequence[U]], Awaitable[U]],
    *,
    p: int = 2,
    fan_in: int | Callable[[Sequence[U]], int] = DEFAULT_FAN_IN,
    rng: random.Random,
    groups: int | None = None,
) -> ReduceTrace[U]:
    """Curate ``items`` in ``groups`` concurrent groups (default ``floor(sqrt(n))``), then merge
    level by level, at most ``fan_in`` updates per merge call, into one update. A callable
    ``fan_in`` is asked before each merge level with that level's updates (what a merge call
    can read depends on how large they turned out).

    A group whose call fails (:class:`LLMCallError`) is logged and dropped; the others go on.
    ``trace.update`` is None only when every level-1 call failed or there were no items.
    """
    if isinstance(fan_in, int) and fan_in < 2:
        raise ValueError(f"fan_in must be at least 2 (got {fan_in})")
    trace: ReduceTrace[U] = ReduceTrace()
    if not items:
        return trace
    dealt = level_one_groups(len(items), p=p, rng=rng, count=groups)
    trace.levels.append(dealt)
    updates = await _run_level(
        [curate([items[i] for i in group]) for group in dealt], level=1, what="curate"
    )
    level = 2
    while len(updates) > 1:
        limit = fan_in(updates) if callable(fan_in) else fan_in
        parts = merge_groups(len(updates), fan_in=max(2, limit))
        trace.levels.append(parts)
        merged = await _run_level(
            [merge([updates[i] for i in part]) for part in parts], level=level, what="merge"
        )
        if not merged:
            # Every merge failed: keep one local update rather than lose the whole iteration.
            log.warning("level %d: every merge call failed; keeping the first local update", level)
            updates = updates[:1]
            break
        updates = merged
        level += 1
    trace.update = updates[0] if updates else None
    return trace


async def _run_level(calls: list[Awaitable[U]], *, level: int, what: str) -> list[U]:
    results = await asyncio.gather(*calls, return_exceptions=True)
    kept: list[U] = []
    for index, result in enumerate(results):
        if isinstance(result, LLMCallError):
            log.warning("level %d %s call %d failed and is skipped: %s", level, what, index, result)
        elif isinstance(result, BaseException):
            raise result
        else:
            kept.append(result)
    return kept
