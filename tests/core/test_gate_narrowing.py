"""The gate's narrowing (pure logic): the parts that lower the score are found by halves, a part
that lowers it is never cleared, and what is in doubt when the credit runs out is left out."""

from __future__ import annotations

import asyncio
import random

import pytest

from combee.core.gate import gate_credit, gate_samples, held_out_share, narrow_down


def search(
    parts: list[int], culprits: set[int], scorings: int | None
) -> tuple[list[int], list[int], int]:
    made = 0

    async def lowers(group: list[int]) -> bool:
        nonlocal made
        made += 1
        return bool(culprits & set(group))

    def affordable() -> bool:
        return scorings is None or made < scorings

    cleared, left_out = asyncio.run(narrow_down(parts, lowers, affordable))
    return cleared, left_out, made


@pytest.mark.parametrize("seed", range(20))
def test_every_culprit_is_left_out_and_every_other_part_kept_given_the_credit(seed: int) -> None:
    rng = random.Random(seed)
    parts = list(range(rng.randint(1, 40)))
    culprits = set(rng.sample(parts, rng.randint(1, min(4, len(parts)))))
    cleared, left_out, made = search(parts, culprits, None)
    assert set(left_out) == culprits
    assert sorted(cleared + left_out) == parts
    # About two scorings per culprit per halving, not one per part.
    assert made <= 2 * len(culprits) * max(1, len(parts).bit_length())


@pytest.mark.parametrize("scorings", [0, 1, 2, 3, 5])
def test_a_culprit_is_never_cleared_when_the_credit_runs_out(scorings: int) -> None:
    parts = list(range(16))
    cleared, left_out, made = search(parts, {5, 12}, scorings)
    assert {5, 12} <= set(left_out)
    assert not {5, 12} & set(cleared)
    assert sorted(cleared + left_out) == parts
    assert made <= scorings


def test_one_culprit_among_sixteen_takes_four_to_eight_scorings() -> None:
    # Four halvings; a half beside a half that lowered the score is scored too (it may hold
    # another culprit), unless the group's other half was cleared.
    made = [search(list(range(16)), {culprit}, None)[2] for culprit in range(16)]
    assert min(made) == 4 and max(made) == 8


def test_the_sizes_follow_the_batch() -> None:
    assert [gate_samples(b, 0) for b in (1, 8, 9, 40)] == [2, 2, 2, 5]
    assert gate_samples(40, 3) == 3
    assert [held_out_share(b, 0) for b in (1, 2, 7, 8, 9, 40)] == [0, 0, 0, 1, 2, 5]
    assert held_out_share(4, 10) == 3  # one sample is always left to learn from
    assert gate_credit(40, 0.25) == 20 and gate_credit(40, 0.0) == 0
