"""A fault costs one request, not the gateway: an upstream that goes silent answers the agent 504
within the ``upstream_timeout`` setting (plain or mid-stream), an agent that leaves has its
upstream call closed, and both times the upstream sees its connection close (counted there) and
the next request is answered as usual."""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

import openai
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from combee.serve import serve_settings
from combee.serve.running import GatewayThread, create_gateway

FIRST_EVENT = (
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},'
    b'"finish_reason":null}]}\n\n'
)
ANSWER = {
    "id": "c2",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
}


class SilentUpstream:
    """Answers ``ok`` at once; for ``hang`` says nothing until its caller closes the connection;
    for ``stream-hang`` sends one event, then nothing. Counts the connections closed on it."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self.closed: list[str] = []
        self.arrived = threading.Event()
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])

    async def _chat(self, request: Request) -> Response:
        word = str((await request.json())["messages"][-1]["content"])
        self.received.append(word)
        self.arrived.set()
        if word == "hang":
            while (await request.receive())["type"] != "http.disconnect":
                pass
            self.closed.append(word)
            return Response(status_code=500)
        if word == "stream-hang":

            async def events() -> Any:
                try:
                    yield FIRST_EVENT
                    await asyncio.Event().wait()  # silent from here on
                finally:
                    self.closed.append(word)

            return StreamingResponse(events(), media_type="text/event-stream")
        return JSONResponse(ANSWER)


@pytest.fixture
def upstream() -> Iterator[tuple[SilentUpstream, str]]:
    fake = SilentUpstream()
    with GatewayThread(fake.app) as running:
        yield fake, running.base_url


def until(condition: Callable[[], bool], what: str) -> None:
    """Wait for ``condition`` (a generous bound: the verdict is the condition, not the time)."""
    deadline = time.monotonic() + 20.0
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)


def ask(client: openai.OpenAI, word: str) -> str:
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": word}])
    return str(reply.choices[0].message.content)


def statuses(gate: Any) -> list[int]:
    with gate.store.reading() as db:
        return [int(row[0]) for row in db.execute("SELECT status FROM exchanges ORDER BY seq")]


def test_a_silent_upstream_costs_the_agent_504_and_its_connection_is_closed(
    tmp_path: Path, upstream: tuple[SilentUpstream, str]
) -> None:
    fake, url = upstream
    settings = serve_settings(store=str(tmp_path / "store"), learn_every=0, upstream_timeout=0.5)
    gate, app = create_gateway(url, settings=settings)
    with GatewayThread(app) as running:
        client = openai.OpenAI(base_url=running.base_url, api_key="a", max_retries=0, timeout=30)
        with pytest.raises(openai.APIStatusError) as silent:
            ask(client, "hang")
        assert silent.value.status_code == 504
        assert "upstream_timeout" in silent.value.message
        assert "--upstream-timeout" in silent.value.message
        until(lambda: fake.closed == ["hang"], "the upstream saw the silent call closed")
        with pytest.raises(openai.APIError) as mid_stream:
            for _ in client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "stream-hang"}], stream=True
            ):
                pass
        assert "upstream_timeout" in mid_stream.value.message
        until(lambda: len(fake.closed) == 2, "the upstream saw the silent stream closed")
        assert ask(client, "next") == "ok"  # the gateway answers as before
        until(lambda: gate._in_flight == 0, "no request left in flight")
        client.close()
    assert fake.received == ["hang", "stream-hang", "next"]
    assert statuses(gate) == [499, 200]  # the broken stream, recorded as the agent saw it


def test_an_agent_that_leaves_has_its_upstream_call_closed(
    tmp_path: Path, upstream: tuple[SilentUpstream, str]
) -> None:
    fake, url = upstream
    gate, app = create_gateway(
        url, settings=serve_settings(store=str(tmp_path / "store"), learn_every=0)
    )
    with GatewayThread(app) as running:
        # Mid-request: the agent sends its request, then closes its connection while the
        # upstream is still thinking.
        agent = http.client.HTTPConnection(running.url.removeprefix("http://"), timeout=30)
        body = {"model": "m", "messages": [{"role": "user", "content": "hang"}]}
        agent.request(
            "POST",
            "/v1/chat/completions",
            json.dumps(body),
            {"Content-Type": "application/json"},
        )
        assert fake.arrived.wait(20), "the request never reached the upstream"
        agent.close()
        until(lambda: fake.closed == ["hang"], "the upstream saw the abandoned call closed")
        until(lambda: statuses(gate) == [499], "the abandoned exchange recorded as 499")
        # Mid-stream: the agent reads the first event, then closes the stream.
        client = openai.OpenAI(base_url=running.base_url, api_key="a", max_retries=0)
        with client.chat.completions.with_streaming_response.create(
            model="m", messages=[{"role": "user", "content": "stream-hang"}], stream=True
        ) as stream:
            first = next(stream.iter_bytes())
        assert first.startswith(b"data: ")
        until(lambda: len(fake.closed) == 2, "the upstream saw the abandoned stream closed")
        until(lambda: statuses(gate) == [499, 499], "the abandoned stream recorded as 499")
        with urllib.request.urlopen(running.url + "/healthz", timeout=30) as answer:
            health = json.loads(answer.read())
        assert ask(client, "next") == "ok"
        until(lambda: gate._in_flight == 0, "no request left in flight")
        client.close()
    assert health["status"] == "ok"
    assert fake.closed == ["hang", "stream-hang"]
    assert statuses(gate) == [499, 499, 200]
