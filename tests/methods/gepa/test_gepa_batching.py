"""GEPA on Combee's batch schedule: the resizable sampler and the iteration clock."""

from __future__ import annotations

import time
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
from gepa.core.data_loader import ListDataLoader
from hypothesis import given, settings
from hypothesis import strategies as st

from combee.core.loop import IterationReport, LoopObserver
from combee.errors import ConfigError
from combee.methods.gepa import IterationClock, ResizableBatchSampler

STATE: Any = None  # the sampler keeps its own cursor and never reads gepa's state


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


class _Schedule:
    """Hands out the given sizes and keeps what it is told."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.asked: list[tuple[int, int]] = []
        self.recorded: list[tuple[int, float]] = []

    def next_size(self, *, epoch: int, remaining: int) -> int:
        self.asked.append((epoch, remaining))
        return self.sizes[len(self.asked) - 1]

    def record(self, *, size: int, wall_s: float) -> None:
        self.recorded.append((size, wall_s))


class _Reports(LoopObserver):
    def __init__(self) -> None:
        self.reports: list[IterationReport[Any, Any]] = []

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        self.reports.append(report)


def _state(candidates: int) -> Any:
    return SimpleNamespace(
        program_full_scores_val_set=[0.25 * i for i in range(candidates)],
        program_candidates=[{"system_prompt": f"prompt {i}"} for i in range(candidates)],
        total_num_evals=10 * candidates,
    )


def test_clock_sizes_each_iteration_from_the_schedule_and_leaves_out_validation() -> None:
    loader = ListDataLoader(list(range(10)))
    sampler = ResizableBatchSampler(1)
    schedule = _Schedule([4, 6])
    validation = [0.0]
    reports = _Reports()
    clock = IterationClock(
        sampler,
        schedule,
        train_size=10,
        validation_seconds=lambda: validation[0],
        observer=reports,
    )
    outer_start = time.perf_counter()
    clock.on_iteration_start({"iteration": 1})
    assert sampler.size == 4
    assert len(sampler.next_minibatch_ids(loader, STATE)) == 4
    time.sleep(0.2)
    validation[0] += 0.15  # the adapter timed 0.15 s of validation inside this iteration
    clock.on_iteration_end({"iteration": 1, "proposal_accepted": True, "state": _state(2)})
    outer_s = time.perf_counter() - outer_start
    clock.on_iteration_start({"iteration": 2})
    assert sampler.size == 6
    clock.on_iteration_end({"iteration": 2, "proposal_accepted": False, "state": _state(2)})
    assert schedule.asked == [(1, 10), (1, 10)]
    (first_size, first_s), (second_size, _) = schedule.recorded
    assert (first_size, second_size) == (4, 6)
    # At least 0.2 s of wall time, at most what the test saw around it, less 0.15 s of
    # validation (a busy machine only makes the iteration longer).
    assert 0.2 - 0.15 - 1e-9 <= first_s <= outer_s - 0.15, (first_s, outer_s)
    assert clock.timings[0].validation_seconds == pytest.approx(0.15)
    assert [(r.iteration, r.batch_size, r.extra["accepted"]) for r in reports.reports] == [
        (1, 4, True),
        (2, 6, False),
    ]
    assert reports.reports[0].context == "prompt 1"  # the best candidate so far
    assert reports.reports[0].val_accuracy == 0.25


def test_sampler_position_counts_epochs_from_one() -> None:
    loader = ListDataLoader(list(range(5)))
    sampler = ResizableBatchSampler(3)
    assert sampler.position(5) == (1, 5)
    sampler.next_minibatch_ids(loader, STATE)
    assert sampler.position(5) == (1, 2)
    sampler.size = 2
    sampler.next_minibatch_ids(loader, STATE)
    assert sampler.position(5) == (2, 5)
