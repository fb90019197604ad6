"""An agent written the way OpenAI documents tool use (a tools list, the model's ``tool_calls``,
``tool`` results appended, the SDK's message object appended as it came), trained through
``combee.train`` on the SDK backend, the lean backend and the embedded SmolLM2. Over HTTP the
server checks that each request carried the agent's conversation and tools exactly."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import combee
from combee.llm import connect
from combee.llm.messages import MessageError
from combee.sim import Reply, serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.sim.responders import content_text
from combee.tasks.agent import AgentTask, Episode, with_playbook
from combee.tasks.base import Sample

SYSTEM = "You are a weather assistant. Use the tools to answer."
TEMPERATURES = {"Paris": 21, "Oslo": -3, "Lima": 18, "Cairo": 35}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The temperature in a city, in degrees Celsius.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city's name"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
]


def as_dicts(messages: list[Any]) -> list[dict[str, Any]]:
    return [
        m if isinstance(m, dict) else m.model_dump(exclude_none=True, mode="json") for m in messages
    ]


class WeatherAgent:
    """The OpenAI tool loop: ``llm.chat.completions.create`` (``sdk_shape``) or Combee's own
    ``llm.complete`` with ``tools``; every conversation sent is kept in ``sent``."""

    def __init__(self, sdk_shape: bool) -> None:
        self.sdk_shape = sdk_shape
        self.sent: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []

    async def __call__(self, sample: Sample, playbook: str, llm: Any) -> Episode:
        messages: list[Any] = [
            {"role": "system", "content": with_playbook(SYSTEM, playbook)},
            {"role": "user", "content": sample.question},
        ]
        answer = ""
        for _ in range(4):
            self.sent.append((copy.deepcopy(as_dicts(messages)), TOOLS))
            if self.sdk_shape:
                reply = await llm.chat.completions.create(
                    model="any", messages=messages, tools=TOOLS, temperature=0
                )
                message = reply.choices[0].message
                messages.append(message)  # the SDK's object, as OpenAI's examples append it
                calls = [
                    (c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []
                ]
                answer = message.content or ""
            else:
                completion = await llm.complete(messages, role="agent", tools=TOOLS, max_tokens=256)
                messages.append(completion.message)
                calls = [
                    (c["id"], c["function"]["name"], c["function"]["arguments"])
                    for c in completion.tool_calls
                ]
                answer = completion.text
            if not calls:
                break
            for call_id, name, arguments in calls:
                city = json.loads(arguments).get("city", "") if name == "get_weather" else ""
                result = f"{TEMPERATURES.get(city, 'unknown')} C" if city else "error: no city"
                messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
        expected = str(TEMPERATURES[sample.meta["city"]])
        success = expected in answer
        return Episode(
            messages=as_dicts(messages),
            success=success,
            feedback=f"expected the answer to give {expected} C",
        )


def weather_model(body: Mapping[str, Any]) -> str | Reply:
    """A model that calls the tool for the city asked about, then answers with the result."""
    if not body.get("tools"):
        return ace_responder(body)
    messages = body["messages"]
    question = next(content_text(m["content"]) for m in messages if m["role"] == "user")
    if messages[-1]["role"] == "tool":
        return Reply(f"It is {messages[-1]['content']} there.")
    city = question.rsplit(" ", 1)[-1].rstrip("?")
    return Reply(None, [{"name": "get_weather", "arguments": {"city": city}}])


def weather_task(agent: Any) -> AgentTask:
    samples = [
        Sample(
            id=f"w{n}",
            question=f"What is the temperature in {city}?",
            answer="",
            meta={"city": city},
        )
        for n, city in enumerate(TEMPERATURES)
    ]
    return AgentTask("weather", agent=agent, train=samples[:3], test=samples[3:])


@pytest.mark.parametrize(
    ("client", "sdk_shape"), [("openai", True), ("openai", False), ("lean", True), ("lean", False)]
)
def test_an_openai_style_tool_agent_trains_and_its_conversation_arrives_unchanged(
    tmp_path: Path, client: str, sdk_shape: bool
) -> None:
    agent = WeatherAgent(sdk_shape)
    with serve_in_thread(weather_model) as server:
        llm = connect("sim", base_url=server.base_url, client=client)
        try:
            result = combee.train(
                weather_task(agent), batch_size=3, llm=llm, run_dir=tmp_path / "r"
            )
        finally:
            asyncio.run(llm.aclose())
        steps = [r.body for r in server.records if r.body.get("tools")]
    assert result.summary["test_success_rate"] == 1.0
    # Each agent step reached the endpoint as the agent held it: messages and tools, byte for
    # byte once parsed (the SDK's message objects included).
    assert len(steps) == len(agent.sent) == 8  # 4 episodes (3 train, 1 test), 2 steps each
    arrived = sorted(json.dumps([b["messages"], b["tools"]], sort_keys=True) for b in steps)
    held = sorted(json.dumps([m, t], sort_keys=True) for m, t in agent.sent)
    assert arrived == held
    assert all(b.get("tool_choice") is None for b in steps)
    second = [b for b in steps if len(b["messages"]) == 4]
    assert second and all(b["messages"][2]["tool_calls"][0]["type"] == "function" for b in second)


@pytest.mark.slow
def test_the_embedded_model_answers_the_same_tool_calls(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    agent = WeatherAgent(sdk_shape=True)
    llm = connect("local:smollm2")
    try:
        result = combee.train(weather_task(agent), batch_size=3, llm=llm, run_dir=tmp_path / "r")
    finally:
        asyncio.run(llm.aclose())
    assert result.summary["test_episodes"] == 1
    episodes = [
        json.loads(line) for line in (tmp_path / "r" / "episodes.jsonl").read_text().splitlines()
    ]
    assert len(episodes) == 3
    # The small model called the offered tool, in the OpenAI shape, with JSON arguments.
    calls = [c for e in episodes for m in e["messages"] for c in m.get("tool_calls") or []]
    assert calls and all(c["function"]["name"] == "get_weather" for c in calls)
    assert all(isinstance(json.loads(c["function"]["arguments"]), dict) for c in calls)


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ({"role": "tool", "tool_call_id": "c1", "content": None}, "has no content"),
        ({"role": "tool", "content": "x"}, "needs 'tool_call_id'"),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
            "image_url",
        ),
        ({"role": "user", "content": "x", "audio": {"id": "a"}}, "'audio'"),
        (
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "f", "arguments": {"a": 1}},
                    }
                ],
            },
            "must be a JSON string",
        ),
        ({"role": "robot", "content": "x"}, "role 'robot'"),
    ],
)
def test_a_message_that_cannot_be_sent_as_it_is_is_refused(
    message: dict[str, Any], problem: str
) -> None:
    with serve_in_thread(weather_model) as server:
        llm = connect("sim", base_url=server.base_url)

        async def main() -> None:
            try:
                await llm.complete([{"role": "user", "content": "hi"}, message], role="agent")
            finally:
                await llm.aclose()

        with pytest.raises(MessageError, match=problem):
            asyncio.run(main())
        assert server.records == []  # refused before anything was sent


def test_tool_calls_are_cached_and_replayed_as_they_came(tmp_path: Path) -> None:
    question = [{"role": "user", "content": "What is the temperature in Oslo?"}]
    with serve_in_thread(weather_model) as server:

        async def ask(tools: list[dict[str, Any]]) -> Any:
            llm = connect("sim", base_url=server.base_url, cache=tmp_path / "cache.sqlite")
            try:
                return await llm.complete(question, role="agent", tools=tools)
            finally:
                await llm.aclose()

        first = asyncio.run(ask(TOOLS))
        again = asyncio.run(ask(TOOLS))
        renamed = [{**TOOLS[0], "function": {**TOOLS[0]["function"], "name": "weather"}}]
        other = asyncio.run(ask(renamed))
        sent = len(server.records)
    assert first.tool_calls[0]["function"]["name"] == "get_weather"
    assert json.loads(first.tool_calls[0]["function"]["arguments"]) == {"city": "Oslo"}
    assert again.cached and again.tool_calls == first.tool_calls
    assert not other.cached and sent == 2  # other tools, another request


def plain_weather_agent(sample: Sample, playbook: str, llm: Any) -> Episode:
    """The same loop written as a plain function with the SDK's synchronous call shape."""
    messages: list[Any] = [
        {"role": "system", "content": with_playbook(SYSTEM, playbook)},
        {"role": "user", "content": sample.question},
    ]
    reply = llm.chat.completions.create(model="any", messages=messages, tools=TOOLS)
    while reply.choices[0].message.tool_calls:
        message = reply.choices[0].message
        messages.append(message)
        for call in message.tool_calls:
            city = json.loads(call.function.arguments)["city"]
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": f"{TEMPERATURES[city]} C"}
            )
        reply = llm.chat.completions.create(model="any", messages=messages, tools=TOOLS)
    answer = reply.choices[0].message.content or ""
    messages.append(reply.choices[0].message)
    return Episode(
        messages=as_dicts(messages), success=str(TEMPERATURES[sample.meta["city"]]) in answer
    )


def test_a_plain_function_agent_uses_the_sdk_call_shape(tmp_path: Path) -> None:
    with serve_in_thread(weather_model) as server:
        llm = connect("sim", base_url=server.base_url)
        try:
            task = weather_task(WeatherAgent(sdk_shape=True))
            task.agent = plain_weather_agent
            result = combee.train(task, batch_size=3, llm=llm, run_dir=tmp_path / "r")
        finally:
            asyncio.run(llm.aclose())
        steps = [r for r in server.records if r.body.get("tools")]
    assert result.summary["test_success_rate"] == 1.0 and len(steps) == 8
