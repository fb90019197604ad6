"""Measures computed from a timeline of calls (the client's records, or the server's log)."""

from __future__ import annotations

from collections.abc import Iterable


def busy_seconds(intervals: Iterable[tuple[float, float]], start: float, end: float) -> float:
    """Length of the union of ``intervals`` clipped to ``[start, end]``."""
    clipped = sorted((max(a, start), min(b, end)) for a, b in intervals if b > start and a < end)
    total = 0.0
    current_start: float | None = None
    current_end = start
    for a, b in clipped:
        if b <= a:
            continue
        if current_start is None or a > current_end:
            if current_start is not None:
                total += current_end - current_start
            current_start, current_end = a, b
        else:
            current_end = max(current_end, b)
    if current_start is not None:
        total += current_end - current_start
    return total


def idle_fraction(intervals: Iterable[tuple[float, float]], start: float, end: float) -> float:
    """The share of ``[start, end]`` during which no request was in flight.

    ``intervals`` are the calls' ``(start, end)`` times: seen by the client, from the first attempt
    leaving it to the reply being handed back (retries and their backoff included); seen by the
    server, from a request's arrival to its reply.
    """
    span = end - start
    if span <= 0:
        return 0.0
    return max(0.0, 1.0 - busy_seconds(intervals, start, end) / span)
