"""Augmented shuffle and scan reduce: invariants as properties, concurrency as observed."""

from __future__ import annotations

import asyncio
import math
import random
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from combee.core.scan import level_one_groups, merge_groups, scan_reduce
from combee.core.shuffle import augmented_groups
from combee.errors import LLMCallError


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 300), p=st.integers(1, 4), k=st.integers(1, 40), seed=st.integers(0, 10**6))
def test_every_item_appears_exactly_p_times_in_balanced_groups(
    n: int, p: int, k: int, seed: int
) -> None:
    groups = augmented_groups(n, p=p, k=k, rng=random.Random(seed))
    assert len(groups) == k
    counts = Counter(i for g in groups for i in g)
    assert set(counts) == set(range(n))
    assert all(c == p for c in counts.values())
    sizes = [len(g) for g in groups]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 300), p=st.integers(1, 4), extra=st.integers(0, 20), seed=st.integers(0, 10**6)
)
def test_copies_land_in_distinct_groups_when_k_at_least_p(
    n: int, p: int, extra: int, seed: int
) -> None:
    k = p + extra
    groups = augmented_groups(n, p=p, k=k, rng=random.Random(seed))
    for group in groups:
        assert len(group) == len(set(group))


def test_shuffle_is_seeded() -> None:
    a = augmented_groups(50, p=2, k=7, rng=random.Random(3))
    b = augmented_groups(50, p=2, k=7, rng=random.Random(3))
    c = augmented_groups(50, p=2, k=7, rng=random.Random(4))
    assert a == b
    assert a != c


@given(n=st.integers(0, 2000), p=st.integers(1, 3), seed=st.integers(0, 1000))
@settings(max_examples=100, deadline=None)
def test_level_one_group_count(n: int, p: int, seed: int) -> None:
    groups = level_one_groups(n, p=p, rng=random.Random(seed))
    if n < 4:
        assert groups == [list(range(n))]
    else:
        assert len(groups) == math.isqrt(n)
        assert sum(len(g) for g in groups) == n * p


@given(m=st.integers(1, 5000), fan_in=st.integers(2, 64))
@settings(max_examples=300, deadline=None)
def test_merge_groups_partition_and_respect_fan_in(m: int, fan_in: int) -> None:
    groups = merge_groups(m, fan_in=fan_in)
    assert [i for g in groups for i in g] == list(range(m))
    assert all(1 <= len(g) <= fan_in for g in groups)
    if m <= fan_in:
        assert len(groups) == 1


class Recorder:
    """Curate/merge stand-ins that record what each call saw and how many ran at once."""

    def __init__(self, fail_curate_calls: Sequence[int] = ()) -> None:
        self.curate_inputs: list[list[int]] = []
        self.merge_inputs: list[list[frozenset[int]]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.fail = set(fail_curate_calls)

    async def _enter(self) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1

    async def curate(self, items: Sequence[int]) -> frozenset[int]:
        call = len(self.curate_inputs)
        self.curate_inputs.append(list(items))
        await self._enter()
        if call in self.fail:
            raise LLMCallError(f"scripted failure of curate call {call}")
        return frozenset(items)

    async def merge(self, updates: Sequence[frozenset[int]]) -> frozenset[int]:
        self.merge_inputs.append(list(updates))
        await self._enter()
        return frozenset().union(*updates)


async def test_sixteen_items_make_four_concurrent_curates_then_one_merge() -> None:
    rec = Recorder()
    items = list(range(100, 116))
    trace = await scan_reduce(items, rec.curate, rec.merge, p=2, rng=random.Random(0))
    assert len(rec.curate_inputs) == 4
    assert rec.max_in_flight == 4
    seen = Counter(i for call in rec.curate_inputs for i in call)
    assert all(seen[i] == 2 for i in items)
    for call in rec.curate_inputs:
        assert len(call) == len(set(call)) == 8
    assert len(rec.merge_inputs) == 1 and len(rec.merge_inputs[0]) == 4
    assert trace.update == frozenset(items)
    assert [len(level) for level in trace.levels] == [4, 1]


async def test_small_batches_use_one_call() -> None:
    rec = Recorder()
    trace = await scan_reduce([1, 2, 3], rec.curate, rec.merge, rng=random.Random(0))
    assert rec.curate_inputs == [[1, 2, 3]]
    assert rec.merge_inputs == []
    assert trace.update == frozenset({1, 2, 3})


async def test_many_updates_build_a_deeper_tree() -> None:
    rec = Recorder()
    items = list(range(400))  # k = 20 local updates, fan-in 4 -> 4 merges, then 1
    trace = await scan_reduce(items, rec.curate, rec.merge, fan_in=4, rng=random.Random(1))
    assert len(rec.curate_inputs) == 20
    assert [len(level) for level in trace.levels] == [20, 5, 2, 1]
    assert all(len(m) <= 4 for m in rec.merge_inputs)
    assert trace.update == frozenset(items)


async def test_a_failed_curate_call_is_dropped_and_the_rest_merge() -> None:
    rec = Recorder(fail_curate_calls=[0])
    items = list(range(16))
    trace = await scan_reduce(items, rec.curate, rec.merge, rng=random.Random(0))
    assert len(rec.merge_inputs) == 1 and len(rec.merge_inputs[0]) == 3
    survivors = set().union(*(set(c) for c in rec.curate_inputs[1:]))
    assert trace.update == frozenset(survivors)


async def test_empty_input_makes_no_call() -> None:
    rec = Recorder()
    trace = await scan_reduce([], rec.curate, rec.merge, rng=random.Random(0))
    assert trace.update is None and rec.curate_inputs == []


async def test_other_exceptions_are_not_swallowed() -> None:
    async def broken(items: Sequence[int]) -> frozenset[int]:
        raise RuntimeError("bug")

    with pytest.raises(RuntimeError):
        await scan_reduce(list(range(9)), broken, Recorder().merge, rng=random.Random(0))
