"""What an upstream's connection or reply can do to the gateway. A kept-alive connection the
upstream drops as the gateway reuses it costs the agent nothing:
the request goes out once more on a new connection (it got a 502 before). The upstream is a raw
HTTP/1.1 server that answers the first request of each connection with keep-alive and drops the
connection, unanswered, when a second request arrives on it: the race between an upstream's
idle timeout and the gateway's next request, made to happen every time. A reply larger than
the gateway reads whole is refused, and the gateway stops reading it."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("starlette")

import openai

from combee.serve import serve_settings
from combee.serve.running import GatewayThread, create_gateway
from combee.sim import SimConfig, serve_in_thread
from tests.tasks.test_tool_agent import weather_model

REPLY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "sim",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
}


class DroppingUpstream:
    """Counts connections, and requests that arrived on a reused one (each dropped)."""

    def __init__(self) -> None:
        self.connections = 0
        self.dropped = 0
        self.url = ""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        answered = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                await reader.readexactly(length)
                if answered:  # the idle connection, closed as the request came in
                    self.dropped += 1
                    return
                body = json.dumps(REPLY).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"connection: keep-alive\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
                answered += 1
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()


@contextmanager
def dropping_upstream() -> Iterator[DroppingUpstream]:
    upstream = DroppingUpstream()
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(upstream._serve, "127.0.0.1", 0))
    upstream.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield upstream
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        server.close()
        loop.close()


def test_a_reused_connection_the_upstream_dropped_is_retried_on_a_new_one(tmp_path: Path) -> None:
    with dropping_upstream() as upstream:
        _, asgi = create_gateway(upstream.url, settings=serve_settings(store=str(tmp_path)))
        with GatewayThread(asgi) as gateway:
            client = openai.OpenAI(base_url=gateway.base_url, api_key="k", max_retries=0)
            for n in range(3):  # one after another: each reuses the connection kept alive
                reply = client.chat.completions.create(
                    model="sim", messages=[{"role": "user", "content": f"request {n}"}]
                )
                assert reply.choices[0].message.content == "ok"
            client.close()
    assert upstream.dropped == 2 and upstream.connections == 3


def test_an_upstream_reply_past_max_reply_mb_is_refused_and_not_read_further(
    tmp_path: Path,
) -> None:
    flood = 48 * 2**20
    with serve_in_thread(weather_model, config=SimConfig(flood_bytes=flood)) as upstream:
        settings = serve_settings(store=str(tmp_path), max_reply_mb=1.0)
        _, asgi = create_gateway(upstream.base_url, settings=settings)
        with GatewayThread(asgi) as gateway:
            client = openai.OpenAI(base_url=gateway.base_url, api_key="k", max_retries=0)
            with pytest.raises(openai.APIStatusError) as refused:
                client.chat.completions.create(
                    model="sim", messages=[{"role": "user", "content": "a long answer"}]
                )
            client.close()
        sent = upstream.flood_sent
    assert refused.value.status_code == 502
    assert "max_reply_mb" in refused.value.message and "--max-reply-mb" in refused.value.message
    assert sent < 12 * 2**20  # the gateway stopped reading: the rest never left the upstream
