"""``combee train --batch-size auto`` end to end, over real HTTP, against the simulated server."""

from __future__ import annotations

import json
from pathlib import Path

from combee.sim import SimConfig, serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import run_combee


def test_auto_batch_size_profiles_chooses_and_explains(tmp_path: Path) -> None:
    client = "lean"  # the default openai client is what tests/cli/test_cli_train_e2e.py drives
    out = tmp_path / "auto"
    # Latency that does not grow with the batch: larger batches pay off.
    with serve_in_thread(ace_responder, SimConfig(ttft_s=0.05, decode_tokens_per_s=4000)) as sim:
        result = run_combee(
            "train",
            "--task",
            "formula",
            "--strategy",
            "combee",
            "--batch-size",
            "auto",
            "--max-batch-size",
            "8",
            "--tau",
            "0.05",
            "--train-limit",
            "30",
            "--val-limit",
            "0",
            "--test-limit",
            "2",
            "--model",
            "sim",
            "--base-url",
            sim.base_url,
            "--client",
            client,
            "--no-cache",
            "--out",
            str(out),
        )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    profile = json.loads((out / "batch_profile.json").read_text())
    (decision,) = profile["decisions"]
    rungs = [m["batch_size"] for m in decision["measurements"]]
    assert rungs == [2, 4, 8]  # the cap halved twice
    assert all(m["t_iter_s"] > 0 for m in decision["measurements"])
    assert decision["fit"] is not None and decision["fit"]["alpha"] > 0
    assert profile["tau"] == 0.05 and profile["max_batch_size"] == 8
    chosen = profile["chosen"]
    assert 1 <= chosen <= 8 and f"chose {chosen}" in profile["why"]
    assert chosen == decision["chosen"]
    # The process's first iteration warms up at the first rung and is left out of the fit.
    assert [m["batch_size"] for m in decision["warmup"]] == [2]
    assert "warm-up iteration at b=2" in profile["why"]
    # The profiling iterations are training iterations; the rest run at the chosen size.
    sizes = [
        json.loads(line)["batch_size"] for line in (out / "metrics.jsonl").read_text().splitlines()
    ]
    assert sizes[: len(rungs) + 1] == [2, *rungs]
    rest = sizes[len(rungs) + 1 :]
    assert sum(sizes) == 30
    assert all(size == chosen for size in rest[:-1]) and 0 < rest[-1] <= chosen
    config = json.loads((out / "config.json").read_text())
    assert config["effective_batch_size"] == "auto"
    assert config["endpoint"]["client"] == client
    assert f"chose {chosen}" in result.stderr.replace("\n", " ")


def test_auto_with_sequential_is_refused(tmp_path: Path) -> None:
    result = run_combee(
        "train",
        "--strategy",
        "sequential",
        "--batch-size",
        "auto",
        "--model",
        "sim",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--out",
        str(tmp_path / "x"),
    )
    assert result.returncode == 1
    assert "--batch-size auto needs a strategy that batches" in result.stderr


def test_batch_size_must_be_a_number_or_auto(tmp_path: Path) -> None:
    result = run_combee("train", "--batch-size", "lots", "--out", str(tmp_path / "x"))
    assert result.returncode == 1
    assert "--batch-size 'lots'" in result.stderr
