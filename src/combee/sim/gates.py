"""Gates: the scripted server holds chosen calls until all of them have arrived.

A test that wants to prove that a client overlaps its calls cannot rely on latency: on a busy
machine the client may take longer to send a wave of calls than the server takes to answer the
first one, and the wave looks sequential. A :class:`Gate` makes the proof a count instead: the
server holds each of the gate's calls until the last one has arrived, so a client that really
has them in flight at once shows them all in flight (``peak_concurrency``), whatever the load;
a client that does not overlap them leaves the gate short until its deadline, and shows less.

A call is named by its role (the request's JSON schema name: ``generator``, ``reflector``,
``gepa_proposal``, ...; None for a request without one) and its place among that role's calls,
counted from 0 in the order they reach the server (a retried call counts again).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from combee.errors import ConfigError

Call = tuple[str | None, int]
"""A role and the place of a call among that role's calls (0: its first)."""


@dataclass(frozen=True)
class Gate:
    """Calls held at the server until all of them have arrived, then let go together."""

    calls: frozenset[Call]

    def __post_init__(self) -> None:
        if not self.calls:
            raise ConfigError("sim server: a gate needs at least one call")
        if any(place < 0 for _, place in self.calls):
            raise ConfigError("sim server: a call's place among its role's calls is 0 or more")

    def __or__(self, other: Gate) -> Gate:
        """One gate holding the calls of both (e.g. a curate call and the next batch's rollouts)."""
        return Gate(self.calls | other.calls)


def wave(role: str | None, size: int, *, start: int = 0) -> Gate:
    """``size`` calls of ``role`` held together: its calls ``start`` to ``start + size - 1``."""
    if size < 1:
        raise ConfigError(f"sim server: a wave holds at least one call (got {size})")
    return Gate(frozenset((role, start + n) for n in range(size)))


def waves(role: str | None, size: int, count: int, *, every: int | None = None) -> tuple[Gate, ...]:
    """``count`` waves of ``size`` calls of ``role``, one starting every ``every`` calls
    (default ``size``: back to back; more when other calls of the role come between waves)."""
    step = size if every is None else every
    if step < size:
        raise ConfigError(f"sim server: waves of {size} calls cannot start every {step} calls")
    return tuple(wave(role, size, start=n * step) for n in range(count))


def check_disjoint(gates: Iterable[Gate]) -> None:
    """A call can be held by one gate only."""
    seen: set[Call] = set()
    for gate in gates:
        twice = seen & gate.calls
        if twice:
            raise ConfigError(f"sim server: call {min(twice, key=str)} is in two gates")
        seen |= gate.calls


class Gatekeeper:
    """Holds the calls of ``gates`` at one server, each until its gate is full or ``timeout_s``
    has passed since the call arrived (the deadline only keeps a broken client from hanging a
    test: its gate stays short and the wave shows fewer calls at once)."""

    def __init__(self, gates: Iterable[Gate], timeout_s: float) -> None:
        self._gate_of: dict[Call, int] = {}
        self._sizes: list[int] = []
        for number, gate in enumerate(gates):
            self._gate_of.update(dict.fromkeys(gate.calls, number))
            self._sizes.append(len(gate.calls))
        self._timeout_s = timeout_s
        self._seen: Counter[str | None] = Counter()
        self._arrived: Counter[int] = Counter()
        self._open: dict[int, asyncio.Event] = {}

    async def pass_through(self, role: str | None) -> None:
        """Count a call of ``role``; when a gate holds it, return once that gate is full."""
        place = self._seen[role]
        self._seen[role] += 1
        number = self._gate_of.get((role, place))
        if number is None:
            return
        opened = self._open.setdefault(number, asyncio.Event())
        self._arrived[number] += 1
        if self._arrived[number] == self._sizes[number]:
            opened.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(opened.wait(), self._timeout_s)
