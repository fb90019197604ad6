"""``pipeline=True``: the next batch is mapped while this one is reduced, against a context one
update old; against the scripted server over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import combee
from combee.sim import SimConfig, serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.sim.gates import wave


async def test_the_next_batch_is_mapped_while_this_one_is_reduced(tmp_path: Path) -> None:
    # The server holds batch 1's first curator call until batch 2's first rollout has arrived:
    # a pipeline sends that rollout while the curator call is held, a run without one only
    # after the reduction (then the gate stays short until its deadline and the order shows it).
    gate = wave("curator", 1) | wave("generator", 1, start=8)
    with serve_in_thread(ace_responder, SimConfig(gates=(gate,))) as server:
        result = await combee.train_async(
            "formula", strategy="combee", batch_size=8, train_limit=24, val_limit=0,
            test_limit=4, pipeline=True, gate=False, run_dir=tmp_path / "run",
            llm=combee.llm.Endpoint("sim", base_url=server.base_url),
        )  # fmt: skip
        records = server.records
    rows = [
        json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [r["staleness"] for r in rows] == [0, 1, 1]
    assert [r["reflections"] for r in rows] == [8, 8, 8]  # nothing lost to the overlap
    generate = [r for r in records if r.schema_name == "generator"]
    curate = [r for r in records if r.schema_name == "curator"]
    # Batch 2's rollouts were sent while batch 1's first curator call was still running.
    first_curate = min(curate, key=lambda r: r.index)
    second_batch = sorted(generate, key=lambda r: r.index)[8:16]
    assert min(r.arrived for r in second_batch) < first_curate.finished
    assert result.summary["test_samples"] == 4
    assert (tmp_path / "run" / "playbook.txt").read_text().count("::") > 0


def test_a_pipeline_needs_a_fixed_batch_size() -> None:
    with pytest.raises(combee.ConfigError) as caught:
        combee.train("formula", llm="sim", batch_size="auto", pipeline=True)
    assert caught.value.setting == "pipeline"
