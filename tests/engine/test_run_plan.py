"""The plan of a run, counted before any call (pure logic), and the rule of its sample limits."""

from __future__ import annotations

import pytest

from combee.core.call_counts import CallRange
from combee.engine.plan import Shape, count_plan, fixed_batches, plan
from combee.errors import ConfigError
from combee.methods.ace.method import AceMethod
from combee.strategies.combee import CombeeStrategy
from combee.strategies.settings import CombeeSettings
from combee.strategies.summarize import HierSummarizeStrategy


def test_the_plan_takes_the_limits_of_the_run() -> None:
    assert plan("formula", train_limit=8).samples == {"train": 8, "val": 8, "test": 8}
    assert plan("formula", train_limit=8, val_limit=0, test_limit=3).samples == {
        "train": 8,
        "val": 0,
        "test": 3,
    }
    assert plan("formula").samples == {"train": 500, "val": 300, "test": 200}


def test_the_naive_plan_is_exact() -> None:
    # naive at batch size 4 on 8 samples: 2 curate calls, a validation of 8 after each batch.
    found = plan("formula", strategy="naive", batch_size=4, train_limit=8, val_every=1, gate=False)
    assert all(calls.exact for calls in found.calls.values())
    assert {role: calls.most for role, calls in found.calls.items()} == {
        "preflight": 1,
        "generator": 8 + 16 + 8,
        "reflector": 8,
        "curator": 2,
    }
    assert found.iterations == CallRange.exactly(2)


def test_the_gate_plans_its_budget_and_the_samples_it_holds_out() -> None:
    # With a validation split: two of its samples scored before and after each update, and a
    # credit of a quarter of each batch's 8 learning calls to narrow an update down.
    found = plan("formula", strategy="naive", batch_size=4, train_limit=8, val_every=1)
    assert found.phases["gate"] == {"generator": CallRange(0, 2 * (4 + 2))}
    assert found.calls["reflector"] == CallRange.exactly(8)
    # Without one: each batch of 16 holds out 2 samples (an eighth), rolled out but not
    # reflected on, scored once against the update; a quarter of the batch's 32 learning calls
    # is its credit.
    found = plan("formula", strategy="naive", batch_size=16, train_limit=32, val_limit=0)
    assert found.phases["gate"] == {"generator": CallRange(0, 2 * (2 + 8))}
    assert found.calls["reflector"] == CallRange.exactly(32 - 2 * 2)
    assert "gate" not in plan("formula", batch_size=8, train_limit=16, gate=False).phases


def test_sequential_validates_every_third_iteration_and_at_the_end_of_each_epoch() -> None:
    found = plan(
        "formula", strategy="sequential", train_limit=8, val_every=3, epochs=2, baseline=True
    )
    # 16 iterations: due at 3, 6, 9, 12, 15, and the ends of the epochs at 8 and 16.
    assert found.phases["validation"] == {"generator": CallRange.exactly(7 * 8)}
    assert found.phases["baseline test"] == {"generator": CallRange.exactly(8)}
    assert found.calls["curator"] == CallRange.exactly(16)


def test_combee_groups_are_bounds_under_capacity_and_exact_under_sqrt() -> None:
    capacity = CombeeStrategy(CombeeSettings(duplication=2)).reduce_calls(16)
    assert capacity == {"curate": CallRange(4, 32), "merge": CallRange(1, 31)}
    sqrt = CombeeStrategy(CombeeSettings(duplication=2, groups="sqrt")).reduce_calls(16)
    assert sqrt == {"curate": CallRange.exactly(4), "merge": CallRange(1, 3)}
    assert CombeeStrategy(CombeeSettings(groups="sqrt")).reduce_calls(3) == {
        "curate": CallRange.exactly(1)
    }


def test_a_merge_step_may_make_no_call_in_ace() -> None:
    shape = Shape(
        samples={"train": 16, "val": 0, "test": 0},
        batch_sizes=fixed_batches(16, 16),
        epochs=1,
        val_every=0,
        baseline=False,
        preflight=False,
        max_tokens=100,
    )
    found = count_plan(shape, AceMethod.CALLS, CombeeStrategy(CombeeSettings(groups="sqrt")))
    assert found.calls == {
        "generator": CallRange.exactly(16),
        "reflector": CallRange.exactly(16),
        "curator": CallRange.exactly(4),
        "merge": CallRange(0, 3),
    }
    assert found.completion_tokens == (16 + 16 + 4 + 3) * 100
    assert found.completion_cost is None


def test_hier_summarize_condenses_each_reflection_and_their_summaries() -> None:
    assert HierSummarizeStrategy().reduce_calls(5) == {
        "condense": CallRange.exactly(6),
        "curate": CallRange.exactly(1),
    }


def test_what_cannot_be_counted_is_said() -> None:
    auto = plan("formula", batch_size="auto", train_limit=8)
    assert "curator" not in auto.calls
    assert any("batch sizes are chosen at run time" in line for line in auto.lines())
    assert auto.iterations is None
    unknown_method = plan("formula", method=object(), train_limit=8)
    assert set(unknown_method.calls) == {"preflight"}
    assert any("not counted" in line for line in unknown_method.lines())


def test_a_bad_setting_is_named_before_any_plan() -> None:
    with pytest.raises(ConfigError) as caught:
        plan("formula", val_limit=-1)
    assert caught.value.setting == "val_limit"
