"""A round's version, gated bullet by bullet before it is served (``activate=checked``).

The round's new playbook is scored on held-out traces (next-action accuracy, as
``combee eval-traces`` scores it) against the active one. When it scores lower, the bullets the
round added or changed are narrowed down by halves (:func:`combee.core.gate.narrow_down`): the
bullets that lower the score are left out of the version (an added one removed, a changed one
back as the active playbook has it), and what is left is served if it does not score lower
than the active playbook. The scorings a narrowing may make are bounded (two per halving of the
round's bullets); what is still in doubt then is left out too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field

from combee.core.gate import narrow_down
from combee.methods.ace.playbook import Playbook

Rate = Callable[[str], Awaitable[float]]
"""A playbook's text -> its next-action accuracy on the held-out traces."""


def round_bullets(start: Playbook, learned: Playbook) -> list[str]:
    """The ids of the bullets ``learned`` added to ``start`` or changed (section or text)."""
    before = {bullet.id: bullet for bullet in start.bullets}
    return [
        bullet.id
        for bullet in learned.bullets
        if (old := before.get(bullet.id)) is None
        or (old.section, old.content) != (bullet.section, bullet.content)
    ]


def without(start: Playbook, learned: Playbook, left_out: Collection[str]) -> Playbook:
    """``learned`` with the bullets ``left_out`` undone: an added one removed, a changed one as
    ``start`` has it."""
    before = {bullet.id: bullet for bullet in start.bullets}
    kept = []
    for bullet in learned.bullets:
        if bullet.id not in left_out:
            kept.append(bullet)
        elif bullet.id in before:
            kept.append(before[bullet.id])
    return learned.with_bullets(kept)


@dataclass
class GatedVersion:
    """What the gate made of a round's playbook."""

    playbook: Playbook
    left_out: list[str] = field(default_factory=list)
    """The texts of the bullets left out."""
    rate: float | None = None
    """The accuracy of what is kept (None: never scored as a whole)."""
    scorings: int = 0


async def gate_version(
    start: Playbook, learned: Playbook, rate: Rate, floor: float
) -> GatedVersion:
    """``learned`` (which scored below ``floor``, the active playbook's accuracy) without the
    round's bullets that lower its accuracy (``rate``) below ``floor``."""
    parts = round_bullets(start, learned)
    budget = 2 * max(1, len(parts).bit_length())
    scored: dict[frozenset[str], float] = {}

    async def lowers(kept: list[str]) -> bool:
        key = frozenset(kept)
        if key not in scored:
            left_out = set(parts) - key
            scored[key] = await rate(without(start, learned, left_out).render())
        return scored[key] < floor

    cleared, left_out = await narrow_down(parts, lowers, lambda: len(scored) < budget)
    by_id = {bullet.id: bullet for bullet in learned.bullets}
    return GatedVersion(
        playbook=without(start, learned, left_out),
        left_out=[by_id[bullet_id].content for bullet_id in left_out],
        rate=scored.get(frozenset(cleared)),
        scorings=len(scored),
    )
