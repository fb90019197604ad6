"""What GEPA's reflection calls cost, in the shape gepa reads (``total_cost``, ...)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

Levels = list[list[list[int]]]
"""A reduction's groups, level by level (as :class:`combee.core.types.ReduceTrace` has them)."""


@dataclass
class ReflectionUsage:
    """Calls, tokens and cost of a reflection step (units reused on a retry cost nothing and
    are counted in ``memo_hits``)."""

    proposal_calls: int = 0
    merge_calls: int = 0
    summary_calls: int = 0
    """Condensing calls (the ``summarize`` and ``hier-summarize`` strategies)."""
    failed_calls: int = 0
    memo_hits: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0


class UsageTotals:
    """gepa's cost-tracking attributes, read from ``self.usage``."""

    usage: ReflectionUsage

    @property
    def total_cost(self) -> float:
        return self.usage.cost

    @property
    def total_tokens_in(self) -> int:
        return self.usage.tokens_in

    @property
    def total_tokens_out(self) -> int:
        return self.usage.tokens_out


class ReduceLog:
    """The reflection's reduce calls since the last :meth:`take`, level by level, each a group of
    the records it read (a stock reflection call is one group whose records gepa chose)."""

    def __init__(self) -> None:
        self._levels: Levels = []
        self._lock = threading.Lock()

    def add(self, levels: Sequence[Sequence[list[int]]]) -> None:
        with self._lock:
            for depth, level in enumerate(levels):
                if depth == len(self._levels):
                    self._levels.append([])
                self._levels[depth].extend(level)

    def take(self) -> Levels:
        with self._lock:
            taken, self._levels = self._levels, []
        return taken
