"""The scripted server speaks OpenAI's native tool protocol, checked with the official SDK."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

import jsonschema
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionMessageFunctionToolCall

from combee.sim import RunningServer, SimConfig, echo_responder, serve_in_thread
from combee.sim.agentdojo_script import agentdojo_responder
from combee.sim.arbitrary import arbitrary_responder
from combee.sim.responders import Reply, inline_refs
from combee.tasks.agentdojo import agentdojo_samples, load_suite
from combee.tasks.base import Sample

agentdojo = pytest.mark.skipif(
    importlib.util.find_spec("agentdojo") is None, reason="needs the agentdojo extra"
)

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 2},
        "unit": {"enum": ["c", "f"]},
        "days": {"type": "integer", "minimum": 1},
        "hours": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
        "detail": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/Detail"}]},
    },
    "required": ["city", "unit", "days", "hours", "detail"],
    "$defs": {
        "Detail": {
            "type": "object",
            "properties": {"wind": {"type": "boolean"}, "level": {"$ref": "#/$defs/Level"}},
            "required": ["wind", "level"],
        },
        "Level": {"enum": ["low", "high"]},
    },
}
SEARCH = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "number"}},
    "required": ["query"],
}


def tool(name: str, parameters: Mapping[str, Any] | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "description": f"the {name} tool"}
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


TOOLS = [tool("get_weather", WEATHER), tool("search", SEARCH), tool("now")]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread() as running:
        yield running


@pytest.fixture(autouse=True)
def fresh(server: RunningServer) -> None:
    server.reset(echo_responder, SimConfig())


@pytest.fixture
async def client(server: RunningServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0) as sdk:
        yield sdk


async def create(client: openai.AsyncOpenAI, messages: list[Any], **options: Any) -> ChatCompletion:
    return await client.chat.completions.create(model="m", messages=messages, **options)


def user(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def function_calls(reply: ChatCompletion) -> list[ChatCompletionMessageFunctionToolCall]:
    calls = reply.choices[0].message.tool_calls or []
    assert all(isinstance(call, ChatCompletionMessageFunctionToolCall) for call in calls)
    return [call for call in calls if isinstance(call, ChatCompletionMessageFunctionToolCall)]


async def test_echo_calls_the_first_tool_with_valid_arguments(client: openai.AsyncOpenAI) -> None:
    reply = await create(client, user("weather?"), tools=TOOLS)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = function_calls(reply)
    assert call.id == "call_0_0" and call.type == "function"
    assert call.function.name == "get_weather"
    arguments = json.loads(call.function.arguments)
    jsonschema.validate(arguments, WEATHER)
    assert arguments == {"city": "xx", "unit": "c", "days": 1, "hours": [0], "detail": None}
    assert reply.usage is not None
    assert reply.usage.completion_tokens == len(call.function.arguments) // 4


async def test_tool_choice_picks_the_named_tool_or_none(client: openai.AsyncOpenAI) -> None:
    named = {"type": "function", "function": {"name": "search"}}
    reply = await create(client, user("find"), tools=TOOLS, tool_choice=named)
    (call,) = function_calls(reply)
    assert (call.function.name, json.loads(call.function.arguments)) == ("search", {"query": ""})
    reply = await create(client, user("weather?"), tools=[tool("now")], tool_choice="required")
    assert json.loads(function_calls(reply)[0].function.arguments) == {}
    reply = await create(client, user("just talk"), tools=TOOLS, tool_choice="none")
    assert reply.choices[0].message.tool_calls is None
    assert reply.choices[0].message.content == "echo: just talk"
    assert reply.choices[0].finish_reason == "stop"


async def test_a_full_tool_loop_ends_in_text(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    messages: list[Any] = [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        *user("What is the weather in Oslo?"),
    ]
    first = await create(client, messages, tools=TOOLS, tool_choice="auto")
    (call,) = function_calls(first)
    messages.append({"role": "assistant", "content": None, "tool_calls": [call.model_dump()]})
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"})
    second = await create(client, messages, tools=TOOLS)
    assert second.choices[0].message.tool_calls is None
    assert second.choices[0].message.content == "echo: What is the weather in Oslo?"
    assert second.choices[0].finish_reason == "stop"
    # The prompt counts the text parts, the call's name and arguments, and the tool result.
    seen = "Be brief." + "What is the weather in Oslo?"
    seen += call.function.name + call.function.arguments + "sunny, 21 C"
    assert second.usage is not None and second.usage.prompt_tokens == len(seen) // 4
    (_, record) = sorted(server.records, key=lambda r: r.index)
    assert record.body["messages"][2]["tool_calls"][0]["id"] == "call_0_0"


async def test_responder_calls_in_either_shape_are_written_in_openais(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    given: list[Mapping[str, Any]] = [
        {"name": "search", "arguments": {"query": "a"}},
        {"name": "search", "arguments": '{"query": "b"}'},
        {"id": "mine", "type": "function", "function": {"name": "now", "arguments": "{}"}},
    ]
    server.reset(lambda body: Reply("Looking.", given))
    reply = await create(client, user("go"), tools=TOOLS)
    assert reply.choices[0].message.content == "Looking."
    assert reply.choices[0].finish_reason == "tool_calls"
    calls = [(c.id, c.function.name, c.function.arguments) for c in function_calls(reply)]
    assert calls == [
        ("call_0_0", "search", '{"query": "a"}'),
        ("call_0_1", "search", '{"query": "b"}'),
        ("mine", "now", "{}"),
    ]
    server.reset(lambda body: Reply(None))
    empty = await create(client, user("go"))
    assert empty.choices[0].message.content == "" and empty.choices[0].finish_reason == "stop"


async def test_a_malformed_call_is_a_500_not_a_crash(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    server.reset(lambda body: Reply(None, [{"arguments": {}}]))
    with pytest.raises(openai.InternalServerError):
        await create(client, user("go"), tools=TOOLS)
    assert [record.fault for record in server.records] == ["responder_error"]


def test_inline_refs_replaces_local_references() -> None:
    inlined = inline_refs(WEATHER)
    assert "$defs" not in inlined
    detail = inlined["properties"]["detail"]["anyOf"][1]
    assert detail["properties"]["level"] == {"enum": ["low", "high"]}
    loop = {"$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}}
    node = inline_refs({**loop, "$ref": "#/$defs/Node"})
    assert node == {"type": "object", "properties": {"next": {}}}


async def arbitrary_replies(
    server: RunningServer,
    client: openai.AsyncOpenAI,
    seed: int,
    tools: Sequence[Any],
    **options: Any,
) -> list[ChatCompletion]:
    server.reset(arbitrary_responder(seed))
    return [await create(client, user(f"q{i}"), tools=tools, **options) for i in range(4)]


async def arbitrary_call_counts(
    server: RunningServer, client: openai.AsyncOpenAI, tools: Sequence[Any], seeds: int
) -> list[int]:
    """How many calls each reply made, over ``seeds`` seeds; every call valid for its tool."""
    validators = {
        t["function"]["name"]: jsonschema.Draft202012Validator(t["function"].get("parameters", {}))
        for t in tools
    }
    counts: list[int] = []
    for seed in range(seeds):
        for reply in await arbitrary_replies(server, client, seed, tools):
            calls = function_calls(reply)
            for call in calls:
                validators[call.function.name].validate(json.loads(call.function.arguments))
            assert reply.choices[0].finish_reason == ("tool_calls" if calls else "stop")
            counts.append(len(calls))
    return counts


async def test_arbitrary_calls_are_valid_for_their_tools(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    counts = await arbitrary_call_counts(server, client, TOOLS, seeds=40)
    # Sometimes text only, sometimes one to three calls.
    assert set(counts) == {0, 1, 2, 3}


async def test_arbitrary_respects_tool_choice_and_replays(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    named = {"type": "function", "function": {"name": "search"}}
    for seed in range(10):
        required = await arbitrary_replies(server, client, seed, TOOLS, tool_choice="required")
        assert all(function_calls(reply) for reply in required)
        forced = await arbitrary_replies(server, client, seed, TOOLS, tool_choice=named)
        assert {c.function.name for r in forced for c in function_calls(r)} == {"search"}
        silent = await arbitrary_replies(server, client, seed, TOOLS, tool_choice="none")
        assert not any(reply.choices[0].message.tool_calls for reply in silent)

    first, again, other = [
        [reply.choices[0].message for reply in await arbitrary_replies(server, client, seed, TOOLS)]
        for seed in (7, 7, 8)
    ]
    assert first == again and first != other


def agentdojo_tools(suite: str) -> list[dict[str, Any]]:
    """A suite's tools as AgentDojo's own OpenAI element offers them."""
    return [
        {
            "type": "function",
            "function": {
                "name": function.name,
                "description": function.description,
                "parameters": function.parameters.model_json_schema(),
            },
        }
        for function in load_suite(suite).tools
    ]


def text_parts(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text}]


@agentdojo
async def test_arbitrary_calls_are_valid_for_agentdojos_tools(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    tools = agentdojo_tools("workspace")  # pydantic schemas, with $defs and $ref
    assert any("$defs" in t["function"]["parameters"] for t in tools)
    assert sum(await arbitrary_call_counts(server, client, tools, seeds=10)) > 0


@agentdojo
@pytest.mark.parametrize("max_steps", [15, 1])
async def test_agentdojo_script_makes_the_reference_calls_on_native_tools(
    server: RunningServer, client: openai.AsyncOpenAI, max_steps: int
) -> None:
    sample = banking_sample("user_task_0")
    reference = sample.meta["ground_truth"]
    assert len(reference) == 2
    server.reset(agentdojo_responder("banking", max_steps=max_steps))
    messages: list[Any] = [
        {"role": "developer", "content": text_parts("You are a helpful assistant.")},
        {"role": "user", "content": text_parts(sample.question)},
    ]
    made: list[dict[str, Any]] = []
    tools = agentdojo_tools("banking")
    for _ in range(len(reference) + 1):
        reply = await create(client, messages, tools=tools, tool_choice="auto")
        calls = function_calls(reply)
        if not calls:
            break
        assert reply.choices[0].message.content is None
        messages.append(
            {"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in calls]}
        )
        for call in calls:
            made.append(
                {"name": call.function.name, "arguments": json.loads(call.function.arguments)}
            )
            # As a redacting client shows them: placeholders in place of addresses.
            result = "sent by <EMAIL_1>, see <EMAIL_2>"
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": text_parts(result)}
            )
    assert made == reference
    assert reply.choices[0].message.content == (sample.answer or "Done.")
    assert reply.choices[0].finish_reason == "stop"
    assert len(server.records) == (3 if max_steps == 15 else 2)


@agentdojo
def test_agentdojos_own_openai_pipeline_solves_a_banking_task(server: RunningServer) -> None:
    server.reset(agentdojo_responder("banking"))
    assert run_agentdojo_pipeline(server, "user_task_0") is True
    offered = server.records[0].body
    assert offered["tool_choice"] == "auto"
    assert {t["function"]["name"] for t in offered["tools"]} >= {"read_file", "send_money"}
    assert [m["role"] for m in server.records[-1].body["messages"]] == [
        "developer", "user", "assistant", "tool", "assistant", "tool",
    ]  # fmt: skip

    def wrong_amount(task_id: str, step: int, call: Mapping[str, Any]) -> Mapping[str, Any]:
        arguments = call["arguments"]
        return (
            {**call, "arguments": {**arguments, "amount": 9.87}} if "amount" in arguments else call
        )

    server.reset(agentdojo_responder("banking", edit=wrong_amount))
    assert run_agentdojo_pipeline(server, "user_task_0") is False


def run_agentdojo_pipeline(server: RunningServer, task_id: str) -> bool:
    """AgentDojo's utility verdict on ``task_id`` with its own OpenAI element as the agent."""
    from agentdojo.agent_pipeline import (
        AgentPipeline,
        InitQuery,
        OpenAILLM,
        SystemMessage,
        ToolsExecutionLoop,
        ToolsExecutor,
    )
    from agentdojo.agent_pipeline.agent_pipeline import load_system_message

    with openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0) as sdk:
        llm = OpenAILLM(sdk, "sim")
        elements = [SystemMessage(load_system_message(None)), InitQuery(), llm]
        pipeline = AgentPipeline([*elements, ToolsExecutionLoop([ToolsExecutor(), llm])])
        suite = load_suite("banking")
        utility, _ = suite.run_task_with_pipeline(pipeline, suite.user_tasks[task_id], None, {})
    return bool(utility)


def banking_sample(task_id: str) -> Sample:
    return next(s for s in agentdojo_samples("banking") if s.meta["task_id"] == task_id)
