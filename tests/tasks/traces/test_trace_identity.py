"""Attempts from several runs keep their identity: on the real tau-bench airline results
(vendored, MIT), a second run's file in the same folder adds its 200 attempts instead of being
taken for the same ones read twice; a file that is the same run read twice adds nothing; tasks
whose ids coincide across domains stay apart; --contrast pairs attempts across the runs and
shows the other attempt's feedback."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from combee.methods.ace.traces import TraceAceMethod
from combee.tasks.traces import read_traces
from combee.tasks.traces.formats import bundled_path
from tests.paths import DATA


def airline() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(
        gzip.decompress(bundled_path("tau-airline").read_bytes())
    )
    return records


def another_run(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same tasks attempted again (as another model's run would): each attempt's final
    turn says something else, and every success is a failure and the reverse."""
    again = json.loads(json.dumps(records))
    for record in again:
        record["traj"][-1]["content"] = "I have done what I can for you today."
        record["reward"] = 0.0 if record["reward"] >= 1 else 1.0
    return again


def test_two_runs_in_one_folder_give_every_attempt(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    records = airline()
    (folder / "gpt-4o-airline.json").write_text(json.dumps(records))
    (folder / "other-model-airline.json").write_text(json.dumps(another_run(records)))
    imported = read_traces([folder])
    assert len(imported.traces) == 400 and imported.repeated == []
    ids = [t.id for t in imported.traces]
    assert len(set(ids)) == 400
    assert "0-0@other-model-airline.json" in ids
    by_task = Counter(t.task_id for t in imported.traces)
    assert len(by_task) == 50 and set(by_task.values()) == {8}  # 4 trials x 2 runs per task


def test_the_same_run_read_twice_is_read_once(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    text = json.dumps(airline())
    (folder / "results.json").write_text(text)
    (folder / "copy.json").write_text(text)
    imported = read_traces([folder])
    assert len(imported.traces) == 200 and len(imported.repeated) == 200


def test_tasks_of_two_domains_with_one_id_stay_apart(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    records = airline()[:8]
    retail = json.loads(json.dumps(records))
    for record in retail:
        record["info"]["task"] = {  # a retail task: another user, other expected actions
            "user_id": "yusuf_rossi_9620",
            "actions": [{"name": "return_delivered_order_items", "kwargs": {"order_id": "#W1"}}],
            "instruction": "You want to return a pair of shoes.",
            "outputs": [],
        }
        record["traj"][-1]["content"] = "Your return is on its way."
    (folder / "airline.json").write_text(json.dumps(records))
    (folder / "retail.json").write_text(json.dumps(retail))
    imported = read_traces([folder])
    tasks = {t.task_id for t in imported.traces}
    assert {t.task_id for t in imported.traces if "retail" in t.source} == {
        f"{r['task_id']}@retail.json" for r in retail
    }
    assert len(tasks) == 2 * len({r["task_id"] for r in records})


async def test_contrast_pairs_attempts_across_runs_with_their_feedback(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    records = [r for r in airline() if r["task_id"] == 0][:1]
    (folder / "a.json").write_text(json.dumps(records))
    (folder / "b.json").write_text(json.dumps(another_run(records)))
    traces = read_traces([folder]).traces
    method = TraceAceMethod(None, traces=traces, contrast=True)  # type: ignore[arg-type]
    first, second = traces
    shown = method._contrast(first)
    assert second.id in shown and first.outcome.success != second.outcome.success
    if second.outcome.feedback:
        assert "Its feedback: " in shown


def test_two_swe_bench_runs_over_the_same_instances_give_both_attempts(tmp_path: Path) -> None:
    real = DATA / "traces" / "real" / "mini-swe-agent"
    trajectory = json.loads((real / "django__django-16255.traj.json").read_text())
    again = json.loads(json.dumps(trajectory))  # the same instance, another run's attempt
    again["messages"][-1]["content"] = "I could not reproduce the issue; submitting nothing."
    for run, record in (("run-a", trajectory), ("run-b", again)):
        (tmp_path / run).mkdir()
        (tmp_path / run / "django__django-16255.traj.json").write_text(json.dumps(record))
    (tmp_path / "copy-of-a").mkdir()
    (tmp_path / "copy-of-a" / "django__django-16255.traj.json").write_text(json.dumps(trajectory))
    imported = read_traces([tmp_path])
    assert len(imported.traces) == 2 and len(imported.repeated) == 1
    assert len({t.id for t in imported.traces}) == 2
    assert len({t.task_id for t in imported.traces}) == 1  # one task, two attempts


QWEN = next((DATA / "traces" / "real" / "tau-bench").glob("tool-calling-qwen*.json"))
"""A real tau-bench airline result file of a second model (tasks 0-9, one trial; SOURCE.md)."""


def two_models(folder: Path, records: list[dict[str, Any]]) -> None:
    folder.mkdir()
    (folder / "gpt-4o-airline.json").write_text(json.dumps(records))
    (folder / QWEN.name).write_bytes(QWEN.read_bytes())


def test_two_models_real_result_files_give_every_attempt(tmp_path: Path) -> None:
    two_models(tmp_path / "runs", airline())
    imported = read_traces([tmp_path / "runs"])
    qwen = [t for t in imported.traces if QWEN.name in t.source]
    assert len(imported.traces) == 210 and imported.repeated == [] and len(qwen) == 10
    assert len({t.id for t in imported.traces}) == 210
    gpt_tasks = {t.task_id for t in imported.traces if t not in qwen}
    assert {t.task_id for t in qwen} <= gpt_tasks  # the same tasks, attempted by two models


def test_contrast_pairs_the_second_models_failures_with_gpt_4o_successes(tmp_path: Path) -> None:
    from tests.tasks.traces.trace_prompts import reflector_prompts

    first_ten = [r for r in airline() if r["task_id"] < 10]
    two_models(tmp_path / "runs", first_ten)
    traces = read_traces([tmp_path / "runs"]).traces
    qwen = [t for t in traces if QWEN.name in t.source]
    solved = {t.task_id for t in traces if t.outcome.success}
    assert len(qwen) == 10 and len(solved) == 5
    assert all(t.outcome.success is False for t in qwen)

    prompts, _ = reflector_prompts([tmp_path / "runs"], tmp_path / "run", contrast=True)
    pairs = 0
    for trace in qwen:
        shown = prompts[trace.id]
        paired = re.search(r"Another recorded attempt at the same task \((.*?)\)", shown)
        if trace.task_id in solved:  # paired with a gpt-4o attempt that succeeded
            assert paired is not None, trace.id
            other = next(t for t in traces if t.id == paired.group(1))
            assert other.outcome.success and QWEN.name not in other.source
            pairs += 1
        else:  # every attempt at the task failed: nothing to contrast with
            assert paired is None, trace.id
    assert pairs == 5  # tasks 1, 2, 5, 6 and 7
