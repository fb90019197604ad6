"""Agent episodes as the batch runs them: plain-function agents on threads sized to the batch,
steps that never give a valid action counted as failures, and the console of an agent run.
Everything that calls a model goes over real HTTP to the scripted server."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import combee
from combee.cli.main import app
from combee.errors import ConfigError, InvalidStepError
from combee.llm import Endpoint, connect
from combee.llm.types import JsonSchema
from combee.sim import RunningServer, echo_responder, serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.agent import MAX_THREADS, AgentTask, Episode, run_agent
from combee.tasks.base import Sample
from tests.tasks.test_agent_task import bank_task, episode, plan

STEP = JsonSchema(
    "agent_step",
    {
        "type": "object",
        "properties": {"tool": {"type": "string"}},
        "required": ["tool"],
        "additionalProperties": False,
    },
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "The balance of an account.",
            "parameters": {
                "type": "object",
                "properties": {"account": {"type": "string"}},
                "required": ["account"],
            },
        },
    }
]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(ace_responder) as running:
        yield running


class Crowd:
    """Counts plain-function episodes inside the agent at once; each waits at ``barrier`` until
    that many are in (a batch that ran them a few at a time would never get through it)."""

    def __init__(self, together: int) -> None:
        self.barrier = threading.Barrier(together, timeout=60)  # guards a hang only
        self.lock = threading.Lock()
        self.inside = self.peak = 0
        self.threads: set[int] = set()

    def agent(self, sample: Sample, playbook: str, llm: Any) -> Episode:
        completion = llm.complete([{"role": "user", "content": sample.question}], role="agent")
        with self.lock:
            self.inside += 1
            self.peak = max(self.peak, self.inside)
            self.threads.add(threading.get_ident())
        try:
            self.barrier.wait()
        finally:
            with self.lock:
                self.inside -= 1
        return Episode(
            messages=[
                {"role": "user", "content": sample.question},
                {"role": "assistant", "content": completion.text},
            ],
            reward=0.0,
            feedback="the task was not done",
        )


def chores(count: int) -> list[Sample]:
    return [Sample(id=f"c{n:02d}", question=f"Do chore {n}.", answer="") for n in range(count)]


def test_every_plain_function_episode_of_a_batch_runs_at_once(
    server: RunningServer, tmp_path: Path
) -> None:
    crowd = Crowd(24)
    task = AgentTask("chores", agent=crowd.agent, train=chores(24))
    result = combee.train(
        task,
        batch_size=24,
        llm=Endpoint("sim", base_url=server.base_url),
        run_dir=tmp_path / "r",
        gate=False,
    )
    assert result.failures == []
    assert crowd.peak == 24 and len(crowd.threads) == 24
    assert result.summary["llm_calls"]["agent"] == 24


def test_max_threads_caps_the_plain_function_episodes_in_flight(server: RunningServer) -> None:
    crowd = Crowd(4)
    task = AgentTask("chores", agent=crowd.agent, train=chores(8), max_threads=4)
    result = combee.train(task, batch_size=8, llm=Endpoint("sim", base_url=server.base_url))
    assert result.failures == []
    assert crowd.peak == 4 and len(crowd.threads) == 4


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "8"])
def test_max_threads_must_be_a_whole_number_of_at_least_one(value: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        AgentTask("chores", agent=Crowd(1).agent, train=chores(1), max_threads=value)
    assert raised.value.setting == "max_threads"
    assert str(raised.value).startswith("max_threads must be a whole number of at least 1")
    assert AgentTask("chores", agent=Crowd(1).agent, train=chores(1)).max_threads == MAX_THREADS


def test_a_plain_function_agent_gets_every_keyword_of_the_client_through() -> None:
    replies: list[Any] = []

    def agent(sample: Sample, playbook: str, llm: Any) -> Episode:
        messages = [{"role": "user", "content": sample.question}]
        options = {"tools": TOOLS, "tool_choice": "required", "seed": 7, "temperature": 0.5}
        replies.append(llm.complete(messages, role="agent", max_tokens=77, **options))
        replies.append(llm.complete_json(messages, role="agent", schema=STEP, seed=9)[0])
        return Episode(messages=messages, reward=1.0)

    async def one_episode(base_url: str) -> Episode:
        llm = connect("sim", base_url=base_url)
        try:
            return await run_agent(agent, Sample("s1", "What is A1's balance?", ""), "", llm)
        finally:
            await llm.aclose()

    with serve_in_thread(echo_responder) as server:
        assert asyncio.run(one_episode(server.base_url)).reward == 1.0
        plain, structured = (record.body for record in server.records)
    assert plain["tools"] == TOOLS and plain["tool_choice"] == "required"
    assert (plain["seed"], plain["temperature"], plain["max_tokens"]) == (7, 0.5, 77)
    assert structured["seed"] == 9
    assert structured["response_format"]["json_schema"]["name"] == "agent_step"
    assert replies[1] == {"tool": ""}


def no_valid_step_responder(body: Mapping[str, Any]) -> Any:
    """ACE's scripted roles, but every reply to an agent step is not JSON."""
    response_format = body.get("response_format")
    spec = response_format.get("json_schema") if isinstance(response_format, Mapping) else None
    if isinstance(spec, Mapping) and spec.get("name") == STEP.name:
        return "I would rather not say."
    return ace_responder(body)


async def stumbling_agent(sample: Sample, playbook: str, llm: Any) -> Episode:
    """A1 and A10 raise an invalid step; A2 asks for a structured step the model never gives."""
    if sample.id in ("A1", "A10"):
        raise InvalidStepError(f"the step of {sample.id} called a tool that does not exist")
    if sample.id == "A2":
        await llm.complete_json(
            [{"role": "user", "content": sample.question}], role="agent", schema=STEP
        )
    return episode(sample, playbook, plan(playbook), "")


def test_a_step_that_never_parses_is_that_samples_failure_counted_and_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "run"
    with serve_in_thread(no_valid_step_responder) as server, caplog.at_level(logging.WARNING):
        result = combee.train(
            bank_task(stumbling_agent), batch_size=8, baseline=True, gate=False,
            llm=Endpoint("sim", base_url=server.base_url), run_dir=out,
        )  # fmt: skip
        schemas = [record.schema_name for record in server.records]
    summary = result.summary
    # Training: A1 and A2 are failures of kind invalid_step, never reflected on.
    assert sorted((f.sample_id, f.kind) for f in result.failures) == [
        ("A1", "invalid_step"),
        ("A2", "invalid_step"),
    ]
    assert schemas.count("agent_step") == 2  # A2's step, and the one re-ask
    assert schemas.count("reflector") == 6
    kept = [json.loads(line)["id"] for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert sorted(kept) == ["A3", "A4", "A5", "A6", "A7", "A8"]
    (metrics,) = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert metrics["failed_samples"] == 2 and metrics["invalid_steps"] == 2
    rows = [json.loads(line) for line in (out / "failures.jsonl").read_text().splitlines()]
    assert [row["kind"] for row in rows] == ["invalid_step", "invalid_step"]
    # Test (and baseline test): A10's episode is lost to an invalid step each time.
    assert summary["train_invalid_steps"] == 2
    assert summary["test_invalid_steps"] == summary["baseline_test_invalid_steps"] == 1
    assert summary["invalid_steps"] == 4
    assert summary["test_episodes"] == 4 and summary["test_success_rate"] == 0.75
    assert summary["test_paired"] == {"gained": 3, "lost": 0}
    # One warning per occurrence, naming the sample.
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    prefix = "invalid step in the episode of sample "
    named = [m.removeprefix(prefix).split(":")[0] for m in warned if m.startswith(prefix)]
    assert sorted(named) == ["A1", "A10", "A10", "A2"]


def test_an_agent_that_raises_another_error_is_no_invalid_step(server: RunningServer) -> None:
    def broken(sample: Sample, playbook: str, llm: Any) -> Episode:
        if sample.id == "A1":
            raise ValueError("the sandbox is gone")
        return episode(sample, playbook, plan(playbook), "")

    result = combee.train(
        bank_task(broken), batch_size=8, llm=Endpoint("sim", base_url=server.base_url)
    )
    (failure,) = result.failures
    assert failure.sample_id == "A1" and failure.kind is None
    assert result.summary["invalid_steps"] == 0


def attacked_agent(sample: Sample, playbook: str, llm: Any) -> Episode:
    """The bank agent; A12 never gives a valid step, and without a playbook it obeys what an
    attacker planted (the episode says so in ``attack_succeeded``)."""
    llm.complete([{"role": "user", "content": "ready?"}], role="agent")
    if sample.id == "A12":
        raise InvalidStepError("the step's arguments are not a JSON object")
    done = episode(sample, playbook, plan(playbook), "")
    return Episode(
        messages=done.messages,
        reward=done.reward,
        feedback=done.feedback,
        meta={"attack_succeeded": not playbook},
    )


def test_combee_train_says_how_an_agent_run_went(server: RunningServer, tmp_path: Path) -> None:
    combee.register_task("bank", lambda *, seed=0: bank_task(attacked_agent))
    out = tmp_path / "run"
    try:
        result = CliRunner(env={"NO_COLOR": "1", "COLUMNS": "200"}).invoke(
            app,
            ["train", "--task", "bank", "--batch-size", "8", "--baseline", "--model", "sim",
             "--base-url", server.base_url, "--out", str(out)],
        )  # fmt: skip
    finally:
        combee.TASKS.unregister("bank")
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "final_results.json").read_text())
    low, high = summary["test_success_interval_95"]
    assert summary["test_success_rate"] == 0.75 and summary["baseline_test_success_rate"] == 0.0
    lines = result.output.splitlines()
    during = "baseline test: success 0.000 (95% interval 0.000-0.490) on 4 episodes, 1 failed"
    assert any(line.startswith(f"{during} (1 invalid step)") for line in lines)
    assert f"test: success 0.750 (95% interval {low:.3f}-{high:.3f}) on 4 episodes" in lines
    assert "baseline test: success 0.000 (95% interval 0.000-0.490) on 4 episodes" in lines
    assert any(line.startswith("test tasks gained 3, lost 0") for line in lines)
    assert "invalid steps: 2 (training 0)" in lines
    assert "baseline test: attack success 1.000 on 3 attacked episodes" in lines
    assert "test: attack success 0.000 on 3 attacked episodes" in lines
    assert not any("accuracy" in line for line in lines)
    assert any("invalid step in the episode of sample A12" in line for line in lines)
    # Which test tasks were gained or lost: each test episode, before and after.
    for name, rewards in (
        ("baseline_test_episodes.jsonl", [0.0, 0.0, 0.0]),
        ("test_episodes.jsonl", [1.0, 1.0, 1.0]),
    ):
        records = [json.loads(line) for line in (out / name).read_text().splitlines()]
        assert [r["id"] for r in records] == ["A9", "A10", "A11"]
        assert [r["reward"] for r in records] == rewards
        assert all(r["messages"][-1]["role"] == "assistant" for r in records)
