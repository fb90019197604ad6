"""Streamed replies of the scripted server: a chat completion sent as server-sent events.

A request with ``"stream": true`` gets ``text/event-stream`` in the form of OpenAI's
chat-completions API: ``data: {chunk}`` events of ``object: "chat.completion.chunk"``, all with
the completion's ``id``, ``created`` and ``model``. The first delta gives the role; the content
follows in pieces of :data:`PIECE_CHARS` characters; each tool call opens with its ``index``,
``id``, ``type`` and name, and its arguments follow in pieces that carry only the ``index`` and
``function.arguments``; the last chunk has an empty delta and the ``finish_reason``. Under
``stream_options: {"include_usage": true}`` every chunk carries ``usage: null`` and one more
chunk, with no choices, carries the usage. ``data: [DONE]`` ends the stream.

The server has already waited the time to the first token; the stream spreads the decode time
evenly over the pieces of generated text, so the whole reply takes as long as a non-streamed
one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

PIECE_CHARS = 16
"""Characters of content or arguments per chunk."""

DONE = "data: [DONE]\n\n"


@dataclass(frozen=True)
class Event:
    """One server-sent event; ``paced`` ones carry generated text and share the decode time."""

    text: str
    paced: bool = False


def wants_stream(body: Mapping[str, Any]) -> bool:
    return body.get("stream") is True


def wants_usage(body: Mapping[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, Mapping) and options.get("include_usage") is True


def stream_events(completion: Mapping[str, Any], include_usage: bool) -> list[Event]:
    """The events that stream ``completion`` (a non-streamed reply body), ``[DONE]`` last."""
    (choice,) = completion["choices"]
    message = choice["message"]
    content = message.get("content")
    calls: Sequence[Mapping[str, Any]] = message.get("tool_calls") or []
    extra = {"usage": None} if include_usage else {}

    def envelope(choices: list[Any], usage: Mapping[str, Any]) -> str:
        return _data(
            {
                "id": completion["id"],
                "object": "chat.completion.chunk",
                "created": completion["created"],
                "model": completion["model"],
                "choices": choices,
                **usage,
            }
        )

    def chunk(delta: Mapping[str, Any], finish_reason: str | None = None) -> str:
        choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
        return envelope(choices, extra)

    # OpenAI opens a reply made only of tool calls with a null content, a text reply with "".
    opening = None if calls and not content else ""
    events = [Event(chunk({"role": "assistant", "content": opening}))]
    events += [Event(chunk({"content": piece}), paced=True) for piece in _pieces(content or "")]
    for n, call in enumerate(calls):
        function = call["function"]
        start = {
            "index": n,
            "id": call["id"],
            "type": "function",
            "function": {"name": function["name"], "arguments": ""},
        }
        events.append(Event(chunk({"tool_calls": [start]})))
        events += [
            Event(
                chunk({"tool_calls": [{"index": n, "function": {"arguments": piece}}]}), paced=True
            )
            for piece in _pieces(function["arguments"])
        ]
    # With nothing generated, any decode time is spent before the finish.
    finish = chunk({}, choice["finish_reason"])
    events.append(Event(finish, paced=not any(event.paced for event in events)))
    if include_usage:
        events.append(Event(envelope([], {"usage": completion["usage"]})))
    events.append(Event(DONE))
    return events


def truncated(events: Sequence[Event], variant: int) -> list[Event]:
    """A stream broken off halfway, without its finish or ``[DONE]``: variant 0 ends on an
    event whose JSON is cut short, variant 1 just stops."""
    kept = list(events[: max(1, len(events) // 2)])
    if variant == 0:
        last = kept[-1].text.removesuffix("\n\n")
        kept[-1] = Event(last[: len(last) // 2] + "\n\n", kept[-1].paced)
    return kept


class EventStream(StreamingResponse):
    """The events as ``text/event-stream``, paced over ``decode_s`` seconds. ``on_end`` is
    called once however the response ends: True when every event was sent, False when the
    client went away first (or the response never started)."""

    def __init__(
        self, events: Sequence[Event], decode_s: float, on_end: Callable[[bool], None]
    ) -> None:
        self._events = list(events)
        self._decode_s = decode_s
        self._on_end = on_end
        self._sent_all = False
        super().__init__(
            self._paced(),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache"},
        )

    async def _paced(self) -> AsyncIterator[str]:
        paced = sum(event.paced for event in self._events)
        step = self._decode_s / paced if paced else 0.0
        for event in self._events:
            if event.paced and step > 0:
                await asyncio.sleep(step)
            yield event.text
        self._sent_all = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_end(self._sent_all)


def _pieces(text: str) -> list[str]:
    return [text[start : start + PIECE_CHARS] for start in range(0, len(text), PIECE_CHARS)]


def _data(payload: Mapping[str, Any]) -> str:
    return f"data: {json.dumps(payload)}\n\n"
