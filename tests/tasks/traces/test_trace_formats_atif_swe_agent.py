"""Trace importers for ATIF (Harbor / Terminal-Bench 2.0) and SWE-agent / mini-swe-agent."""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path

import pytest

from combee.errors import ConfigError, DatasetError
from combee.tasks.traces import detect_format, load_traces
from tests import paths

DATA = paths.DATA / "traces"
TRIAL = DATA / "atif" / "fix-permissions__Qb7xK2m"
RUN = DATA / "swe-agent" / "run"
SYMPY = RUN / "sympy__sympy-20590" / "sympy__sympy-20590.traj"
FLASK = RUN / "pallets__flask-4045" / "pallets__flask-4045.traj.json"
ATIF_HEAD = {
    "schema_version": "ATIF-v1.6",
    "session_id": "s",
    "agent": {"name": "a", "version": "1"},
}


@pytest.mark.parametrize("fmt", ["auto", "atif"])
def test_an_atif_trial_reads_steps_tool_calls_and_the_verifier_reward(fmt: str) -> None:
    path = TRIAL / "agent" / "trajectory.json"
    assert detect_format(path) == "atif"
    (trace,) = load_traces([path], format=fmt)
    assert trace.id == "fix-permissions__Qb7xK2m" and trace.task_id == "fix-permissions"
    roles = " ".join(m.role for m in trace.messages)
    assert roles == "system user assistant tool assistant tool tool assistant"
    (look,) = trace.messages[2].tool_calls
    assert look.name == "Bash" and look.id == "toolu_01"
    assert look.arguments == {"command": "ls -l /app/backup.sh"}
    assert [c.arguments["command"] for c in trace.messages[4].tool_calls] == [
        "chmod +x /app/backup.sh",
        "/app/backup.sh && ls -l /app/backup.tar.gz",
    ]
    answer = trace.messages[6]
    assert answer.tool_call_id == "toolu_03" and answer.name == "Bash"
    assert answer.content.endswith("/app/backup.tar.gz")
    assert trace.outcome.success is True and trace.outcome.reward == 1.0
    assert trace.meta["agent"] == "claude-code"


def test_a_folder_of_trials_skips_the_trial_result_file(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="combee"):
        (trace,) = load_traces([DATA / "atif"])
    assert trace.task_id == "fix-permissions"
    # A run record beside the traces is skipped quietly, not warned about.
    assert "skipped 1 run record(s)" in caplog.text and "WARNING" not in caplog.text
    with pytest.raises(DatasetError, match="is in no trace format"):
        detect_format(TRIAL / "result.json")


def test_an_atif_trajectory_without_a_trial_result_has_an_unknown_outcome(tmp_path: Path) -> None:
    agent = tmp_path / "fix-permissions__Zz91Kq0" / "agent"
    agent.mkdir(parents=True)
    shutil.copy(TRIAL / "agent" / "trajectory.json", agent)
    (trace,) = load_traces([tmp_path])
    assert trace.id == "fix-permissions__Zz91Kq0" and trace.task_id == "fix-permissions"
    assert not trace.outcome.known and trace.outcome.success is None
    # A trial that crashed before the verifier ran: still unknown, with the exception as feedback.
    timeout = {"exception_type": "AgentTimeoutError",
               "exception_message": "Agent execution timed out after 900s"}  # fmt: skip
    crashed = {"task_name": "fix-permissions", "trial_name": "fix-permissions__Zz91Kq0",
               "verifier_result": None, "exception_info": timeout}  # fmt: skip
    (agent.parent / "result.json").write_text(json.dumps(crashed))
    (trace,) = load_traces([agent / "trajectory.json"])
    assert trace.outcome.success is None
    assert trace.outcome.feedback == (
        "the trial ended with AgentTimeoutError: Agent execution timed out after 900s"
    )


def test_atif_without_its_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "atif", None)
    with pytest.raises(ConfigError, match=r"pip install 'combee\[traces\]'"):
        load_traces([TRIAL / "agent" / "trajectory.json"])


@pytest.mark.parametrize("fmt", ["auto", "swe-agent"])
def test_swe_agent_and_mini_swe_agent_runs_with_a_swe_bench_report(fmt: str) -> None:
    assert detect_format(SYMPY) == "swe-agent" and detect_format(FLASK) == "swe-agent"
    flask, sympy = load_traces([RUN], format=fmt)

    assert sympy.task_id == sympy.id == "sympy__sympy-20590"
    assert [m.role for m in sympy.messages] == ["system", "user"] + ["assistant", "tool"] * 3
    assert "Symbol instances have __dict__" in sympy.messages[1].content
    edit = sympy.messages[4].tool_calls[0]
    assert edit.name == "str_replace_editor" and edit.id == "call_a2"
    assert edit.arguments["command"] == "str_replace"
    assert "__slots__ = ()" in edit.arguments["new_str"]
    names = [m.tool_calls[0].name for m in sympy.messages[2::2]]
    assert names == ["bash", "str_replace_editor", "submit"]
    answer = sympy.messages[5]
    assert answer.tool_call_id == "call_a2" and answer.name == "str_replace_editor"
    assert sympy.outcome.success is True and sympy.outcome.reward == 1.0
    assert sympy.outcome.feedback == (
        "SWE-bench (results.json): resolved; the agent exited with status 'submitted'"
    )
    assert sympy.meta["exit_status"] == "submitted"

    # mini-swe-agent: chat messages; the closing 'exit' message is not a turn.
    assert flask.task_id == "pallets__flask-4045"
    assert [m.role for m in flask.messages] == ["system", "user"] + ["assistant", "tool"] * 3
    (grep,) = flask.messages[2].tool_calls
    assert grep.name == "bash" and grep.arguments == {
        "command": "grep -n 'self.name = name' src/flask/blueprints.py"
    }
    assert flask.messages[3].tool_call_id == "call_m1" and flask.messages[3].name == "bash"
    assert flask.outcome.success is False and flask.outcome.reward == 0.0
    assert flask.outcome.feedback.startswith("SWE-bench (results.json): not resolved")


def test_an_old_traj_is_rebuilt_from_its_steps_and_a_per_instance_report(tmp_path: Path) -> None:
    instance = tmp_path / "marshmallow-code__marshmallow-1867"
    instance.mkdir()
    steps = [{"thought": "Let me look around.", "action": "ls -F\n", "observation": "src/\ntests/",
              "response": "Let me look around.\n```\nls -F\n```", "state": "{}"},
             {"thought": "Done.", "action": "submit\n", "observation": "diff --git a/x b/x",
              "response": "Done.\n```\nsubmit\n```", "state": "{}"}]  # fmt: skip
    traj = {"environment": "swe_main", "trajectory": steps, "history": [],
            "info": {"exit_status": "submitted", "submission": "diff --git a/x b/x"}}  # fmt: skip
    path = instance / "marshmallow-code__marshmallow-1867.traj"
    path.write_text(json.dumps(traj))
    (trace,) = load_traces([path])
    assert [m.role for m in trace.messages] == ["assistant", "tool", "assistant", "tool"]
    ls = trace.messages[0].tool_calls[0]
    assert (ls.name, ls.arguments) == ("ls", {"command": "ls -F\n"})
    assert trace.messages[1].tool_call_id == ls.id and trace.messages[1].content == "src/\ntests/"
    assert not trace.outcome.known
    assert trace.outcome.feedback == "the agent exited with status 'submitted'"
    # The harness's per-instance report, copied next to the run, gives the verdict.
    report = {"marshmallow-code__marshmallow-1867": {"patch_is_None": False, "resolved": True}}
    (tmp_path / "report.json").write_text(json.dumps(report))
    (trace,) = load_traces([tmp_path])
    assert trace.outcome.success is True and trace.outcome.reward == 1.0


def test_demonstrations_are_left_out_and_an_unlisted_instance_is_unknown(tmp_path: Path) -> None:
    history = [{"role": "system", "content": "sys"},
               {"role": "user", "content": "demo task", "is_demo": True},
               {"role": "user", "content": "the task"}]  # fmt: skip
    path = tmp_path / "run" / "a__b-1" / "a__b-1.traj"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"history": history, "trajectory": [], "info": {}}))
    (tmp_path / "run" / "results.json").write_text(json.dumps({"resolved_ids": ["other__x-2"]}))
    (trace,) = load_traces([path])
    assert [m.content for m in trace.messages] == ["sys", "the task"]
    assert not trace.outcome.known and trace.outcome.feedback == ""


def test_sniffers_keep_to_their_own_files(tmp_path: Path) -> None:
    # mini-swe-agent saved on one line under any .json name is still mini-swe-agent, not OpenAI.
    mini = json.loads(FLASK.read_text())
    (tmp_path / "last_run.json").write_text(json.dumps(mini))
    assert detect_format(tmp_path / "last_run.json") == "swe-agent"
    (tmp_path / "chat.jsonl").write_text(json.dumps({"messages": [], "info": {}}) + "\n")
    assert detect_format(tmp_path / "chat.jsonl") == "openai"
    (tmp_path / "tau.json").write_text(json.dumps([{"task_id": 1, "traj": [], "reward": 1}]))
    assert detect_format(tmp_path / "tau.json") == "tau"
    with pytest.raises(DatasetError, match="is in no trace format"):
        detect_format(RUN / "results.json")


@pytest.mark.parametrize(
    ("name", "document", "fmt", "problem"),
    [
        (
            "trajectory.json",
            {**ATIF_HEAD,
             "steps": [{"step_id": 1, "source": "user", "message": "go"},
                       {"step_id": 2, "source": "agent", "message": "",
                        "tool_calls": [{"tool_call_id": "c1", "arguments": {}}]}]},
            "atif",
            "steps[1].tool_calls[0].function_name: Field required",
        ),
        (
            "source.json",
            {**ATIF_HEAD,
             "steps": [{"step_id": 1, "source": "robot", "message": "go"}]},
            "atif",
            "steps[0].source: Input should be 'system', 'user' or 'agent' (got \"robot\")",
        ),
        (
            "x__y-1.traj",
            {"history": [{"role": "system", "content": ""}, {"role": "user", "content": "t"},
                         {"role": "robot", "content": "?"}], "info": {}},
            "swe-agent",
            "history[2] has role 'robot'; expected system, user, assistant, tool or exit",
        ),
        (
            "x__y-2.traj.json",
            {"messages": [{"role": "user", "content": "t"},
                          {"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}],
             "info": {}, "trajectory_format": "mini-swe-agent-1.1"},
            "swe-agent",
            "messages[1].tool_calls[0] has no function name",
        ),
        (
            "x__y-3.traj",
            {"trajectory": [{"action": 3, "observation": ""}], "info": {}},
            "swe-agent",
            "trajectory[0].action must be text, got 3",
        ),
    ],
)  # fmt: skip
def test_a_malformed_trace_names_its_file_and_position(
    tmp_path: Path, name: str, document: object, fmt: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=1))
    assert detect_format(path) == fmt
    with pytest.raises(DatasetError) as caught:
        load_traces([path])
    assert str(caught.value) == f"{path}: {problem}"
