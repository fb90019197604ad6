"""The simulated OpenAI-compatible server, over real HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest

from combee.errors import ConfigError
from combee.sim import (
    HTTPFault,
    RequestRecord,
    RunningServer,
    SimConfig,
    echo_responder,
    minimal_instance,
    peak_concurrency,
    serve_in_thread,
)
from combee.sim.server import CLIENT_CLOSED

SCHEMA = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "operations": {"type": "array", "items": {"type": "object"}},
        "tag": {"enum": ["helpful", "harmful", "neutral"]},
        "score": {"type": "number"},
        "nested": {
            "type": "object",
            "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"}},
            "required": ["ok", "n"],
        },
        "optional": {"type": "string"},
    },
    "required": ["reasoning", "operations", "tag", "score", "nested"],
}


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread() as running:
        yield running


@pytest.fixture(autouse=True)
def fresh(server: RunningServer) -> None:
    server.reset(echo_responder, SimConfig())


def chat_body(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"model": "m1", "messages": [{"role": "user", "content": text}], **extra}


async def post_many(server: RunningServer, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30.0) as client:
        return await asyncio.gather(*(client.post("/chat/completions", json=b) for b in bodies))


async def post(server: RunningServer, body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30.0) as client:
        if isinstance(body, bytes):
            return await client.post("/chat/completions", content=body)
        return await client.post("/chat/completions", json=body)


async def test_reply_has_the_openai_shape(server: RunningServer) -> None:
    response = await post(server, chat_body("x" * 40))
    assert response.status_code == 200
    reply = response.json()
    assert reply["object"] == "chat.completion"
    assert reply["model"] == "m1"
    assert reply["id"].startswith("chatcmpl-")
    assert isinstance(reply["created"], int)
    (choice,) = reply["choices"]
    assert choice["message"] == {"role": "assistant", "content": "echo: " + "x" * 40}
    assert choice["finish_reason"] == "stop"
    usage = reply["usage"]
    assert usage["prompt_tokens"] == 10
    assert usage["completion_tokens"] == len("echo: " + "x" * 40) // 4
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    (record,) = server.records
    assert record.index == 0
    assert record.status == 200
    assert record.fault is None
    assert record.schema_name is None
    assert record.body == chat_body("x" * 40)
    assert record.arrived <= record.started <= record.finished


async def test_models_are_listed(server: RunningServer) -> None:
    async with httpx.AsyncClient(base_url=server.base_url) as client:
        listing = (await client.get("/models")).json()
    assert listing["object"] == "list"
    assert [model["id"] for model in listing["data"]] == ["sim"]


async def test_schema_request_gets_a_valid_minimal_object(server: RunningServer) -> None:
    response_format = {"type": "json_schema", "json_schema": {"name": "curator", "schema": SCHEMA}}
    reply = (await post(server, chat_body(response_format=response_format))).json()
    value = json.loads(reply["choices"][0]["message"]["content"])
    assert value == {
        "reasoning": "",
        "operations": [],
        "tag": "helpful",
        "score": 0,
        "nested": {"ok": False, "n": 0},
    }
    assert server.records[0].schema_name == "curator"


async def test_llama_cpp_schema_form_is_understood(server: RunningServer) -> None:
    response_format = {"type": "json_object", "schema": SCHEMA}
    reply = (await post(server, chat_body(response_format=response_format))).json()
    assert set(json.loads(reply["choices"][0]["message"]["content"])) == set(SCHEMA["required"])


def test_minimal_instance_respects_bounds() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 3},
            "items": {"type": "array", "minItems": 2, "items": {"type": "integer", "minimum": 5}},
            "either": {"anyOf": [{"type": "null"}, {"type": "string"}]},
            "fixed": {"const": "v1"},
            "maybe": {"type": ["null", "boolean"]},
        },
        "required": ["name", "items", "either", "fixed", "maybe"],
    }
    assert minimal_instance(schema) == {
        "name": "xxx",
        "items": [5, 5],
        "either": None,
        "fixed": "v1",
        "maybe": False,
    }


async def test_max_tokens_truncates_the_reply(server: RunningServer) -> None:
    reply = (await post(server, chat_body("y" * 100, max_tokens=2))).json()
    choice = reply["choices"][0]
    assert choice["message"]["content"] == "echo: yy"
    assert choice["finish_reason"] == "length"


async def test_malformed_request_is_a_400(server: RunningServer) -> None:
    assert (await post(server, b"not json")).status_code == 400
    assert (await post(server, {"model": "m"})).status_code == 400
    assert [record.status for record in server.records] == [400, 400]


async def test_responder_faults_and_bugs_become_http_errors(server: RunningServer) -> None:
    def respond(body: Mapping[str, Any]) -> str:
        text = body["messages"][-1]["content"]
        if text == "auth":
            raise HTTPFault(401, "bad key")
        raise RuntimeError("oops")

    server.reset(respond)
    auth = await post(server, chat_body("auth"))
    assert auth.status_code == 401
    assert auth.json()["error"]["message"] == "bad key"
    bug = await post(server, chat_body("other"))
    assert bug.status_code == 500
    assert "oops" in bug.json()["error"]["message"]
    faults = {record.status: record.fault for record in server.records}
    assert faults == {401: None, 500: "responder_error"}


async def test_429_carries_retry_after(server: RunningServer) -> None:
    server.reset(config=SimConfig(rate_429=1.0, retry_after_s=2.5))
    response = await post(server, chat_body())
    assert response.status_code == 429
    assert response.headers["retry-after"] == "2.5"
    assert server.records[0].fault == "429"


async def test_bad_bodies_are_200s_that_do_not_parse(server: RunningServer) -> None:
    server.reset(config=SimConfig(rate_bad_body=1.0))
    responses = [await post(server, chat_body()) for _ in range(2)]
    for response in responses:
        assert response.status_code == 200
        with pytest.raises(ValueError):
            json.loads(response.content)
    # One variant is a truncated reply, the other is not JSON at all.
    assert responses[0].text.startswith('{"id"')
    assert responses[1].text.startswith("<html>")


async def test_faults_only_hit_the_first_n_requests(server: RunningServer) -> None:
    server.reset(config=SimConfig(rate_500=1.0, fault_first_n=2))
    statuses = [(await post(server, chat_body())).status_code for _ in range(4)]
    assert statuses == [500, 500, 200, 200]


async def fault_sequence(server: RunningServer, seed: int) -> list[str | None]:
    config = SimConfig(seed=seed, rate_429=0.25, rate_500=0.25, rate_bad_body=0.25)
    server.reset(config=config)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30.0) as client:
        for _ in range(24):
            await client.post("/chat/completions", json=chat_body())
    return [record.fault for record in sorted(server.records, key=lambda r: r.index)]


async def test_faults_are_deterministic_given_the_seed(server: RunningServer) -> None:
    first = await fault_sequence(server, seed=3)
    again = await fault_sequence(server, seed=3)
    other = await fault_sequence(server, seed=4)
    assert first == again
    assert first != other
    assert {"429", "500", "bad_body", None} == set(first)


async def test_hang_ends_when_the_client_goes_away(server: RunningServer) -> None:
    server.reset(config=SimConfig(rate_hang=1.0, hang_s=600.0))
    async with httpx.AsyncClient(base_url=server.base_url, timeout=0.2) as client:
        with pytest.raises(httpx.TimeoutException):
            await client.post("/chat/completions", json=chat_body())
    records = await wait_for_records(server, 1)
    assert records[0].status == CLIENT_CLOSED
    assert records[0].fault == "hang"


async def wait_for_records(server: RunningServer, count: int) -> list[RequestRecord]:
    for _ in range(500):
        if len(server.records) >= count:
            break
        await asyncio.sleep(0.01)
    return server.records


async def test_latency_follows_ttft_and_decode_speed(server: RunningServer) -> None:
    config = SimConfig(ttft_s=0.1, decode_tokens_per_s=1000.0)
    server.reset(lambda body: "z" * 400, config)  # 100 completion tokens
    await post(server, chat_body())
    (record,) = server.records
    assert record.finished - record.started >= 0.1 + 0.1 - 0.01


async def test_capacity_limits_requests_served_at_once(server: RunningServer) -> None:
    server.reset(config=SimConfig(capacity=2, ttft_s=0.02, gate_n=8))
    responses = await post_many(server, [chat_body(f"q{i}") for i in range(8)])
    assert all(response.status_code == 200 for response in responses)
    records = server.records
    served = [
        RequestRecord(r.index, None, {}, r.started, r.started, r.finished, 200, None)
        for r in records
    ]
    assert peak_concurrency(served) == 2
    assert peak_concurrency(records) == 8


async def test_reset_restarts_indices_and_records(server: RunningServer) -> None:
    await post(server, chat_body())
    server.reset()
    await post(server, chat_body())
    assert [record.index for record in server.records] == [0]


def test_peak_concurrency_counts_overlaps() -> None:
    def record(arrived: float, finished: float) -> RequestRecord:
        return RequestRecord(0, None, {}, arrived, arrived, finished, 200, None)

    assert peak_concurrency([]) == 0
    assert peak_concurrency([record(0, 1), record(1, 2)]) == 1
    assert peak_concurrency([record(0, 3), record(1, 2), record(1.5, 4), record(3.5, 5)]) == 3


@pytest.mark.parametrize(
    "options",
    [{"rate_429": 1.5}, {"rate_500": 0.6, "rate_hang": 0.6}, {"capacity": 0}, {"jitter": 1.0}],
)
def test_invalid_config_is_a_config_error(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="sim server"):
        SimConfig(**options)


def test_busy_port_is_a_config_error(server: RunningServer) -> None:
    with pytest.raises(ConfigError, match="cannot listen"):
        serve_in_thread(port=server.port)
