"""AgentDojo as a live environment: its real tools, environment and utility checks, with the
scripted server playing the agent over HTTP (the reference calls one step at a time)."""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agentdojo")

import combee
from combee.errors import ConfigError
from combee.llm import connect
from combee.sim import serve_in_thread
from combee.sim.agentdojo_script import agentdojo_responder
from combee.sim.responders import Reply
from combee.tasks.agent import Episode, run_agent
from combee.tasks.agentdojo import AgentDojoAgent, agentdojo_samples, agentdojo_task
from combee.tasks.base import Sample


def sample(task_id: str) -> Sample:
    return next(s for s in agentdojo_samples("banking") if s.meta["task_id"] == task_id)


def run_episode(
    task_id: str,
    playbook: str = "",
    *,
    redact: bool = True,
    agent: AgentDojoAgent | None = None,
    **script: Any,
) -> tuple[Episode, list[Any], dict[str, Any]]:
    with serve_in_thread(agentdojo_responder("banking", **script)) as server:
        llm = connect("sim", base_url=server.base_url, redact=redact)
        the_agent = agent or AgentDojoAgent("banking")

        async def main() -> Episode:
            try:
                return await run_agent(the_agent, sample(task_id), playbook, llm)
            finally:
                await llm.aclose()

        episode = asyncio.run(main())
        return episode, server.records, dict(llm.usage())


def test_the_reference_calls_pass_agentdojos_utility_check_on_native_tool_calls() -> None:
    episode, records, usage = run_episode("user_task_0", "Playbook:\n- read the bill first")
    assert episode.reward == 1.0 and episode.success is True
    assert episode.feedback == "utility: passed (AgentDojo's check of the user task found it done)"
    # One LLM step per call, then the final answer; each through Combee's client, with the
    # suite's tools as the endpoint's tools.
    assert usage["agent"].calls == 3 and len(records) == 3
    names = {tool["function"]["name"] for tool in records[0].body["tools"]}
    assert {"send_money", "read_file", "get_balance"} <= names
    assert all(r.body["tool_choice"] == "auto" and r.schema_name is None for r in records)
    sent = records[2].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert sent[2]["content"] is None and sent[2]["tool_calls"][0]["type"] == "function"
    assert sent[3]["tool_call_id"] == sent[2]["tool_calls"][0]["id"]
    messages = episode.messages
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert messages[0]["content"].endswith("Playbook:\n- read the bill first")
    assert messages[:6] == sent  # the episode is the conversation the endpoint saw
    call = messages[4]["tool_calls"][0]
    assert call["type"] == "function" and call["function"]["name"] == "send_money"
    assert json.loads(call["function"]["arguments"])["recipient"] == "UK12345678901234567890"
    assert "Car Rental" in messages[3]["content"]  # AgentDojo's real file, read by its tool
    assert episode.meta["task_id"] == "user_task_0" and episode.meta["tool_calls"] == 2
    assert episode.meta["steps"] == "native"


def test_the_json_step_stays_selectable() -> None:
    episode, records, _ = run_episode("user_task_0", agent=AgentDojoAgent(steps="json"))
    assert episode.reward == 1.0
    assert [r.schema_name for r in records] == ["agent_step"] * 3
    assert all("tools" not in r.body for r in records)
    assert "send_money" in records[0].body["messages"][0]["content"]  # tools in the prompt
    assert episode.meta["steps"] == "json"


def test_a_wrong_call_fails_and_the_feedback_follows_its_mode() -> None:
    def wrong_amount(task_id: str, step: int, call: Mapping[str, Any]) -> Mapping[str, Any]:
        if call["name"] != "send_money":
            return call
        return {"name": "send_money", "arguments": {**call["arguments"], "amount": 9.87}}

    episode, _, _ = run_episode("user_task_0", edit=wrong_amount)
    assert episode.reward == 0.0 and episode.success is False
    # The default: the environment's verdict only, what a deployment has.
    assert episode.feedback == (
        "utility: failed (AgentDojo's check of the user task found it not done)"
    )
    reference = AgentDojoAgent(feedback="reference")
    episode, _, _ = run_episode("user_task_0", agent=reference, edit=wrong_amount)
    lines = episode.feedback.splitlines()
    assert lines[0].startswith("utility: failed")
    # The reference calls, computed on the clean environment; the agent's own calls are in the
    # episode, not in the trusted feedback.
    assert any("send_money(" in line and "amount=98.7," in line for line in lines)
    assert not any("amount=9.87" in line for line in lines)


def test_a_password_in_a_tool_call_passes_with_redaction_on() -> None:
    # The password the task asks for leaves for the endpoint as a placeholder and comes back
    # as itself in the model's tool call, so the tool sets the real one.
    redacted, records, _ = run_episode("user_task_14")
    assert redacted.reward == 1.0
    sent = json.dumps([r.body for r in records])
    tool_arguments = [
        call["function"]["arguments"]
        for r in records
        for m in r.body["messages"]
        for call in m.get("tool_calls") or []
    ]
    assert any("[[password_1]]" in a for a in tool_arguments)
    assert not any("1j1l-2k3j" in a for a in tool_arguments)
    assert "[REDACTED" not in sent
    plain, _, _ = run_episode("user_task_14", redact=False)
    assert plain.reward == 1.0


def test_every_banking_task_passes_with_its_reference_calls() -> None:
    with serve_in_thread(agentdojo_responder("banking")) as server:
        llm = connect("sim", base_url=server.base_url, redact=False)

        async def main() -> list[float | None]:
            try:
                agent = AgentDojoAgent("banking")
                samples = agentdojo_samples("banking")
                episodes = [await run_agent(agent, s, "", llm) for s in samples]
                return [e.reward for e in episodes]
            finally:
                await llm.aclose()

        rewards = asyncio.run(main())
    assert rewards == [1.0] * 16


def test_split_by_seed() -> None:
    task = agentdojo_task("banking", seed=0)
    assert len(task.train) == 8 and len(task.test) == 8
    assert not {s.id for s in task.train} & {s.id for s in task.test}
    again = agentdojo_task("banking", seed=0)
    assert [s.id for s in again.train] == [s.id for s in task.train]
    other = agentdojo_task("banking", seed=1)
    assert [s.id for s in other.train] != [s.id for s in task.train]
    small = agentdojo_task("banking", seed=0, train=4, test=2)
    assert (len(small.train), len(small.test)) == (4, 2)
    with pytest.raises(ConfigError, match="has 16"):
        agentdojo_task("banking", train=10, test=10)


def test_an_unknown_suite_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as error:
        agentdojo_task("bank")
    assert str(error.value) == (
        "suite must be one of the AgentDojo v1.2.2 suites banking, slack, travel, workspace "
        "(got 'bank')"
    )
    with pytest.raises(ConfigError, match=r"versions v1, v1\.1"):
        agentdojo_task("banking", version="v9")


def test_without_agentdojo_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def missing(name: str, package: str | None = None) -> Any:
        if name.startswith("agentdojo"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", missing)
    with pytest.raises(ConfigError, match=r"pip install 'combee\[agentdojo\]'"):
        agentdojo_task("banking")


def test_train_on_agentdojo_banking(tmp_path: Path) -> None:
    out = tmp_path / "run"
    task = agentdojo_task("banking", seed=0, train=4, test=4)
    with serve_in_thread(agentdojo_responder("banking")) as server:
        llm = connect("sim", base_url=server.base_url, redact=False)
        try:
            result = combee.train(task, batch_size=4, llm=llm, run_dir=out)
        finally:
            asyncio.run(llm.aclose())
    summary = result.summary
    assert json.loads((out / "config.json").read_text())["method"] == "ace-agent"
    assert summary["test_episodes"] == 4 and summary["test_success_rate"] == 1.0
    lines = (out / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 4
    first = json.loads(lines[0])
    assert first["success"] is True and first["feedback"].startswith("utility: passed")
    assert any(m.get("tool_calls") for m in first["messages"])


def test_a_step_that_repeats_itself_a_third_time_ends_the_episode() -> None:
    def stuck(body: Mapping[str, Any]) -> Reply:
        return Reply(content="Balance: 5.", tool_calls=[{"name": "get_balance", "arguments": {}}])

    with serve_in_thread(stuck) as server:
        llm = connect("sim", base_url=server.base_url, redact=False)

        async def main() -> Episode:
            try:
                return await run_agent(AgentDojoAgent("banking"), sample("user_task_0"), "", llm)
            finally:
                await llm.aclose()

        episode = asyncio.run(main())
        steps = len(server.records)
    # Two answered calls, then the same call again: the episode ends with the step's answer
    # instead of running to the 15-step limit.
    assert steps == 3 and episode.meta["repeated_calls_ended_it"] is True
    assert episode.meta["tool_calls"] == 2
    assert episode.messages[-1]["content"] == "Balance: 5." and episode.success is False
