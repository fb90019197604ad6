"""What GEPA's reflection calls cost, in the shape gepa reads (``total_cost``, ...)."""

from __future__ import annotations

from dataclasses import dataclass


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
