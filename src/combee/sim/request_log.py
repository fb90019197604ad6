"""The server's own record of when it held each chat request, as JSON lines on disk.

A benchmark measures the endpoint's idle time from this log, not from the client's call records:
the client's view includes its own CPU on either side of the wire, the server's does not. Each
line is ``{"arrived": t0, "finished": t1, "status": code}`` in wall-clock seconds
(``time.time()``), written when the reply has been sent, so a process on the same machine can
compare it with its own clock.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any, TextIO

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class RequestLog:
    """ASGI middleware: one line per ``/chat/completions`` request to ``path`` (appended)."""

    def __init__(self, app: ASGIApp, path: Path) -> None:
        self.app = app
        self.path = path
        self._file: TextIO | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).endswith("/chat/completions"):
            await self.app(scope, receive, send)
            return
        arrived = time.time()
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self._write({"arrived": arrived, "finished": time.time(), "status": status})

    def _write(self, line: dict[str, Any]) -> None:
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(json.dumps(line) + "\n")
        self._file.flush()  # readable by the benchmark while the server runs


def read_request_log(path: Path) -> list[tuple[float, float]]:
    """The ``(arrived, finished)`` times of the requests logged in ``path`` (none if absent);
    a line cut short by a server that was stopped mid-write is left out."""
    if not path.exists():
        return []
    intervals: list[tuple[float, float]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
            intervals.append((float(record["arrived"]), float(record["finished"])))
        except (ValueError, KeyError, TypeError):
            continue
    return intervals
