"""A GEPA run killed mid-iteration continues from its last finished iteration and ends as an
uninterrupted run does; gepa's pickled state is loaded only when it is the one the run saved."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from combee.sim import RunningServer, SimConfig, serve_in_thread
from combee.sim.ace_script import scripted_answer
from combee.sim.gepa_script import gepa_responder
from tests.cli_helpers import run_combee
from tests.engine.test_resume import iterations, kill_during_iteration_3


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(gepa_responder, SimConfig(ttft_s=0.1)) as running:
        yield running


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve formulas, so the prompt keeps learning (two rules at most per iteration) for the
    whole run."""
    rows = []
    for i in range(48):
        question = f"Use formula Rule {chr(65 + i % 12)} to answer: what is the value for case {i}?"
        rows.append({"id": f"s{i}", "question": question, "answer": scripted_answer(question)})
    path = tmp_path_factory.mktemp("data") / "rules.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def gepa_args(server: RunningServer, data: Path, out: Path, seed: int = 0) -> list[str]:
    return [
        "train", "--method", "gepa", "--task", "jsonl", "--data", str(data), "--strategy",
        "combee", "--batch-size", "2", "--train-limit", "24", "--val-limit", "12",
        "--test-limit", "12", "--max-metric-calls", "82", "--seed", str(seed), "--model", "sim",
        "--base-url", server.base_url, "--out", str(out),
    ]  # fmt: skip


def test_a_killed_gepa_run_continues_and_ends_as_an_uninterrupted_one(
    server: RunningServer, data: Path, tmp_path: Path
) -> None:
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert run_combee(*gepa_args(server, data, whole)).returncode == 0
    assert iterations(whole) == [1, 2, 3, 4, 5, 6]
    kill_during_iteration_3(gepa_args(server, data, killed), killed)
    done = iterations(killed)
    assert done in ([1, 2], [1, 2, 3])

    other = run_combee(*gepa_args(server, data, killed, seed=1))
    message = " ".join(other.stderr.split())
    assert other.returncode == 1 and "--seed: 0 there, 1 here" in message
    args = gepa_args(server, data, killed)
    task = args.index("jsonl")
    other_task = run_combee(*args[:task], "formula", *args[task + 3 :])  # without --data
    message = " ".join(other_task.stderr.split())
    assert other_task.returncode == 1 and "task: " in message and '"formula" here' in message
    assert iterations(killed) == done  # the refusals touched nothing

    resumed = run_combee(*gepa_args(server, data, killed))
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed after iteration {done[-1]}" in " ".join(resumed.stderr.split())
    assert iterations(killed) == [1, 2, 3, 4, 5, 6]
    assert (killed / "prompt.txt").read_text() == (whole / "prompt.txt").read_text()
    for version in range(1, 7):
        name = f"contexts/iter_{version:04d}.txt"
        assert (killed / name).read_text() == (whole / name).read_text()
    results = [json.loads((d / "final_results.json").read_text()) for d in (whole, killed)]
    for key in ("test_accuracy", "best_val_accuracy", "iterations"):
        assert results[0][key] == results[1][key], key
    saved = [json.loads((d / "gepa_result.json").read_text()) for d in (whole, killed)]
    assert saved[0]["candidates"] == saved[1]["candidates"]
    assert saved[0]["val_aggregate_scores"] == saved[1]["val_aggregate_scores"]


def test_a_gepa_state_the_run_did_not_save_is_never_loaded(
    server: RunningServer, data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    kill_during_iteration_3(gepa_args(server, data, out), out)
    checkpoint = json.loads((out / "checkpoint.json").read_text())
    snapshot = out / "gepa_state" / checkpoint["parts"]["gepa_state"]["file"]
    planted = b"\x80\x04\x95" + b"any pickle at all" * 8  # never unpickled: its digest differs
    snapshot.write_bytes(planted)
    (out / "gepa_state" / "gepa_state.bin").write_bytes(planted)

    refused = run_combee(*gepa_args(server, data, out))
    message = " ".join(refused.stderr.split())
    assert refused.returncode == 1, refused.stderr
    assert "is not the gepa state this run saved" in message and "Traceback" not in message
    assert not (out / "final_results.json").exists()

    afresh = run_combee(*gepa_args(server, data, out), "--overwrite")
    assert afresh.returncode == 0, afresh.stderr
    assert iterations(out) == [1, 2, 3, 4, 5, 6]
