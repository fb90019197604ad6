"""`combee learn` on the bundled tau-bench airline traces, checked at the scripted server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import combee
from combee.errors import ConfigError
from combee.sim import RunningServer, serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.traces import load_traces
from tests.cli_helpers import run_combee
from tests.server_checks import LESSON, curated_traces, reflected_traces, user_prompt


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(ace_responder) as running:
        yield running


def test_learn_on_tau_airline_holds_out_tasks_and_reflects_each_trace_once(
    server: RunningServer, tmp_path: Path
) -> None:
    server.clear_records()
    out = tmp_path / "run"
    result = run_combee(
        "learn", "--traces", "tau-airline", "--holdout-tasks", "10", "--batch-size", "40",
        "--model", "sim", "--base-url", server.base_url, "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr

    config = json.loads((out / "config.json").read_text())
    held = set(config["held_out_tasks"])
    assert len(held) == 10 and config["method"] == "ace-traces"
    traces = load_traces(["tau-airline"])
    learned = {t.id for t in traces if t.task_id not in held}
    assert len(learned) == 160 and config["samples"]["train"] == 160

    records = [r for r in server.records if r.status == 200]
    reflected = reflected_traces(records)
    # Each learned trace reached exactly one reflection; no held-out task was read.
    assert set(reflected) == learned and set(reflected.values()) == {1}

    # Each reflection reached p = 2 curator calls (counted in the reflections, not the playbook).
    curated = curated_traces(records)
    assert set(curated) == learned and set(curated.values()) == {2}

    playbook = (out / "playbook.txt").read_text()
    in_playbook = {trace for trace, task in LESSON.findall(playbook)}
    assert in_playbook and in_playbook <= learned
    assert not {task for _, task in LESSON.findall(playbook)} & held
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["batch_size"] for row in rows] == [40] * 4
    assert "test: accuracy" not in result.stderr  # no test split when learning from traces
    # A trace longer than the transcript's budget is cut, and the cut is said; one that fits
    # is shown whole.
    reflector_prompts = [user_prompt(r.body) for r in records if r.schema_name == "reflector"]
    shortened = [p for p in reflector_prompts if "<shortened>" in p]
    assert shortened and all("characters cut" in p or "dropped" in p for p in shortened)
    assert "shortened for the reflector" in (out / "run.log").read_text()


def test_an_unknown_trace_file_is_named(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text('{"rows": [1, 2, 3]}')
    result = run_combee(
        "learn", "--traces", str(odd), "--model", "sim", "--out", str(tmp_path / "run")
    )
    assert result.returncode != 0
    assert "odd.json" in result.stderr and "in no trace format" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("flag", "value"), [("--baseline", None), ("--val-every", "2")])
def test_settings_that_score_a_split_are_refused_not_ignored(
    server: RunningServer, tmp_path: Path, flag: str, value: str | None
) -> None:
    server.clear_records()
    out = tmp_path / "run"
    result = run_combee(
        "learn", "--traces", "tau-airline", flag, *([value] if value else []),
        "--model", "sim", "--base-url", server.base_url, "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"{flag} does not apply to learning from traces" in result.stderr
    assert "combee eval-traces --run RUN_DIR" in result.stderr
    assert server.records == [] and not out.exists()
    assert flag not in run_combee("learn", "--help").stdout


def test_the_library_refuses_them_too() -> None:
    with pytest.raises(ConfigError) as refused:
        nowhere = combee.llm.Endpoint("sim", base_url="http://127.0.0.1:9/v1")
        combee.learn(["tau-airline"], baseline=True, llm=nowhere)
    assert refused.value.setting == "baseline"
