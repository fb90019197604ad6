"""SWE-agent and mini-swe-agent trajectories as the projects write them, with the SWE-bench
evaluation of a published run, checked in the prompt the reflector receives at the scripted
server."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from combee.errors import DatasetError
from combee.sim import RunningServer, serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.traces import detect_format, read_traces
from tests.cli_helpers import run_combee
from tests.paths import DATA
from tests.tasks.traces.trace_prompts import reflector_prompts

REAL = DATA / "traces" / "real"
SWE = REAL / "swe-agent"
MINI = REAL / "mini-swe-agent"
TEST_RUN = SWE / "6e44b9__sweagenttestrepo-1c2844.traj"  # history lacks the final submit
DEMO = SWE / "marshmallow-code__marshmallow-1867.traj"  # history has it
DJANGO = "django__django-16255"
BARE_LIST = MINI / "github_issue.traj.json"


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def save(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def published_run(folder: Path, report: Any = None, *, summary: bool = True) -> Path:
    """The run as published: ``trajs/<id>/<id>.traj.json``, ``logs/<id>/report.json`` (the
    real report unless ``report`` is given; none when it is False), ``results_summary.json``."""
    trajs = folder / "trajs" / DJANGO
    trajs.mkdir(parents=True)
    shutil.copy(MINI / f"{DJANGO}.traj.json", trajs)
    if report is not False:
        save(folder / "logs" / DJANGO / "report.json", report or load(MINI / "report.json"))
    if summary:
        shutil.copy(MINI / "results_summary.json", folder)
    return folder


def turn_order(prompt: str, *texts: str) -> list[int]:
    return [prompt.index(text) for text in texts]


def test_the_final_submit_step_and_the_patch_reach_the_reflector_once(tmp_path: Path) -> None:
    prompts, _ = reflector_prompts([TEST_RUN, DEMO], tmp_path / "run")
    assert sorted(prompts) == [
        "6e44b9__sweagenttestrepo-1c2844",
        "marshmallow-code__marshmallow-1867",
    ]

    # The test run's history stops at the observation "8.2"; the submit step follows it.
    prompt = prompts["6e44b9__sweagenttestrepo-1c2844"]
    steps = load(TEST_RUN)["trajectory"]
    assert steps[-1]["action"] == "submit"
    order = turn_order(
        prompt,
        "SyntaxError: invalid syntax",  # the task statement
        "-> call bash(",
        "tool bash: 8.2",
        "I will now submit the changes to finalize the fix.",  # the submit step's thought
        "-> call submit(",
        "tool submit: diff --git a/tests/missing_colon.py",
        "<outcome>",
    )
    assert order == sorted(order)
    assert "+def division(a: float, b: float) -> float:" in prompt  # the patch itself
    # The submit step's answer is the submission: it is not shown a second time.
    assert prompt.count("diff --git a/tests/missing_colon.py") == 1
    assert "tool submission:" not in prompt
    assert "the agent exited with status 'submitted'" in prompt
    assert "not recorded: judge it from the trajectory" in prompt

    # The demonstration's history has the submit call and its answer: nothing is added.
    prompt = prompts["marshmallow-code__marshmallow-1867"]
    assert prompt.count("-> call submit(") == 1
    assert prompt.count("diff --git a/src/marshmallow/fields.py") == 1
    assert "tool submission:" not in prompt
    assert prompt.index("tool submit: diff --git") < prompt.index("<outcome>")


def test_a_patch_no_turn_shows_is_the_last_turn_and_a_long_one_is_shortened(
    tmp_path: Path,
) -> None:
    # The demonstration as a run stopped by its cost limit: no submit call, the patch taken
    # from the environment (SWE-agent's autosubmission), and a longer patch.
    demo = load(DEMO)
    patch = demo["info"]["submission"]
    added = "".join(f"+    # line {n} of a long change\n" for n in range(200))
    long_patch = patch + added
    demo["history"] = demo["history"][:-2]
    demo["trajectory"] = demo["trajectory"][:-1]
    demo["info"] |= {"exit_status": "submitted (exit_cost)", "submission": long_patch}
    path = save(tmp_path / "stopped" / "marshmallow-code__marshmallow-1867.traj", demo)

    prompts, _ = reflector_prompts([path], tmp_path / "run")
    prompt = prompts["marshmallow-code__marshmallow-1867"]
    assert "-> call submit(" not in prompt
    assert prompt.count("tool submission: diff --git a/src/marshmallow/fields.py") == 1
    # The last turn, after the step that ended the run, with the patch's beginning and end.
    last_step = demo["trajectory"][-1]["action"]
    assert last_step == "rm reproduce.py"
    order = turn_order(prompt, '-> call bash({"command": "rm reproduce.py"})', "tool submission:")
    assert order == sorted(order)
    shown = prompt[prompt.index("tool submission:") : prompt.index("<outcome>")]
    assert "characters cut" in shown and "# line 199 of a long change" in shown
    assert re.search(r"^\[\d+\] ", shown, re.MULTILINE) is None  # no turn after it
    assert len(shown) < len(long_patch) // 4
    assert "status 'submitted (exit_cost)'" in prompt


def test_a_published_mini_swe_agent_run_is_judged_by_its_swe_bench_report(
    tmp_path: Path,
) -> None:
    run = published_run(tmp_path / "gemini-3-pro")
    imported = read_traces([run])
    assert [t.id for t in imported.traces] == [DJANGO]
    assert "1 of 1 with an outcome" in imported.summary()
    skipped = {p.name: why for p, why in imported.skipped}
    assert skipped["results_summary.json"] == (
        "is a SWE-bench results summary, read for the outcomes of the trajectories in its folder"
    )

    prompts, _ = reflector_prompts([run], tmp_path / "learn")
    prompt = prompts[DJANGO]
    assert "<outcome>\nsuccess, reward 1\n</outcome>" in prompt
    assert (
        f"SWE-bench (logs/{DJANGO}/report.json): resolved; FAIL_TO_PASS: 1 of 1 passed; "
        "PASS_TO_PASS: 36 of 36 passed; the agent exited with status 'Submitted'"
    ) in prompt
    assert "Sitemaps without items raise ValueError on callable lastmod." in prompt  # the task
    # mini-swe-agent's closing `git diff` shows the patch: it is not added again.
    assert prompt.count("+            except (TypeError, ValueError):") == 1


def test_failed_tests_of_the_report_are_the_feedback_in_either_form(tmp_path: Path) -> None:
    report = load(MINI / "report.json")
    tests = report["tests_status"]
    regressed = tests["PASS_TO_PASS"]["success"][:3]
    tests["PASS_TO_PASS"] = {
        "success": tests["PASS_TO_PASS"]["success"][3:],
        "failure": regressed,
    }
    tests["FAIL_TO_PASS"] = {"success": [], "failure": tests["FAIL_TO_PASS"]["success"]}
    report["resolved"] = False
    bare = published_run(tmp_path / "bare", report)
    keyed = published_run(tmp_path / "keyed", {DJANGO: report}, summary=False)
    prompts, _ = reflector_prompts([bare], tmp_path / "learn-bare")
    keyed_prompts, _ = reflector_prompts([keyed], tmp_path / "learn-keyed")
    feedback = (
        f"SWE-bench (logs/{DJANGO}/report.json): not resolved; FAIL_TO_PASS (tests the fix must "
        "make pass): 1 of 1 failed: test_callable_sitemod_no_items "
        "(sitemaps_tests.test_http.HTTPSitemapTests); PASS_TO_PASS (tests that passed before "
        f"the patch): 3 of 36 failed: {', '.join(regressed)}; the agent exited with status "
        "'Submitted'"
    )
    for prompt in (prompts[DJANGO], keyed_prompts[DJANGO]):
        assert "<outcome>\nfailure, reward 0\n</outcome>" in prompt
        assert f"<feedback>\n{feedback}\n</feedback>" in prompt


def test_the_run_summary_decides_without_a_per_instance_report(tmp_path: Path) -> None:
    run = published_run(tmp_path / "run", False)
    (trace,) = read_traces([run]).traces
    assert trace.outcome.success is True and trace.outcome.reward == 1.0
    assert trace.outcome.feedback == (
        "SWE-bench (results_summary.json): resolved; the agent exited with status 'Submitted'"
    )
    # Unresolved in the summary: a failure.
    summary = load(run / "results_summary.json")
    for item in summary["instances"]:
        if item["instance_id"] == DJANGO:
            item["resolved"] = False
    save(run / "results_summary.json", summary)
    (trace,) = read_traces([run]).traces
    assert trace.outcome.success is False and trace.outcome.reward == 0.0
    # A summary named on its own holds no trajectory, and says so.
    with pytest.raises(DatasetError, match="is a SWE-bench results summary"):
        read_traces([run / "results_summary.json"])


def test_a_bare_list_of_chat_messages_is_read_with_no_outcome(tmp_path: Path) -> None:
    messages = load(BARE_LIST)
    assert isinstance(messages, list) and detect_format(BARE_LIST) == "swe-agent"
    (trace,) = read_traces([BARE_LIST]).traces
    assert trace.id == trace.task_id == "github_issue"
    assert [m.role for m in trace.messages] == [m["role"] for m in messages]
    assert not trace.outcome.known and trace.outcome.feedback == ""

    prompts, _ = reflector_prompts([BARE_LIST], tmp_path / "run")
    prompt = prompts["github_issue"]
    assert "Please solve this issue: GitHub Issue: SyntaxError: invalid syntax" in prompt
    assert "<outcome>\nnot recorded: judge it from the trajectory\n</outcome>" in prompt
    assert '+        raise ValueError("Cannot divide by zero")' in prompt  # the final diff
    # A list of anything else under that name is in no format.
    odd = save(tmp_path / "numbers.traj.json", [1, 2, 3])
    with pytest.raises(DatasetError, match=r"numbers\.traj\.json: is in no trace format"):
        read_traces([odd])


def test_the_named_format_finds_every_file_detection_finds(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    (folder / "swe").mkdir(parents=True)
    shutil.copy(TEST_RUN, folder / "swe")
    shutil.copy(BARE_LIST, folder)
    published_run(folder / "published")
    # mini-swe-agent saved under a plain .json name, and a file in another format beside them
    shutil.copy(MINI / f"{DJANGO}.traj.json", folder / "saved.json")
    save(folder / "other.json", {"rows": [1, 2]})

    auto = read_traces([folder])
    named = read_traces([folder], format="swe-agent")
    ids = ["6e44b9__sweagenttestrepo-1c2844", DJANGO, "github_issue"]
    assert sorted(t.id for t in auto.traces) == sorted(t.id for t in named.traces) == ids
    assert sorted(t.source for t in auto.traces) == sorted(t.source for t in named.traces)
    assert [t.source for t in auto.repeated] == [t.source for t in named.repeated]
    assert [Path(t.source).name for t in named.repeated] == ["saved.json"]
    assert sorted(auto.skipped) == sorted(named.skipped)


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(ace_responder) as running:
        yield running


def test_learn_says_when_no_trace_has_an_outcome(server: RunningServer, tmp_path: Path) -> None:
    folder = tmp_path / "trajectories"
    folder.mkdir()
    shutil.copy(TEST_RUN, folder)
    shutil.copy(BARE_LIST, folder)
    out = tmp_path / "run"
    result = run_combee(
        "learn", "--traces", str(folder), "--format", "swe-agent", "--model", "sim",
        "--base-url", server.base_url, "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    said = result.stdout + result.stderr
    assert "traces: 2 traces from 2 files, 0 of 2 with an outcome" in said
    config = json.loads((out / "config.json").read_text())
    assert config["trace_import"]["with_outcome"] == 0
