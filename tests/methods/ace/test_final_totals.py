"""``final_results.json`` names the whole run's counts as totals: each is the sum of the
iterations' counts in ``metrics.jsonl``, never the last iteration's under the same name."""

from __future__ import annotations

import json
from pathlib import Path

import combee
from combee.llm import connect
from combee.methods.ace.lesson_counts import LessonCounts
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.base import Sample

PER_ITERATION = (
    "ops_applied",
    "ops_rejected",
    "bullets_evicted",
    "lessons_combined",
    "near_duplicates",
)


def test_final_results_hold_the_sum_of_every_iteration_as_totals(tmp_path: Path) -> None:
    samples = [Sample(f"s{i}", f"Use formula F{i} to answer: case {i}?", "1") for i in range(6)]
    task = combee.SampleTask("t", train=samples, test=[], scorer=lambda p, s: 0.0)
    with serve_in_thread(ace_responder) as server:
        combee.train(
            task, strategy="naive", batch_size=2, llm=connect("sim", base_url=server.base_url),
            dedup=False, run_dir=tmp_path / "run",
        )  # fmt: skip
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    results = json.loads((tmp_path / "run" / "final_results.json").read_text())
    assert len(rows) == 3
    assert sum(row["ops_applied"] > 0 for row in rows) >= 2  # the last alone is not the total
    for key in PER_ITERATION:
        assert key not in results, key
        assert results[f"{key}_total"] == sum(row[key] for row in rows), key
    assert results["ops_applied_total"] > rows[-1]["ops_applied"]
    dropped: dict[str, int] = {}
    for row in rows:
        for reason, count in row["lessons_dropped"].items():
            dropped[reason] = dropped.get(reason, 0) + count
    assert results["lessons_dropped_total"] == dropped


def test_a_checkpoint_from_before_the_operation_totals_resumes_from_zero() -> None:
    counts = LessonCounts()
    counts.load({"dropped": {"duplicate": 2}, "repaired": {}, "combined": 1, "near_duplicates": 0})
    assert (counts.applied, counts.rejected, counts.evicted) == (0, 0, 0)
    assert counts.dropped == {"duplicate": 2} and counts.combined == 1
