"""The scripted server's gates: calls held until their whole wave has arrived, so a test
proves overlap by counting, whatever the machine's load."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from combee.errors import ConfigError
from combee.sim import RunningServer, SimConfig, peak_concurrency, serve_in_thread
from combee.sim.gates import Gate, wave, waves

ANSWER = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread() as running:
        yield running


def call(role: str | None, text: str = "hi") -> dict[str, Any]:
    """A chat request whose role (its JSON schema's name) is ``role``."""
    body: dict[str, Any] = {"model": "sim", "messages": [{"role": "user", "content": text}]}
    if role is not None:
        spec = {"name": role, "schema": ANSWER}
        body["response_format"] = {"type": "json_schema", "json_schema": spec}
    return body


async def send(client: httpx.AsyncClient, body: dict[str, Any]) -> int:
    return (await client.post("/chat/completions", json=body)).status_code


def client_of(server: RunningServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.base_url, timeout=120.0)


async def test_a_wave_is_held_until_all_its_calls_have_arrived(server: RunningServer) -> None:
    server.reset(config=SimConfig(gates=(wave("generator", 6),)))
    async with client_of(server) as client:
        statuses = await asyncio.gather(
            *(send(client, call("generator", f"q{i}")) for i in range(6))
        )
    records = server.records
    assert statuses == [200] * 6
    assert min(r.finished for r in records) >= max(r.arrived for r in records)
    assert peak_concurrency(records) == 6


async def test_only_the_gates_calls_wait_and_roles_are_counted_apart(
    server: RunningServer,
) -> None:
    # The first generator call waits for the second reflector call, whatever else comes.
    gate = wave("generator", 1) | wave("reflector", 1, start=1)
    server.reset(config=SimConfig(gates=(gate,)))
    async with client_of(server) as client:
        held = asyncio.create_task(send(client, call("generator")))
        assert await send(client, call("curator")) == 200
        assert await send(client, call(None)) == 200
        assert await send(client, call("reflector")) == 200  # the first one: not in the gate
        assert not held.done()  # its gate is still one call short
        assert await send(client, call("reflector")) == 200
        assert await held == 200
        assert await send(client, call("generator")) == 200  # past the gate: not held
    records = sorted(server.records, key=lambda r: r.index)
    generators = [r for r in records if r.schema_name == "generator"]
    reflectors = [r for r in records if r.schema_name == "reflector"]
    assert len(records) == 6 and len(generators) == len(reflectors) == 2
    assert generators[0].finished >= reflectors[1].arrived


async def test_waves_follow_each_other_and_other_calls_pass(server: RunningServer) -> None:
    # Two waves of three, with one lone call of the role between them (every=4).
    server.reset(config=SimConfig(gates=waves("summarize", 3, 2, every=4)))
    async with client_of(server) as client:
        first = await asyncio.gather(*(send(client, call("summarize")) for _ in range(3)))
        lone = await send(client, call("summarize"))
        second = await asyncio.gather(*(send(client, call("summarize")) for _ in range(3)))
    records = sorted(server.records, key=lambda r: r.index)
    assert first == second == [200] * 3 and lone == 200
    assert peak_concurrency(records[:3]) == 3 and peak_concurrency(records[4:]) == 3


async def test_a_gate_that_stays_short_lets_its_calls_go_at_its_deadline(
    server: RunningServer,
) -> None:
    server.reset(config=SimConfig(gates=(wave("generator", 2),), gate_timeout_s=0.1))
    async with client_of(server) as client:
        assert await send(client, call("generator")) == 200
    assert len(server.records) == 1


@pytest.mark.parametrize(
    "gates",
    [
        lambda: (wave("generator", 2), wave("generator", 2, start=1)),
        lambda: (wave("generator", 0),),
        lambda: waves("generator", 4, 2, every=3),
        lambda: (Gate(frozenset()),),
    ],
)
def test_gates_that_cannot_work_are_config_errors(gates: Any) -> None:
    with pytest.raises(ConfigError):
        SimConfig(gates=gates())
