"""An ``openai``-SDK tool loop that keeps the SDK's own objects in its conversation (the
``ChatCompletionMessage`` appended as it came, or its ``tool_calls`` put into a dict) and returns
that conversation in its ``Episode``, trained through ``combee.train`` against the scripted server
over HTTP: the episodes hold the conversation as the dicts the server received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessage

from combee.tasks.agent import Episode
from combee.tasks.base import Sample
from tests.tasks.test_tool_agent import TEMPERATURES, TOOLS
from tests.tasks.weather_runs import opening, tool_results, train_weather, training_episodes


def kept(message: ChatCompletionMessage, whole: bool) -> Any:
    """The reply as the agent keeps it: the SDK's object, or a dict holding its tool calls."""
    if whole or not message.tool_calls:
        return message
    return {"role": "assistant", "content": message.content, "tool_calls": message.tool_calls}


def sdk_agent(whole: bool) -> Any:
    async def agent(sample: Sample, playbook: str, llm: Any) -> Episode:
        messages = opening(sample, playbook)
        while True:
            reply = await llm.chat.completions.create(model="any", messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            messages.append(kept(message, whole))
            if not message.tool_calls:
                break
            messages.extend(tool_results(message))
        expected = str(TEMPERATURES[sample.meta["city"]])
        return Episode(messages=messages, success=expected in (message.content or ""))

    return agent


@pytest.mark.parametrize("whole", [True, False], ids=["message-object", "tool-call-objects"])
def test_an_episode_may_hold_the_sdks_message_objects(tmp_path: Path, whole: bool) -> None:
    summary, bodies = train_weather(sdk_agent(whole), tmp_path / "r")
    last_steps = [body["messages"] for body in bodies if len(body["messages"]) == 4]
    assert summary["test_success_rate"] == 1.0
    assert summary["train_failed_samples"] == 0
    episodes = training_episodes(tmp_path / "r")
    assert len(episodes) == 3 and all(e["success"] for e in episodes)
    # Each episode is the conversation the server received, then the final answer.
    for episode in episodes:
        messages = episode["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
        assert messages[:4] in last_steps
        assert messages[2]["tool_calls"][0]["function"]["name"] == "get_weather"
        assert messages[4]["content"].startswith("It is ")


def test_an_episode_reads_message_objects_as_dicts() -> None:
    message = ChatCompletionMessage(role="assistant", content="It is 21 C there.")
    episode = Episode(messages=[{"role": "user", "content": "Paris?"}, message])
    assert episode.messages[1] == {"role": "assistant", "content": "It is 21 C there."}
