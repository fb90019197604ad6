"""The client never limits a run below what it asks for: with concurrency left to the run, a
batch's generate calls all run at once; a concurrency the user sets is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

import combee
from combee.llm import Endpoint
from combee.sim import SimConfig, peak_concurrency, serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.sim.gates import wave


@pytest.mark.parametrize(("concurrency", "peak"), [(None, 80), (16, 16)])
async def test_a_batch_of_80_maps_in_one_wave_unless_told_otherwise(
    tmp_path: Path, concurrency: int | None, peak: int
) -> None:
    # The server holds the first ``peak`` rollouts until all have arrived, so the peak reaches
    # ``peak`` whatever the load; the latency keeps any calls beyond the limit in flight.
    config = SimConfig(ttft_s=0.3, gates=(wave("generator", peak),))
    with serve_in_thread(ace_responder, config) as server:
        endpoint = Endpoint("sim", base_url=server.base_url, concurrency=concurrency)
        await combee.train_async(
            "formula", strategy="naive", batch_size=80, llm=endpoint, train_limit=80,
            val_limit=0, test_limit=2, run_dir=tmp_path / "run",
        )  # fmt: skip
        generate = [r for r in server.records if r.schema_name == "generator"]
    assert len(generate) >= 80
    assert peak_concurrency(generate[:80]) == peak


def test_the_client_widens_only_when_left_to_the_run() -> None:
    auto = combee.llm.connect("sim", base_url="http://127.0.0.1:9/v1")
    fixed = combee.llm.connect("sim", base_url="http://127.0.0.1:9/v1", concurrency=8)
    assert auto.concurrency == 64 and auto.widen(300) == 300 and auto.widen(10) == 300
    assert auto.widen(100_000) == 1024 or auto.widen(100_000) < 1024  # the open-file limit
    assert fixed.widen(300) == 8
