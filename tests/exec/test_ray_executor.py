"""``--executor ray``: the map step on a real (local, one-node) Ray cluster, against the scripted
server over HTTP."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed")

import combee  # noqa: E402
from combee.core.types import Trajectory  # noqa: E402
from combee.exec import RayExecutor  # noqa: E402
from combee.methods.ace.method import AceMethod  # noqa: E402
from combee.methods.ace.playbook import Playbook  # noqa: E402
from combee.sim import SimConfig, peak_concurrency, serve_in_thread  # noqa: E402
from combee.sim.ace_script import ace_responder  # noqa: E402
from combee.sim.gates import wave  # noqa: E402
from combee.tasks.base import Sample  # noqa: E402
from combee.tasks.formula import FormulaTask  # noqa: E402
from tests.cli_helpers import run_combee  # noqa: E402

pytestmark = pytest.mark.ray

# Classes of this module travel to the workers by value (the workers need not import tests).
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def executor() -> Iterator[RayExecutor]:
    pool = RayExecutor(workers=2, init={"num_cpus": 2})
    try:
        yield pool
    finally:
        pool.close()


async def test_a_batch_runs_as_one_wave_on_ray_workers(
    executor: RayExecutor, tmp_path: Path
) -> None:
    # The server holds the first batch's 32 rollouts until all 32 have arrived: the workers
    # send them at once, so all are in flight together, whatever the machine's load.
    config = SimConfig(gates=(wave("generator", 32),))
    with serve_in_thread(ace_responder, config) as server:
        result = await combee.train_async(
            "formula", strategy="combee", batch_size=32, train_limit=64, val_limit=0,
            test_limit=4, llm=combee.llm.Endpoint("sim", base_url=server.base_url),
            executor=executor, run_dir=tmp_path / "run", gate=False,
        )  # fmt: skip
        records = server.records
    generate = sorted((r for r in records if r.schema_name == "generator"), key=lambda r: r.index)
    assert len(generate) == 64 + 4  # every training and test sample, once
    assert peak_concurrency(generate[:32]) == 32  # a batch's calls at once, from both workers
    rows = [
        json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [r["reflections"] for r in rows] == [32, 32]
    # The workers' calls are counted on the driver.
    assert [r["roles"]["generator"]["calls"] for r in rows] == [32, 32]
    assert [r["roles"]["reflector"]["calls"] for r in rows] == [32, 32]
    assert result.summary["test_samples"] == 4 and result.summary["test_failed_samples"] == 0


async def test_a_workers_client_widens_to_its_share(tmp_path: Path) -> None:
    # One actor, a share of 80: more than a client's default of 64 calls at once.
    single = RayExecutor(workers=1, init={"num_cpus": 2})
    try:
        with serve_in_thread(ace_responder, SimConfig(gates=(wave("generator", 80),))) as server:
            await combee.train_async(
                "formula", strategy="combee", batch_size=80, train_limit=80, val_limit=0,
                test_limit=0, llm=combee.llm.Endpoint("sim", base_url=server.base_url),
                executor=single, run_dir=tmp_path / "run", gate=False,
            )  # fmt: skip
            generate = [r for r in server.records if r.schema_name == "generator"]
    finally:
        single.close()
    assert len(generate) == 80
    assert peak_concurrency(generate) == 80


async def test_progress_ticks_for_each_sample_while_the_batch_runs(
    executor: RayExecutor,
) -> None:
    # The last rollout to arrive is held until the first progress tick reaches the server: a
    # tick comes while the batch still runs, or the gate waits out its deadline and the order
    # of the records shows it.
    gate = wave("generator", 1, start=7) | wave("tick", 1)
    task = FormulaTask()
    samples = task.load().train[:8]
    with serve_in_thread(ace_responder, SimConfig(gates=(gate,))) as server:
        llm = combee.llm.connect("sim", base_url=server.base_url)

        def tick() -> None:
            schema = {"name": "tick", "schema": {"type": "object"}}
            body = {
                "model": "sim",
                "messages": [{"role": "user", "content": "tick"}],
                "response_format": {"type": "json_schema", "json_schema": schema},
            }
            httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=120.0)

        try:
            method = AceMethod(llm, task.score)
            outcomes = await executor.map(
                method, Playbook(), samples, reflect=False, score=task.score, on_done=tick
            )
        finally:
            await llm.aclose()
        records = sorted(server.records, key=lambda r: r.index)
    ticks = [r for r in records if r.schema_name == "tick"]
    generate = [r for r in records if r.schema_name == "generator"]
    assert len(ticks) == len(generate) == 8  # one tick per sample
    assert [o.sample.id for o in outcomes] == [s.id for s in samples]
    assert all(o.trajectory is not None and o.failure is None for o in outcomes)
    assert ticks[0].arrived < generate[7].finished


class ExplodingMethod(AceMethod):
    """An ACE method whose rollout of one sample (``target``) raises on the worker."""

    target = ""

    async def rollout(self, context: Playbook, sample: Sample) -> Trajectory:
        if sample.id == self.target:
            raise RuntimeError(f"sandbox for {sample.id} crashed")
        return await super().rollout(context, sample)


async def test_a_worker_that_raises_costs_its_sample_and_the_run_finishes(
    executor: RayExecutor, tmp_path: Path
) -> None:
    task = FormulaTask()
    with serve_in_thread(ace_responder) as server:
        llm = combee.llm.connect("sim", base_url=server.base_url)
        method = ExplodingMethod(llm, task.score)
        method.target = task.load().train[2].id
        try:
            result = await combee.train_async(
                task, method=method, initial_context=Playbook(),
                strategy="combee", batch_size=8, train_limit=8, val_limit=0, test_limit=2,
                llm=llm, executor=executor, run_dir=tmp_path / "run", gate=False,
            )  # fmt: skip
        finally:
            await llm.aclose()
    failures = [
        json.loads(line) for line in (tmp_path / "run" / "failures.jsonl").read_text().splitlines()
    ]
    crashed = [f for f in failures if "crashed" in f["error"]]
    assert len(crashed) == 1 and crashed[0]["stage"] == "worker"
    assert "RuntimeError: sandbox for" in crashed[0]["error"]
    assert result.summary["test_samples"] == 2  # the run went on to its end


def test_the_cli_runs_with_executor_ray(tmp_path: Path) -> None:
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "train", "--task", "formula", "--batch-size", "4", "--train-limit", "4",
            "--val-limit", "0", "--test-limit", "2", "--executor", "ray", "--model", "sim",
            "--base-url", server.base_url, "--out", str(tmp_path / "run"),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "run" / "final_results.json").exists()
