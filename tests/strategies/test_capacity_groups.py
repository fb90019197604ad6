"""Level-1 groups sized to what one curator call can write and read (``groups="capacity"``),
beside the paper's ``floor(sqrt(n))`` (``groups="sqrt"``): the rule's arithmetic, the ACE
method's measurement, and the calls counted at the scripted server with the reason recorded."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

import combee
from combee.core.capacity import CallCapacity, choose_groups
from combee.errors import ConfigError
from combee.llm import Endpoint, connect
from combee.llm.bounded import bounded_schema
from combee.llm.types import Completion, ModelLimits
from combee.methods.ace import AceMethod, AceUpdate, Playbook, schemas
from combee.methods.ace.settings import AceSettings
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.strategies.settings import CombeeSettings
from combee.tasks.base import Sample, Score
from tests.strategies.test_baselines import named, train

NO_BUDGET = AceSettings(token_budget=None)


def fits(per_call: int) -> CallCapacity:
    return CallCapacity(per_call, "measured")


def reply_bound(max_tokens: int) -> int:
    """Operations the curator schema bounded to ``max_tokens`` admits."""
    sections = tuple(s.key for s in Playbook().sections)
    bounded = bounded_schema(schemas.curator_schema(sections).schema, max_tokens)
    return int(bounded["properties"]["operations"]["maxItems"])


# ---- the rule ------------------------------------------------------------------------------


def test_sqrt_is_the_papers_count_whatever_a_call_can_take() -> None:
    choice = choose_groups(100, p=2, fan_in=32, rule="sqrt", capacity=fits(9))
    assert (choice.rule, choice.count, choice.fan_in) == ("sqrt", 10, 32)


def test_capacity_deals_the_copies_into_groups_no_larger_than_a_call_takes() -> None:
    choice = choose_groups(100, p=2, fan_in=32, rule="capacity", capacity=fits(9))
    assert choice.count == math.ceil(200 / 9) == 23
    assert "need 23 groups" in choice.reason and "measured" in choice.reason


def test_capacity_never_gives_fewer_groups_than_sqrt() -> None:
    choice = choose_groups(100, p=2, fan_in=32, rule="capacity", capacity=fits(50))
    assert choice.count == 10
    assert "already hold" in choice.reason


def test_capacity_puts_at_most_one_copy_in_a_group() -> None:
    assert choose_groups(5, p=2, fan_in=32, rule="capacity", capacity=fits(1)).count == 10


def test_a_method_that_cannot_size_its_calls_gets_sqrt_and_the_reason() -> None:
    choice = choose_groups(36, p=2, fan_in=32, rule="capacity", capacity=None)
    assert (choice.rule, choice.count) == ("sqrt", 6)
    assert "cannot size its calls" in choice.reason


def test_an_unknown_rule_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="groups") as caught:
        CombeeSettings(groups="cube-root")
    assert "capacity | sqrt" in str(caught.value)


# ---- what the ACE method measures -----------------------------------------------------------


class Limited:
    """A chat model that states its limits; never called."""

    def __init__(self, limits: ModelLimits) -> None:
        self._limits = limits

    def limits(self) -> ModelLimits:
        return self._limits

    async def complete_json(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")


def never(prediction: str, sample: Sample) -> Score:
    raise AssertionError("not called")


def reflections(count: int, words: int = 60) -> list[Any]:
    from combee.core.types import Reflection

    text = " ".join(["lesson"] * words)
    return [Reflection(f"s{i}", {"key_insight": f"rule {i}: {text}"}) for i in range(count)]


def test_before_any_reply_the_reply_bound_decides() -> None:
    method = AceMethod(Limited(ModelLimits()), never, ace=NO_BUDGET, max_tokens=1024)
    capacity = method.call_capacity(Playbook(), reflections(30))
    assert capacity.per_call == reply_bound(1024)
    assert "context window not known" in capacity.reason
    assert method.merge_capacity(Playbook(), [AceUpdate(operations=[{"type": "ADD"}])]) is None


def test_measured_operation_length_replaces_the_bound_unless_a_grammar_holds_replies() -> None:
    reply = Completion("{}", prompt_tokens=0, completion_tokens=400, latency_s=0.1, model="m")
    free = AceMethod(Limited(ModelLimits()), never, ace=NO_BUDGET, max_tokens=2048)
    free.meter.observe([], reply, 8)  # 50 tokens per operation
    assert free.call_capacity(Playbook(), reflections(30)).per_call == 2048 // 50
    held = AceMethod(Limited(ModelLimits(None, True)), never, ace=NO_BUDGET, max_tokens=2048)
    held.meter.observe([], reply, 8)
    assert held.call_capacity(Playbook(), reflections(30)).per_call == reply_bound(2048)


def test_a_small_context_window_bounds_the_group_by_its_prompt() -> None:
    limits = ModelLimits(context_window=4096, bounded_replies=True)
    method = AceMethod(Limited(limits), never, ace=NO_BUDGET, max_tokens=2048)
    many = reflections(40, words=120)
    capacity = method.call_capacity(Playbook(), many)
    assert 1 <= capacity.per_call < reply_bound(2048)
    assert "4096-token window" in capacity.reason


def operations(count: int, words: int = 40) -> AceUpdate:
    text = " ".join(["detail"] * words)
    ops = [
        {"type": "ADD", "section": "other", "content": f"rule {i}: {text}"} for i in range(count)
    ]
    return AceUpdate(operations=ops)


def test_a_merge_call_is_sized_on_the_updates_it_would_read() -> None:
    limits = ModelLimits(context_window=8192, bounded_replies=True)
    method = AceMethod(Limited(limits), never, ace=NO_BUDGET, max_tokens=2048)
    small = method.merge_capacity(Playbook(), [operations(2)] * 4)
    large = method.merge_capacity(Playbook(), [operations(20)] * 4)
    assert small is not None and large is not None and small > 4 * large >= 4


async def test_a_merge_that_would_not_fit_the_window_is_not_sent() -> None:
    limits = ModelLimits(context_window=4096, bounded_replies=True)
    method = AceMethod(Limited(limits), never, ace=NO_BUDGET, max_tokens=2048)
    updates = [operations(30), operations(30)]
    merged = await method.merge(Playbook(), updates)  # Limited fails the test if called
    assert merged.source == "merge-fallback" and "over the window" in merged.reasoning
    assert len(merged.operations) == 30  # the two updates' exact repeats dropped


# ---- at the scripted server ------------------------------------------------------------------


@pytest.mark.parametrize("rule", ["capacity", "sqrt"])
async def test_level_one_calls_counted_at_the_server_follow_the_rule(rule: str, tmp_path) -> None:
    from tests.strategies.test_baselines import task

    run_dir = tmp_path / rule
    result, records = await train(
        ace_responder,
        "combee",
        task=task(36),
        batch_size=36,
        groups=rule,
        max_tokens=1024,
        run_dir=run_dir,
    )
    expected = max(6, math.ceil(72 / reply_bound(1024))) if rule == "capacity" else 6
    assert rule != "capacity" or expected > 6  # the bound at 1024 tokens needs more than sqrt
    curators = named(records, "curator")
    assert len(curators) == expected
    assert len(named(records, "merge")) == 1
    (row,) = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert row["groups"]["rule"] == rule
    assert row["groups"]["count"] == expected
    assert row["reduce_levels"] == [expected, 1]
    if rule == "capacity":
        assert f"need {expected} groups" in row["groups"]["reason"]
    config = json.loads((run_dir / "config.json").read_text())
    assert json.dumps(config).count(f'"groups": "{rule}"') == 1
    assert result.llm_calls["curator"] == expected


async def test_a_declared_context_window_fits_the_groups_to_the_prompt(tmp_path) -> None:
    from tests.strategies.test_baselines import task

    with serve_in_thread(ace_responder) as server:
        llm = connect("sim", base_url=server.base_url, context_window=3500)
        assert llm.limits() == ModelLimits(context_window=3500)
        assert llm.settings["context_window"] == 3500
        try:
            result = await combee.train_async(
                task(36), strategy="combee", batch_size=36, llm=llm, run_dir=tmp_path / "run"
            )
        finally:
            await llm.aclose()
        records = server.records
    (row,) = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    groups = row["groups"]
    assert "3500-token window" in groups["reason"]
    # 2,048 of the 3,500 tokens are kept for the reply: the prompt, not the reply, decides.
    assert groups["count"] > max(6, math.ceil(72 / reply_bound(2048)))
    curators = [r for r in records if r.schema_name == "curator" and r.status == 200]
    assert len(curators) == groups["count"] == result.llm_calls["curator"]
    assert all(len(r.body["messages"][-1]["content"]) < 4 * 2048 for r in curators)


def test_a_context_window_too_small_to_use_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="context_window") as caught:
        Endpoint("sim", base_url="http://127.0.0.1:9/v1", context_window=100)
    assert "at least 512" in str(caught.value)


def test_a_combee_run_from_before_the_groups_setting_resumes_only_with_sqrt() -> None:
    from combee.runs.checkpoint import config_differences

    before = {"strategy": "combee", "batch_size": 40}  # config.json written without groups
    assert config_differences(before, {**before, "groups": "sqrt"}) == []
    assert config_differences(before, {**before, "groups": "capacity"}) == [
        'groups: "sqrt" there (the run predates the setting), "capacity" here'
    ]
    naive = {"strategy": "naive", "batch_size": 40}
    assert config_differences(naive, {**naive, "groups": "capacity"}) == []
