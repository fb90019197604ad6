"""Augmented shuffle: every item duplicated ``p`` times, shuffled, dealt into ``k`` balanced groups.

Each lesson then meets two (or ``p``) different sets of neighbours. Copies of one item never share a
group when ``k >= p`` (a copy in the same group would be wasted).
"""

from __future__ import annotations

import random


def group_sizes(total: int, k: int) -> list[int]:
    """``k`` sizes summing to ``total`` that differ by at most one."""
    base, extra = divmod(total, k)
    return [base + (1 if g < extra else 0) for g in range(k)]


def augmented_groups(n: int, *, p: int, k: int, rng: random.Random) -> list[list[int]]:
    """Deal ``p`` copies of each index in ``range(n)`` into ``k`` groups.

    Returns groups of indices, sizes balanced to within one. When ``k >= p`` no group holds two
    copies of the same index. Deterministic for a given ``rng`` state.
    """
    if n < 0 or p < 1 or k < 1:
        raise ValueError(f"augmented_groups needs n >= 0, p >= 1, k >= 1 (got n={n}, p={p}, k={k})")
    augmented = [i for i in range(n) for _ in range(p)]
    rng.shuffle(augmented)
    capacity = group_sizes(len(augmented), k)
    groups: list[list[int]] = [[] for _ in range(k)]
    members: list[set[int]] = [set() for _ in range(k)]
    for item in augmented:
        open_groups = [g for g in range(k) if len(groups[g]) < capacity[g]]
        fresh = [g for g in open_groups if item not in members[g]]
        if fresh:
            target = max(fresh, key=lambda g: capacity[g] - len(groups[g]))
        elif k >= p:
            _swap_in(item, open_groups[0], groups, members)
            continue
        else:
            target = open_groups[0]
        groups[target].append(item)
        members[target].add(item)
    return groups


def _swap_in(item: int, open_group: int, groups: list[list[int]], members: list[set[int]]) -> None:
    """Place ``item`` when the only group with room, ``open_group``, already holds a copy of it.

    Move some ``other`` out of a (full) group lacking ``item`` into ``open_group`` (which must
    lack ``other``) and put ``item`` in its place. With ``k >= p`` such a group exists (fewer than
    ``p`` copies of ``item`` are placed) and it holds an item ``open_group`` lacks: its size is at
    least ``open_group``'s capacity minus one, more than ``open_group``'s items besides ``item``.
    """
    for g, group in enumerate(groups):
        if g == open_group or item in members[g]:
            continue
        for pos, other in enumerate(group):
            if other not in members[open_group]:
                group[pos] = item
                members[g].discard(other)
                members[g].add(item)
                groups[open_group].append(other)
                members[open_group].add(other)
                return
    raise AssertionError("augmented_groups: no swap found; this contradicts k >= p")
