"""Your own agent as a task: a tiny tool environment of the test's own, trained through
``combee.train`` over real HTTP (the scripted server plays reflector and curator)."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import combee
from combee.cli.main import app
from combee.files import UnwritableRunDir
from combee.llm import Endpoint
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.agent import AgentTask, Episode, with_playbook
from combee.tasks.base import Sample
from combee.tasks.traces import load_traces

BALANCES = {f"A{n}": 100 * n for n in range(1, 13)}
SYSTEM = "You are a bank assistant. Tools: confirm(account), lookup(account)."


class Bank:
    """The environment: a lookup succeeds only after the account was confirmed."""

    def __init__(self) -> None:
        self.confirmed: set[str] = set()

    def call(self, name: str, account: str) -> str:
        if name == "confirm":
            self.confirmed.add(account)
            return f"{account} confirmed"
        if account not in self.confirmed:
            return f"error: {account} was not confirmed first"
        return str(BALANCES[account])


def episode(sample: Sample, playbook: str, calls: list[str], answer: str) -> Episode:
    """Run ``calls`` in a fresh bank and judge the answer (the environment's own reward)."""
    bank, account = Bank(), sample.meta["account"]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": with_playbook(SYSTEM, playbook)},
        {"role": "user", "content": sample.question},
    ]
    result = ""
    for number, name in enumerate(calls):
        call_id = f"call_{number}"
        arguments = json.dumps({"account": account})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                ],
            }
        )
        result = bank.call(name, account)
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    final = result if answer == "" else answer
    messages.append({"role": "assistant", "content": final})
    right = final == str(BALANCES[account])
    feedback = (
        "the balance was reported" if right else f"expected {BALANCES[account]}, got {final!r}"
    )
    return Episode(messages=messages, reward=1.0 if right else 0.0, feedback=feedback)


def plan(playbook: str) -> list[str]:
    # The agent's policy: it confirms first only once a lesson tells it to.
    return ["confirm", "lookup"] if "confirm" in playbook.casefold() else ["lookup"]


async def async_agent(sample: Sample, playbook: str, llm: Any) -> Episode:
    completion = await llm.complete([{"role": "user", "content": "ready?"}], role="agent")
    assert completion.text  # the run's client answered
    return episode(sample, playbook, plan(playbook), "")


def plain_agent(sample: Sample, playbook: str, llm: Any) -> Episode:
    completion = llm.complete([{"role": "user", "content": "ready?"}], role="agent")
    assert completion.text  # a blocking client on a worker thread
    return episode(sample, playbook, plan(playbook), "")


def bank_task(agent: Any) -> AgentTask:
    samples = [
        Sample(id=account, question=f"What is the balance of {account}?", answer="",
               meta={"account": account, "task_id": "balance"})
        for account in BALANCES
    ]  # fmt: skip
    return AgentTask("bank", agent=agent, train=samples[:8], test=samples[8:])


@pytest.mark.parametrize("agent", [async_agent, plain_agent], ids=["async", "plain"])
def test_an_agent_of_our_own_learns_from_its_episodes(tmp_path: Path, agent: Any) -> None:
    out = tmp_path / "run"
    with serve_in_thread(ace_responder) as server:
        result = combee.train(
            bank_task(agent), strategy="combee", batch_size=4, baseline=True,
            llm=Endpoint("sim", base_url=server.base_url), run_dir=out,
        )  # fmt: skip
    summary = result.summary
    # Before: the agent never confirms, every lookup fails; the lesson of the episodes (the
    # scripted reflector's "confirm every detail ... before calling lookup") fixes that.
    assert summary["baseline_test_success_rate"] == 0.0
    assert summary["test_success_rate"] == 1.0 and summary["test_mean_reward"] == 1.0
    assert summary["test_episodes"] == 4 and summary["test_paired"] == {"gained": 4, "lost": 0}
    low, high = summary["test_success_interval_95"]
    assert 0.0 < low < high == 1.0
    assert "confirm" in result.text.casefold()
    config = json.loads((out / "config.json").read_text())
    assert config["method"] == "ace-agent"
    assert summary["llm_calls"]["agent"] == 8 + 4 + 4  # the agent's own calls, counted
    # Every training episode is kept in the OpenAI chat trace format, outcome included.
    traces = load_traces([str(out / "episodes.jsonl")])
    assert sorted(t.task_id for t in traces) == ["balance"] * 8
    # The first batch ran with an empty playbook and failed; the second had the lesson.
    assert sorted(t.outcome.reward for t in traces) == [0.0] * 4 + [1.0] * 4
    assert all(any(c.name == "lookup" for m in t.messages for c in m.tool_calls) for t in traces)


def test_episodes_are_learned_again_offline(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with serve_in_thread(ace_responder) as server:
        llm = Endpoint("sim", base_url=server.base_url)
        combee.train(bank_task(async_agent), batch_size=8, llm=llm, run_dir=out)
        again = combee.learn([out / "episodes.jsonl"], batch_size=8, llm=llm)
        # The command line, as the docs show it.
        command = CliRunner().invoke(
            app,
            ["learn", "--traces", str(out / "episodes.jsonl"), "--batch-size", "8",
             "--model", "sim", "--base-url", server.base_url, "--out", str(tmp_path / "again")],
        )  # fmt: skip
    assert "confirm" in again.text.casefold()
    assert command.exit_code == 0, command.output
    assert "confirm" in (tmp_path / "again" / "playbook.txt").read_text().casefold()


def test_an_agent_that_returns_no_episode_costs_that_sample_only(tmp_path: Path) -> None:
    def broken(sample: Sample, playbook: str, llm: Any) -> Mapping[str, Any]:
        if sample.id == "A1":
            return {"messages": []}  # not an Episode
        return episode(sample, playbook, plan(playbook), "")

    with serve_in_thread(ace_responder) as server:
        result = combee.train(
            bank_task(broken), batch_size=8, llm=Endpoint("sim", base_url=server.base_url)
        )
    (failure,) = result.failures
    assert failure.sample_id == "A1" and "must return a combee.Episode" in failure.error
    assert failure.kind is None and result.summary["invalid_steps"] == 0


def test_a_full_disk_while_keeping_episodes_stops_the_run_and_keeps_whole_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second batch's episodes meet a full disk halfway through their write: the run stops
    with the error that names ``episodes.jsonl`` and the cause, and the file holds the first
    batch's episodes, every line whole, as it did before the failed write."""
    out = tmp_path / "run"
    write = os.write
    episode_writes = []

    def disk_fills_on_the_second_batch(handle: int, data: Any) -> int:
        if b'"messages"' in bytes(data[:4096]):
            episode_writes.append(len(data))
            if len(episode_writes) == 2:
                write(handle, bytes(data)[:10])  # part of the first line goes in
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write(handle, data)

    with serve_in_thread(ace_responder) as server:
        monkeypatch.setattr(os, "write", disk_fills_on_the_second_batch)
        with pytest.raises(UnwritableRunDir) as caught:
            combee.train(
                bank_task(async_agent), strategy="combee", batch_size=4, baseline=False,
                llm=Endpoint("sim", base_url=server.base_url), run_dir=out,
            )  # fmt: skip
    message = str(caught.value)
    assert str(out / "episodes.jsonl") in message and "the disk is full" in message
    lines = (out / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4 and all(json.loads(line)["messages"] for line in lines)
