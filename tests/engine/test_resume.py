"""A run killed mid-iteration continues where its last finished iteration left it, and ends as
an uninterrupted run does. The process is killed with SIGKILL by the test."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import combee
from combee.core.loop import IterationReport, LoopObserver
from combee.sim import RunningServer, SimConfig, serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import COMBEE, run_combee


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    # A little latency, so an iteration lasts long enough to be killed inside.
    with serve_in_thread(ace_responder, SimConfig(ttft_s=0.05)) as running:
        yield running


def train_args(server: RunningServer, out: Path, seed: int = 0) -> list[str]:
    return [
        "train", "--task", "formula", "--strategy", "combee", "--batch-size", "4",
        "--train-limit", "24", "--val-limit", "4", "--val-every", "2", "--test-limit", "6",
        "--seed", str(seed), "--model", "sim", "--base-url", server.base_url, "--out", str(out),
    ]  # fmt: skip


def iterations(out: Path) -> list[int]:
    lines = (out / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["iteration"] for line in lines]


def kill_during_iteration_3(args: list[str], out: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    process = subprocess.Popen([COMBEE, *args], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 120
    metrics = out / "metrics.jsonl"
    while time.monotonic() < deadline:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 2:
            break
        time.sleep(0.01)
    time.sleep(random.Random().uniform(0.0, 0.3))  # somewhere inside iteration 3
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (out / "final_results.json").exists()


def test_a_killed_run_continues_and_ends_as_an_uninterrupted_one(
    server: RunningServer, tmp_path: Path
) -> None:
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert run_combee(*train_args(server, whole)).returncode == 0
    kill_during_iteration_3(train_args(server, killed), killed)
    done = iterations(killed)
    assert done in ([1, 2], [1, 2, 3])  # iteration 3 may have finished before the kill
    # The checkpoint is written after an iteration's metrics row: a kill between the two
    # leaves a row the resumed run forgets and records again.
    saved = json.loads((killed / "checkpoint.json").read_text(encoding="utf-8"))["iteration"]
    assert saved in (done[-1] - 1, done[-1])

    other = run_combee(*train_args(server, killed, seed=1))
    message = " ".join(other.stderr.split())
    assert other.returncode == 1 and "holds an unfinished run with other settings" in message
    assert "--seed: 0 there, 1 here" in message and "Traceback" not in message
    assert iterations(killed) == done  # the refusal touched nothing

    resumed = run_combee(*train_args(server, killed))
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed after iteration {saved}" in " ".join(resumed.stderr.split())
    assert iterations(killed) == [1, 2, 3, 4, 5, 6]
    assert (killed / "playbook.txt").read_text() == (whole / "playbook.txt").read_text()
    for version in range(1, 7):
        name = f"contexts/iter_{version:04d}.txt"
        assert (killed / name).read_text() == (whole / name).read_text()
    results = [json.loads((d / "final_results.json").read_text()) for d in (whole, killed)]
    for key in ("test_accuracy", "best_val_accuracy", "iterations", "playbook_bullets"):
        assert results[0][key] == results[1][key], key
    # The whole run's calls are counted, the attempt before the kill included (up to its
    # checkpoint), not only the last attempt's.
    for role in ("generator", "reflector", "curator"):
        assert results[1]["llm_calls"][role] >= results[0]["llm_calls"][role], role
    assert json.loads((killed / "checkpoint.json").read_text())["iteration"] == 6


def test_resume_flag_continues_from_the_folder_alone(server: RunningServer, tmp_path: Path) -> None:
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert run_combee(*train_args(server, whole)).returncode == 0
    kill_during_iteration_3(train_args(server, killed), killed)
    resumed = run_combee("train", "--resume", str(killed))
    assert resumed.returncode == 0, resumed.stderr
    assert iterations(killed) == [1, 2, 3, 4, 5, 6]
    assert (killed / "playbook.txt").read_text() == (whole / "playbook.txt").read_text()
    again = run_combee("train", "--resume", str(killed))
    assert again.returncode == 1 and "holds a finished run: nothing to resume" in again.stderr


def test_a_finished_run_is_not_resumed_but_refused(server: RunningServer, tmp_path: Path) -> None:
    assert run_combee(*train_args(server, tmp_path)).returncode == 0
    again = run_combee(*train_args(server, tmp_path))
    assert again.returncode == 1 and "already holds a finished run" in again.stderr


async def test_an_interrupted_learn_run_continues_after_its_last_iteration(
    server: RunningServer, tmp_path: Path
) -> None:
    class StopAfterTwo(LoopObserver):
        def on_iteration_end(self, report: IterationReport[object, object]) -> None:
            if report.iteration == 2:
                raise KeyboardInterrupt  # as Ctrl-C would, once iteration 2 is recorded

    llm = combee.llm.connect("sim", base_url=server.base_url)
    settings = {"holdout_tasks": 10, "limit": 40, "batch_size": 10, "llm": llm}
    try:
        whole = await combee.learn_async(["tau-airline"], run_dir=tmp_path / "whole", **settings)
        with pytest.raises(KeyboardInterrupt):
            await combee.learn_async(
                ["tau-airline"], run_dir=tmp_path / "cut", observers=[StopAfterTwo()], **settings
            )
        assert iterations(tmp_path / "cut") == [1, 2]
        resumed = await combee.resume_async(tmp_path / "cut", llm=llm)  # its settings, recorded
    finally:
        await llm.aclose()
    assert iterations(tmp_path / "cut") == [1, 2, 3, 4]
    assert resumed.text == whole.text


def test_a_setting_added_since_the_run_started_counts_only_when_it_is_on() -> None:
    from combee.runs.checkpoint import config_differences

    saved = {"seed": 0, "endpoint": {"model": "m"}}
    assert config_differences(saved, {**saved, "pipeline": False}) == []
    assert config_differences(saved, {**saved, "pipeline": True}) == [
        "pipeline: null there, true here"
    ]
    assert config_differences(saved, {**saved, "seed": 1}) == ["seed: 0 there, 1 here"]


def test_flags_given_with_resume_are_refused_not_ignored(
    server: RunningServer, tmp_path: Path
) -> None:
    killed = tmp_path / "killed"
    kill_during_iteration_3(train_args(server, killed), killed)
    done = iterations(killed)
    refused = run_combee("train", "--resume", str(killed), "--seed", "5", "--batch-size", "8")
    message = " ".join(refused.stderr.split())
    assert refused.returncode == 1 and "Traceback" not in message
    assert "--seed, --batch-size would be ignored" in message
    assert iterations(killed) == done  # nothing was touched


def test_a_rerun_cannot_turn_redaction_off_midway(server: RunningServer, tmp_path: Path) -> None:
    killed = tmp_path / "killed"
    kill_during_iteration_3(train_args(server, killed), killed)
    rerun = run_combee(*train_args(server, killed), "--no-redact")
    message = " ".join(rerun.stderr.split())
    assert rerun.returncode == 1 and "holds an unfinished run with other settings" in message
    assert '"redact": true' in message and '"redact": false' in message


class StopAfterOne(LoopObserver):
    def on_checkpoint(self, state: object) -> None:
        raise KeyboardInterrupt  # as a kill would, once iteration 1 is saved


def test_a_relative_cache_is_kept_when_resuming_from_another_folder(
    server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    first, other, run = tmp_path / "first", tmp_path / "other", tmp_path / "run"
    first.mkdir()
    other.mkdir()
    monkeypatch.chdir(first)
    endpoint = combee.llm.Endpoint("sim", base_url=server.base_url, cache="cache.sqlite")
    with pytest.raises(KeyboardInterrupt):
        combee.train(
            "formula", batch_size=4, train_limit=12, val_limit=0, test_limit=2, llm=endpoint,
            run_dir=run, observers=[StopAfterOne()],
        )  # fmt: skip
    recorded = json.loads((run / "config.json").read_text())["endpoint"]["cache"]
    assert recorded == str(first / "cache.sqlite")

    def entries() -> int:
        with sqlite3.connect(first / "cache.sqlite") as db:
            count: int = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            return count

    before = entries()
    monkeypatch.chdir(other)
    combee.resume(run)
    assert not (other / "cache.sqlite").exists() and not (run / "cache.sqlite").exists()
    assert entries() > before  # the resumed iterations' calls went to the run's cache


def test_a_run_from_before_groups_screen_and_task_spec_resumes_as_it_ran(
    server: RunningServer, tmp_path: Path
) -> None:
    from combee.runs.checkpoint import config_differences

    run = tmp_path / "run"
    llm = combee.llm.connect("sim", base_url=server.base_url)
    with pytest.raises(KeyboardInterrupt):
        combee.train(
            "formula", strategy="combee", batch_size=4, train_limit=12, val_limit=0,
            test_limit=2, llm=llm, run_dir=run, observers=[StopAfterOne()],
        )  # fmt: skip
    config = json.loads((run / "config.json").read_text())
    assert config["groups"] == "capacity" and config["screen"] is True
    old = {k: v for k, v in config.items() if k not in ("groups", "screen", "task_spec")}
    (run / "config.json").write_text(json.dumps(old))
    # Rerunning today's command names the one setting whose default changed since, and why.
    assert config_differences(old, config) == [
        'groups: "sqrt" there (the run predates the setting), "capacity" here'
    ]
    combee.resume(run)  # with what the run did then: sqrt groups, screened
    assert json.loads((run / "final_results.json").read_text())["iterations"] == 3
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["groups"]["rule"] for row in rows[1:]] == ["sqrt", "sqrt"]
