"""A streamed chat completion, passed on event by event and read into one assistant message.

Server-sent events are cut at blank lines. Each complete event goes to the agent as the upstream
sent it, except ``data: [DONE]``, which is held back until the exchange is on disk: an agent that
saw the end of its stream has an exchange in the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_DONE = b"[DONE]"


class StreamReader:
    """Cuts the upstream's bytes into events and folds their deltas into a message."""

    def __init__(self) -> None:
        self._pending = b""
        self.content: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.role = "assistant"
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.done_event: bytes | None = None

    def feed(self, chunk: bytes) -> bytes:
        """The complete events in ``chunk`` (with what came before it), to pass on now."""
        data = self._pending + chunk
        end = max(data.rfind(b"\n\n"), data.rfind(b"\r\n\r\n"))
        if end < 0:
            self._pending = data
            return b""
        cut = end + (4 if data[end : end + 4] == b"\r\n\r\n" else 2)
        ready, self._pending = data[:cut], data[cut:]
        passed = []
        for event in _events(ready):
            payload = _data(event)
            if payload == _DONE:
                self.done_event = event
                continue
            if payload is not None:
                self._fold(payload)
            passed.append(event)
        return b"".join(passed)

    def rest(self) -> bytes:
        """What is left when the upstream's stream ends: any unfinished event, then the held
        ``[DONE]``."""
        tail, self._pending = self._pending, b""
        return tail + (self.done_event or b"")

    def _fold(self, payload: bytes) -> None:
        try:
            chunk = json.loads(payload)
        except ValueError:
            return
        if not isinstance(chunk, Mapping):
            return
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                self._delta(delta)

    def _delta(self, delta: Mapping[str, Any]) -> None:
        if isinstance(delta.get("role"), str):
            self.role = delta["role"]
        if isinstance(delta.get("content"), str):
            self.content.append(delta["content"])
        for call in delta.get("tool_calls") or []:
            if not isinstance(call, Mapping):
                continue
            index = call.get("index", 0)
            slot = self.calls.setdefault(
                index if isinstance(index, int) else 0,
                {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
            )
            if call.get("id"):
                slot["id"] = str(call["id"])
            function = call.get("function")
            if isinstance(function, Mapping):
                if function.get("name"):
                    slot["function"]["name"] += str(function["name"])
                if isinstance(function.get("arguments"), str):
                    slot["function"]["arguments"] += function["arguments"]

    def message(self) -> dict[str, Any]:
        """The assistant message the stream carried."""
        text = "".join(self.content)
        message: dict[str, Any] = {"role": self.role, "content": text or None}
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        elif not text:
            message["content"] = ""
        return message


def _events(data: bytes) -> list[bytes]:
    """``data`` (whole events) cut into events, each with its terminating blank line."""
    events = []
    start = 0
    while start < len(data):
        end = data.find(b"\n\n", start)
        crlf = data.find(b"\r\n\r\n", start)
        if crlf != -1 and (end == -1 or crlf < end):
            stop = crlf + 4
        elif end != -1:
            stop = end + 2
        else:
            stop = len(data)
        events.append(data[start:stop])
        start = stop
    return events


def _data(event: bytes) -> bytes | None:
    """The ``data:`` payload of an event (its lines joined), or None."""
    lines = [line[5:].lstrip(b" ") for line in event.splitlines() if line.startswith(b"data:")]
    return b"\n".join(lines).strip() if lines else None
