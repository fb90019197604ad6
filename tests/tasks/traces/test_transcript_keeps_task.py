"""The system prompt and the task statement survive every cut of a transcript."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from combee.tasks.traces import load_traces, render_transcript
from combee.tasks.traces.model import ToolCall, Trace, TraceMessage
from combee.tasks.traces.transcript import CHARS_PER_TOKEN
from tests.paths import DATA

TASK = "Fix the failing date parser: parse_date('2024-02-30') must raise ValueError."


@pytest.mark.parametrize("max_tokens", [1200, 3000])
def test_every_airline_trace_keeps_its_policy_task_and_end(max_tokens: int) -> None:
    traces = load_traces(["tau-airline"])
    assert len(traces) == 200
    kept_task = kept_policy = kept_end = within = 0
    for trace in traces:
        shown = render_transcript(trace.messages, max_tokens=max_tokens)
        task = next(m for m in trace.messages if m.role == "user").content.strip()
        kept_task += task in shown.text
        kept_policy += shown.text.startswith("[0] system: # Airline Agent Policy")
        kept_end += shown.text.endswith(trace.messages[-1].content.strip()[-40:])
        within += len(shown.text) <= max_tokens * CHARS_PER_TOKEN
    assert (kept_task, kept_policy, kept_end, within) == (200, 200, 200, 200)


def _failing_run(turns: int, lines: int = 40) -> list[TraceMessage]:
    """A coding agent's run whose every command prints errors and FAILED tests."""
    messages = [
        TraceMessage("system", "You are a careful software engineer. " + "Follow the rules. " * 30),
        TraceMessage("user", TASK),
    ]
    for turn in range(turns):
        messages.append(
            TraceMessage(
                "assistant",
                f"Run the tests again ({turn}).",
                tool_calls=(ToolCall("bash", {"command": f"pytest tests -x -k case{turn}"}),),
            )
        )
        output = "\n".join(
            f"FAILED tests/test_dates.py::test_case{turn}_{line} - AssertionError: error {line}"
            for line in range(lines)
        )
        messages.append(TraceMessage("tool", output, name="bash"))
    messages.append(TraceMessage("assistant", "All tests pass now; submitting the fix."))
    return messages


@pytest.mark.parametrize("max_tokens", [300, 1200, 3000])
def test_a_run_full_of_errors_does_not_push_out_the_task(max_tokens: int) -> None:
    messages = _failing_run(120)
    shown = render_transcript(messages, max_tokens=max_tokens)
    assert len(shown.text) <= max_tokens * CHARS_PER_TOKEN
    assert shown.text.startswith("[0] system: You are a careful software engineer.")
    assert f"[1] user: {TASK}" in shown.text
    assert shown.text.endswith("All tests pass now; submitting the fix.")
    assert any("keeping the end" in cut for cut in shown.cuts)
    # The middle is cut right after the task statement, with the size of the cut said.
    after_task = shown.text.split(TASK, 1)[1]
    assert after_task.startswith("\n[... ") and "characters cut ...]" in after_task


@pytest.mark.parametrize(
    ("max_tokens", "with_turns"), [(200, True), (200, False), (1000, True), (3000, True)]
)
def test_a_task_statement_three_times_the_budget_is_shortened_and_said(
    max_tokens: int, with_turns: bool
) -> None:
    budget = max_tokens * CHARS_PER_TOKEN
    task = "TASK-BEGINS " + "Details of the migration. " * (3 * budget // 26) + "TASK-ENDS"
    assert len(task) >= 3 * budget
    messages = [TraceMessage("system", "You migrate databases. " * 100), TraceMessage("user", task)]
    if with_turns:
        messages += _failing_run(60)[2:]
    shown = render_transcript(messages, max_tokens=max_tokens)
    assert len(shown.text) <= budget
    line = next(line for line in shown.text.splitlines() if line.startswith("[1] user: "))
    # Cut at its end, where harnesses append their instructions: the request itself stays.
    assert line.startswith("[1] user: TASK-BEGINS Details of the migration.")
    assert line.endswith("characters of the task statement cut ...]")
    assert shown.text.startswith("[0] system: You migrate databases.")
    assert any("cut from the system prompt and the task statement" in cut for cut in shown.cuts)
    if with_turns:
        assert shown.text.endswith("All tests pass now; submitting the fix.")


def test_a_short_trace_is_shown_whole() -> None:
    messages = _failing_run(2, lines=3)
    shown = render_transcript(messages, max_tokens=3000)
    assert shown.cuts == ()
    assert all(m.content.strip() in shown.text for m in messages)


SWE_BENCH = [
    DATA / "traces" / "real" / "mini-swe-agent",
    DATA / "traces" / "real" / "mini-swe-agent-run",
]
"""Six real mini-swe-agent trajectories: five SWE-bench Verified instances of one published run
(issues of 1,623 to 5,337 characters, 6,321 to 10,035 with the harness's instructions) and the
project's own test trajectory."""


def _statement_and_issue(trace: Trace) -> tuple[str, str]:
    """The task statement (the first user turn) and the issue it opens with."""
    statement = next(m for m in trace.messages if m.role == "user").content.strip()
    return statement, statement.split("</pr_description>")[0]


def test_real_swe_bench_issue_statements_reach_the_reflector_whole() -> None:
    from combee.methods.ace.traces import TRANSCRIPT_TOKENS
    from combee.tasks.traces import read_traces

    traces = read_traces(SWE_BENCH).traces
    assert len(traces) == 6
    whole = 0
    for trace in traces:
        statement, issue = _statement_and_issue(trace)
        shown = render_transcript(trace.messages, max_tokens=TRANSCRIPT_TOKENS)
        assert issue in shown.text, trace.id  # the issue whole at the default budget
        if statement in shown.text:
            whole += 1
        else:  # the harness's instructions after it gave way, and the cut says so
            assert "characters of the task statement cut ...]" in shown.text, trace.id
            assert any("from the task statement" in note for note in shown.cuts), trace.id
        # A budget too small for the issue keeps its beginning, marked.
        small = render_transcript(trace.messages, max_tokens=600)
        kept = next(line for line in small.text.split("\n[") if line.startswith("1] user: "))
        if len(statement) > 2400:
            assert issue[:1000] in kept and "of the task statement cut ...]" in kept, trace.id
    assert whole == 3  # the other three are kept to their issue and part of the instructions


def test_the_issue_statements_reach_the_reflector_at_the_scripted_server(tmp_path: Path) -> None:
    import combee
    from combee.llm import connect
    from combee.sim import serve_in_thread
    from combee.sim.ace_script import ace_responder
    from combee.tasks.traces import read_traces

    issues = [_statement_and_issue(t)[1] for t in read_traces(SWE_BENCH).traces]
    with serve_in_thread(ace_responder) as server:
        llm = connect("sim", base_url=server.base_url)
        try:
            combee.learn(
                SWE_BENCH, llm=llm, batch_size=2, run_dir=tmp_path / "run", holdout_tasks=0
            )
        finally:
            combee.sync.run_sync(llm.aclose(), async_name="aclose")
        prompts = [
            "\n".join(str(m.get("content", "")) for m in r.body["messages"])
            for r in server.records
            if r.schema_name == "reflector"
        ]
    assert len(prompts) == 6
    for issue in issues:  # as the prompt's tagged block escapes tags inside it
        shown = re.sub(r"<(/?[a-z_]{1,40})>", r"&lt;\1>", issue)
        assert sum(shown in prompt for prompt in prompts) == 1
