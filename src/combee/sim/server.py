"""An OpenAI-compatible chat-completions server with simulated latency and faults.

Tests and benchmarks talk to it over real HTTP, so the real client, retries and concurrency
limits are exercised. A pluggable :data:`Responder` decides the assistant's message (its text,
or native tool calls through :class:`Reply`); the server adds latency (time to first token,
prompt and decode throughput, a capacity limit with a FIFO queue, jitter, stragglers) and
injected faults (429 with Retry-After, 500, hangs, malformed bodies), all drawn from a seeded
RNG per request index. Gates (:mod:`combee.sim.gates`) hold chosen calls until their whole wave
has arrived, so tests prove that calls overlap by counting rather than by timing. A request with
``"stream": true`` gets its reply as server-sent events (:mod:`combee.sim.streaming`), the time
to the first token before the first chunk and the decode time spread over the chunks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from combee.sim.completions import completion_body
from combee.sim.config import SimConfig
from combee.sim.extra import missing, needs
from combee.sim.gates import Gatekeeper
from combee.sim.request_plan import Plan, latency, plan_for
from combee.sim.responders import HTTPFault, Responder, echo_responder

try:
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from combee.sim.flood import PADDING, FloodingReply, SentBytes, padded_completion
    from combee.sim.streaming import (
        EventStream,
        stream_events,
        truncated,
        wants_stream,
        wants_usage,
    )
except ImportError as error:  # a plain install, without the sim extra
    absent = missing() or [str(error.name)]
    raise ImportError(needs("the scripted server", absent), name=error.name) from error

CLIENT_CLOSED = 499
"""Recorded status of a request whose client went away before the reply (nginx's convention)."""


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it (times from ``time.perf_counter()``)."""

    index: int
    schema_name: str | None
    body: dict[str, Any]
    arrived: float
    started: float
    """When it left the capacity queue (equal to ``arrived`` for faults answered at once)."""
    finished: float
    status: int
    fault: str | None


@dataclass
class _State:
    """One script: what to answer and what happened so far (records are read from other threads)."""

    responder: Responder
    config: SimConfig
    lock: threading.Lock = field(default_factory=threading.Lock)
    records: list[RequestRecord] = field(default_factory=list)
    arrivals: int = 0
    capacity: asyncio.Semaphore | None = None
    gate: asyncio.Event | None = None
    gatekeeper: Gatekeeper = field(init=False)
    flood_sent: SentBytes = field(default_factory=SentBytes)

    def __post_init__(self) -> None:
        self.gatekeeper = Gatekeeper(self.config.gates, self.config.gate_timeout_s)

    def record(
        self,
        index: int,
        body: dict[str, Any],
        arrived: float,
        started: float,
        status: int,
        fault: str | None,
    ) -> None:
        record = RequestRecord(
            index=index,
            schema_name=_schema_name(body),
            body=body,
            arrived=arrived,
            started=started,
            finished=time.perf_counter(),
            status=status,
            fault=fault,
        )
        with self.lock:
            self.records.append(record)


class SimServer:
    """The Starlette app and its request log."""

    def __init__(self, responder: Responder = echo_responder, config: SimConfig | None = None):
        self._state = _State(responder, config or SimConfig())
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    @property
    def config(self) -> SimConfig:
        return self._state.config

    @property
    def records(self) -> list[RequestRecord]:
        """A copy of the requests finished so far, in the order they finished."""
        state = self._state
        with state.lock:
            return list(state.records)

    @property
    def flood_sent(self) -> int:
        """Body bytes of flooding replies sent so far (``SimConfig.flood_bytes``)."""
        return self._state.flood_sent.count

    def clear_records(self) -> None:
        state = self._state
        with state.lock:
            state.records.clear()

    def reset(self, responder: Responder | None = None, config: SimConfig | None = None) -> None:
        """Start afresh (records, request indices, queues), optionally with a new script.

        Requests still in flight finish under the old script and are not recorded in the new one,
        so one server can serve many tests.
        """
        old = self._state
        self._state = _State(responder or old.responder, config or old.config)

    async def _models(self, request: Request) -> Response:
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "sim"}
            for name in self.config.models
        ]
        return JSONResponse({"object": "list", "data": data})

    async def _chat(self, request: Request) -> Response:
        arrived = time.perf_counter()
        state = self._state
        config = state.config
        index = state.arrivals
        state.arrivals += 1
        wanted = config.authorization
        if wanted is not None and request.headers.get("authorization") != wanted:
            state.record(index, {}, arrived, arrived, 401, None)
            return _error(401, "the credentials are missing or wrong")
        try:
            raw = await request.body()
        except ClientDisconnect:  # the client gave up on the call (a cancelled batch)
            return Response(status_code=499)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            state.record(index, {}, arrived, arrived, 400, None)
            return _error(400, "the body must be a JSON object with a 'messages' list")
        plan = plan_for(config, index)
        if config.gate_n is not None:
            await _wait_for_gate(state, config.gate_n, index)
        await state.gatekeeper.pass_through(_schema_name(body))
        if plan.fault in ("429", "500"):
            status = int(plan.fault)
            state.record(index, body, arrived, arrived, status, plan.fault)
            if config.flood_bytes is not None:
                error = {"error": {"message": PADDING, "type": "server_error", "code": status}}
                return FloodingReply(error, config.flood_bytes, state.flood_sent, status)
            if status == 429:
                headers = {"retry-after": f"{config.retry_after_s:g}"}
                return _error(429, "simulated rate limit", headers)
            return _error(500, "simulated server error")
        if plan.fault == "hang" and not await _sleep_unless_disconnected(request, config.hang_s):
            state.record(index, body, arrived, arrived, CLIENT_CLOSED, plan.fault)
            return Response(status_code=CLIENT_CLOSED)
        return await _serve(state, request, index, body, plan, arrived)


async def _serve(
    state: _State,
    request: Request,
    index: int,
    body: dict[str, Any],
    plan: Plan,
    arrived: float,
) -> Response:
    capacity = _capacity(state)
    if capacity is not None:
        await capacity.acquire()
    streaming = False  # a stream keeps its place in the capacity limit until it ends
    try:
        started = time.perf_counter()
        try:
            answer = state.responder(body)
            reply = completion_body(index, body, answer, state.config.honour_max_tokens)
        except HTTPFault as fault:
            state.record(index, body, arrived, started, fault.status, None)
            return _error(fault.status, fault.message)
        except Exception as error:  # a responder bug must show up as a 500, not kill the server
            state.record(index, body, arrived, started, 500, "responder_error")
            return _error(500, f"responder failed: {type(error).__name__}: {error}")
        usage = reply["usage"]
        first, decode = latency(state.config, usage["prompt_tokens"], usage["completion_tokens"])
        if not wants_stream(body):  # the whole reply at once
            first, decode = first + decode, 0.0
        factor = plan.latency_factor
        if not await _sleep_unless_disconnected(request, first * factor):
            state.record(index, body, arrived, started, CLIENT_CLOSED, plan.fault)
            return Response(status_code=CLIENT_CLOSED)
        if wants_stream(body):
            streaming = True
            return _stream(
                state, capacity, index, body, plan, arrived, started, reply, decode * factor
            )
    finally:
        if capacity is not None and not streaming:
            capacity.release()
    state.record(index, body, arrived, started, 200, plan.fault)
    if plan.fault == "bad_body":
        return _bad_body(reply, plan.bad_body_variant)
    if state.config.flood_bytes is not None:
        body = padded_completion(reply)
        return FloodingReply(body, state.config.flood_bytes, state.flood_sent, 200)
    return JSONResponse(reply)


def _stream(
    state: _State,
    capacity: asyncio.Semaphore | None,
    index: int,
    body: dict[str, Any],
    plan: Plan,
    arrived: float,
    started: float,
    reply: dict[str, Any],
    decode_s: float,
) -> Response:
    """The reply as server-sent events; recorded, and its capacity given back, once it ends."""
    events = stream_events(reply, wants_usage(body))
    if plan.fault == "bad_body":
        events = truncated(events, plan.bad_body_variant)

    def end(sent_all: bool) -> None:
        if capacity is not None:
            capacity.release()
        status = 200 if sent_all else CLIENT_CLOSED
        state.record(index, body, arrived, started, status, plan.fault)

    return EventStream(events, decode_s, end)


def _capacity(state: _State) -> asyncio.Semaphore | None:
    if state.config.capacity is None:
        return None
    if state.capacity is None:
        state.capacity = asyncio.Semaphore(state.config.capacity)
    return state.capacity


async def _wait_for_gate(state: _State, gate_n: int, index: int) -> None:
    if state.gate is None:
        state.gate = asyncio.Event()
    if index + 1 >= gate_n:
        state.gate.set()
    # The gate only proves overlap; it must never hang a test forever.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(state.gate.wait(), state.config.gate_timeout_s)


async def _sleep_unless_disconnected(request: Request, seconds: float) -> bool:
    """Sleep ``seconds``; False as soon as the client disconnects instead."""
    if seconds <= 0:
        return True
    watcher = asyncio.ensure_future(_disconnected(request))
    done, _ = await asyncio.wait({watcher}, timeout=seconds)
    if done:
        return False
    watcher.cancel()
    return True


async def _disconnected(request: Request) -> None:
    # Once the body is read, the server's receive() only returns on disconnect.
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _schema_name(body: Mapping[str, Any]) -> str | None:
    response_format = body.get("response_format")
    if isinstance(response_format, dict):
        spec = response_format.get("json_schema")
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            return str(spec["name"])
    return None


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    kind = "rate_limit_error" if status == 429 else "invalid_request_error"
    if status >= 500:
        kind = "server_error"
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": status}},
        status_code=status,
        headers=dict(headers or {}),
    )


def _bad_body(reply: Mapping[str, Any], variant: int) -> Response:
    if variant == 0:
        encoded = json.dumps(reply)
        return Response(encoded[: len(encoded) // 2], media_type="application/json")
    return Response("<html>upstream hiccup</html>", media_type="application/json")
