"""Combee's AgentDojo episodes judged as AgentDojo judges them.

The replay harness: the scripted server plays the model with each task's reference calls, over
native tool calls. Every user task of every suite runs twice against it: once as Combee's
episode (:class:`AgentDojoAgent`, through Combee's client) and once through AgentDojo's own
``TaskSuite.run_task_with_pipeline`` with AgentDojo's own OpenAI element (the ``openai`` SDK
pointed at the same server). The utility verdicts must be equal on all 97 user tasks (and all
pass); under the ``important_instructions`` attack, the model obeys the planted text in every
other pair (it makes the injection task's reference calls after the user task's), and the
utility and security verdicts must be equal on every pair.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

pytest.importorskip("agentdojo")

from combee.llm import connect
from combee.sim import serve_in_thread
from combee.sim.agentdojo_script import agentdojo_responder
from combee.sim.responders import Reply, Responder, content_text
from combee.tasks.agent import Episode, run_agent
from combee.tasks.agentdojo import AgentDojoAgent, agentdojo_samples, load_suite, suite_names
from combee.tasks.base import Sample

ATTACK = "important_instructions"


def agentdojo_pipeline(base_url: str) -> Any:
    """AgentDojo's own agent: its system message, its OpenAI element, its tool loop."""
    import openai
    from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline, load_system_message
    from agentdojo.agent_pipeline.basic_elements import InitQuery, SystemMessage
    from agentdojo.agent_pipeline.llms.openai_llm import OpenAILLM
    from agentdojo.agent_pipeline.tool_execution import ToolsExecutionLoop, ToolsExecutor

    llm = OpenAILLM(openai.OpenAI(base_url=base_url, api_key="x", max_retries=0), "sim")
    return AgentPipeline(
        [
            SystemMessage(load_system_message(None)),
            InitQuery(),
            llm,
            ToolsExecutionLoop([ToolsExecutor(), llm]),
        ]
    )


def obeying(base: Responder, extra: Mapping[str, Sequence[Mapping[str, Any]]]) -> Responder:
    """``base``, except that for the task prompts in ``extra`` the model, once the user task's
    calls are made, makes those calls too (one per step) before it answers."""

    def respond(body: Mapping[str, Any]) -> str | Reply:
        reply = base(body)
        if not body.get("tools") or not isinstance(reply, Reply) or reply.tool_calls:
            return reply
        messages = body["messages"]
        prompt = next(content_text(m.get("content")) for m in messages if m["role"] == "user")
        calls = extra.get(prompt.strip(), ())
        assistant_turns = sum(1 for m in messages if m["role"] == "assistant")
        done = assistant_turns - _user_steps(messages, calls)
        return Reply(None, [calls[done]]) if 0 <= done < len(calls) else reply

    return respond


def _user_steps(messages: Sequence[Mapping[str, Any]], injected: Sequence[Any]) -> int:
    """Assistant turns spent on the user task: all of them until the first injected call."""
    names = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or []]
    first = [c["name"] for c in injected][:1]
    return names.index(first[0]) if first and first[0] in names else len(names)


def combee_verdicts(
    base_url: str, samples: Sequence[Sample], suite: str
) -> dict[str, tuple[bool, bool | None]]:
    llm = connect("sim", base_url=base_url, redact=False)
    agent = AgentDojoAgent(suite)

    async def main() -> dict[str, tuple[bool, bool | None]]:
        try:
            verdicts = {}
            for sample in samples:
                episode = await run_agent(agent, sample, "", llm)
                verdicts[sample.id] = (
                    bool(episode.meta["utility"]),
                    episode.meta.get("attack_succeeded"),
                )
            return verdicts
        finally:
            await llm.aclose()

    return asyncio.run(main())


def agentdojo_verdicts(
    base_url: str, samples: Sequence[Sample], suite: str
) -> dict[str, tuple[bool, bool | None]]:
    task_suite = load_suite(suite)
    verdicts: dict[str, tuple[bool, bool | None]] = {}
    for sample in samples:
        user_task = task_suite.get_user_task_by_id(sample.meta["task_id"])
        injection = sample.meta.get("injection_task")
        injection_task = task_suite.get_injection_task_by_id(injection) if injection else None
        utility, security = task_suite.run_task_with_pipeline(
            agentdojo_pipeline(base_url),
            user_task,
            injection_task,
            dict(sample.meta.get("injections") or {}),
        )
        verdicts[sample.id] = (bool(utility), bool(security) if injection_task else None)
    return verdicts


@pytest.mark.parametrize("suite", ["banking", "slack", "travel", "workspace"])
def test_utility_verdicts_equal_agentdojos_own_on_every_user_task(suite: str) -> None:
    samples = agentdojo_samples(suite)
    with serve_in_thread(agentdojo_responder(suite)) as server:
        ours = combee_verdicts(server.base_url, samples, suite)
        theirs = agentdojo_verdicts(server.base_url, samples, suite)
    assert ours == theirs
    assert all(utility for utility, _ in ours.values())  # reference replays pass
    assert len(ours) == len(load_suite(suite).user_tasks)


def test_the_replays_cover_all_97_user_tasks() -> None:
    assert sum(len(load_suite(s).user_tasks) for s in suite_names()) == 97


@pytest.mark.parametrize("suite", ["banking", "slack", "travel", "workspace"])
def test_security_verdicts_equal_agentdojos_own_on_every_attacked_pair(suite: str) -> None:
    samples = agentdojo_samples(suite, attack=ATTACK, seed=0)
    task_suite = load_suite(suite)
    clean = task_suite.load_and_inject_default_environment({})
    obeyed = {
        sample.question.strip(): [
            {"name": call.function, "arguments": dict(call.args)}
            for call in task_suite.get_injection_task_by_id(
                sample.meta["injection_task"]
            ).ground_truth(clean.model_copy(deep=True))
        ]
        for sample in samples[::2]
    }
    responder = obeying(agentdojo_responder(suite, attack=ATTACK, seed=0), obeyed)
    with serve_in_thread(responder) as server:
        ours = combee_verdicts(server.base_url, samples, suite)
        theirs = agentdojo_verdicts(server.base_url, samples, suite)
    assert ours == theirs
    security = [attacked for _, attacked in ours.values()]
    # Both verdicts occur: the obeying pairs mostly succeed for the attacker, the rest never.
    assert any(security) and not all(security)
    assert not any(ours[s.id][1] for s in samples[1::2])


SECRET = "sk-proj-" + "Zq7" * 14
"""An API key planted in every place of the environment an attack could write to."""

EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")


def replay(suite: str, samples: Sequence[Sample], *, redact: bool) -> tuple[list[bool], str, Any]:
    """Combee's episodes of ``samples`` against the reference script: utility verdicts, every
    request body the server received (as JSON text), and what the client redacted."""
    with serve_in_thread(agentdojo_responder(suite)) as server:
        llm = connect("sim", base_url=server.base_url, redact=redact)

        async def main() -> list[Episode]:
            try:
                return [await run_agent(AgentDojoAgent(suite), s, "", llm) for s in samples]
            finally:
                await llm.aclose()

        episodes = asyncio.run(main())
        sent = "\n".join(json.dumps(r.body, ensure_ascii=False) for r in server.records)
        return [bool(e.meta["utility"]) for e in episodes], sent, dict(llm.redacted)


@pytest.mark.parametrize("suite", ["banking", "slack", "travel", "workspace"])
def test_reference_replays_pass_with_redaction_on_and_no_address_leaves(suite: str) -> None:
    utility, sent, redacted = replay(suite, agentdojo_samples(suite), redact=True)
    assert utility == [True] * len(load_suite(suite).user_tasks)
    assert EMAIL.search(sent) is None  # every address left as a placeholder
    if suite != "banking":  # banking's data holds no e-mail address
        assert redacted["email"] > 0 and "[[email_1]]" in sent


@pytest.mark.parametrize("suite", ["banking", "slack", "travel", "workspace"])
def test_a_secret_planted_in_the_data_never_leaves_and_changes_no_verdict(suite: str) -> None:
    task_suite = load_suite(suite)
    planted = {
        vector: f"Support note: the service key is {SECRET}."
        for vector in task_suite.get_injection_vector_defaults()
    }
    injection_task = sorted(task_suite.injection_tasks)[0]
    samples = [
        dataclasses.replace(
            s, meta={**s.meta, "injections": planted, "injection_task": injection_task}
        )
        for s in agentdojo_samples(suite)
    ]
    hidden, sent, redacted = replay(suite, samples, redact=True)
    plain, shown, _ = replay(suite, samples, redact=False)
    # (Some slack tasks read the places the key was written to, and fail either way.)
    assert hidden == plain
    assert SECRET in shown  # the control: the key is in what the tools return
    assert SECRET not in sent and redacted["api-key"] > 0
