"""``gepa.optimize`` end to end through the scripted GEPA server, and ``combee.train`` with
``method="gepa"``."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gepa.api import optimize
from gepa.core.result import GEPAResult

from combee.api import train_async
from combee.core.loop import FixedBatchSize
from combee.llm.connect import connect
from combee.methods.gepa import (
    COMPONENT,
    CombeeReflection,
    IterationClock,
    ResizableBatchSampler,
    TaskAdapter,
)
from combee.sim import RunningServer, SimConfig, serve_in_thread
from combee.sim.ace_script import scripted_answer
from combee.sim.gepa_script import gepa_responder
from combee.strategies import CombeeStrategy
from combee.tasks.base import Sample, Score
from combee.tasks.scoring import get_scorer
from tests.methods.gepa.gepa_support import by_schema, llm_on_runner
from tests.methods.gepa.test_gepa_reflection import failing

TOPICS = ("Alpha Ratio", "Beta Margin", "Gamma Yield")


def learnable(count: int, start: int = 0) -> list[Sample]:
    """Samples the scripted generator solves once the prompt names their formula."""
    samples = []
    for i in range(start, start + count):
        question = f"Use formula {TOPICS[i % 3]} to answer: what is the value for case {i}?"
        samples.append(Sample(f"s{i}", question, scripted_answer(question)))
    return samples


def exact(prediction: str, sample: Sample) -> Score:
    return get_scorer("exact")(prediction, sample.answer)


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, message: str) -> None:
        self.lines.append(message)


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(gepa_responder) as running:
        yield running


def run_gepa(server: RunningServer, budget: int, **llm_options: Any) -> tuple[Any, Any, Lines]:
    logger = Lines()
    with llm_on_runner(server.base_url, **llm_options) as (runner, llm):
        sampler = ResizableBatchSampler(8, seed=0)
        timer = IterationClock(
            sampler, FixedBatchSize(8), train_size=12, validation_seconds=lambda: 0.0
        )
        result: GEPAResult[str, int] = optimize(
            seed_candidate={COMPONENT: "Answer the question."},
            trainset=learnable(12),
            valset=learnable(6, start=100),
            adapter=TaskAdapter(llm, runner, exact),  # type: ignore[arg-type]
            reflection_strategy=CombeeReflection(llm, runner, CombeeStrategy(seed=0), seed=0),
            batch_sampler=sampler,
            reflection_minibatch_size=None,
            max_metric_calls=budget,
            callbacks=[timer],  # type: ignore[list-item]
            logger=logger,
            seed=0,
        )
    return result, timer, logger


def test_gepa_optimize_learns_through_the_combee_strategy(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig())
    result, timer, _ = run_gepa(server, budget=60)
    assert result.num_candidates >= 2
    assert result.val_aggregate_scores[result.best_idx] > result.val_aggregate_scores[0] == 0.0
    best = result.candidates[result.best_idx][COMPONENT]
    assert any(topic in best for topic in TOPICS)
    assert len(by_schema(server.records, "gepa_proposal")) >= 2
    assert len(by_schema(server.records, "gepa_merge")) >= 1
    assert timer.timings and all(t.batch_size == 8 for t in timer.timings)


def test_failed_merges_keep_a_local_proposal_and_the_run_goes_on(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    # With max_retries=1 every call gets two attempts: the first merge fails for good, and the
    # scan keeps the first local proposal of that reflection instead of losing it.
    server.reset(failing("gepa_merge", 2), SimConfig())
    with caplog.at_level(logging.WARNING, logger="combee"):
        result, _, _ = run_gepa(server, budget=60, max_retries=1)
    assert "every merge call failed; keeping the first local update" in caplog.text
    assert len(result.candidates) == len(result.parents) == len(result.val_aggregate_scores)
    assert result.num_candidates >= 2  # later iterations still proposed and were accepted
    merges = [r for r in server.records if r.schema_name == "gepa_merge"]
    assert sum(1 for r in merges if r.status == 500) == 2


def write_jsonl(path: Path, samples: list[Sample]) -> None:
    rows = [{"id": s.id, "question": s.question, "answer": s.answer} for s in samples]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


async def test_train_with_gepa_writes_the_run_directory(
    server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reset(gepa_responder, SimConfig())
    data = tmp_path / "train.jsonl"
    write_jsonl(data, learnable(30))
    out = tmp_path / "run"
    monkeypatch.setenv("COMBEE_GEPA_TEST_KEY", "sk-never-written-0000")
    llm = connect(
        "sim",
        base_url=server.base_url,
        api_key_env="COMBEE_GEPA_TEST_KEY",
        concurrency=32,
        timeout_s=10.0,
        max_retries=1,
        prices=(1.0, 2.0),
    )
    try:
        result = await train_async(
            "jsonl",
            data=str(data),
            method="gepa",
            strategy="combee",
            batch_size=8,
            llm=llm,
            run_dir=out,
            max_tokens=1024,
            max_metric_calls=50,
            baseline=True,
        )
    finally:
        await llm.aclose()
    results = result.summary
    on_disk = json.loads((out / "final_results.json").read_text())
    assert on_disk == results
    assert results["baseline_test_accuracy"] == 0.0
    assert results["test_accuracy"] > 0.0
    assert results["best_val_accuracy"] > results["seed_val_accuracy"]
    assert set(results["llm_calls"]) >= {"generator", "proposal", "merge"}
    assert results["cost"] > 0
    config = json.loads((out / "config.json").read_text())
    assert config["method"] == "gepa" and config["max_metric_calls"] == 50
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == results["iterations"] >= 1
    assert all(m["batch_size"] == 8 for m in metrics)
    gepa_result = json.loads((out / "gepa_result.json").read_text())
    assert len(gepa_result["candidates"]) == len(gepa_result["parents"]) == results["candidates"]
    prompt = (out / "prompt.txt").read_text().strip()
    assert prompt == gepa_result["candidates"][results["best_candidate"]][COMPONENT]
    assert any(topic in prompt for topic in TOPICS)
    for path in out.rglob("*"):
        if path.is_file():
            assert b"sk-never-written" not in path.read_bytes()
