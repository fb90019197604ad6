"""The batch size controller: its decision rule on synthetic delay curves, and its schedule."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from combee.core.controller import (
    MIN_R2,
    AutoBatchSize,
    BatchDecision,
    choose_batch_size,
    epoch_time,
    fit_power_law,
    ladder,
)
from combee.errors import ConfigError

N = 500
SIZES = [12, 25, 50, 100]


def measure(t_iter: Callable[[int], float], sizes: list[int] = SIZES) -> list[tuple[int, float]]:
    return [(b, t_iter(b)) for b in sizes]


def test_fit_recovers_a_power_law() -> None:
    sizes = [4.0, 8.0, 16.0, 32.0, 64.0]
    fit = fit_power_law(sizes, [300.0 * b**-0.7 for b in sizes])
    assert fit.alpha == pytest.approx(0.7)
    assert fit.a == pytest.approx(300.0)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.epoch_time(10.0) == pytest.approx(300.0 * 10**-0.7)


def test_fit_needs_two_distinct_sizes() -> None:
    with pytest.raises(ValueError):
        fit_power_law([8.0, 8.0], [1.0, 2.0])


def test_perfect_parallelism_goes_to_the_cap() -> None:
    # Iterations take as long at any size: T(b) ~ N/b, alpha ~ 1, alpha/tau ~ 100 > cap 64.
    decision = choose_batch_size(
        measure(lambda b: 2.0), epoch_samples=N, tau=0.01, max_batch_size=64
    )
    assert decision.fit is not None and decision.fit.alpha == pytest.approx(1.0, abs=0.05)
    assert decision.chosen == 64
    assert "capped by max_batch_size=64" in decision.why


def test_choice_is_alpha_over_tau() -> None:
    # t_iter grows like b**0.4, so T ~ b**-0.6 (up to the ceil): the knee is 0.6 / tau.
    decision = choose_batch_size(
        measure(lambda b: 0.1 * b**0.4, [10, 20, 50, 100]), epoch_samples=N, tau=0.01
    )
    assert decision.fit is not None
    assert decision.chosen == math.floor(decision.fit.alpha / 0.01)
    assert 55 <= decision.chosen <= 65
    assert f"chose {decision.chosen}" in decision.why


def test_saturated_endpoint_keeps_the_batch_small() -> None:
    # Capacity 8: past it every sample adds its own time, the epoch time stops falling.
    decision = choose_batch_size(
        measure(lambda b: 0.5 * max(1.0, b / 8), [4, 8, 16, 32, 64]), epoch_samples=N, tau=0.01
    )
    assert decision.fit is not None and decision.fit.alpha < 0.5
    assert decision.chosen < 50


def test_larger_tau_never_chooses_larger() -> None:
    measured = measure(lambda b: 0.2 + 0.01 * b)
    chosen = [
        choose_batch_size(measured, epoch_samples=N, tau=tau).chosen
        for tau in (0.002, 0.005, 0.01, 0.02, 0.05)
    ]
    assert chosen == sorted(chosen, reverse=True)
    assert chosen[0] > chosen[-1]


def test_growing_epoch_time_keeps_the_smallest_size() -> None:
    decision = choose_batch_size(measure(lambda b: 0.05 * b**1.5), epoch_samples=N)
    assert decision.fit is not None and decision.fit.alpha <= 0
    assert decision.chosen == 12
    assert "did not shorten" in decision.why


def test_knee_below_the_ladder_is_raised_to_its_first_rung() -> None:
    decision = choose_batch_size(measure(lambda b: 0.05 * b**0.95), epoch_samples=N, tau=0.01)
    assert decision.fit is not None and 0 < decision.fit.alpha < 0.12
    assert decision.chosen == 12
    assert "raised to the smallest profiled size" in decision.why


def test_one_measurement_is_kept() -> None:
    decision = choose_batch_size([(3, 1.0)], epoch_samples=3)
    assert decision.fit is None and decision.chosen == 3


def test_measurements_carry_the_epoch_estimate() -> None:
    decision = choose_batch_size([(30, 2.0), (60, 3.0)], epoch_samples=100)
    assert [(m.batch_size, m.epoch_time_s) for m in decision.measurements] == [
        (30, 2.0 * 4),
        (60, 3.0 * 2),
    ]
    assert epoch_time(2.0, 30, 100) == 8.0


@pytest.mark.parametrize("tau, cap", [(0.0, 100), (-1.0, 100), (0.01, 0)])
def test_bad_settings_are_config_errors(tau: float, cap: int) -> None:
    with pytest.raises(ConfigError):
        choose_batch_size([(1, 1.0), (2, 1.0)], epoch_samples=10, tau=tau, max_batch_size=cap)
    with pytest.raises(ConfigError):
        AutoBatchSize(tau=tau, max_batch_size=cap)


@settings(max_examples=200, deadline=None)
@given(
    times=st.lists(st.floats(0.01, 100.0), min_size=2, max_size=6),
    epoch=st.integers(2, 2000),
    cap=st.integers(1, 300),
    tau=st.floats(0.0005, 0.5),
)
def test_choice_stays_within_bounds(times: list[float], epoch: int, cap: int, tau: float) -> None:
    sizes = [2**i for i in range(len(times))]
    decision = choose_batch_size(
        list(zip(sizes, times, strict=True)), epoch_samples=epoch, tau=tau, max_batch_size=cap
    )
    assert 1 <= decision.chosen <= max(1, min(cap, epoch)) or decision.chosen == min(sizes)
    assert decision.chosen >= min(sizes)


@given(epoch=st.integers(1, 5000), cap=st.integers(1, 1000), rungs=st.integers(1, 6))
def test_ladder_is_ascending_bounded_and_fits_the_epoch(epoch: int, cap: int, rungs: int) -> None:
    sizes = ladder(epoch, max_batch_size=cap, rungs=rungs)
    assert sizes == sorted(set(sizes))
    assert sizes and all(1 <= b <= min(cap, epoch) for b in sizes)
    assert sum(sizes) <= epoch
    if epoch >= 8 and cap >= 2 and rungs >= 2:
        assert len(sizes) >= 2


def test_default_ladder() -> None:
    assert ladder(500, max_batch_size=100) == [25, 50, 100]
    assert ladder(500, max_batch_size=500) == [62, 125]  # half the epoch at most
    assert ladder(500, max_batch_size=100, rungs=4) == [12, 25, 50, 100]
    assert ladder(16, max_batch_size=100) == [2, 4]


def drive(
    schedule: AutoBatchSize, epochs: int, samples: int, t_iter: Callable[[int], float]
) -> list[list[int]]:
    """What the training loop does with a schedule: sizes taken per epoch."""
    taken: list[list[int]] = []
    for epoch in range(1, epochs + 1):
        position, sizes = 0, []
        while position < samples:
            size = schedule.next_size(epoch=epoch, remaining=samples - position)
            sizes.append(size)
            position += size
            schedule.record(size=size, wall_s=t_iter(size))
        taken.append(sizes)
    return taken


def test_schedule_profiles_then_runs_the_choice() -> None:
    seen: list[BatchDecision] = []
    schedule = AutoBatchSize(tau=0.01, max_batch_size=100, rungs=4, on_decision=seen.append)
    (sizes,) = drive(schedule, 1, N, lambda b: 0.3 + 0.004 * b)
    assert sizes[:5] == [12, 12, 25, 50, 100]  # a warm-up at the first rung, then the ladder
    chosen = schedule.chosen
    assert chosen is not None and len(seen) == 1 and seen[0].chosen == chosen
    assert [m.batch_size for m in seen[0].warmup] == [12]
    rest = sizes[5:]
    assert rest and all(size == chosen for size in rest[:-1]) and rest[-1] <= chosen
    assert sum(sizes) == N
    assert [m.batch_size for m in seen[0].measurements] == [12, 25, 50, 100]
    assert [m.t_iter_s for m in seen[0].measurements] == pytest.approx(
        [0.3 + 0.004 * b for b in (12, 25, 50, 100)]
    )
    profile = schedule.profile()
    assert profile["chosen"] == chosen and profile["why"] == seen[0].why
    fit = seen[0].fit
    assert fit is not None and profile["decisions"][0]["fit"]["alpha"] == pytest.approx(fit.alpha)


def test_later_epochs_reuse_the_choice_unless_reprofiling() -> None:
    once = AutoBatchSize(warm_up=False)
    _, second = drive(once, 2, 200, lambda b: 1.0)
    assert len(once.decisions) == 1
    chosen = once.chosen
    assert chosen is not None
    assert all(size == chosen for size in second[:-1]) and sum(second) == 200
    again = AutoBatchSize(reprofile=True)
    first, second = drive(again, 2, 200, lambda b: 1.0)
    assert len(again.decisions) == 2
    rungs = ladder(200)
    assert first[: len(rungs) + 1] == [rungs[0], *rungs]  # only a fresh process warms up
    assert second[: len(rungs)] == rungs
    assert [d.epoch for d in again.decisions] == [1, 2]


def test_tiny_epoch_still_decides() -> None:
    schedule = AutoBatchSize()
    (sizes,) = drive(schedule, 1, 1, lambda b: 1.0)
    assert sizes == [1] and schedule.chosen == 1


def test_a_restored_controller_continues_as_the_original_would() -> None:
    def walk(schedule: AutoBatchSize, sizes: list[int], remaining: int, steps: int) -> int:
        for _ in range(steps):
            size = schedule.next_size(epoch=1, remaining=remaining)
            sizes.append(size)
            schedule.record(size=size, wall_s=1.0 + 0.01 * size)
            remaining -= size
        return remaining

    original = AutoBatchSize(max_batch_size=64, warm_up=False)
    copy = AutoBatchSize(max_batch_size=64, warm_up=False)
    sizes: list[int] = []
    remaining = walk(original, sizes, 600, 2)  # mid-profiling
    copy.restore(json.loads(json.dumps(original.state())))
    rest_original: list[int] = []
    rest_copy: list[int] = []
    walk(original, rest_original, remaining, 4)
    walk(copy, rest_copy, remaining, 4)
    assert rest_copy == rest_original and original.chosen == copy.chosen is not None


def test_a_cold_first_iteration_is_left_out_of_the_fit() -> None:
    # The process's first iteration pays a one-time cost (say, a model loading: 14 s).
    times = iter([14.0])

    def t_iter(b: int) -> float:
        return next(times, 0.2 + 0.002 * b)

    cold = AutoBatchSize(max_batch_size=100)
    drive(cold, 1, 500, t_iter)
    (decision,) = cold.decisions
    assert [(m.batch_size, m.t_iter_s) for m in decision.warmup] == [(25, 14.0)]
    assert [m.batch_size for m in decision.measurements] == [25, 50, 100]
    assert decision.fit is not None and decision.fit.r2 > 0.99
    assert "warm-up iteration at b=25 (14.00s) was left out" in decision.why
    # Counted, the cold start would have made the smallest batch look hugely slow.
    naive = choose_batch_size([(25, 14.0), (50, 0.3), (100, 0.4)], epoch_samples=500)
    assert naive.fit is not None and naive.fit.alpha > decision.fit.alpha + 1


def test_a_resumed_controller_warms_up_again_and_keeps_what_was_measured() -> None:
    original = AutoBatchSize(max_batch_size=64)
    sizes = [original.next_size(epoch=1, remaining=600) for _ in range(1)]
    original.record(size=sizes[0], wall_s=9.0)  # the warm-up
    size = original.next_size(epoch=1, remaining=584)
    original.record(size=size, wall_s=1.0)  # the first rung, measured
    copy = AutoBatchSize(max_batch_size=64)
    copy.restore(json.loads(json.dumps(original.state())))
    again = copy.next_size(epoch=1, remaining=568)
    copy.record(size=again, wall_s=7.0)  # the new process's first iteration: a warm-up
    assert copy.state()["measured"] == original.state()["measured"]
    assert [w[1] for w in copy.state()["warmups"]] == [9.0, 7.0]


def test_no_warm_up_when_the_epoch_cannot_hold_it() -> None:
    schedule = AutoBatchSize(max_batch_size=8)
    (sizes,) = drive(schedule, 1, 1, lambda b: 1.0)
    assert sizes == [1] and schedule.decisions[0].warmup == []
    assert ladder(4) == [1, 2]
    roomy = AutoBatchSize()
    (sizes,) = drive(roomy, 1, 4, lambda b: 1.0)
    assert sizes == [1, 1, 2] and [m.batch_size for m in roomy.decisions[0].warmup] == [1]


def test_a_poor_fit_keeps_the_fastest_profiled_size() -> None:
    # Three sizes that no power law describes: the middle one is the fastest epoch.
    decision = choose_batch_size([(25, 1.0), (50, 0.5), (100, 3.0)], epoch_samples=500)
    assert decision.fit is not None and decision.fit.r2 < MIN_R2
    assert decision.chosen == 50
    assert "explains the measurements poorly" in decision.why
