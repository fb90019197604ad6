"""ATIF trajectories as Harbor writes them: three of the Harbor project's golden trajectories
(OpenHands and Terminus-2 on its hello-world task), checked in the prompt the reflector receives
at the scripted server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from combee.tasks.traces import detect_format, read_traces
from tests.paths import DATA
from tests.tasks.traces.trace_prompts import reflector_prompts

REAL = DATA / "traces" / "real" / "harbor-atif"
OPENHANDS = REAL / "openhands" / "hello-world.trajectory.json"
SUMMARIZED = REAL / "terminus_2" / "hello-world-context-summarization.trajectory.json"
INVALID_JSON = REAL / "terminus_2" / "hello-world-invalid-json.trajectory.json"
FILES = {
    "hello-world.trajectory": OPENHANDS,
    "hello-world-context-summarization.trajectory": SUMMARIZED,
    "hello-world-invalid-json.trajectory": INVALID_JSON,
}
TASK = 'Create a file called hello.txt with "Hello, world!" as the content.'


@pytest.fixture(scope="module")
def prompts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each file's reflector prompt, by trace id."""
    run = tmp_path_factory.mktemp("harbor-atif") / "run"
    shown, _ = reflector_prompts(list(FILES.values()), run, transcript_tokens=3000)
    return shown


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def text(message: Any) -> str:
    if isinstance(message, str):
        return message
    return "\n".join(part.get("text") or "" for part in message)


def expected_turns(trajectory: Any) -> list[str]:
    """What the reflector must see of each step, in the trajectory's order: the start of the
    agent's message, each tool call with its name and arguments, and each tool result under
    the name of the call it answers."""
    turns: list[str] = []
    for step in trajectory["steps"]:
        calls = step.get("tool_calls") or []
        if step["source"] == "agent" and text(step["message"]).strip():
            turns.append(text(step["message"]).strip()[:40])
        for call in calls:
            arguments = json.dumps(call["arguments"], ensure_ascii=False, sort_keys=True)
            turns.append(f"-> call {call['function_name']}({arguments})")
        for result in (step.get("observation") or {}).get("results") or []:
            if not calls or result.get("content") is None:
                continue
            named = result.get("source_call_id") or calls[0]["tool_call_id"]
            name = next(c["function_name"] for c in calls if c["tool_call_id"] == named)
            turns.append(f"tool {name}: {text(result['content']).strip()[:60]}")
    return turns


def in_order(prompt: str, snippets: list[str]) -> list[str]:
    """The snippets not found in ``prompt`` after the one before them (empty: all in order)."""
    missing, at = [], 0
    for snippet in snippets:
        found = prompt.find(snippet, at)
        if found < 0:
            missing.append(snippet)
        else:
            at = found + len(snippet)
    return missing


def test_harbor_writes_what_the_atif_reader_takes() -> None:
    for path in FILES.values():
        assert detect_format(path) == "atif"
    read = read_traces(list(FILES.values()))
    assert read.skipped == [] and "3 traces" in read.summary()
    assert "0 of 3 with an outcome" in read.summary()  # Harbor keeps no trial result with them
    traces = {t.id: t for t in read.traces}
    assert sorted(traces) == sorted(FILES)
    for trace_id, path in FILES.items():
        trace, raw = traces[trace_id], load(path)
        assert trace.task_id == trace_id  # named by the file, outside a trial folder
        assert (trace.outcome.success, trace.outcome.reward) == (None, None)
        assert trace.meta["agent"] == raw["agent"]["name"]
        assert trace.meta["model"] == raw["agent"].get("model_name")
        assert trace.meta["schema_version"] == raw["schema_version"]
        # every tool result answers a call the agent made, under that call's name
        calls = {c.id: c.name for m in trace.messages for c in m.tool_calls}
        results = [m for m in trace.messages if m.role == "tool"]
        assert results and all(calls[m.tool_call_id] == m.name for m in results)


def test_the_reflector_sees_the_task_the_tool_calls_and_their_results_in_order(
    prompts: dict[str, str],
) -> None:
    assert sorted(prompts) == sorted(FILES)
    for trace_id, path in FILES.items():
        prompt, raw = prompts[trace_id], load(path)
        first_user = text(next(s for s in raw["steps"] if s["source"] == "user")["message"])
        first_user = first_user.strip()
        assert TASK in first_user and TASK in prompt  # the task statement
        # Terminus-2 puts its whole prompt (2,969 characters) in the first user step; the
        # transcript keeps its beginning and end and says what it cut.
        assert first_user[:200] in prompt and first_user[-200:] in prompt
        if first_user not in prompt:
            assert "characters cut from the task statement" in prompt
        turns = expected_turns(raw)
        assert sum(t.startswith("-> call ") for t in turns) >= 2
        assert sum(t.startswith("tool ") for t in turns) >= 1
        assert in_order(prompt, [first_user[:200], *turns]) == []
        assert prompt.count("    -> call ") == sum(t.startswith("-> call ") for t in turns)
        assert "<outcome>\nnot recorded: judge it from the trajectory\n</outcome>" in prompt


def test_what_each_agent_wrote_reaches_the_reflector(prompts: dict[str, str]) -> None:
    # OpenHands: its system prompt opens, the task is the user turn after it, the result names
    # its call, and the closing finish call (which has no observation) is shown.
    prompt = prompts["hello-world.trajectory"]
    assert "[0] system: You are OpenHands agent" in prompt
    shown = [
        f"[1] user: {TASK}",
        "[2] system: Retrieving content for:",
        '-> call str_replace_editor({"command": "create", "file_text": "Hello, world!"',
        "tool str_replace_editor: File created successfully at: /app/hello.txt",
        "-> call finish(",
    ]
    assert in_order(prompt, shown) == []
    assert "tool finish:" not in prompt

    # Terminus-2 with context summarization: the handoff is a system turn, the subagents it
    # delegated to are named, and the work goes on after the answers.
    prompt = prompts["hello-world-context-summarization.trajectory"]
    shown = [
        "tool bash_command: New Terminal Output:\n\nroot@CONTAINER_ID:/app# echo 'test2'",
        "system: Performed context summarization and handoff to continue task.",
        "[delegated to a subagent: trajectory.summarization-1-summary.json]",
        "[delegated to a subagent: trajectory.summarization-1-questions.json]",
        "[delegated to a subagent: trajectory.summarization-1-answers.json]",
        "user: Here are the answers the other agent provided.",
        "-> call bash_command(",
        "tool bash_command: New Terminal Output:\n\nroot@CONTAINER_ID:/app# cat hello.txt\n"
        "Hello, world!",
        "-> call mark_task_complete({})",
        "tool mark_task_complete: Current terminal state:",
    ]
    assert in_order(prompt, shown) == []

    # Terminus-2 answering with invalid JSON: no call was made, so the parser's error is the
    # environment speaking (a user turn), before the agent's first bash_command.
    prompt = prompts["hello-world-invalid-json.trajectory"]
    shown = [
        "assistant: I need to create a file called hello.txt",
        "user: Previous response had parsing errors:\nERROR: Missing required fields: "
        "analysis, plan",
        "-> call bash_command(",
        "tool bash_command: New Terminal Output:",
    ]
    assert in_order(prompt, shown) == []


def test_in_a_trial_folder_the_trial_names_the_trace(tmp_path: Path) -> None:
    """Harbor writes ``<trial_name>/agent/trajectory.json`` with ``<task>__<7 characters>`` as
    the trial name; without the trial's ``result.json`` the folder names trace and task."""
    trial = tmp_path / "jobs" / "2026-04-07__16-53-39" / "hello-world__Kd3xQ2p"
    (trial / "agent").mkdir(parents=True)
    shutil.copy(OPENHANDS, trial / "agent" / "trajectory.json")
    (trace,) = read_traces([trial / "agent" / "trajectory.json"]).traces
    assert (trace.id, trace.task_id) == ("hello-world__Kd3xQ2p", "hello-world")
    assert trace.outcome.reward is None
