"""A flooding reply of the scripted server: a chat completion (or an error) padded to a set size
and streamed in chunks, as a server that ignores ``max_tokens`` sends it. A chunk is
counted once the connection took it while the client was still there, so a test learns how
much of the body a client read before it hung up (the padding is made as it is sent, never
held whole)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

CHUNK_BYTES = 1 << 16


class SentBytes:
    """Body bytes the server sent, over all flooding replies (read from other threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def add(self, count: int) -> None:
        with self._lock:
            self._count += count

    @property
    def count(self) -> int:
        with self._lock:
            return self._count


PADDING = "<<padding of the flooding reply>>"
"""Where a body given to :class:`FloodingReply` is padded."""


def padded_completion(reply: Mapping[str, Any]) -> dict[str, Any]:
    """``reply`` (a completion body) with its message's content to be padded."""
    choice = {**reply["choices"][0], "message": {"role": "assistant", "content": PADDING}}
    return {**reply, "choices": [choice]}


class FloodingReply(Response):
    """``body`` with its :data:`PADDING` replaced by ``x`` until it holds ``size`` bytes, sent
    in :data:`CHUNK_BYTES` chunks until the client hangs up."""

    def __init__(self, body: Mapping[str, Any], size: int, sent: SentBytes, status: int) -> None:
        super().__init__(status_code=status, media_type="application/json")
        self._head, self._tail = json.dumps(body).encode().split(PADDING.encode())
        self._padding = max(0, size - len(self._head) - len(self._tail))
        self._sent = sent
        self.headers["content-length"] = str(len(self._head) + self._padding + len(self._tail))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.Event()

        async def watch() -> None:  # the request's body is read: receive() waits for a hang-up
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.ensure_future(watch())
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            for piece in _pieces(self._head, self._padding, self._tail):
                await send({"type": "http.response.body", "body": piece, "more_body": True})
                await asyncio.sleep(0)  # a hang-up seen by now: the piece was not taken
                if gone.is_set():
                    return
                self._sent.add(len(piece))
            await send({"type": "http.response.body", "body": b""})
        finally:
            watcher.cancel()


def _pieces(head: bytes, padding: int, tail: bytes) -> Iterator[bytes]:
    yield head
    full = b"x" * CHUNK_BYTES
    while padding > 0:
        piece = full if padding >= CHUNK_BYTES else full[:padding]
        padding -= len(piece)
        yield piece
    yield tail
