"""The Combee reflection strategy for gepa, over real HTTP to the scripted GEPA server."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from gepa.proposer.reflective_mutation.reflection_lm import BatchReflectionLM, ReflectionLM

from combee.errors import LLMCallError
from combee.methods.gepa import CombeeReflection
from combee.sim import HTTPFault, RunningServer, SimConfig, peak_concurrency, serve_in_thread
from combee.sim.gepa_script import gepa_responder, rule_for
from combee.sim.responders import Responder
from tests.test_gepa_support import Prices, by_schema, llm_on_runner, record_ids, records

SEED = {"system_prompt": "Answer carefully."}


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(gepa_responder) as running:
        yield running


def reflect_once(server: RunningServer, n: int, **options: Any) -> tuple[Any, CombeeReflection]:
    with llm_on_runner(server.base_url) as (runner, llm):
        strategy = CombeeReflection(llm, runner, **options)
        proposal, successor = strategy.reflect(
            SEED, {"system_prompt": records(n)}, ["system_prompt"]
        )
        assert successor is strategy
        return proposal, strategy


def test_it_satisfies_gepas_protocols(server: RunningServer) -> None:
    with llm_on_runner(server.base_url) as (runner, llm):
        strategy = CombeeReflection(llm, runner)
        assert isinstance(strategy, ReflectionLM)
        assert isinstance(strategy, BatchReflectionLM)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_fewer_than_four_records_take_one_call(server: RunningServer, n: int) -> None:
    server.reset(gepa_responder, SimConfig())
    proposal, _ = reflect_once(server, n)
    calls = server.records
    assert [r.schema_name for r in calls] == ["gepa_proposal"]
    assert sorted(record_ids(calls[0])) == list(range(n))
    for i in range(n):
        assert rule_for(f"Topic {i}") in proposal.new_texts["system_prompt"]


@pytest.mark.parametrize(("n", "p"), [(4, 2), (9, 2), (10, 2), (17, 2), (16, 3), (12, 1)])
def test_k_groups_and_every_record_in_p_different_calls(
    server: RunningServer, n: int, p: int
) -> None:
    server.reset(gepa_responder, SimConfig())
    proposal, strategy = reflect_once(server, n, p=p, seed=11)
    k = math.isqrt(n)
    proposals = by_schema(server.records, "gepa_proposal")
    assert len(proposals) == k
    assert len(by_schema(server.records, "gepa_merge")) == 1
    seen: Counter[int] = Counter()
    for call in proposals:
        ids = record_ids(call)
        assert len(ids) == len(set(ids)), "a record appears twice in one call"
        seen.update(ids)
    assert seen == Counter({i: p for i in range(n)})
    groups = proposal.metadata["combee:system_prompt:groups"]
    assert sorted(len(g) for g in groups) == sorted(len(record_ids(c)) for c in proposals)
    assert strategy.usage.proposal_calls == k and strategy.usage.merge_calls == 1
    # The merge keeps every lesson of the local proposals.
    for i in range(n):
        assert rule_for(f"Topic {i}") in proposal.new_texts["system_prompt"]


def test_proposal_calls_are_concurrent(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig(ttft_s=0.3))
    reflect_once(server, 16)
    proposals = by_schema(server.records, "gepa_proposal")
    assert len(proposals) == 4
    assert peak_concurrency(proposals) == 4
    merge = by_schema(server.records, "gepa_merge")[0]
    assert merge.arrived >= max(r.finished for r in proposals)


def test_grouping_is_deterministic_for_a_seed(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig())
    first, _ = reflect_once(server, 16, seed=5)
    again, _ = reflect_once(server, 16, seed=5)
    other, _ = reflect_once(server, 16, seed=6)
    key = "combee:system_prompt:groups"
    assert first.metadata[key] == again.metadata[key]
    assert first.metadata[key] != other.metadata[key]


def test_single_grouping_is_one_call_over_all_records(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig())
    reflect_once(server, 16, grouping="single")
    calls = server.records
    assert [r.schema_name for r in calls] == ["gepa_proposal"]
    assert sorted(record_ids(calls[0])) == list(range(16))


def test_reflect_many_is_one_wave_of_maps_then_one_of_merges(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig(ttft_s=0.3))
    jobs: list[Any] = [
        (
            {"system_prompt": f"Prompt {j}."},
            {"system_prompt": records(9, offset=10 * j)},
            ["system_prompt"],
        )
        for j in range(3)
    ]
    with llm_on_runner(server.base_url) as (runner, llm):
        results = CombeeReflection(llm, runner).reflect_many(jobs)
    proposals = by_schema(server.records, "gepa_proposal")
    merges = by_schema(server.records, "gepa_merge")
    assert len(proposals) == 9 and len(merges) == 3
    assert peak_concurrency(proposals) == 9
    assert peak_concurrency(merges) == 3
    assert max(r.arrived for r in proposals) < min(r.arrived for r in merges)
    assert len(results) == 3
    for j, (proposal, _) in enumerate(results):
        text = proposal.new_texts["system_prompt"]
        assert text.startswith(f"Prompt {j}.")
        assert all(rule_for(f"Topic {10 * j + i}") in text for i in range(9))


def failing(schema: str, times: int) -> Responder:
    """The GEPA script, but the first ``times`` requests for ``schema`` answer HTTP 500."""
    lock = threading.Lock()
    seen = Counter[str]()

    def respond(body: Any) -> str:
        name = body.get("response_format", {}).get("json_schema", {}).get("name")
        with lock:
            seen[name] += 1
            fail = name == schema and seen[name] <= times
        if fail:
            raise HTTPFault(500, "scripted failure")
        return gepa_responder(body)

    return respond


def test_a_failed_merge_raises_and_a_retry_pays_only_the_merge(server: RunningServer) -> None:
    # max_retries=1: two attempts per call; the first two merge requests fail.
    server.reset(failing("gepa_merge", 2), SimConfig())
    dataset = {"system_prompt": records(16)}
    with llm_on_runner(server.base_url, max_retries=1) as (runner, llm):
        strategy = CombeeReflection(llm, runner)
        with pytest.raises(LLMCallError, match="merge"):
            strategy.reflect_many([(SEED, dataset, ["system_prompt"])])
        assert len(by_schema(server.records, "gepa_proposal")) == 4
        # gepa's retry-on-exception calls reflect() for the task: the map stage is memoised.
        proposal, _ = strategy.reflect(SEED, dataset, ["system_prompt"])
    assert len(by_schema(server.records, "gepa_proposal")) == 4
    assert len(by_schema(server.records, "gepa_merge")) == 1
    assert strategy.usage.memo_hits == 4
    assert rule_for("Topic 15") in proposal.new_texts["system_prompt"]


def test_a_failed_proposal_call_drops_its_group_only(server: RunningServer) -> None:
    server.reset(failing("gepa_proposal", 2), SimConfig())
    with llm_on_runner(server.base_url, max_retries=0) as (runner, llm):
        strategy = CombeeReflection(llm, runner)
        proposal, _ = strategy.reflect(SEED, {"system_prompt": records(16)}, ["system_prompt"])
    assert strategy.usage.failed_calls == 2
    assert len(proposal.metadata["combee:system_prompt:local_instructions"]) == 2
    assert len(by_schema(server.records, "gepa_merge")) == 1


def test_cost_and_tokens_are_reported(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig())
    with llm_on_runner(server.base_url, prices=Prices(1.0, 2.0)) as (runner, llm):
        strategy = CombeeReflection(llm, runner)
        strategy.reflect(SEED, {"system_prompt": records(9)}, ["system_prompt"])
        usage = llm.usage()
    spent = [usage["proposal"], usage["merge"]]
    assert strategy.total_tokens_in == sum(u.prompt_tokens for u in spent) > 0
    assert strategy.total_tokens_out == sum(u.completion_tokens for u in spent) > 0
    assert strategy.total_cost == pytest.approx(sum(u.cost for u in spent))
    assert strategy.total_cost > 0
