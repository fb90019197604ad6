"""``--executor ray``: the map step on a real (local, one-node) Ray cluster, against the scripted
server over HTTP."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed")

import combee  # noqa: E402
from combee.core.types import Trajectory  # noqa: E402
from combee.exec import RayExecutor  # noqa: E402
from combee.methods.ace.method import AceMethod  # noqa: E402
from combee.methods.ace.playbook import Playbook  # noqa: E402
from combee.sim import SimConfig, peak_concurrency, serve_in_thread  # noqa: E402
from combee.sim.ace_script import ace_responder  # noqa: E402
from combee.tasks.base import Sample  # noqa: E402
from combee.tasks.formula import FormulaTask  # noqa: E402
from tests.cli_helpers import run_combee  # noqa: E402

# Classes of this module travel to the workers by value (the workers need not import tests).
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def executor() -> Iterator[RayExecutor]:
    pool = RayExecutor(workers=2, init={"num_cpus": 2})
    try:
        yield pool
    finally:
        pool.close()


async def test_a_batch_runs_concurrently_on_ray_workers(
    executor: RayExecutor, tmp_path: Path
) -> None:
    with serve_in_thread(ace_responder, SimConfig(ttft_s=0.5)) as server:
        result = await combee.train_async(
            "formula", strategy="combee", batch_size=8, train_limit=16, val_limit=0,
            test_limit=4, llm=combee.llm.Endpoint("sim", base_url=server.base_url),
            executor=executor, run_dir=tmp_path / "run",
        )  # fmt: skip
        records = server.records
    generate = [r for r in records if r.schema_name == "generator"]
    assert len(generate) == 16 + 4  # every training and test sample, once
    assert peak_concurrency(generate[:8]) == 8  # a batch's calls at once, from the workers
    rows = [
        json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [r["reflections"] for r in rows] == [8, 8]
    # The workers' calls are counted on the driver.
    assert [r["roles"]["generator"]["calls"] for r in rows] == [8, 8]
    assert result.summary["test_samples"] == 4 and result.summary["test_failed_samples"] == 0


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
                llm=llm, executor=executor, run_dir=tmp_path / "run",
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
