"""Batch-size strategies for GEPA: the plans, the resizable sampler and the iteration timer."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from gepa.core.data_loader import ListDataLoader
from hypothesis import given, settings
from hypothesis import strategies as st

from combee.errors import ConfigError
from combee.methods.gepa import IterationTimer, ResizableBatchSampler, plan_for

STATE: Any = None  # the sampler keeps its own cursor and never reads gepa's state


def test_plans() -> None:
    assert (plan_for("sequential", 40).minibatch_size, plan_for("sequential", 40).grouping) == (
        3,
        "single",
    )
    assert (plan_for("naive", 40).minibatch_size, plan_for("naive", 40).grouping) == (40, "single")
    assert (plan_for("combee", 40).minibatch_size, plan_for("combee", 40).grouping) == (
        40,
        "combee",
    )
    assert (plan_for("auto", 40).minibatch_size, plan_for("auto", 40).grouping) == (40, "combee")
    with pytest.raises(ConfigError, match="topk"):
        plan_for("topk", 4)
    with pytest.raises(ConfigError, match="batch-size"):
        plan_for("combee", 0)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 30),
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=25),
    seed=st.integers(0, 5),
)
def test_minibatches_are_distinct_and_epochs_balanced(n: int, sizes: list[int], seed: int) -> None:
    loader = ListDataLoader(list(range(n)))
    sampler = ResizableBatchSampler(sizes[0], seed=seed)
    counts: Counter[int] = Counter({i: 0 for i in range(n)})
    for size in sizes:
        sampler.size = size
        batch = sampler.next_minibatch_ids(loader, STATE)
        assert len(batch) == min(size, n)
        assert len(set(batch)) == len(batch)
        counts.update(batch)
        assert max(counts.values()) - min(counts.values()) <= 1


def test_sampler_is_deterministic_for_a_seed() -> None:
    loader = ListDataLoader(list(range(20)))

    def draws(seed: int) -> list[list[int]]:
        sampler = ResizableBatchSampler(6, seed=seed)
        return [sampler.next_minibatch_ids(loader, STATE) for _ in range(8)]

    assert draws(1) == draws(1)
    assert draws(1) != draws(2)


def test_sampler_rejects_a_size_below_one() -> None:
    with pytest.raises(ConfigError):
        ResizableBatchSampler(0)
    sampler = ResizableBatchSampler(2)
    with pytest.raises(ConfigError):
        sampler.size = 0


def test_timer_records_the_size_each_iteration_ran_with() -> None:
    sampler = ResizableBatchSampler(4)
    seen: list[Any] = []
    timer = IterationTimer(sampler, on_timing=seen.append)
    timer.on_iteration_start({"iteration": 1})
    sampler.size = 9  # a controller changing the size mid-iteration affects the next one
    timer.on_iteration_end({"iteration": 1, "proposal_accepted": True})
    timer.on_iteration_start({"iteration": 2})
    timer.on_iteration_end({"iteration": 2, "proposal_accepted": False})
    assert [(t.iteration, t.batch_size, t.accepted) for t in timer.timings] == [
        (1, 4, True),
        (2, 9, False),
    ]
    assert seen == timer.timings
    assert all(t.seconds >= 0 for t in timer.timings)
