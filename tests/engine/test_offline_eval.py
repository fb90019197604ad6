"""Offline next-action evaluation of a trace-learned playbook: the pure parts, then the whole
command against the scripted server, checked at the server."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from combee.engine.offline_eval import evaluate_next_actions
from combee.errors import ConfigError
from combee.sim import RunningServer, serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.traces import Outcome, ToolCall, Trace, TraceMessage, load_traces
from combee.tasks.traces.next_action import (
    RESPOND,
    check_action,
    decision_points,
    tool_names,
    wilson_interval,
)
from tests.cli_helpers import run_combee


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(ace_responder) as running:
        yield running


def call_turn(name: str, **arguments: object) -> TraceMessage:
    return TraceMessage("assistant", tool_calls=(ToolCall(name, arguments, id=name),))


def trace(id: str, success: bool | None, *calls: TraceMessage, gold: object = None) -> Trace:
    messages = [TraceMessage("system", "policy"), TraceMessage("user", "help me")]
    for call in calls:
        messages += [call, TraceMessage("tool", "ok", tool_call_id=call.tool_calls[0].id)]
    meta = {} if gold is None else {"gold_actions": gold}
    return Trace(id, id.split("-")[0], messages, Outcome(success=success), meta=meta)


def test_decision_points_take_gold_actions_then_successful_calls() -> None:
    success = trace("a-1", True, call_turn("lookup", user="mia"), call_turn("think"),
                    call_turn("refund", order=7))  # fmt: skip
    failed = trace("a-2", False, call_turn("lookup", user="mia"))
    gold_failed = trace("b-1", False, call_turn("lookup", user="x"), call_turn("refund", order=1),
                        gold=[{"name": "refund", "kwargs": {"order": 9}}])  # fmt: skip
    no_reference = trace("c-1", False, call_turn("lookup", user="y"))
    points = decision_points([failed, success, gold_failed, no_reference], points_per_task=5)
    # Task a: its successful trace, every call but the scratchpad; task b: only the gold call,
    # with the gold arguments; task c: nothing to compare with.
    assert [(p.trace.id, p.index, p.reference) for p in points] == [
        ("a-1", 2, "success"), ("a-1", 6, "success"), ("b-1", 4, "gold"),
    ]  # fmt: skip
    assert points[2].expected.arguments == {"order": 9}
    assert len(decision_points([success], points_per_task=1)) == 1
    assert tool_names([success, gold_failed]) == ["lookup", "refund", RESPOND]


def test_check_action_normalises_values_and_needs_every_argument() -> None:
    expected = ToolCall("book", {"user": "Mia_Li", "amount": 250, "flights": [{"n": "HAT1"}]})

    def reply(action: str, **values: str) -> dict[str, object]:
        return {"action": action, "arguments": [{"name": k, "value": v} for k, v in values.items()]}

    right = reply("book", user=" mia_li ", amount="250.0", flights='[{"n": "hat1"}]')
    assert check_action(right, expected).arguments
    missing = reply("book", user="mia_li", amount="250")
    assert check_action(missing, expected).tool and not check_action(missing, expected).arguments
    assert not check_action(reply("cancel"), expected).tool
    assert not check_action({}, expected).tool


def test_wilson_interval() -> None:
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    low, high = wilson_interval(5, 10)
    assert (low, high) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def user_prompt(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return next(str(m["content"]) for m in messages if m["role"] == "user")


def test_eval_traces_asks_twice_per_point_and_reports_what_the_server_answered(
    server: RunningServer, tmp_path: Path
) -> None:
    traces = load_traces(["tau-airline"])
    tasks = sorted({t.task_id for t in traces}, key=int)[:5]
    playbook = tmp_path / "playbook.txt"
    playbook.write_text(
        "## Strategies\n[str-00001] helpful=0 harmful=0 :: Call get_user_details first.\n"
    )
    server.clear_records()
    out = tmp_path / "eval"
    result = run_combee(
        "eval-traces", "--traces", "tau-airline", "--playbook", str(playbook),
        "--tasks", ",".join(tasks), "--points", "2", "--model", "sim",
        "--base-url", server.base_url, "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "next_action.json").read_text())
    points = [
        json.loads(line) for line in (out / "next_action_points.jsonl").read_text().splitlines()
    ]
    expected = decision_points(traces, tasks=tasks, points_per_task=2)
    assert summary["n_points"] == len(points) == len(expected) >= 5
    assert summary["failed_calls"] == 0

    # At the server: two calls per point, the same trajectory, the playbook only in one.
    asked = [user_prompt(r.body) for r in server.records if r.schema_name == "next_action"]
    assert len(asked) == 2 * len(points)
    by_point: Counter[str] = Counter()
    for prompt in asked:
        turn = re.search(r"next action after turn \[(\d+)\]", prompt)
        task = re.search(r"<task_id>\n(.*?)\n</task_id>", prompt)
        assert turn and task
        by_point[f"{task[1]}@{int(turn[1]) + 1}"] += 1
        last_turn = re.findall(r"^\[(\d+)\] ", prompt, re.MULTILINE)[-1]
        assert int(last_turn) == int(turn[1])  # the trajectory stops before the decision
    assert set(by_point.values()) == {2} and len(by_point) == len(points)
    with_playbook = [p for p in asked if "<playbook>" in p]
    assert len(with_playbook) == len(points)
    assert all("get_user_details first" in p for p in with_playbook)

    # The summary is the points' own tally.
    for kind, key in (("tool", "tool_accuracy"), ("arguments", "tool_and_arguments_accuracy")):
        for condition in ("without_playbook", "with_playbook"):
            right = sum(p[kind][condition] for p in points)
            assert summary[key][condition]["correct"] == right
            assert summary[key][condition]["n"] == len(points)
    # The scripted model answers get_user_details whenever the playbook names it.
    assert all(p["replies"]["with_playbook"]["action"] == "get_user_details" for p in points)
    assert "with playbook" in result.stdout and "Paired" in result.stdout


def test_eval_traces_reads_a_learn_run_and_names_what_is_missing(
    server: RunningServer, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    learned = run_combee(
        "learn", "--traces", "tau-airline", "--holdout-tasks", "3", "--batch-size", "80",
        "--model", "sim", "--base-url", server.base_url, "--out", str(run),
    )  # fmt: skip
    assert learned.returncode == 0, learned.stderr
    held = json.loads((run / "config.json").read_text())["held_out_tasks"]
    server.clear_records()
    # No endpoint flag: the run's endpoint (its model and address), not the embedded model.
    result = run_combee("eval-traces", "--run", str(run), "--points", "1")
    assert result.returncode == 0, result.stderr
    summary = json.loads((run / "next_action" / "next_action.json").read_text())
    assert summary["tasks"] == sorted(held) and summary["n_points"] <= 3
    models = {record.body.get("model") for record in server.records}
    assert models == {"sim"} and len(server.records) == 2 * summary["n_points"]
    # An endpoint flag given here replaces the run's field, and only that one.
    server.clear_records()
    renamed = run_combee(
        "eval-traces", "--run", str(run), "--points", "1", "--model", "sim-2",
        "--out", str(tmp_path / "renamed"),
    )  # fmt: skip
    assert renamed.returncode == 0, renamed.stderr
    assert {record.body.get("model") for record in server.records} == {"sim-2"}

    bare = tmp_path / "bare"
    bare.mkdir()
    missing = run_combee("eval-traces", "--run", str(bare), "--model", "sim")
    assert missing.returncode != 0 and "config.json" in missing.stderr
    assert "Traceback" not in missing.stderr
    neither = run_combee("eval-traces", "--model", "sim")
    assert neither.returncode != 0 and "--traces and --playbook" in neither.stderr


def test_unknown_tasks_and_tasks_without_a_reference_are_named() -> None:
    lone = trace("c-1", False, call_turn("lookup", user="y"))
    with pytest.raises(ConfigError, match="do not hold: zz") as caught:
        evaluate_next_actions([lone], playbook="x", tasks=["zz"], llm=object())
    assert caught.value.setting == "tasks"
    with pytest.raises(ConfigError, match="no decision point"):
        evaluate_next_actions([lone], playbook="x", llm=object())
