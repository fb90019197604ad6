"""A streamed chat completion, passed on event by event and read into one assistant message.

Server-sent events are cut at blank lines. Each complete event goes to the agent as the upstream
sent it, except ``data: [DONE]``, which is held back until the exchange is on disk: an agent that
saw the end of its stream has an exchange in the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from combee.serve.sse import EventCutter, event_data

_DONE = b"[DONE]"


class StreamReader:
    """Cuts the upstream's bytes into events and folds their deltas into a message."""

    def __init__(self) -> None:
        self._cutter = EventCutter()
        self.content: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.role = "assistant"
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.done_event: bytes | None = None

    def feed(self, chunk: bytes) -> bytes:
        """The complete events in ``chunk`` (with what came before it), to pass on now."""
        passed = []
        for event in self._cutter.feed(chunk):
            payload = event_data(event)
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
        return self._cutter.rest() + (self.done_event or b"")

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
