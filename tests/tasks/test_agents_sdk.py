"""An agent written with the OpenAI Agents SDK (``openai-agents``: ``Agent``, ``@function_tool``,
``Runner.run`` on ``OpenAIChatCompletionsModel``) runs as a Combee agent, unchanged: its model's
client is ``async_openai(llm)``, so each of its model calls is one of Combee's. Trained through
``combee.train`` against the scripted server over HTTP."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")

import openai  # noqa: E402
from agents.models.chatcmpl_converter import Converter  # noqa: E402

import combee  # noqa: E402
from combee.llm import connect  # noqa: E402
from combee.llm.messages import MessageError  # noqa: E402
from combee.llm.openai_compat import AsyncChat, async_openai, call_options  # noqa: E402
from combee.llm.types import Completion, JsonSchema  # noqa: E402
from combee.sim import serve_in_thread  # noqa: E402
from combee.tasks.agent import Episode, with_playbook  # noqa: E402
from combee.tasks.base import Sample  # noqa: E402
from tests.tasks.test_tool_agent import TEMPERATURES, weather_model, weather_task  # noqa: E402

SYSTEM = "You are a weather assistant. Use the tools to answer."


@agents.function_tool
def get_weather(city: str) -> str:
    """The temperature in a city, in degrees Celsius.

    Args:
        city: The city's name.
    """
    return f"{TEMPERATURES.get(city, 'unknown')} C"


async def weather_agent(sample: Sample, playbook: str, llm: Any) -> Episode:
    """The user's Agents SDK agent, as a Combee agent: only the model's client is Combee's."""
    instructions = with_playbook(SYSTEM, playbook)
    agent = agents.Agent(
        name="weather",
        instructions=instructions,
        tools=[get_weather],
        model=agents.OpenAIChatCompletionsModel(model="any", openai_client=async_openai(llm)),
    )
    result = await agents.Runner.run(
        agent, sample.question, run_config=agents.RunConfig(tracing_disabled=True)
    )
    messages = [
        {"role": "system", "content": instructions},
        *Converter.items_to_messages(result.to_input_list()),
    ]
    expected = str(TEMPERATURES[sample.meta["city"]])
    return Episode(
        messages=messages,
        success=expected in str(result.final_output),
        feedback=f"expected the answer to give {expected} C",
    )


def test_an_agents_sdk_agent_trains_with_the_llm_combee_hands_it(tmp_path: Path) -> None:
    with serve_in_thread(weather_model) as server:
        llm = connect("sim", base_url=server.base_url)
        try:
            result = combee.train(
                weather_task(weather_agent), batch_size=3, llm=llm, run_dir=tmp_path / "r"
            )
        finally:
            asyncio.run(llm.aclose())
        steps = [r.body for r in server.records if r.body.get("tools")]
    assert result.summary["test_success_rate"] == 1.0
    # Every Agents SDK model call was one of Combee's, counted under the agent role.
    assert len(steps) == 8  # 4 episodes (3 train, 1 test), 2 model calls each
    assert result.summary["llm_calls"]["agent"] == len(steps)
    # The SDK's function tool reached the server as an OpenAI tool, its calls as the
    # assistant's tool_calls and the tool's output as a tool message.
    for body in steps:
        assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]
        assert body["tools"][0]["function"]["parameters"]["required"] == ["city"]
        assert body["messages"][0] == {"role": "system", "content": body["messages"][0]["content"]}
        assert body["messages"][0]["content"].startswith(SYSTEM)
        assert "stream" not in body and "top_p" not in body
    second = [b["messages"] for b in steps if len(b["messages"]) == 4]
    assert len(second) == 4
    for messages in second:
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
        call = messages[2]["tool_calls"][0]
        assert call["type"] == "function" and call["function"]["name"] == "get_weather"
        city = json.loads(call["function"]["arguments"])["city"]
        assert messages[3]["tool_call_id"] == call["id"]
        assert messages[3]["content"] == f"{TEMPERATURES[city]} C"
    # The episodes reflected on hold the run in OpenAI chat form, tool calls included.
    episodes = [
        json.loads(line) for line in (tmp_path / "r" / "episodes.jsonl").read_text().splitlines()
    ]
    tested = [
        json.loads(line)
        for line in (tmp_path / "r" / "test_episodes.jsonl").read_text().splitlines()
    ]
    assert len(episodes) == 3 and len(tested) == 1
    for episode in [*episodes, *tested]:
        assert episode["success"]
        roles = [m["role"] for m in episode["messages"]]
        assert roles == ["system", "user", "assistant", "tool", "assistant"]
    # ... and each episode's conversation is the one the server saw before the final answer.
    held = sorted(json.dumps(e["messages"][:4], sort_keys=True) for e in [*episodes, *tested])
    assert held == sorted(json.dumps(m, sort_keys=True) for m in second)


class Recorder:
    """A stand-in for the ``llm`` an agent receives: records what ``complete`` was given."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def complete(self, messages: Any, **options: Any) -> Completion:
        self.calls.append(options)
        return Completion(text="ok", prompt_tokens=1, completion_tokens=1, latency_s=0, model="m")

    @property
    def chat(self) -> AsyncChat:
        return AsyncChat(self.complete)


@pytest.mark.parametrize(
    ("argument", "named"),
    [
        ({"stream": True}, "stream=True"),
        ({"n": 2}, "n=2"),
        ({"top_p": 0.5}, "top_p=0.5"),
        ({"presence_penalty": 0.2}, "presence_penalty=0.2"),
        ({"parallel_tool_calls": False}, "parallel_tool_calls=False"),
        ({"extra_body": {"top_k": 5}}, "extra_body"),
        ({"reasoning_effort": "high"}, "reasoning_effort"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
    ],
)
def test_an_argument_that_would_change_the_reply_is_refused(
    argument: dict[str, Any], named: str
) -> None:
    llm = Recorder()
    client = async_openai(llm)

    async def main() -> None:
        await client.chat.completions.create(
            model="any", messages=[{"role": "user", "content": "hi"}], **argument
        )

    with pytest.raises(MessageError, match=rf"chat\.completions\.create: .*{re.escape(named)}"):
        asyncio.run(main())
    assert llm.calls == []  # refused before anything was asked


def test_sentinels_count_as_not_given_and_what_leaves_the_reply_alone_is_accepted() -> None:
    options = call_options(
        "agent",
        {
            "model": "any",
            "tools": openai.omit,
            "temperature": openai.NOT_GIVEN,
            "top_p": openai.omit,
            "stream": openai.omit,
            "max_tokens": None,
            "response_format": openai.omit,
            "parallel_tool_calls": True,
            "extra_headers": {"User-Agent": "Agents/Python"},
            "extra_query": None,
            "extra_body": None,
            "store": True,
            "metadata": {"run": "1"},
        },
    )
    # Nothing the endpoint samples with was set: the request leaves it all to the endpoint.
    assert options == {"role": "agent", "unsent": ["temperature", "max_tokens", "seed"]}


def test_a_json_schema_response_format_becomes_combees_schema() -> None:
    schema = {"type": "object", "properties": {"c": {"type": "integer"}}}
    options = call_options(
        "agent",
        {
            "temperature": 0.3,
            "max_tokens": 64,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "final_output", "strict": True, "schema": schema},
            },
        },
    )
    assert options == {
        "role": "agent",
        "temperature": 0.3,
        "max_tokens": 64,
        "json_schema": JsonSchema(name="final_output", schema=schema),
        "unsent": ["seed"],
    }
    assert "json_schema" not in call_options("agent", {"response_format": {"type": "text"}})


def test_the_agents_sdk_refusal_reaches_the_user_as_one_message_error() -> None:
    llm = Recorder()
    agent = agents.Agent(
        name="weather",
        instructions=SYSTEM,
        tools=[get_weather],
        model=agents.OpenAIChatCompletionsModel(model="any", openai_client=async_openai(llm)),
        model_settings=agents.ModelSettings(top_p=0.5),
    )
    config = agents.RunConfig(tracing_disabled=True)
    with pytest.raises(MessageError, match=re.escape("top_p=0.5")):
        asyncio.run(agents.Runner.run(agent, "What is the temperature in Oslo?", run_config=config))
    assert llm.calls == []
