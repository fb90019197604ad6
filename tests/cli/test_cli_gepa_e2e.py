"""``combee train --method gepa`` end to end: the real command, over HTTP, against the scripted
GEPA server."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from combee.sim import RequestRecord, SimConfig, peak_concurrency, serve_in_thread
from combee.sim.gates import waves
from combee.sim.gepa_script import STOCK_PROMPT_START, gepa_responder
from tests.cli_helpers import run_combee
from tests.methods.gepa.test_gepa_optimize import learnable, write_jsonl

EXAMPLE = re.compile(r"^### Example \d+\n", re.MULTILINE)


def _examples(record: RequestRecord) -> list[str]:
    user = next(m["content"] for m in record.body["messages"] if m["role"] == "user")
    chunks = EXAMPLE.split(user.split("</examples>")[0])[1:]
    return [chunk.strip() for chunk in chunks]


def test_each_proposal_is_four_concurrent_calls_then_one_merge(tmp_path: Path) -> None:
    out = tmp_path / "gepa"
    # The server holds each wave of 4 proposals until all 4 have arrived (as many waves as
    # the 60 metric calls could pay for: more than enough).
    gated = SimConfig(gates=waves("gepa_proposal", 4, 60))
    with serve_in_thread(gepa_responder, gated) as server:
        result = run_combee(
            "train", "--method", "gepa", "--strategy", "combee", "--batch-size", "16",
            "--train-limit", "32", "--val-limit", "4", "--test-limit", "4",
            "--max-metric-calls", "60", "--model", "sim", "--base-url", server.base_url,
            "--out", str(out),
        )  # fmt: skip
        records = server.records
    assert result.returncode == 0, result.stderr
    merges = [r for r in records if r.schema_name == "gepa_merge"]
    assert merges
    previous = -1
    for merge in merges:
        wave = [
            r
            for r in records
            if r.schema_name == "gepa_proposal" and previous < r.index < merge.index
        ]
        previous = merge.index
        assert len(wave) == 4
        assert peak_concurrency(wave) == 4
        assert merge.arrived >= max(r.finished for r in wave)
        per_call = [_examples(r) for r in wave]
        assert all(len(examples) == 8 for examples in per_call)
        counts = Counter(example for examples in per_call for example in set(examples))
        assert len(counts) == 16 and set(counts.values()) == {2}
    saved = json.loads((out / "gepa_result.json").read_text())
    assert {"candidates", "parents", "val_aggregate_scores"} <= set(saved)
    results = json.loads((out / "final_results.json").read_text())
    assert results["test_samples"] == 4 and 0.0 <= results["test_accuracy"] <= 1.0
    assert results["llm_calls"][
        "gepa_proposal" if "gepa_proposal" in results["llm_calls"] else "proposal"
    ] == 4 * len(merges)
    assert (out / "prompt.txt").read_text().strip()
    # Each iteration's line and metrics say the reduce calls it made: 4 proposals, 1 merge.
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    reduced = [m["reduce_levels"] for m in metrics if m["reduce_levels"]]
    assert reduced == [[4, 1]] * len(merges)
    assert result.stderr.count("reduce calls 4+1") == len(merges)


def test_auto_batch_size_profiles_then_runs_gepa_at_the_chosen_size(tmp_path: Path) -> None:
    out = tmp_path / "auto"
    data = tmp_path / "learnable.jsonl"
    write_jsonl(data, learnable(60))
    with serve_in_thread(gepa_responder, SimConfig(ttft_s=0.05)) as server:
        result = run_combee(
            "train", "--method", "gepa", "--task", "jsonl", "--data", str(data),
            "--strategy", "combee", "--batch-size", "auto", "--max-batch-size", "8",
            "--train-limit", "32", "--val-limit", "4", "--test-limit", "4",
            "--max-metric-calls", "400", "--model", "sim", "--base-url", server.base_url,
            "--out", str(out),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    profile = json.loads((out / "batch_profile.json").read_text())
    decision = profile["decisions"][0]
    rungs = [m["batch_size"] for m in decision["measurements"]]
    assert rungs == [2, 4, 8]  # the cap halved twice
    assert all(m["t_iter_s"] > 0 for m in decision["measurements"])
    chosen = profile["chosen"]
    assert 2 <= chosen <= 8 and f"chose {chosen}" in profile["why"]
    assert [m["batch_size"] for m in decision["warmup"]] == [2]  # left out of the fit
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    sizes = [m["batch_size"] for m in metrics]
    assert sizes[:4] == [2, *rungs]
    assert len(sizes) > 4 and set(sizes[4:]) == {chosen}
    # The profile measured the iterations without their validation passes, which only accepted
    # candidates have.
    for row, measured in zip(metrics[1:4], decision["measurements"], strict=True):
        assert abs(row["wall_s"] - measured["t_iter_s"]) < 1e-3
    accepted = [m for m in metrics if m["accepted"]]
    assert accepted and all(m["validation_s"] > 0 for m in accepted)
    assert all(m["validation_s"] == 0 for m in metrics if not m["accepted"])
    config = json.loads((out / "config.json").read_text())
    assert config["method"] == "gepa" and config["effective_batch_size"] == "auto"
    results = json.loads((out / "final_results.json").read_text())
    assert results["chosen_batch_size"] == chosen


def test_sequential_is_gepa_as_published_at_batch_one(tmp_path: Path) -> None:
    out = tmp_path / "seq"
    data = tmp_path / "learnable.jsonl"
    write_jsonl(data, learnable(12))
    with serve_in_thread(gepa_responder) as server:
        result = run_combee(
            "train", "--method", "gepa", "--task", "jsonl", "--data", str(data),
            "--strategy", "sequential", "--batch-size", "40", "--val-limit", "2",
            "--test-limit", "2", "--max-metric-calls", "40", "--model", "sim",
            "--base-url", server.base_url, "--out", str(out),
        )  # fmt: skip
        records = server.records
    assert result.returncode == 0, result.stderr
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert metrics and {m["batch_size"] for m in metrics} == {1}
    # gepa's own reflection prompt, as plain text: no Combee proposal or merge schema at all.
    stock = [r for r in records if r.schema_name is None and r.index > 1]
    user = [next(m["content"] for m in r.body["messages"] if m["role"] == "user") for r in stock]
    assert stock and all(text.startswith(STOCK_PROMPT_START) for text in user)
    assert not [r for r in records if r.schema_name in ("gepa_proposal", "gepa_merge")]
    results = json.loads((out / "final_results.json").read_text())
    assert results["reflection"]["step"] == "gepa stock"
    assert results["reflection"]["proposal_calls"] == len(stock)
    assert sum(sum(m["reduce_levels"]) for m in metrics) == len(stock)  # a call per proposal
