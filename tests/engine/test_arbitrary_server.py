"""Runs against a server that answers every request with arbitrary content valid for its schema:
nothing plays along with our prompts, and every run must still finish and account for its work."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

import combee
from combee.engine.offline_eval import learned_run_settings
from combee.llm import connect
from combee.methods.ace import schemas as ace_schemas
from combee.methods.gepa import schemas as gepa_schemas
from combee.sim import RunningServer, serve_in_thread
from combee.sim.arbitrary import arbitrary_instance, arbitrary_responder


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(arbitrary_responder(seed=3)) as running:
        yield running


def test_arbitrary_instances_validate_against_every_role_schema() -> None:
    rng = random.Random(0)
    roles = [
        getattr(module, name)
        for module in (ace_schemas, gepa_schemas)
        for name in dir(module)
        if isinstance(getattr(module, name), combee.llm.JsonSchema)
    ]
    assert len(roles) >= 6
    for role in roles:
        for _ in range(50):
            jsonschema.validate(arbitrary_instance(role.schema, rng), role.schema)


@pytest.mark.parametrize("strategy", ["sequential", "naive", "combee"])
async def test_ace_finishes_and_accounts_for_every_sample(
    server: RunningServer, tmp_path: Path, strategy: str
) -> None:
    llm = connect("sim", base_url=server.base_url, max_retries=0)
    try:
        result = await combee.train_async(
            "formula", strategy=strategy, batch_size=8, llm=llm, run_dir=tmp_path / strategy,
            train_limit=16, val_limit=4, test_limit=4, val_every=1,
        )  # fmt: skip
    finally:
        await llm.aclose()
    summary = result.summary
    metrics = [json.loads(line) for line in (tmp_path / strategy / "metrics.jsonl").open()]
    assert sum(m["batch_size"] for m in metrics) == 16
    assert summary["test_samples"] == 4 and summary["test_accuracy"] is not None
    # Every sample either reflected or is listed as failed; nothing vanished.
    assert sum(m["reflections"] + m["failed_samples"] for m in metrics) == 16
    assert (tmp_path / strategy / "playbook.txt").exists()
    combee.methods.ace.Playbook.parse(result.text)  # what was kept is a valid playbook


@pytest.mark.parametrize("strategy", ["sequential", "naive", "combee"])
async def test_gepa_finishes_with_a_prompt(
    server: RunningServer, tmp_path: Path, strategy: str
) -> None:
    llm = connect("sim", base_url=server.base_url, max_retries=0)
    try:
        result = await combee.train_async(
            "formula", method="gepa", strategy=strategy, batch_size=4, llm=llm,
            run_dir=tmp_path / strategy, train_limit=12, val_limit=3, test_limit=3,
            max_metric_calls=40,
        )  # fmt: skip
    finally:
        await llm.aclose()
    assert result.text.strip()
    assert result.summary["iterations"] >= 1 and result.summary["test_samples"] == 3
    assert (tmp_path / strategy / "prompt.txt").read_text() == result.text


async def test_learn_and_offline_eval_finish_on_tau_traces(
    server: RunningServer, tmp_path: Path
) -> None:
    llm = connect("sim", base_url=server.base_url, max_retries=0)
    try:
        learned = await combee.learn_async(
            ["tau-airline"], holdout_tasks=3, strategy="combee", batch_size=50, llm=llm,
            run_dir=tmp_path / "learn",
        )  # fmt: skip
        settings = learned_run_settings(tmp_path / "learn")
        server.clear_records()
        evaluation = await combee.evaluate_next_actions_async(  # on the run's own endpoint
            points_per_task=2, out=tmp_path / "eval", **settings
        )
    finally:
        await llm.aclose()
    endpoint = settings["llm"]
    assert (endpoint.model, endpoint.base_url, endpoint.max_retries) == ("sim", server.base_url, 0)
    assert "api_key" not in vars(endpoint) and endpoint.cache is None
    assert len(server.records) == 2 * len(evaluation.points)
    combee.methods.ace.Playbook.parse(learned.text)
    config = json.loads((tmp_path / "learn" / "config.json").read_text())
    assert len(settings["tasks"]) == 3 and settings["tasks"] == config["held_out_tasks"]
    n = len(evaluation.points)
    assert 3 <= n <= 6 and evaluation.failed_calls == 0
    for accuracy in (*evaluation.tool.values(), *evaluation.arguments.values()):
        assert accuracy.n == n and 0 <= accuracy.correct <= n
    written = json.loads((tmp_path / "eval" / "next_action.json").read_text())
    assert written["n_points"] == n


async def test_agentdojo_episodes_finish_with_arbitrary_steps(
    server: RunningServer, tmp_path: Path
) -> None:
    pytest.importorskip("agentdojo")
    from combee.tasks.agentdojo import agentdojo_task

    # Unknown tools, arguments of any shape, empty answers: each episode still ends, scored
    # by AgentDojo's utility check, and the run accounts for every task.
    llm = connect("sim", base_url=server.base_url, max_retries=0, redact=False)
    task = agentdojo_task("banking", seed=0, train=4, test=4, max_steps=3)
    try:
        result = await combee.train_async(
            task, strategy="combee", batch_size=4, llm=llm, run_dir=tmp_path / "run"
        )
    finally:
        await llm.aclose()
    summary = result.summary
    assert summary["test_episodes"] == 4
    assert 0.0 <= summary["test_success_rate"] <= 1.0
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    # An arbitrary reply may repeat what the episode showed: the screen keeps that lesson out,
    # and the run counts it there (a batch of 4 is too small for the gate to hold one out of).
    screened = [sum(m.get("screened_out", {}).values()) for m in metrics]
    assert sum(m.get("held_out", 0) for m in metrics) == 0
    assert sum(m["reflections"] + m["failed_samples"] for m in metrics) + sum(screened) == 4
    lines = (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == metrics[0]["reflections"] + screened[0]
