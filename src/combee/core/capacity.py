"""How many level-1 groups a scan reduce deals its items into.

The paper fixes ``k = floor(sqrt(n))``. That ignores how much one curate call can write: a
group of 16 reflections whose call can write 9 operations loses 7 lessons whatever the model.
With ``capacity`` groups the method says how many reflections one call can turn into updates
(its reply bound, its context window, the length of what it writes) and the strategy deals
the ``p * n`` copies into enough groups that none holds more, never fewer than ``sqrt``'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from combee.core.types import Reflection

GROUP_RULES = ("capacity", "sqrt")
"""``capacity``: groups no larger than one call can handle (the default); ``sqrt``: the
paper's ``floor(sqrt(n))`` groups."""

SINGLE_CALL_BELOW = 4
"""With fewer items than this one curate call suffices."""

C_contra = TypeVar("C_contra", contravariant=True)


@dataclass(frozen=True)
class CallCapacity:
    """What one call of a method can take, as the method measured it."""

    per_call: int
    """The most reflections one curate call can turn into updates."""
    reason: str
    """How ``per_call`` was measured, in words."""


@runtime_checkable
class SizesCalls(Protocol[C_contra]):
    """An optional capability of a method: measure how many reflections one curate call can
    handle against ``context`` (the ``capacity`` group rule needs it)."""

    def call_capacity(
        self, context: C_contra, reflections: Sequence[Reflection]
    ) -> CallCapacity: ...

    def merge_capacity(self, context: C_contra, updates: Sequence[Any]) -> int | None:
        """How many of ``updates`` (of their mean size) one merge call can read (None: no
        limit known)."""
        ...


@dataclass(frozen=True)
class GroupChoice:
    """The level-1 group count a reduction used, and why."""

    rule: str
    count: int
    fan_in: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sqrt_groups(n: int) -> int:
    """The paper's level-1 group count: one for a handful of items, else ``floor(sqrt(n))``."""
    return 1 if n < SINGLE_CALL_BELOW else math.isqrt(n)


def choose_groups(
    n: int, *, p: int, fan_in: int, rule: str, capacity: CallCapacity | None
) -> GroupChoice:
    """The level-1 group count for ``n`` items copied ``p`` times under ``rule``.

    ``capacity`` groups: at least ``sqrt``'s count, and enough that no group holds more than
    ``capacity.per_call`` copies (at most one copy per group: ``p * n`` groups). Without a
    measured capacity (a method that cannot size its calls) the rule falls back to ``sqrt`` and
    says so.
    """
    base = sqrt_groups(n)
    if rule == "sqrt":
        return GroupChoice("sqrt", base, fan_in, f"floor(sqrt({n})) groups (the paper's rule)")
    if capacity is None:
        return GroupChoice(
            "sqrt", base, fan_in, "capacity asked for, but the method cannot size its calls"
        )
    if n < SINGLE_CALL_BELOW and n <= capacity.per_call:
        return GroupChoice("capacity", 1, fan_in, f"{n} reflections fit one call")
    copies = p * n
    needed = math.ceil(copies / max(1, capacity.per_call))
    count = min(copies, max(base, needed))
    if needed > base:
        why = (
            f"{copies} copies ({n} reflections x p={p}) at most {capacity.per_call} per call "
            f"need {count} groups, more than floor(sqrt({n}))={base}"
        )
    else:
        why = f"floor(sqrt({n}))={base} groups already hold at most {capacity.per_call} per call"
    return GroupChoice("capacity", count, fan_in, f"{why}; {capacity.reason}")
