"""Trace importers (OpenAI chat JSONL, tau-bench), format detection and the transcript cut."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from combee.errors import ConfigError, DatasetError
from combee.tasks.traces import (
    TraceMessage,
    TraceTask,
    detect_format,
    load_traces,
    render_transcript,
)

OPENAI_LINE = {
    "task_id": "refund-7",
    "messages": [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "Refund order 7, please."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "refund", "arguments": '{"order": 7}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Error: order 7 is not delivered"},
        {"role": "assistant", "content": [{"type": "text", "text": "It is not delivered yet."}]},
    ],
    "tools": [{"type": "function", "function": {"name": "refund"}}],
    "reward": 0,
    "feedback": "should have checked delivery first",
}


def write_jsonl(path: Path, *records: object) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_openai_chat_jsonl_reads_messages_tool_calls_and_outcome(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", OPENAI_LINE, {**OPENAI_LINE, "success": True})
    assert detect_format(path) == "openai"
    first, second = load_traces([path])
    assert first.task_id == "refund-7" and first.source.endswith("runs.jsonl:1")
    assert [m.role for m in first.messages] == ["system", "user", "assistant", "tool", "assistant"]
    (call,) = first.messages[2].tool_calls
    assert call.name == "refund" and call.arguments == {"order": 7}
    assert first.messages[4].content == "It is not delivered yet."
    assert first.outcome.success is False and first.outcome.reward == 0.0
    assert first.outcome.feedback == "should have checked delivery first"
    assert second.outcome.success is True


def test_the_bundled_tau_airline_traces(tmp_path: Path) -> None:
    traces = load_traces(["tau-airline"])
    assert len(traces) == 200 and len({t.task_id for t in traces}) == 50
    assert sum(bool(t.outcome.success) for t in traces) == 84
    first = traces[0]
    assert first.meta["gold_actions"][0]["name"] == "book_reservation"
    assert "expected actions: book_reservation(" in first.outcome.feedback
    assert any(m.tool_calls for m in first.messages)
    # tau2's shape: messages and reward_info instead of traj and reward.
    tau2 = [{"task_id": "t1", "messages": [{"role": "user", "content": "hi"}],
             "reward_info": {"reward": 1.0}}]  # fmt: skip
    path = tmp_path / "tau2.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump(tau2, handle)
    (trace,) = load_traces([tmp_path])
    assert trace.outcome.success is True and trace.task_id == "t1"


@pytest.mark.parametrize(
    ("name", "text", "fmt", "message"),
    [
        ("bad.jsonl", '{"messages": []}\nnot json\n', "openai", "bad.jsonl:2: is not JSON"),
        (
            "role.jsonl",
            '{"messages": [{"role": "robot", "content": "x"}]}\n',
            "openai",
            "role.jsonl:1: message 0 has role 'robot'",
        ),
        (
            "call.jsonl",
            '{"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]}\n',
            "openai",
            "call.jsonl:1: message 0 tool call 0 has no function name",
        ),
        ("tau.json", '[{"task_id": 1, "traj": "oops"}]', "tau", "tau.json: entry 0: messages"),
        ("notask.json", '[{"traj": []}]', "tau", "notask.json: entry 0 has no task_id"),
        (
            "reward.json",
            '[{"task_id": 1, "traj": [], "reward": "high"}]',
            "tau",
            "entry 0: reward must be a number",
        ),
    ],
)
def test_a_malformed_trace_names_its_file_and_position(
    tmp_path: Path, name: str, text: str, fmt: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DatasetError) as caught:
        load_traces([path], format=fmt)
    assert message in str(caught.value)


def test_an_unknown_format_is_detected_and_named(tmp_path: Path) -> None:
    path = tmp_path / "numbers.json"
    path.write_text("[1, 2, 3]")
    with pytest.raises(DatasetError, match=r"numbers\.json: is in no trace format") as caught:
        load_traces([path])
    assert "tau: " in str(caught.value) and "openai: " in str(caught.value)
    # In a folder, such a file is skipped (with a warning) and the traces beside it are read.
    write_jsonl(tmp_path / "runs.jsonl", OPENAI_LINE)
    assert [t.task_id for t in load_traces([tmp_path])] == ["refund-7"]
    with pytest.raises(ConfigError, match="'xml' is not a trace format"):
        load_traces([path], format="xml")
    with pytest.raises(ConfigError, match="does not exist"):
        load_traces([tmp_path / "missing.jsonl"])


def test_holdout_keeps_whole_tasks_out_and_depends_on_the_seed() -> None:
    traces = load_traces(["tau-airline"])
    task = TraceTask(traces, holdout_tasks=10, seed=0)
    train = task.load().train
    assert len(task.held_out) == 10
    assert not {s.meta["task_id"] for s in train} & set(task.held_out)
    assert len(train) + len(task.held_out_traces()) == 200
    assert TraceTask(traces, holdout_tasks=10, seed=1).held_out != task.held_out
    with pytest.raises(ConfigError) as caught:
        TraceTask(traces, holdout_tasks=50)
    assert caught.value.setting == "holdout_tasks"


def test_a_long_trace_is_cut_keeping_its_calls_errors_and_end() -> None:
    messages = [TraceMessage("system", "policy " * 2000), TraceMessage("user", "first ask")]
    for turn in range(60):
        messages.append(TraceMessage("assistant", f"chatting {turn} " + "blah " * 80))
        messages.append(TraceMessage("tool", f"result {turn} " + "row " * 400))
    messages.append(TraceMessage("tool", "Error: seat 12A is not available " + "x " * 10))
    messages.append(TraceMessage("user", "the final words"))
    shown = render_transcript(messages, max_tokens=2000)
    assert len(shown.text) <= 2000 * 4
    assert shown.cuts and any("dropped" in cut for cut in shown.cuts)
    assert "characters cut" in shown.text and "turn(s) cut" in shown.text
    assert "first ask" in shown.text and "the final words" in shown.text
    assert "Error: seat 12A is not available" in shown.text
    short = render_transcript(messages[:3], max_tokens=5000)
    assert "policy" in short.text


def test_a_limit_spreads_the_learned_traces_over_the_tasks() -> None:
    traces = load_traces(["tau-airline"])
    task = TraceTask(traces, holdout_tasks=10, seed=0, limit=12)
    chosen = task.load().train
    tasks = [s.meta["task_id"] for s in chosen]
    assert len(chosen) == 12 and len(set(tasks)) == 12
    assert not set(tasks) & set(task.held_out)
    assert [s.id for s in TraceTask(traces, holdout_tasks=10, seed=0, limit=12).load().train] == [
        s.id for s in chosen
    ]
    assert len(TraceTask(traces, holdout_tasks=10, limit=45).load().train) == 45  # 40 tasks
    with pytest.raises(ConfigError) as caught:
        TraceTask(traces, limit=0)
    assert caught.value.setting == "limit"


def test_a_named_format_reads_only_its_own_files_in_a_folder(tmp_path: Path) -> None:
    tau = [{"task_id": "t1", "traj": [{"role": "user", "content": "hi"}], "reward": 0.0}]
    (tmp_path / "results-tau.json").write_text(json.dumps(tau))
    (tmp_path / "config.json").write_text('{"model": "gpt-4o"}')  # a run record beside them
    (trace,) = load_traces([tmp_path], format="tau")
    assert trace.task_id == "t1" and trace.outcome.success is False
    with pytest.raises(DatasetError, match=r"config\.json"):
        load_traces([tmp_path / "config.json"], format="tau")  # named: read, and refused
