"""``combee train --method gepa`` end to end: the real command, over HTTP, against the scripted
GEPA server."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from combee.sim import RequestRecord, SimConfig, peak_concurrency, serve_in_thread
from combee.sim.gepa_script import gepa_responder
from tests.cli_helpers import run_combee

EXAMPLE = re.compile(r"^### Example \d+\n", re.MULTILINE)


def _examples(record: RequestRecord) -> list[str]:
    user = next(m["content"] for m in record.body["messages"] if m["role"] == "user")
    chunks = EXAMPLE.split(user.split("</examples>")[0])[1:]
    return [chunk.strip() for chunk in chunks]


def test_each_proposal_is_four_concurrent_calls_then_one_merge(tmp_path: Path) -> None:
    out = tmp_path / "gepa"
    with serve_in_thread(gepa_responder, SimConfig(ttft_s=0.5)) as server:
        result = run_combee(
            "train", "--method", "gepa", "--strategy", "combee", "--batch-size", "16",
            "--train-limit", "32", "--val-limit", "4", "--test-limit", "4",
            "--max-metric-calls", "60", "--model", "sim", "--base-url", server.base_url,
            "--out", str(out),
        )  # fmt: skip
        records = server.records
    assert result.returncode == 0, result.stderr
    merges = [r for r in records if r.schema_name == "gepa_merge"]
    assert merges
    previous = -1
    for merge in merges:
        wave = [
            r
            for r in records
            if r.schema_name == "gepa_proposal" and previous < r.index < merge.index
        ]
        previous = merge.index
        assert len(wave) == 4
        assert peak_concurrency(wave) == 4
        assert merge.arrived >= max(r.finished for r in wave)
        per_call = [_examples(r) for r in wave]
        assert all(len(examples) == 8 for examples in per_call)
        counts = Counter(example for examples in per_call for example in set(examples))
        assert len(counts) == 16 and set(counts.values()) == {2}
    saved = json.loads((out / "gepa_result.json").read_text())
    assert {"candidates", "parents", "val_aggregate_scores"} <= set(saved)
    results = json.loads((out / "final_results.json").read_text())
    assert results["test_samples"] == 4 and 0.0 <= results["test_accuracy"] <= 1.0
    assert results["llm_calls"][
        "gepa_proposal" if "gepa_proposal" in results["llm_calls"] else "proposal"
    ] == 4 * len(merges)
    assert (out / "prompt.txt").read_text().strip()
