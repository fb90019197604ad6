"""How many LLM calls a run will make, counted before it starts (the run's plan).

A strategy says how many method steps (``curate``, ``merge``, ``condense``) one reduction of
``n`` reflections takes (:class:`PlansReduce`); a method says how many calls of which role each
step, each rollout and each reflection makes (:class:`MethodCalls`). Where a count is only
known at run time (a group count sized on the replies, a merge a method may skip), it is a
range: :class:`CallRange`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, runtime_checkable


@dataclass(frozen=True)
class CallRange:
    """A number of calls known to lie within ``least`` and ``most`` (equal: known exactly)."""

    least: int
    most: int

    @classmethod
    def exactly(cls, count: int) -> CallRange:
        return cls(count, count)

    def __add__(self, other: CallRange) -> CallRange:
        return CallRange(self.least + other.least, self.most + other.most)

    def times(self, least: int, most: int | None = None) -> CallRange:
        """Each of these calls made ``least`` to ``most`` times (``least`` when not given)."""
        return CallRange(self.least * least, self.most * (least if most is None else most))

    @property
    def exact(self) -> bool:
        return self.least == self.most

    def __str__(self) -> str:
        return f"{self.least:,}" if self.exact else f"{self.least:,}-{self.most:,}"


NONE = CallRange(0, 0)


def total(ranges: Mapping[str, CallRange], into: dict[str, CallRange]) -> None:
    """Add each of ``ranges`` to ``into``'s entry of the same name."""
    for name, calls in ranges.items():
        into[name] = into.get(name, NONE) + calls


@runtime_checkable
class PlansReduce(Protocol):
    """An optional capability of a strategy: the method steps one reduction of ``n``
    reflections takes, by step (``curate``, ``merge``, ``condense``)."""

    def reduce_calls(self, n: int) -> dict[str, CallRange]: ...


@runtime_checkable
class SaysCalls(Protocol):
    """A method that says the calls it makes (its class's ``CALLS``); optional: a run's plan
    counts them, and gives no count for a method that does not say them."""

    CALLS: ClassVar[MethodCalls]


@dataclass(frozen=True)
class MethodCalls:
    """The LLM calls of a method, by role, for a run's plan."""

    rollout: Mapping[str, int] | None
    """Calls one rollout makes (training or evaluation); None: not known in advance (an agent's
    episode takes as many steps as it needs)."""
    reflect: Mapping[str, int]
    """Calls one reflection makes."""
    steps: Mapping[str, tuple[str, int, int]] = field(default_factory=dict)
    """For each reduce step (``curate``, ``merge``, ``condense``): the role of its call and how
    many calls one step makes at least and at most (a merge of one update needs none)."""
