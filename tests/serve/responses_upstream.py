"""A scripted OpenAI upstream for the gateway's Responses and pass-through tests, on starlette.

``POST /v1/responses`` is the weather model of :mod:`tests.tasks.test_tool_agent` in the
Responses API: it calls ``get_weather`` for the city asked about, then answers with the tool's
result; whole, or streamed as the API streams (``response.created`` ... ``response.completed``).
``POST /v1/embeddings`` and ``POST /v1/chat/completions`` answer fixed bodies; any other route
answers the upstream's own 404. Every reply carries rate-limit and request-id headers, and every
request is kept as it arrived (method, path, query string, headers, body)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.tasks.test_tool_agent import TEMPERATURES

EMBEDDINGS = (
    b'{"object":"list","data":[{"object":"embedding","index":0,'
    b'"embedding":[0.125,-1.0e-05,0.33333334,7]},{"object":"embedding","index":1,'
    b'"embedding":[1.5e+2,0.0,-0.25,0.1000000001]}],"model":"embed-sim",'
    b'"usage":{"prompt_tokens":4,"total_tokens":4}}'
)
"""Numbers as a re-encoding JSON writer would not write them: passed on byte for byte."""

CHAT = (
    b'{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"sim",'
    b'"choices":[{"index":0,"message":{"role":"assistant","content":"hello"},'
    b'"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}'
)

REPLY_HEADERS = {
    "x-ratelimit-limit-requests": "5000",
    "x-ratelimit-remaining-requests": "4999",
    "x-ratelimit-reset-tokens": "6ms",
    "openai-processing-ms": "12",
    "openai-version": "2020-10-01",
    "x-request-id": "req_upstream_1",
    "retry-after": "0",
    "x-upstream-internal": "not for agents",
}
"""What the upstream adds to every reply; all but the last reach the agent."""


@dataclass
class Arrival:
    """A request as the upstream received it."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class ResponsesUpstream:
    """The scripted upstream; :meth:`app` to serve it, :attr:`arrivals` what it received."""

    def __init__(self) -> None:
        self.arrivals: list[Arrival] = []
        self._ids = itertools.count(1)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/embeddings", self._fixed(EMBEDDINGS), methods=["POST"]),
                Route("/v1/chat/completions", self._fixed(CHAT), methods=["POST"]),
                Route("/v1/{path:path}", self._unknown, methods=["GET", "POST", "DELETE"]),
            ]
        )

    def calls(self, path: str) -> list[Arrival]:
        return [a for a in self.arrivals if a.path == path]

    async def _arrived(self, request: Request) -> Arrival:
        arrival = Arrival(
            request.method,
            request.url.path,
            request.url.query,
            dict(request.headers),
            await request.body(),
        )
        self.arrivals.append(arrival)
        return arrival

    def _fixed(self, body: bytes) -> Any:
        async def answer(request: Request) -> Response:
            await self._arrived(request)
            return Response(body, media_type="application/json", headers=REPLY_HEADERS)

        return answer

    async def _unknown(self, request: Request) -> Response:
        arrival = await self._arrived(request)
        body = {"error": {"message": f"upstream: no route {arrival.path}", "type": "x"}}
        return Response(json.dumps(body), 404, REPLY_HEADERS, "application/json")

    async def _responses(self, request: Request) -> Response:
        body = (await self._arrived(request)).json()
        n = next(self._ids)
        response = _response(f"resp_{n}", body, _weather_output(body["input"], n))
        if body.get("stream") is not True:
            return Response(json.dumps(response), headers=REPLY_HEADERS)
        return StreamingResponse(
            _events(response), media_type="text/event-stream", headers=REPLY_HEADERS
        )


def _weather_output(given: Any, n: int) -> list[dict[str, Any]]:
    items = [{"role": "user", "content": given}] if isinstance(given, str) else given
    last = items[-1]
    if last.get("type") == "function_call_output":
        text = f"It is {last['output']} there."
        part = {"type": "output_text", "text": text, "annotations": []}
        return [
            {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
             "content": [part]}
        ]  # fmt: skip
    question = next(_text(i["content"]) for i in items if i.get("role") == "user")
    city = question.rsplit(" ", 1)[-1].rstrip("?")
    arguments = json.dumps({"city": city if city in TEMPERATURES else question})
    return [
        {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "get_weather",
         "arguments": arguments, "status": "completed"}
    ]  # fmt: skip


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content)


def _response(rid: str, body: dict[str, Any], output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": body.get("model") or "sim",
        "instructions": body.get("instructions"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "temperature": 1.0,
        "top_p": 1.0,
        "error": None,
        "incomplete_details": None,
        "metadata": {},
        "text": {"format": {"type": "text"}},
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        },
    }


def _events(response: dict[str, Any]) -> Iterator[bytes]:
    """The response streamed as the Responses API streams one."""
    sequence = itertools.count()

    def event(kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": next(sequence), **fields}
        return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()

    started = {**response, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            opened = {**item, "status": "in_progress", "content": []}
            yield event("response.output_item.added", output_index=index, item=opened)
            part = {"type": "output_text", "text": "", "annotations": []}
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            yield event("response.content_part.added", **where, part=part)
            for start in range(0, len(text), 7):
                yield event("response.output_text.delta", **where, delta=text[start : start + 7])
            yield event("response.output_text.done", **where, text=text)
            yield event("response.content_part.done", **where, part=item["content"][0])
        else:
            opened = {**item, "status": "in_progress", "arguments": ""}
            yield event("response.output_item.added", output_index=index, item=opened)
            where = {"item_id": item["id"], "output_index": index}
            yield event("response.function_call_arguments.delta", **where, delta=item["arguments"])
            yield event(
                "response.function_call_arguments.done", **where, arguments=item["arguments"]
            )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response)
