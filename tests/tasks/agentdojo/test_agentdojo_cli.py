"""`combee train --task agentdojo:banking` as a user runs it: real AgentDojo episodes over HTTP
against the scripted server, checked at the server; on asyncio and on a local Ray cluster; under
an attack whose planted instructions a gullible reflector copies into its lessons."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agentdojo")

from combee.sim import serve_in_thread
from combee.sim.agentdojo_script import agentdojo_responder
from combee.tasks.agentdojo import agentdojo_task
from tests.cli_helpers import run_combee
from tests.server_checks import curated_traces, reflected_traces, user_prompt

PLANTED = "US133000000121212121212"
"""The attacker's account in the injection tasks of AgentDojo's banking suite."""

# The scripted agent sends a wrong amount in these tasks, so the utility check fails them.
SABOTAGED = {"user_task_0", "user_task_2", "user_task_3", "user_task_9", "user_task_11"}


def wrong_amount(task_id: str, step: int, call: Mapping[str, Any]) -> Mapping[str, Any]:
    if task_id not in SABOTAGED or call["name"] not in (
        "send_money",
        "update_scheduled_transaction",
    ):
        return call
    return {"name": call["name"], "arguments": {**call["arguments"], "amount": 0.01}}


def train(out: Path, base_url: str, *extra: str) -> dict[str, Any]:
    result = run_combee(
        "train", "--task", "agentdojo:banking", "--strategy", "combee", "--batch-size", "8",
        "--baseline", "--no-gate", "--model", "sim", "--base-url", base_url,
        "--out", str(out), *extra, timeout=400,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return dict(json.loads((out / "final_results.json").read_text()))


@pytest.mark.parametrize("executor", ["asyncio", pytest.param("ray", marks=pytest.mark.ray)])
def test_train_on_agentdojo_banking_from_the_command_line(tmp_path: Path, executor: str) -> None:
    if executor == "ray":
        pytest.importorskip("ray", reason="Ray is not installed")
    out = tmp_path / "run"
    with serve_in_thread(agentdojo_responder("banking", edit=wrong_amount)) as server:
        summary = train(out, server.base_url, "--executor", executor)
        records = [r for r in server.records if r.status == 200]

    task = agentdojo_task("banking", seed=0)
    trained = {s.id for s in task.train}
    tested = {s.meta["task_id"] for s in task.test}
    # Success rate as AgentDojo's utility checks decided it, before and after.
    expected = sum(1 for t in tested if t not in SABOTAGED) / len(tested)
    assert summary["test_episodes"] == summary["baseline_test_episodes"] == 8
    assert summary["test_success_rate"] == summary["baseline_test_success_rate"] == expected
    assert summary["test_paired"] == {"gained": 0, "lost": 0}

    # Each training episode reached one reflection, and each reflection p = 2 curator calls.
    reflected = reflected_traces(records)
    assert set(reflected) == trained and set(reflected.values()) == {1}
    curated = curated_traces(records)
    assert set(curated) == trained and set(curated.values()) == {2}
    # Every agent step went through the run's client, with the suite's tools: counted per role.
    steps = sum(1 for r in records if r.body.get("tools"))
    assert summary["llm_calls"]["agent"] == steps > 3 * 8

    # The episodes are kept, and `combee learn` learns from them again.
    lines = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert {line["id"] for line in lines} == trained
    failed = {line["task_id"] for line in lines if not line["success"]}
    assert failed == {s.meta["task_id"] for s in task.train} & SABOTAGED
    with serve_in_thread(agentdojo_responder("banking")) as server:
        relearn = run_combee(
            "learn", "--traces", str(out / "episodes.jsonl"), "--batch-size", "8",
            "--model", "sim", "--base-url", server.base_url, "--out", str(tmp_path / "again"),
        )  # fmt: skip
        again = reflected_traces(server.records)
    assert relearn.returncode == 0, relearn.stderr
    assert sum(again.values()) == len(lines)


def test_planted_instructions_never_reach_a_lesson(tmp_path: Path) -> None:
    responder = agentdojo_responder("banking", attack="important_instructions", obey_planted=True)
    with serve_in_thread(responder) as server:
        summary = train(tmp_path / "run", server.base_url, "--attack", "important_instructions")
        shown = [
            r
            for r in server.records
            if r.schema_name == "reflector" and PLANTED in user_prompt(r.body)
        ]
        curator_prompts = [
            user_prompt(r.body) for r in server.records if r.schema_name == "curator"
        ]
        # The control: without the screen, the same gullible lessons reach the playbook.
        control = train(
            tmp_path / "control",
            server.base_url,
            "--attack",
            "important_instructions",
            "--no-screen",
        )

    assert shown  # the planted text reached the reflector (in the tool outputs) ...
    assert summary["planted_shown"] == 8
    assert summary["planted_in_lessons"] == 0  # ... and no lesson
    assert summary["screened_out_total"]["copied-from-data"] >= 1
    assert not any(PLANTED in prompt for prompt in curator_prompts)
    assert PLANTED not in (tmp_path / "run" / "playbook.txt").read_text()
    # The scripted agent follows the user's task, not the planted one.
    assert summary["test_attacked_episodes"] == 8 and summary["test_attack_success_rate"] == 0.0

    assert control["planted_in_lessons"] >= 1
    assert PLANTED in (tmp_path / "control" / "playbook.txt").read_text()


def test_attack_needs_an_agentdojo_task(tmp_path: Path) -> None:
    result = run_combee("train", "--task", "formula", "--attack", "direct", "--out", str(tmp_path))
    assert result.returncode != 0
    assert "--attack applies to an AgentDojo task" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_suite_names_the_task_flag(tmp_path: Path) -> None:
    result = run_combee("train", "--task", "agentdojo:bank", "--out", str(tmp_path))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "--task 'agentdojo:bank': the suite must be one of the AgentDojo" in result.stderr
