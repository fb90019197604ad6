"""Per-role usage, cost and a timeline of calls."""

from __future__ import annotations

import copy
import dataclasses
import time
from dataclasses import dataclass

from combee.llm.types import Completion, RoleUsage


@dataclass(frozen=True)
class Prices:
    """USD per million tokens."""

    prompt_per_mtok: float
    completion_per_mtok: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.prompt_per_mtok + completion_tokens * self.completion_per_mtok
        ) / 1e6


@dataclass(frozen=True)
class CallRecord:
    """One logical call as the client saw it (times from ``time.perf_counter()``)."""

    role: str
    start: float
    """When the call was issued, before waiting for a concurrency slot."""
    sent: float
    """When the first attempt left (equal to ``start`` for a cache hit)."""
    end: float
    ok: bool
    attempts: int
    """Backend attempts made; 0 for a cache hit."""
    error: str | None
    """A short reason when not ok."""


class Accounting:
    """Accumulates :class:`RoleUsage` per role and the list of :class:`CallRecord`.

    Only touched from the event loop thread, so it needs no lock. With ``prices``, each reply
    the endpoint serves is priced.
    """

    def __init__(self, prices: Prices | None = None) -> None:
        self._roles: dict[str, RoleUsage] = {}
        self.calls: list[CallRecord] = []
        self._prices = prices

    def role(self, role: str) -> RoleUsage:
        usage = self._roles.get(role)
        if usage is None:
            usage = self._roles[role] = RoleUsage()
        return usage

    def served(
        self, role: str, completion: Completion, *, start: float, sent: float, attempts: int
    ) -> Completion:
        """A reply the endpoint produced (cache hits go through :meth:`cache_hit`): its usage
        and its call record (asked at ``start``, first sent at ``sent``, ended now); the reply
        is returned with its cost when there are prices."""
        if self._prices is not None:
            cost = self._prices.cost(completion.prompt_tokens, completion.completion_tokens)
            completion = dataclasses.replace(completion, cost=cost)
        self.calls.append(CallRecord(role, start, sent, time.perf_counter(), True, attempts, None))
        self._spent(role, completion)
        return completion

    def _spent(self, role: str, completion: Completion) -> None:
        usage = self.role(role)
        usage.calls += 1
        usage.prompt_tokens += completion.prompt_tokens
        usage.completion_tokens += completion.completion_tokens
        usage.latency_s += completion.latency_s
        if completion.cost is not None:
            usage.cost += completion.cost

    def cache_hit(self, role: str, completion: Completion, *, start: float) -> None:
        """A reply from the cache (asked at ``start``): counted as a call, with no tokens,
        latency or cost spent; the time it took when first made is kept apart (``replayed_s``)."""
        self.calls.append(CallRecord(role, start, start, time.perf_counter(), True, 0, None))
        usage = self.role(role)
        usage.calls += 1
        usage.cached_calls += 1
        usage.replayed_s += completion.latency_s

    def spent_earlier(self, role: str, completion: Completion, *, start: float) -> None:
        """A reply from the cache that this same run paid for in an attempt that stopped before
        its checkpoint (replayed on resume): counted as spent, tokens and cost as first
        charged, since no checkpoint counted it."""
        self.calls.append(CallRecord(role, start, start, time.perf_counter(), True, 0, None))
        self._spent(role, completion)

    def failed(self, role: str, *, start: float, sent: float, attempts: int, reason: str) -> None:
        """A call that failed for good, and its call record."""
        self.calls.append(
            CallRecord(role, start, sent, time.perf_counter(), False, attempts, reason)
        )
        usage = self.role(role)
        usage.calls += 1
        usage.failed_calls += 1

    def absorb(self, role: str, other: RoleUsage) -> None:
        """Add usage spent elsewhere (calls made by a copy of this client in another process)."""
        usage = self.role(role)
        for name in ("calls", "failed_calls", "cached_calls", "retries", "reasks", "prompt_tokens",
                     "completion_tokens", "latency_s", "replayed_s", "cost"):  # fmt: skip
            setattr(usage, name, getattr(usage, name) + getattr(other, name))
        for kind, count in other.retries_by_kind.items():
            usage.retries_by_kind[kind] = usage.retries_by_kind.get(kind, 0) + count

    def retried(self, role: str, kind: str) -> None:
        usage = self.role(role)
        usage.retries += 1
        usage.retries_by_kind[kind] = usage.retries_by_kind.get(kind, 0) + 1

    def reasked(self, role: str) -> None:
        self.role(role).reasks += 1

    def snapshot(self) -> dict[str, RoleUsage]:
        return {name: copy.deepcopy(usage) for name, usage in self._roles.items()}
