"""A streamed Responses API reply, passed on event by event and read into one assistant message.

Each event goes to the agent as the upstream sent it, except the terminal one
(``response.completed``, ``response.incomplete`` or ``response.failed``, which carries the whole
response), held back until the exchange is on disk, as a chat stream's ``[DONE]`` is
(:mod:`combee.serve.streams`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from combee.serve.responses_form import output_message
from combee.serve.sse import EventCutter, event_data

_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


class ResponsesStreamReader:
    """Cuts the upstream's bytes into events and keeps what makes the reply: the terminal
    event's response, else the output items finished so far, else the text deltas."""

    def __init__(self) -> None:
        self._cutter = EventCutter()
        self._held: list[bytes] = []
        self.response: Mapping[str, Any] | None = None
        self._items: dict[int, Mapping[str, Any]] = {}
        self._text: list[str] = []

    def feed(self, chunk: bytes) -> bytes:
        """The complete events in ``chunk`` (with what came before it), to pass on now."""
        passed = []
        for event in self._cutter.feed(chunk):
            if self._fold(event_data(event)) in _TERMINAL or self._held:
                self._held.append(event)  # the end, and whatever follows it, after the store
            else:
                passed.append(event)
        return b"".join(passed)

    def rest(self) -> bytes:
        """What is left when the upstream's stream ends: the held events, then any unfinished
        one."""
        return b"".join(self._held) + self._cutter.rest()

    def message(self) -> dict[str, Any]:
        """The assistant message the stream carried."""
        if self.response is not None:
            found = output_message(self.response)
            if found is not None:
                return found
        if self._items:
            found = output_message({"output": [self._items[i] for i in sorted(self._items)]})
            if found is not None:
                return found
        return {"role": "assistant", "content": "".join(self._text)}

    def _fold(self, payload: bytes | None) -> str:
        """Keep what ``payload`` adds to the reply; its event type."""
        try:
            event = json.loads(payload) if payload else None
        except ValueError:
            return ""
        if not isinstance(event, Mapping):
            return ""
        kind = str(event.get("type") or "")
        if kind in _TERMINAL and isinstance(event.get("response"), Mapping):
            self.response = event["response"]
        elif kind == "response.output_item.done" and isinstance(event.get("item"), Mapping):
            index = event.get("output_index")
            self._items[index if isinstance(index, int) else len(self._items)] = event["item"]
        elif kind == "response.output_text.delta" and isinstance(event.get("delta"), str):
            self._text.append(event["delta"])
        return kind
