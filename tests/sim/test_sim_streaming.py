"""The scripted server streams replies as OpenAI does, checked over HTTP with the official SDK."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from combee.sim import RequestRecord, RunningServer, SimConfig, echo_responder, serve_in_thread
from combee.sim.responders import Reply
from combee.sim.server import CLIENT_CLOSED
from combee.sim.streaming import PIECE_CHARS

USER = [{"role": "user", "content": "tell me about the weather in the mountains this week"}]
LONG_TEXT = "The forecast: sunny mornings, showers after noon, and wind on the ridges. " * 3
CALLS = [
    {"name": "get_weather", "arguments": {"city": "Grenoble", "days": [1, 2, 3], "note": "é ∆"}},
    {"id": "call_custom", "name": "search", "arguments": '{"query": "ridge wind"}'},
]


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


def tool(name: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {}, "additionalProperties": True}
    function = {"name": name, "parameters": parameters, "strict": True}
    return {"type": "function", "function": function}


async def complete(client: openai.AsyncOpenAI, **options: Any) -> ChatCompletion:
    return await client.chat.completions.create(model="m", messages=USER, **options)


async def chunks_of(client: openai.AsyncOpenAI, **options: Any) -> list[ChatCompletionChunk]:
    stream = await client.chat.completions.create(model="m", messages=USER, stream=True, **options)
    return [chunk async for chunk in stream]


def text_of(chunks: list[ChatCompletionChunk]) -> str:
    return "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)


def calls_of(chunks: list[ChatCompletionChunk]) -> list[dict[str, str]]:
    """The tool calls put together from their deltas, as the OpenAI docs show."""
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            if delta.id:
                call["id"] = delta.id
            if delta.function and delta.function.name:
                call["name"] += delta.function.name
            if delta.function and delta.function.arguments:
                call["arguments"] += delta.function.arguments
    return [calls[index] for index in sorted(calls)]


def finish_reasons(chunks: list[ChatCompletionChunk]) -> list[str]:
    return [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]


async def wait_for_records(server: RunningServer, count: int) -> list[RequestRecord]:
    """The records once ``count`` are in: a stream is recorded just after its last byte."""
    for _ in range(500):
        if len(server.records) >= count:
            break
        await asyncio.sleep(0.01)
    return server.records


async def test_streamed_text_is_the_non_streamed_content(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    server.reset(lambda body: LONG_TEXT)
    whole = await complete(client)
    chunks = await chunks_of(client)
    assert text_of(chunks) == whole.choices[0].message.content == LONG_TEXT
    content_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(content_chunks) == -(-len(LONG_TEXT) // PIECE_CHARS)  # in pieces, not at once
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].choices[0].delta.content == ""
    assert {(c.id, c.created, c.model, c.object) for c in chunks} == {
        (chunks[0].id, chunks[0].created, "m", "chat.completion.chunk")
    }
    assert chunks[0].id.startswith("chatcmpl-") and chunks[0].id != whole.id
    assert finish_reasons(chunks) == ["stop"]
    assert chunks[-1].choices[0].delta.content is None  # the finish chunk's delta is empty
    assert all(chunk.usage is None for chunk in chunks)  # no usage unless asked for


async def test_streamed_tool_calls_are_the_non_streamed_ones(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    server.reset(lambda body: Reply(None, CALLS))
    whole = await complete(client, tools=[tool("get_weather"), tool("search")])
    server.reset()  # the next request has index 0 again: the same generated call ids
    chunks = await chunks_of(client, tools=[tool("get_weather"), tool("search")])
    expected = [
        {"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
        for call in whole.choices[0].message.tool_calls or []
        if call.type == "function"
    ]
    assert [call["name"] for call in expected] == ["get_weather", "search"]
    assert calls_of(chunks) == expected
    assert json.loads(calls_of(chunks)[0]["arguments"]) == CALLS[0]["arguments"]
    assert calls_of(chunks)[1]["id"] == "call_custom"
    assert finish_reasons(chunks) == ["tool_calls"] == [whole.choices[0].finish_reason]
    assert text_of(chunks) == ""
    assert chunks[0].choices[0].delta.content is None  # as OpenAI opens a tool-call reply
    deltas = [d for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or []]
    opening = [d for d in deltas if d.id]
    assert [(d.index, d.type, d.function and d.function.arguments) for d in opening] == [
        (0, "function", ""),
        (1, "function", ""),
    ]
    pieces = [d for d in deltas if not d.id]
    assert len(pieces) > 2  # the arguments come in pieces ...
    assert all(d.type is None and d.function and d.function.name is None for d in pieces)


async def test_the_usage_chunk_comes_last_when_asked_for(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    server.reset(lambda body: LONG_TEXT)
    whole = await complete(client)
    chunks = await chunks_of(client, stream_options={"include_usage": True})
    *rest, last = chunks
    assert last.choices == []
    assert last.usage is not None and whole.usage is not None
    assert last.usage.model_dump() == whole.usage.model_dump()
    assert last.usage.completion_tokens > 0
    assert all(chunk.usage is None and chunk.choices for chunk in rest)
    assert text_of(chunks) == LONG_TEXT


async def test_max_tokens_cuts_the_stream_with_length(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    server.reset(lambda body: LONG_TEXT)
    whole = await complete(client, max_tokens=10)
    chunks = await chunks_of(client, max_tokens=10)
    assert text_of(chunks) == whole.choices[0].message.content == LONG_TEXT[:40]
    assert finish_reasons(chunks) == ["length"]


async def test_the_sdk_stream_helper_accumulates_the_same_message(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    server.reset(lambda body: Reply("Checking two sources.", CALLS))
    tools: Any = [tool("get_weather"), tool("search")]
    whole = await complete(client, tools=tools)
    server.reset()  # the next request has index 0 again: the same generated call ids
    async with client.chat.completions.stream(model="m", messages=USER, tools=tools) as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_completion()
    assert "content.delta" in kinds and "tool_calls.function.arguments.delta" in kinds
    assert kinds.count("tool_calls.function.arguments.done") == 2
    message, expected = final.choices[0].message, whole.choices[0].message
    assert message.content == expected.content == "Checking two sources."
    streamed = [call.model_dump() for call in message.tool_calls or []]
    parsed = [call["function"].pop("parsed_arguments") for call in streamed]
    assert parsed == [CALLS[0]["arguments"], {"query": "ridge wind"}]
    assert [call.pop("index") for call in streamed] == [0, 1]  # kept from the deltas
    assert streamed == [call.model_dump() for call in expected.tool_calls or []]
    assert [call["id"] for call in streamed] == ["call_0_0", "call_custom"]
    assert final.choices[0].finish_reason == "tool_calls"


async def test_each_stream_is_recorded_with_status_200(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    await chunks_of(client)
    await chunks_of(client, stream_options={"include_usage": True})
    records = await wait_for_records(server, 2)
    assert [(r.index, r.status, r.fault) for r in records] == [(0, 200, None), (1, 200, None)]
    assert all(r.body["stream"] is True for r in records)
    assert records[1].body["stream_options"] == {"include_usage": True}


async def test_time_to_first_token_then_decode_spread_over_the_chunks(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    # 400 characters = 100 completion tokens = 0.5 s of decode, in 25 pieces.
    server.reset(lambda body: "z" * 400, SimConfig(ttft_s=0.3, decode_tokens_per_s=200.0))
    began = time.perf_counter()
    stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
    arrivals: list[float] = []
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            arrivals.append(time.perf_counter() - began)
    total = time.perf_counter() - began
    assert len(arrivals) == 25
    assert arrivals[0] >= 0.3  # nothing before the first token
    assert arrivals[-1] - arrivals[0] >= 0.4  # the decode time is spent between the pieces
    assert 0.8 <= total < 3.0  # about as long as the non-streamed reply (0.3 + 0.5 s)
    (record,) = await wait_for_records(server, 1)
    assert record.finished - record.started >= 0.8


async def test_faults_before_the_stream_are_http_errors(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    server.reset(config=SimConfig(rate_429=1.0, retry_after_s=7.0))
    with pytest.raises(openai.RateLimitError) as caught:
        await chunks_of(client)
    assert caught.value.response.headers["retry-after"] == "7"
    server.reset(config=SimConfig(rate_500=1.0))
    with pytest.raises(openai.InternalServerError):
        await chunks_of(client)
    assert [r.status for r in await wait_for_records(server, 1)] == [500]


async def test_a_bad_body_fault_breaks_the_stream_off(server: RunningServer) -> None:
    server.reset(lambda body: LONG_TEXT, SimConfig(rate_bad_body=1.0))
    bodies = []
    async with httpx.AsyncClient(base_url=server.base_url, timeout=10.0) as http:
        for _ in range(2):  # two requests: both ways of breaking off
            body = {"model": "m", "messages": USER, "stream": True}
            reply = await http.post("/chat/completions", json=body)
            assert reply.status_code == 200
            assert reply.headers["content-type"].startswith("text/event-stream")
            bodies.append(reply.text)
    for text in bodies:
        assert "[DONE]" not in text and '"finish_reason": "stop"' not in text
        assert text.startswith("data: {")
    cut = bodies[0].split("\n\n")[-2].removeprefix("data: ")
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut)
    assert all(json.loads(e.removeprefix("data: ")) for e in bodies[1].split("\n\n") if e)
    records = await wait_for_records(server, 2)
    assert [(r.status, r.fault) for r in records] == [(200, "bad_body"), (200, "bad_body")]


async def test_a_client_that_leaves_mid_stream_is_recorded_and_frees_its_place(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    replies = iter(["z" * 400, "short"])  # 100 tokens at 20 per second: 5 s of decode
    server.reset(lambda body: next(replies), SimConfig(capacity=1, decode_tokens_per_s=20.0))
    stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break
    await stream.close()
    (record,) = await wait_for_records(server, 1)
    assert record.status == CLIENT_CLOSED
    assert record.finished - record.started < 2.0
    # The only place in the capacity limit is free again: the next request is served at once.
    assert text_of(await asyncio.wait_for(chunks_of(client), 2.0)) == "short"


async def test_non_streamed_requests_still_take_the_whole_latency(
    server: RunningServer, client: openai.AsyncOpenAI
) -> None:
    server.reset(lambda body: "z" * 400, SimConfig(ttft_s=0.1, decode_tokens_per_s=500.0))
    began = time.perf_counter()
    whole = await complete(client)
    assert time.perf_counter() - began >= 0.3  # 0.1 s + 100 tokens at 500 per second
    assert whole.choices[0].message.content == "z" * 400
