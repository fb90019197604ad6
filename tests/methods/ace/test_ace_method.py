"""AceMethod: counters and short cuts in process, the four roles end to end over real HTTP."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest

from combee.core.types import Method, Reflection
from combee.errors import ConfigError, LLMCallError
from combee.llm.client import LLM
from combee.llm.openai_backend import OpenAIBackend
from combee.llm.types import Completion, JsonMode, JsonSchema, Message
from combee.methods.ace import AceMethod, AceUpdate, Bullet, Playbook
from combee.methods.ace.settings import AceSettings
from combee.sim import RunningServer, SimConfig, serve_in_thread
from combee.sim.ace_script import ace_responder, scripted_answer
from combee.tasks.base import Sample, Score


def score(prediction: str, sample: Sample) -> Score:
    try:
        correct = float(prediction.replace(",", "")) == float(sample.answer)
    except ValueError:
        correct = prediction.strip() == sample.answer.strip()
    feedback = "" if correct else f"expected {sample.answer}, got {prediction}"
    return Score(correct=correct, matched=int(correct), total=1, feedback=feedback)


def formula_sample(sample_id: str, formula: str, question: str) -> Sample:
    context = f"Use formula {formula} to answer the question. Answer with 2 decimal places."
    return Sample(sample_id, question, scripted_answer(question), context)


class NoCalls:
    """A model that must not be asked."""

    async def complete_json(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        schema: JsonSchema,
        temperature: float = 0.0,
        max_tokens: int = 2048,
    ) -> tuple[dict[str, Any], Completion]:
        raise AssertionError(f"unexpected {role} call")


class EmptyMerge:
    """A model whose merge keeps nothing (as small models sometimes reply)."""

    async def complete_json(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        schema: JsonSchema,
        temperature: float = 0.0,
        max_tokens: int = 2048,
    ) -> tuple[dict[str, Any], Completion]:
        assert role == "merge"
        reply = {"keep": [], "combine": [], "drop": [], "reasoning": "nothing to keep"}
        return reply, Completion("{}", 1, 1, 0.0, "m")


PLAYBOOK = Playbook(
    bullets=(
        Bullet("str-00001", "strategies", "one", 1, 0),
        Bullet("fml-00002", "formulas", "two", 0, 0),
    ),
    next_id=3,
)


def test_tally_counts_tags_and_ignores_junk() -> None:
    method = AceMethod(NoCalls(), score)
    reflections = [
        Reflection("a", {"bullet_tags": [{"id": "str-00001", "tag": "helpful"}]}),
        Reflection(
            "b",
            {
                "bullet_tags": [
                    {"id": "[str-00001]", "tag": "harmful"},
                    {"id": "fml-00002", "tag": "helpful"},
                    {"id": "fml-00002", "tag": "neutral"},
                    {"id": "zzz-00042", "tag": "harmful"},
                    {"id": 7, "tag": "helpful"},
                    "str-00001",
                ]
            },
        ),
        Reflection("c", {"bullet_tags": "not a list"}),
        Reflection("d", {}),
    ]
    tallied = method.tally(PLAYBOOK, reflections)
    assert tallied.get("str-00001") == Bullet("str-00001", "strategies", "one", 2, 1)
    assert tallied.get("fml-00002") == Bullet("fml-00002", "formulas", "two", 1, 0)
    assert PLAYBOOK.get("str-00001") == Bullet("str-00001", "strategies", "one", 1, 0)
    assert method.tally(PLAYBOOK, []) == PLAYBOOK


async def test_curate_and_merge_skip_calls_when_there_is_nothing_to_combine() -> None:
    method = AceMethod(NoCalls(), score)
    assert await method.curate(PLAYBOOK, []) == AceUpdate(source="none")
    assert await method.merge(PLAYBOOK, [AceUpdate(), AceUpdate()]) == AceUpdate(source="none")
    only = AceUpdate([{"type": "DELETE", "bullet_id": "str-00001"}], "why", "curator")
    assert await method.merge(PLAYBOOK, [AceUpdate(), only]) is only


class InvalidMerge(EmptyMerge):
    """A merge whose numbers name no operation (and that answers in the old form)."""

    async def complete_json(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        schema: JsonSchema,
        temperature: float = 0.0,
        max_tokens: int = 2048,
    ) -> tuple[dict[str, Any], Completion]:
        ops = [{"type": "ADD", "section": "other", "content": "x"}]
        reply = {"keep": [0, 3, "#9", None], "combine": [{"numbers": [7]}], "operations": ops}
        return reply, Completion("{}", 1, 1, 0.0, "m")


@pytest.mark.parametrize("model", [EmptyMerge(), InvalidMerge()])
async def test_a_merge_that_keeps_nothing_falls_back_to_the_local_updates(
    model: EmptyMerge,
) -> None:
    first = AceUpdate([{"type": "ADD", "section": "mistakes", "content": "a"}], "", "curator")
    second = AceUpdate([{"type": "ADD", "section": "checks", "content": "b"}], "", "curator")
    merged = await AceMethod(model, score).merge(PLAYBOOK, [first, second])
    assert merged.source == "merge-fallback"
    assert merged.operations == first.operations + second.operations


def test_apply_keeps_the_last_result() -> None:
    method = AceMethod(NoCalls(), score, ace=AceSettings(token_budget=None))
    update = AceUpdate(
        [{"type": "DELETE", "bullet_id": "str-00001"}, {"type": "DELETE", "bullet_id": "x"}]
    )
    after = method.apply(PLAYBOOK, update)
    assert after.bullet_ids == ["fml-00002"]
    assert method.last_apply is not None
    assert method.last_apply.playbook is after
    assert [why for _, why in method.last_apply.rejected] == ["unknown bullet x"]


@pytest.mark.parametrize("budget", [0, 10, Playbook().token_count()])
def test_budget_below_the_empty_playbook_is_a_config_error(budget: int) -> None:
    with pytest.raises(ConfigError, match="token_budget"):
        AceMethod(NoCalls(), score, ace=AceSettings(token_budget=budget))


def test_ace_method_implements_the_method_contract() -> None:
    method: Method[Playbook, AceUpdate] = AceMethod(NoCalls(), score)
    for name in ("rollout", "reflect", "curate", "merge"):
        assert inspect.iscoroutinefunction(getattr(method, name)), name
    for name in ("tally", "apply"):
        assert not inspect.iscoroutinefunction(getattr(method, name)), name
    empty = Playbook()
    assert method.tally(empty, []).render() == empty.render()
    assert method.apply(empty, AceUpdate(source="none")).render() == empty.render()


# -- end to end over HTTP -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(ace_responder) as running:
        yield running


@pytest.fixture(params=["json_schema", "none"])
async def llm(request: pytest.FixtureRequest, server: RunningServer) -> AsyncIterator[LLM]:
    mode: JsonMode = request.param
    client = LLM(OpenAIBackend(model="sim", base_url=server.base_url, json_mode=mode))
    yield client
    await client.aclose()


async def test_ace_learns_a_formula_over_http(llm: LLM) -> None:
    method = AceMethod(llm, score, ace=AceSettings(token_budget=2000))
    playbook = Playbook()
    first = formula_sample("s1", "Current Ratio", "Assets 300, liabilities 100: current ratio?")
    later = formula_sample("s2", "Current Ratio", "Assets 500, liabilities 250: current ratio?")

    miss = await method.rollout(playbook, first)
    assert miss.prediction != first.answer and not miss.score.correct
    assert miss.details["bullet_ids"] == []
    reflection = await method.reflect(playbook, miss)
    assert reflection.sample_id == "s1" and reflection.correct is False
    assert "Current Ratio" in reflection.fields["key_insight"]

    update = await method.curate(playbook, [reflection])
    assert update.source == "curator" and [op["type"] for op in update.operations] == ["ADD"]
    playbook = method.apply(playbook, update)
    assert len(playbook) == 1 and method.last_apply is not None
    assert method.last_apply.rejected == []
    (lesson,) = playbook.bullets
    assert "Current Ratio" in lesson.content

    hit = await method.rollout(playbook, later)
    assert hit.score.correct and hit.prediction == later.answer
    assert hit.details["bullet_ids"] == [lesson.id]
    praise = await method.reflect(playbook, hit)
    assert praise.correct is True
    assert list(praise.fields["bullet_tags"]) == [{"id": lesson.id, "tag": "helpful"}]
    playbook = method.tally(playbook, [praise])
    assert playbook.bullets[0].helpful == 1


async def test_curate_groups_then_merge_over_http(llm: LLM, server: RunningServer) -> None:
    method = AceMethod(llm, score, ace=AceSettings(token_budget=None))
    samples = [
        formula_sample("a", "Current Ratio", "Current ratio of 4 and 2?"),
        formula_sample("b", "Debt Ratio", "Debt ratio of 3 and 6?"),
        formula_sample("c", "Current Ratio", "Current ratio of 9 and 3?"),
        formula_sample("d", "Gross Margin", "Gross margin of 5 on 20?"),
    ]
    playbook = Playbook()
    reflections = [
        await method.reflect(playbook, await method.rollout(playbook, s)) for s in samples
    ]
    server.clear_records()
    local = [
        await method.curate(playbook, reflections[:2]),
        await method.curate(playbook, reflections[2:]),
    ]
    merged = await method.merge(playbook, local)
    assert merged.source == "merge"
    contents = [op["content"] for op in merged.operations]
    assert len(contents) == len(set(contents)) == 3
    for formula in ("Current Ratio", "Debt Ratio", "Gross Margin"):
        assert sum(formula in c for c in contents) == 1
    playbook = method.apply(playbook, merged)
    assert len(playbook) == 3
    if llm.json_mode == "json_schema":
        assert [r.schema_name for r in server.records] == ["curator", "curator", "merge"]
    assert set(llm.usage()) >= {"generator", "reflector", "curator", "merge"}


async def test_budget_evicts_over_http(llm: LLM) -> None:
    budget = Playbook().token_count() + 25
    method = AceMethod(llm, score, ace=AceSettings(token_budget=budget))
    playbook = Playbook()
    samples = [formula_sample(str(i), f"Formula {i}", f"Question {i}?") for i in range(3)]
    reflections = [
        await method.reflect(playbook, await method.rollout(playbook, s)) for s in samples
    ]
    playbook = method.apply(playbook, await method.curate(playbook, reflections))
    assert method.last_apply is not None
    assert len(method.last_apply.applied) == 3 and method.last_apply.evicted
    assert playbook.token_count() <= budget
    assert set(playbook.bullet_ids).isdisjoint(method.last_apply.evicted)


async def test_llm_failures_propagate() -> None:
    with serve_in_thread(ace_responder, SimConfig(rate_500=1.0)) as failing:
        client = LLM(OpenAIBackend(model="sim", base_url=failing.base_url), max_retries=0)
        try:
            method = AceMethod(client, score)
            with pytest.raises(LLMCallError):
                await method.rollout(Playbook(), formula_sample("x", "ROI", "ROI?"))
        finally:
            await client.aclose()
