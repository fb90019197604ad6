"""The recommendation over real grids trained against the scripted server: a configuration is
named only when it beat the starting playbook, a grid where nothing did says so, and the same
grid with its training times shuffled by timing noise is recommended alike."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder, scripted_answer
from tests.cli_helpers import run_combee

TOPICS = ("Alpha Ratio", "Beta Margin", "Gamma Yield", "Delta Spread")


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def write_data(path: Path, answer: Any) -> Path:
    lines = []
    for i in range(24):
        question = f"Use formula {TOPICS[i % len(TOPICS)]} to answer: the value for case {i}?"
        lines.append(json.dumps({"id": f"q{i}", "question": question, "answer": answer(question)}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def compare(data: Path, out: Path) -> str:
    with serve_in_thread(ace_responder) as server:
        done = run_combee(
            "compare", "--task", "jsonl", "--data", str(data), "--strategies", "naive,combee",
            "--batch-sizes", "4", "--seeds", "0,1", "--train-limit", "8", "--val-limit", "0",
            "--test-limit", "8", "--baseline", "--no-gate", "--model", "sim",
            "--base-url", server.base_url, "--out", str(out),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split())


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A grid whose questions the scripted model answers once the playbook names the formula."""
    root = tmp_path_factory.mktemp("learned")
    compare(write_data(root / "learnable.jsonl", scripted_answer), root / "grid")
    return root / "grid"


def test_the_recommended_configuration_beat_the_starting_playbook(learned: Path) -> None:
    sentence = read(learned / "report.json")["recommendation"]
    starts = [read(p)["baseline_test_accuracy"] for p in learned.glob("*/final_results.json")]
    assert len(starts) == 4 and max(starts) < 0.5
    assert " at batch 4: accuracy " in sentence
    assert "above the starting playbook's" in sentence and "on every seed" in sentence


def test_a_grid_where_nothing_beat_the_start_recommends_nothing(tmp_path: Path) -> None:
    data = write_data(tmp_path / "unanswerable.jsonl", lambda question: "no model says this")
    printed = compare(data, tmp_path / "grid")
    sentence = read(tmp_path / "grid" / "report.json")["recommendation"]
    assert sentence.startswith(
        "Nothing to recommend: no configuration beat the starting playbook (0.00)"
    )
    assert f"recommendation: {sentence}" in printed


def with_times(grid: Path, folder: Path, seconds: dict[str, float]) -> str:
    """``combee report`` over a copy of ``grid`` whose runs took ``seconds`` by strategy."""
    copy = folder / "grid"
    shutil.copytree(grid, copy, ignore=shutil.ignore_patterns("report*", "*.png", "cache.sqlite"))
    for results in copy.glob("*/final_results.json"):
        figures = read(results)
        figures["train_seconds"] = seconds[results.parent.name.split("-")[0]]
        results.write_text(json.dumps(figures), encoding="utf-8")
    done = run_combee("report", str(copy), "--out", str(folder / "report"))
    assert done.returncode == 0, done.stderr
    return str(read(folder / "report" / "report.json")["recommendation"])


def test_timing_noise_does_not_change_the_recommendation(learned: Path, tmp_path: Path) -> None:
    groups = read(learned / "report.json")["summary"]["groups"]
    assert len({round(g["test_accuracy"]["mean"], 2) for g in groups}) == 1  # a tie to break
    naive_first = with_times(learned, tmp_path / "a", {"naive": 1.70, "combee": 1.75})
    combee_first = with_times(learned, tmp_path / "b", {"naive": 1.75, "combee": 1.70})
    # Both go to the first configuration in the table (a folder's runs in the listing's order).
    first = read(tmp_path / "a" / "report" / "report.json")["runs"][0]["strategy"]
    assert naive_first.split(":")[0] == combee_first.split(":")[0] == f"{first} at batch 4"
    assert "x faster" not in naive_first and "x faster" not in combee_first
