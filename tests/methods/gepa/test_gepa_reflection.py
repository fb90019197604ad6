"""The Combee reflection strategy for gepa, over real HTTP to the scripted GEPA server."""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from gepa.proposer.reflective_mutation.reflection_lm import BatchReflectionLM, ReflectionLM

from combee.methods.gepa import CombeeReflection
from combee.sim import HTTPFault, RunningServer, SimConfig, peak_concurrency, serve_in_thread
from combee.sim.gates import wave
from combee.sim.gepa_script import gepa_responder, rule_for
from combee.sim.responders import Responder
from combee.strategies import CombeeStrategy, NaiveStrategy
from combee.strategies.settings import CombeeSettings
from tests.methods.gepa.gepa_support import Prices, by_schema, llm_on_runner, record_ids, records

SEED = {"system_prompt": "Answer carefully."}


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(gepa_responder) as running:
        yield running


def reflect_once(
    server: RunningServer, n: int, *, p: int = 2, seed: int = 0, naive: bool = False
) -> tuple[Any, CombeeReflection]:
    reduce = (
        NaiveStrategy()
        if naive
        else CombeeStrategy(CombeeSettings(duplication=p, fan_in=32), seed=seed)
    )
    with llm_on_runner(server.base_url) as (runner, llm):
        strategy = CombeeReflection(llm, runner, reduce, seed=seed)
        proposal, successor = strategy.reflect(
            SEED, {"system_prompt": records(n)}, ["system_prompt"]
        )
        assert successor is strategy
        return proposal, strategy


def test_it_satisfies_gepas_protocols(server: RunningServer) -> None:
    with llm_on_runner(server.base_url) as (runner, llm):
        strategy = CombeeReflection(llm, runner, CombeeStrategy())
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
    meta = proposal.metadata
    groups = meta["combee:system_prompt:groups"]
    assert sorted(len(g) for g in groups) == sorted(len(record_ids(c)) for c in proposals)
    # The reported groups hold record indices: each matches the records one call saw.
    assert sorted(sorted(g) for g in groups) == sorted(sorted(record_ids(c)) for c in proposals)
    assert meta["combee:system_prompt:n"] == n and meta["combee:system_prompt:k"] == k
    assert len(meta["combee:system_prompt:levels"]) == 2
    assert meta["combee:system_prompt:levels"][1] == [list(range(k))]
    assert meta["combee:system_prompt:calls"] == k + 1
    assert len(meta["combee:system_prompt:map_prompts"]) == k
    assert all(text for text in meta["combee:system_prompt:map_outputs"])
    assert strategy.usage.proposal_calls == k and strategy.usage.merge_calls == 1
    # The merge keeps every lesson of the local proposals.
    for i in range(n):
        assert rule_for(f"Topic {i}") in proposal.new_texts["system_prompt"]


def test_proposal_calls_are_concurrent(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig(gates=(wave("gepa_proposal", 4),)))
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


def test_naive_strategy_is_one_call_over_all_records(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig())
    reflect_once(server, 16, naive=True)
    calls = server.records
    assert [r.schema_name for r in calls] == ["gepa_proposal"]
    assert sorted(record_ids(calls[0])) == list(range(16))


def test_reflect_many_overlaps_the_calls_of_all_jobs(server: RunningServer) -> None:
    gates = (wave("gepa_proposal", 9), wave("gepa_merge", 3))
    server.reset(gepa_responder, SimConfig(gates=gates))
    jobs: list[Any] = [
        (
            {"system_prompt": f"Prompt {j}."},
            {"system_prompt": records(9, offset=10 * j)},
            ["system_prompt"],
        )
        for j in range(3)
    ]
    with llm_on_runner(server.base_url) as (runner, llm):
        results = CombeeReflection(llm, runner, CombeeStrategy()).reflect_many(jobs)
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


def test_a_failed_merge_keeps_one_local_proposal(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    # max_retries=1: two attempts per call; the only merge call fails twice.
    server.reset(failing("gepa_merge", 2), SimConfig())
    with llm_on_runner(server.base_url, max_retries=1) as (runner, llm):
        strategy = CombeeReflection(llm, runner, CombeeStrategy())
        with caplog.at_level(logging.WARNING):
            proposal, _ = strategy.reflect(SEED, {"system_prompt": records(16)}, ["system_prompt"])
    assert len(by_schema(server.records, "gepa_proposal")) == 4
    assert "every merge call failed" in caplog.text
    local = proposal.metadata["combee:system_prompt:local_instructions"]
    assert proposal.new_texts["system_prompt"] == local[0]
    assert strategy.usage.failed_calls == 1 and strategy.usage.merge_calls == 0


def test_a_failed_proposal_call_drops_its_group_only(server: RunningServer) -> None:
    server.reset(failing("gepa_proposal", 2), SimConfig())
    with llm_on_runner(server.base_url, max_retries=0) as (runner, llm):
        strategy = CombeeReflection(llm, runner, CombeeStrategy())
        proposal, _ = strategy.reflect(SEED, {"system_prompt": records(16)}, ["system_prompt"])
    assert strategy.usage.failed_calls == 2
    assert len(proposal.metadata["combee:system_prompt:local_instructions"]) == 2
    assert len(by_schema(server.records, "gepa_merge")) == 1


def test_cost_and_tokens_are_reported(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig())
    with llm_on_runner(server.base_url, prices=Prices(1.0, 2.0)) as (runner, llm):
        strategy = CombeeReflection(llm, runner, CombeeStrategy())
        strategy.reflect(SEED, {"system_prompt": records(9)}, ["system_prompt"])
        usage = llm.usage()
    spent = [usage["proposal"], usage["merge"]]
    assert strategy.total_tokens_in == sum(u.prompt_tokens for u in spent) > 0
    assert strategy.total_tokens_out == sum(u.completion_tokens for u in spent) > 0
    assert strategy.total_cost == pytest.approx(sum(u.cost for u in spent))
    assert strategy.total_cost > 0
