"""Inspect AI eval logs written by Inspect itself (from its own test suite), checked in the
prompt the reflector receives at the scripted server."""

from __future__ import annotations

import json
from pathlib import Path

from combee.tasks.traces import read_traces
from tests.paths import DATA
from tests.tasks.traces.test_trace_formats_inspect_otel import eval_archive
from tests.tasks.traces.trace_prompts import reflector_prompts

REAL = DATA / "traces" / "real" / "inspect-ai"
POPULARITY = REAL / "2025-05-12T20-28-13-04-00_popularity.json"


def test_the_reflector_sees_the_target_the_tools_and_the_task(tmp_path: Path) -> None:
    prompts, _ = reflector_prompts([REAL], tmp_path / "run", transcript_tokens=3000)
    assert len(prompts) == 5
    mmlu = prompts["mmlu-summary-choices-1-epoch1"]
    # a choice scorer: what was right is shown, not only the model's own answer
    assert "Expected (the sample's target): A" in mmlu
    assert "Positronium is an atom" in mmlu and "ANSWER: C" in mmlu
    missed = prompts["2025-05-12T20-28-13-04-00_popularity-3-epoch1"]
    assert "target): Yes" in missed and "failure" in missed
    guess = prompts["log_message_deduplication-0-epoch1"]
    assert "Guess the number" in guess and "-> call bash(" in guess and "tool bash:" in guess
    assert "target): 42.7" in guess


def test_samples_of_different_evals_are_different_tasks() -> None:
    traces = read_traces([REAL]).traces
    tasks = {t.task_id for t in traces}
    assert tasks == {
        "popularity/1",
        "popularity/2",
        "popularity/3",
        "inspect_test_utils/guess_number/0",
        "inspect_evals/mmlu_0_shot/1",
    }


def test_a_log_saved_as_json_and_as_eval_is_read_once(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / POPULARITY.name).write_bytes(POPULARITY.read_bytes())
    log = json.loads(POPULARITY.read_text(encoding="utf-8"))
    eval_archive(folder / POPULARITY.name.replace(".json", ".eval"), log)
    imported = read_traces([folder])
    assert len(imported.traces) == 3 and len(imported.repeated) == 3
    assert "3 attempt(s) read twice left out" in imported.summary()
