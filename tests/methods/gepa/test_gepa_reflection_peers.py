"""GEPA reflection on top of Combee's strategies: fresh calls for repeated jobs, the retry memo,
fan-in levels, validation, and gepa's stock reflection through our client."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gepa.api import optimize
from gepa.core.adapter import EvaluationBatch
from gepa.proposer.reflective_mutation.reflection_lm import StatelessReflectionLM

from combee.errors import ConfigError, LLMCallError
from combee.llm import ResponseCache
from combee.methods.gepa import CombeeInstructionProposer, CombeeReflection
from combee.methods.gepa.stock import StockReflectionLM
from combee.sim import HTTPFault, RunningServer, SimConfig, peak_concurrency, serve_in_thread
from combee.sim.gates import wave
from combee.sim.gepa_script import STOCK_PROMPT_START, gepa_responder, rule_for
from combee.sim.responders import Responder
from combee.strategies import CombeeStrategy, NaiveStrategy
from combee.strategies.settings import CombeeSettings
from tests.methods.gepa.gepa_support import by_schema, llm_on_runner, make_llm, records, user_text

SEED = {"system_prompt": "Answer carefully."}
C = "system_prompt"


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(gepa_responder) as running:
        yield running


def job(prompt: str = "Answer carefully.", n: int = 9, offset: int = 0) -> Any:
    return ({C: prompt}, {C: records(n, offset=offset)}, [C])


def seeds(server: RunningServer) -> list[int]:
    return [r.body["seed"] for r in server.records]


def test_identical_jobs_in_one_wave_each_make_their_own_calls(
    server: RunningServer, tmp_path: Path
) -> None:
    server.reset(gepa_responder, SimConfig())
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with llm_on_runner(server.base_url, cache=cache) as (runner, llm):
        reflection = CombeeReflection(llm, runner, CombeeStrategy(), seed=4)
        results = reflection.reflect_many([job(), job(), job()])
        usage = llm.usage()
    # 9 records: 3 proposal calls and 1 merge per job, none answered from the cache.
    assert len(by_schema(server.records, "gepa_proposal")) == 9
    assert len(by_schema(server.records, "gepa_merge")) == 3
    assert usage["proposal"].cached_calls == 0 and usage["merge"].cached_calls == 0
    assert len(set(seeds(server))) == 12
    assert all(rule_for("Topic 8") in p.new_texts[C] for p, _ in results)


def test_the_same_job_twice_gets_fresh_calls_and_a_seed_replays(
    server: RunningServer, tmp_path: Path
) -> None:
    server.reset(gepa_responder, SimConfig())
    with llm_on_runner(server.base_url, cache=ResponseCache(tmp_path / "c.sqlite")) as (
        runner,
        llm,
    ):
        reflection = CombeeReflection(llm, runner, NaiveStrategy(), seed=4)
        reflection.reflect_many([job()])
        reflection.reflect_many([job()])
    assert len(by_schema(server.records, "gepa_proposal")) == 2
    first = seeds(server)
    assert first[0] != first[1]
    # The same seed and call order replay the same requests (same seeds, same prompts).
    server.reset(gepa_responder, SimConfig())
    with llm_on_runner(server.base_url) as (runner, llm):
        again = CombeeReflection(llm, runner, NaiveStrategy(), seed=4)
        again.reflect_many([job()])
        again.reflect_many([job()])
    assert seeds(server) == first


@pytest.mark.parametrize("p", [1.5, True, 0, "2"])
def test_duplication_must_be_a_positive_integer(p: Any) -> None:
    with pytest.raises(ConfigError, match=r"^duplication must be a whole number") as caught:
        CombeeSettings(duplication=p)
    assert caught.value.setting == "duplication"


def test_fan_in_must_be_at_least_two() -> None:
    with pytest.raises(ConfigError) as caught:
        CombeeSettings(fan_in=1)
    assert caught.value.setting == "fan_in"


def test_a_missing_component_is_skipped_with_a_warning(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.reset(gepa_responder, SimConfig())
    dataset = {C: records(2), "ghost": records(2)}
    with llm_on_runner(server.base_url) as (runner, llm):
        reflection = CombeeReflection(llm, runner, CombeeStrategy())
        with caplog.at_level(logging.INFO, logger="combee.methods.gepa.reflection"):
            proposal, _ = reflection.reflect(SEED, dataset, [C, "ghost"])
    assert list(proposal.new_texts) == [C]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "'ghost'" in warnings[0].getMessage()
    # Two records: one proposal call, said at info level.
    assert any("one proposal call" in r.getMessage() for r in caplog.records)
    assert len(server.records) == 1


def revisions(record: Any) -> int:
    return len(re.findall(r"^### Revision \d+$", user_text(record), re.MULTILINE))


def test_fan_in_holds_at_1100_records(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig())
    with llm_on_runner(server.base_url) as (runner, llm):
        # The scripted merge writes every rule it sees: ~1,100 lines need a large reply budget.
        reflection = CombeeReflection(
            llm,
            runner,
            CombeeStrategy(CombeeSettings(duplication=2, fan_in=32)),
            seed=1,
            max_tokens=100_000,
        )
        proposal, _ = reflection.reflect(SEED, {C: records(1100)}, [C])
    proposals = by_schema(server.records, "gepa_proposal")
    merges = by_schema(server.records, "gepa_merge")
    assert len(proposals) == 33  # floor(sqrt(1100))
    assert merges and all(revisions(m) <= 32 for m in merges)
    levels = proposal.metadata[f"combee:{C}:levels"]
    assert len(levels) >= 3, "33 proposals exceed fan_in 32: more than one merge level"
    assert len(merges) == sum(len(level) for level in levels[1:])
    last = max(merges, key=lambda r: r.arrived)
    assert all(last.arrived >= m.finished for m in merges if m is not last)
    assert proposal.metadata[f"combee:{C}:calls"] == 33 + len(merges)
    assert all(rule_for(f"Topic {i}") in proposal.new_texts[C] for i in (0, 549, 1099))


def failing_while(flag: threading.Event, marker: str) -> Responder:
    """The GEPA script, but requests whose user text holds ``marker`` answer HTTP 500 while
    ``flag`` is set."""

    def respond(body: Any) -> str:
        users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
        if flag.is_set() and any(marker in text for text in users):
            raise HTTPFault(500, "scripted failure")
        return gepa_responder(body)

    return respond


def test_a_retry_reuses_the_units_a_failed_wave_finished(server: RunningServer) -> None:
    broken = threading.Event()
    broken.set()
    server.reset(failing_while(broken, "Prompt 1."), SimConfig())
    jobs = [job("Prompt 0."), job("Prompt 1."), job("Prompt 0.")]
    with llm_on_runner(server.base_url, max_retries=0) as (runner, llm):
        reflection = CombeeReflection(llm, runner, CombeeStrategy(), seed=2)
        with pytest.raises(LLMCallError, match="job 1"):
            reflection.reflect_many(jobs)
        assert len(by_schema(server.records, "gepa_proposal")) == 6
        assert len(by_schema(server.records, "gepa_merge")) == 2
        paid = len(server.records)
        broken.clear()
        # gepa's per-task retry: jobs 0 and 2 (identical) each reuse their own finished unit.
        texts = [reflection.reflect(*one)[0].new_texts[C] for one in jobs]
        assert len(server.records) == paid + 4  # only job 1 pays again: 3 proposals + 1 merge
        assert reflection.usage.memo_hits == 2
        assert texts[0].startswith("Prompt 0.") and texts[1].startswith("Prompt 1.")
        # Reused once only: the same job again is a fresh reflection.
        reflection.reflect(*jobs[0])
        assert len(server.records) == paid + 8


def test_the_next_reflect_many_forgets_a_failed_waves_units(server: RunningServer) -> None:
    broken = threading.Event()
    broken.set()
    server.reset(failing_while(broken, "Prompt 1."), SimConfig())
    with llm_on_runner(server.base_url, max_retries=0) as (runner, llm):
        reflection = CombeeReflection(llm, runner, NaiveStrategy())
        with pytest.raises(LLMCallError):
            reflection.reflect_many([job("Prompt 0."), job("Prompt 1.")])
        paid = len(server.records)
        broken.clear()
        reflection.reflect_many([job("Prompt 0.")])
        reflection.reflect(*job("Prompt 0."))
    assert len(server.records) == paid + 2
    assert reflection.usage.memo_hits == 0


def test_stock_reflection_runs_gepas_own_prompt_through_our_client(
    server: RunningServer,
) -> None:
    # The stock prompts carry no schema: the first 3 unnamed calls are held until all arrived.
    server.reset(gepa_responder, SimConfig(gates=(wave(None, 3),)))
    jobs = [job(f"Prompt {j}.", n=3, offset=10 * j) for j in range(3)]
    with llm_on_runner(server.base_url) as (runner, llm):
        stock = StockReflectionLM(llm, runner, temperature=0.5, max_tokens=300)
        results = StatelessReflectionLM(stock).reflect_many(jobs)
        single, _ = StatelessReflectionLM(stock).reflect(*jobs[0])
        usage = llm.usage()
    calls = server.records
    assert len(calls) == 4 and all(r.status == 200 for r in calls)
    assert all("response_format" not in r.body for r in calls)
    assert all(user_text(r).startswith(STOCK_PROMPT_START) for r in calls)
    assert all(r.body["temperature"] == 0.5 and r.body["max_tokens"] == 300 for r in calls)
    assert peak_concurrency(calls[:3]) == 3  # gepa's batch_complete: one concurrent wave
    assert usage["proposal"].calls == 4
    assert stock.total_tokens_in == usage["proposal"].prompt_tokens > 0
    assert stock.total_tokens_out == usage["proposal"].completion_tokens > 0
    for j, (proposal, _) in enumerate(results):
        text = proposal.new_texts[C]
        assert text.startswith(f"Prompt {j}.") and "```" not in text
        assert all(rule_for(f"Topic {10 * j + i}") in text for i in range(3))
    assert single.new_texts[C] == results[0][0].new_texts[C]


class TopicAdapter:
    """A minimal gepa adapter: an example (a formula name) is solved once the prompt names it."""

    propose_new_texts = None

    def evaluate(
        self, batch: list[str], candidate: dict[str, str], capture_traces: bool = False
    ) -> EvaluationBatch[dict[str, Any], str]:
        solved = [topic in candidate[C] for topic in batch]
        traces = [{"topic": t, "ok": ok} for t, ok in zip(batch, solved, strict=True)]
        return EvaluationBatch(
            outputs=["ok" if ok else "1.00" for ok in solved],
            scores=[float(ok) for ok in solved],
            trajectories=traces if capture_traces else None,
        )

    def make_reflective_dataset(
        self, candidate: dict[str, str], eval_batch: Any, components_to_update: list[str]
    ) -> dict[str, list[dict[str, Any]]]:
        rows = [
            {
                "Inputs": {"context": f"Use formula {t['topic']} to answer the question."},
                "Generated Outputs": "ok" if t["ok"] else "1.00",
                "Feedback": "Correct." if t["ok"] else "Wrong: the correct answer differs.",
            }
            for t in eval_batch.trajectories
        ]
        return {name: rows for name in components_to_update}


def test_gepa_optimize_runs_its_stock_reflection_through_our_client(
    server: RunningServer,
) -> None:
    server.reset(gepa_responder, SimConfig())
    topics = [f"Topic {i}" for i in range(6)]
    with llm_on_runner(server.base_url) as (runner, llm):
        stock = StockReflectionLM(llm, runner)
        result = optimize(
            seed_candidate={C: "Answer the question."},
            trainset=topics,
            valset=topics,
            adapter=TopicAdapter(),  # type: ignore[arg-type]
            reflection_lm=stock,
            reflection_strategy=None,
            reflection_minibatch_size=3,
            max_metric_calls=40,
            seed=0,
        )
        usage = llm.usage()
    calls = server.records
    assert calls and all(user_text(r).startswith(STOCK_PROMPT_START) for r in calls)
    assert usage["proposal"].calls == len(calls) and stock.usage.proposal_calls == len(calls)
    best = result.candidates[result.best_idx][C]
    assert result.val_aggregate_scores[result.best_idx] > result.val_aggregate_scores[0] == 0.0
    assert any(rule_for(topic) in best for topic in topics)


def test_stock_reflection_keeps_the_text_of_multimodal_messages(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig())
    parts = [{"type": "text", "text": "Say hi."}, {"type": "image_url", "image_url": {"url": "x"}}]
    with llm_on_runner(server.base_url) as (runner, llm):
        reply = StockReflectionLM(llm, runner)([{"role": "user", "content": parts}])
    assert reply.startswith("echo: Say hi.")
    assert server.records[0].body["messages"] == [{"role": "user", "content": "Say hi."}]


def test_the_dspy_proposer_takes_a_strategy(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig())
    with CombeeInstructionProposer(make_llm(server.base_url), strategy=NaiveStrategy()) as propose:
        texts = propose(
            candidate={C: "Solve."}, reflective_dataset={C: records(9)}, components_to_update=[C]
        )
    assert [r.schema_name for r in server.records] == ["gepa_proposal"]
    assert rule_for("Topic 8") in texts[C]


def test_a_per_call_seed_replaces_the_clients_and_keys_the_cache(
    server: RunningServer, tmp_path: Path
) -> None:
    server.reset(gepa_responder, SimConfig())
    chat = [{"role": "user", "content": "Say hi."}]
    with llm_on_runner(server.base_url, cache=ResponseCache(tmp_path / "c.sqlite")) as (
        runner,
        llm,
    ):
        first = runner.run(llm.complete(chat, role="proposal"))
        seeded = runner.run(llm.complete(chat, role="proposal", seed=9))
        again = runner.run(llm.complete(chat, role="proposal", seed=9))
        other = runner.run(llm.complete(chat, role="proposal", seed=10))
    assert [r.body["seed"] for r in server.records] == [3, 9, 10]  # the client's seed is 3
    assert not first.cached and not seeded.cached and again.cached and not other.cached
