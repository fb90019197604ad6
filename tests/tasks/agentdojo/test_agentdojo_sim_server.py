"""``combee sim-server --script agentdojo:banking`` plays AgentDojo's scripted agent from the
command line, so ``combee train --task agentdojo:banking`` against it makes real tool calls (each
user task's reference calls); with nothing planted, the run reports the planted counts as 0."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("agentdojo")

from tests.cli.test_cli_train_e2e import _free_port, _wait_for_port
from tests.cli_helpers import COMBEE, run_combee


def test_train_on_banking_against_the_sim_server_command(tmp_path: Path) -> None:
    port = _free_port()
    server = subprocess.Popen(
        [COMBEE, "sim-server", "--script", "agentdojo:banking", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    out = tmp_path / "run"
    try:
        assert server.stderr is not None
        started = server.stderr.readline()  # said once the script is built from AgentDojo
        assert "combee sim-server (agentdojo:banking)" in started, started
        _wait_for_port(port, server)
        result = run_combee(
            "train", "--task", "agentdojo:banking", "--batch-size", "4", "--train-limit", "4",
            "--test-limit", "4", "--no-gate", "--model", "sim",
            "--base-url", f"http://127.0.0.1:{port}/v1", "--out", str(out), timeout=400,
        )  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "final_results.json").read_text())
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    tested = [json.loads(line) for line in (out / "test_episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == len(tested) == 4
    # Every episode made tool calls (the task's reference calls) and passed its utility check.
    for episode in [*episodes, *tested]:
        calls = [c for m in episode["messages"] for c in m.get("tool_calls") or []]
        assert calls and all(c["type"] == "function" for c in calls), episode["task_id"]
        assert any(m["role"] == "tool" for m in episode["messages"])
        assert episode["success"], episode["task_id"]
    assert summary["test_success_rate"] == 1.0
    assert summary["llm_calls"]["agent"] > 8
    # Nothing was planted: the counts say 0, they are not left out.
    assert summary["planted_shown"] == 0 and summary["planted_in_lessons"] == 0


def test_an_unknown_suite_is_one_line(tmp_path: Path) -> None:
    result = run_combee("sim-server", "--script", "agentdojo:bank", "--port", "0", timeout=120)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "--script 'agentdojo:bank': suite must be one of the AgentDojo" in result.stderr
