"""The learning gateway: an OpenAI-compatible endpoint in front of the user's own.

Each ``/v1/chat/completions`` request gets its namespace's active playbook in its system message
(:func:`combee.tasks.agent.with_playbook`, the rule a task's agent uses), goes to the upstream,
and comes back as the upstream sent it (status, body, stream), with the trace id in the
``X-Combee-Trace`` header. The exchange is in the store before the agent has its reply.

Namespaces: ``/agents/NAME/v1/...`` or the ``X-Combee-Agent: NAME`` header (else ``default``).
Conversations: the ``X-Combee-Session`` header, else the messages' prefix
(:mod:`combee.serve.chaining`). ``X-Combee-Playbook: off`` sends a request as it came.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import itertools
import logging
import math
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from itertools import islice
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from combee.errors import ConfigError
from combee.llm.redact import redact
from combee.llm.wire import dumps, loads
from combee.serve.chaining import Chain, continued
from combee.serve.learner import ContinuousLearner
from combee.serve.records import DEFAULT_NAMESPACE, Exchange, Feedback, PlaybookVersion
from combee.serve.settings import ServeSettings
from combee.serve.store import (
    TraceStore,
    activate_version,
    ensure_first,
    record_exchange,
    record_feedback,
)
from combee.serve.streams import StreamReader
from combee.serve.upstream import HttpUpstream, UpstreamError, UpstreamReply
from combee.tasks.agent import playbook_section, with_playbook

logger = logging.getLogger(__name__)

TRACE_HEADER = "x-combee-trace"
VERSION_HEADER = "x-combee-playbook-version"
AGENT_HEADER = "x-combee-agent"
SESSION_HEADER = "x-combee-session"
TASK_HEADER = "x-combee-task"
PLAYBOOK_HEADER = "x-combee-playbook"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_REMEMBERED = 200_000
"""Conversations (sessions and exchange digests) kept in memory for chaining."""
_FEEDBACK_CHARS = 100_000

Listener = Callable[[str], None]


class Gateway:
    """The gateway's state and its routes (:meth:`app`)."""

    def __init__(
        self,
        upstream: HttpUpstream,
        store: TraceStore,
        settings: ServeSettings,
        *,
        model: str = "",
        token: str | None = None,
        redact: bool = True,
        initial: str = "",
        on_feedback: Listener | None = None,
    ) -> None:
        self.upstream = upstream
        self.store = store
        self.settings = settings
        self.model = model
        self._token = token
        self._redact = redact
        self._initial = initial
        self._on_feedback = on_feedback
        self._max_body = int(settings.max_body_mb * 1_000_000)
        self._sessions: dict[tuple[str, str], str] = {}
        self._chains: dict[tuple[str, str], str] = {}
        self._playbooks: dict[str, PlaybookVersion | None] = {}
        self._in_flight = 0
        self.learner: ContinuousLearner | None = None
        """Runs learning rounds (``POST /v1/learn``); None when this gateway does not learn."""
        for namespace, session, trace in store.session_traces(_REMEMBERED):
            self._sessions[(namespace, session)] = trace
        for namespace, key, trace in store.chain_keys(_REMEMBERED):
            self._chains[(namespace, key)] = trace

    # --- the playbook served ----------------------------------------------------------------

    async def playbook(self, namespace: str) -> PlaybookVersion | None:
        """The active playbook of ``namespace`` (version 1, the starting one, stored when the
        namespace is first seen)."""
        if namespace not in self._playbooks:
            await self.store.write_async(ensure_first(namespace, self._initial))
            self._playbooks[namespace] = await asyncio.to_thread(self.store.active, namespace)
        return self._playbooks[namespace]

    def refresh(self) -> None:
        """Read the active playbooks again (after a round, a rollback, or another process's
        write to the store)."""
        self._playbooks = {ns: self.store.active(ns) for ns in self._playbooks}

    # --- routes -------------------------------------------------------------------------------

    def app(self, lifespan: Any = None) -> Starlette:
        chat = self._chat
        return Starlette(
            routes=[
                Route("/v1/chat/completions", chat, methods=["POST"]),
                Route("/agents/{agent}/v1/chat/completions", chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/agents/{agent}/v1/models", self._models, methods=["GET"]),
                Route("/v1/feedback", self._feedback, methods=["POST"]),
                Route("/agents/{agent}/v1/feedback", self._feedback, methods=["POST"]),
                Route("/v1/playbook", self._playbook, methods=["GET"]),
                Route("/agents/{agent}/v1/playbook", self._playbook, methods=["GET"]),
                Route("/v1/playbook/rollback", self._rollback, methods=["POST"]),
                Route("/agents/{agent}/v1/playbook/rollback", self._rollback, methods=["POST"]),
                Route("/v1/learn", self._learn, methods=["POST"]),
                Route("/agents/{agent}/v1/learn", self._learn, methods=["POST"]),
                Route("/healthz", self._health, methods=["GET"]),
                Route("/readyz", self._ready, methods=["GET"]),
            ],
            lifespan=lifespan,
        )

    def _refused(self, request: Request) -> Response | None:
        if self._token is None:
            return None
        given = request.headers.get("authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {self._token}".encode()):
            return None
        return error(401, "this gateway needs its token: Authorization: Bearer <token>")

    def _namespace(self, request: Request) -> str:
        name = request.path_params.get("agent") or request.headers.get(AGENT_HEADER)
        if not name:
            return DEFAULT_NAMESPACE
        if not _NAME.fullmatch(name):
            raise _BadRequest(
                f"agent namespace {name[:80]!r}: letters, digits, '.', '-' and '_', "
                "at most 64, starting with a letter or digit"
            )
        return str(name)

    async def _json_body(self, request: Request) -> Any:
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self._max_body:
                await _drain(request, 8 * self._max_body - size)
                raise _BadRequest(f"the body is over {self.settings.max_body_mb:g} MB", 413)
            chunks.append(chunk)
        raw = b"".join(chunks)
        try:
            return raw, loads(raw)
        except ValueError as problem:
            raise _BadRequest(f"the body is not JSON ({problem})") from None

    async def _chat(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            namespace = self._namespace(request)
            raw, body = await self._json_body(request)
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise _BadRequest("the body must be a JSON object with a 'messages' list")
            if not all(isinstance(m, dict) for m in body["messages"]):
                raise _BadRequest("every message must be a JSON object")
        except _BadRequest as problem:
            return error(problem.status, str(problem))
        messages: list[dict[str, Any]] = body["messages"]
        session = request.headers.get(SESSION_HEADER, "")[:256]
        trace_id, chain = self._trace_for(namespace, session, messages)
        served = None
        if request.headers.get(PLAYBOOK_HEADER, "").lower() != "off":
            served = await self.playbook(namespace)
        sent_body = _with_playbook(body, served, self.model)
        outgoing = raw if sent_body is body else dumps(sent_body)
        headers = {TRACE_HEADER: trace_id}
        if served is not None:
            headers[VERSION_HEADER] = str(served.version)
        started = time.perf_counter()
        self._in_flight += 1
        try:
            reply = await self.upstream.post("/chat/completions", outgoing, {})
        except UpstreamError as problem:
            self._in_flight -= 1
            return error(502, str(problem), headers, kind="upstream_error")
        exchange = _ExchangeDraft(
            trace_id=trace_id,
            namespace=namespace,
            session=session,
            task=request.headers.get(TASK_HEADER, "")[:256],
            messages=messages,
            tools=tools if isinstance(tools := body.get("tools"), list) else [],
            model=str(sent_body.get("model") or ""),
            version=None if served is None else served.version,
            started=started,
            chain=chain,
        )
        if body.get("stream") is True and reply.status == 200:
            return StreamingResponse(
                self._stream(reply, exchange),
                status_code=200,
                headers={**reply.headers, **headers},
                media_type=reply.headers.get("content-type", "text/event-stream"),
            )
        try:
            content = await reply.body()
        except Exception as problem:  # the upstream broke off mid-body
            self._in_flight -= 1
            return error(502, f"the upstream broke off its reply: {problem}", headers)
        finally:
            reply.close()
        answered = time.perf_counter()
        try:
            message = _reply_message(content) if reply.status == 200 else None
            await self._record(exchange, message, reply.status)
        except Exception as problem:  # not stored: the agent must not take it as recorded
            logger.error("an exchange could not be stored: %s", problem)
            return error(500, f"the exchange could not be stored: {problem}", headers)
        finally:
            self._in_flight -= 1
        # Where the time went, for operators and benchmarks (the W3C Server-Timing header).
        headers["server-timing"] = (
            f"upstream;dur={1000 * (answered - started):.2f}, "
            f"store;dur={1000 * (time.perf_counter() - answered):.2f}"
        )
        passed = {k: v for k, v in reply.headers.items() if k != "content-type"}
        return Response(
            content,
            status_code=reply.status,
            headers={**passed, **headers},
            media_type=reply.headers.get("content-type", "application/json"),
        )

    async def _stream(self, reply: UpstreamReply, exchange: _ExchangeDraft) -> AsyncIterator[bytes]:
        reader = StreamReader()
        recorded = False
        try:
            async for chunk in reply.chunks():
                ready = reader.feed(chunk)
                if ready:
                    yield ready
            await self._record(exchange, reader.message(), 200)
            recorded = True
            rest = reader.rest()
            if rest:
                yield rest
        finally:
            reply.close()
            if not recorded:  # the agent or the upstream went away mid-stream
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._record(exchange, reader.message(), 499))
            self._in_flight -= 1

    def _trace_for(
        self, namespace: str, session: str, messages: Sequence[Mapping[str, Any]]
    ) -> tuple[str, Chain]:
        found, chain = continued(namespace, messages, self._chains)
        if session:
            key = (namespace, session)
            trace = self._sessions.get(key)
            if trace is None:
                trace = self._sessions[key] = _new_id("tr")
                _forget_oldest(self._sessions)
            return trace, chain
        return found or _new_id("tr"), chain

    async def _record(
        self, draft: _ExchangeDraft, reply: Mapping[str, Any] | None, status: int
    ) -> None:
        key = draft.chain.extended(reply) if reply is not None else ""
        shown = redacted if self._redact else _same
        exchange = Exchange(
            id=_new_id("ex"),
            trace_id=draft.trace_id,
            namespace=draft.namespace,
            created=time.time(),
            messages=shown(draft.messages),
            reply=None if reply is None else shown(reply),
            status=status,
            playbook_version=draft.version,
            model=draft.model,
            tools=shown(draft.tools),
            chain_key=key,
            session_id=draft.session,
            task_id=draft.task,
            latency_s=time.perf_counter() - draft.started,
        )
        await self.store.write_async(record_exchange(exchange))
        if key:
            self._chains[(draft.namespace, key)] = draft.trace_id
            _forget_oldest(self._chains)

    async def _models(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            status, content = await self.upstream.get("/models")
        except UpstreamError as problem:
            return error(502, str(problem), kind="upstream_error")
        if status == 200 or not self.model:
            return Response(content, status_code=status, media_type="application/json")
        listed = {"id": self.model, "object": "model", "created": 0, "owned_by": "upstream"}
        return JSONResponse({"object": "list", "data": [listed]})

    async def _feedback(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            namespace = self._namespace(request)
            _, body = await self._json_body(request)
            feedback = self._feedback_of(namespace, body)
        except _BadRequest as problem:
            return error(problem.status, str(problem))
        seq = await self.store.write_async(record_feedback(feedback))
        if self._on_feedback is not None:
            self._on_feedback(feedback.namespace)
        return JSONResponse({"id": seq, "trace_id": feedback.trace_id, "namespace": namespace})

    def _feedback_of(self, namespace: str, body: Any) -> Feedback:
        if not isinstance(body, dict):
            raise _BadRequest("the body must be a JSON object")
        unknown = sorted(set(body) - {"trace_id", "session_id", "reward", "success", "feedback"})
        if unknown:
            raise _BadRequest(
                f"unknown field {unknown[0]!r} (fields: trace_id or session_id, reward, success, "
                "feedback)"
            )
        trace_id = body.get("trace_id")
        session = body.get("session_id")
        if isinstance(session, str) and session and not trace_id:
            trace_id = self._sessions.get((namespace, session))
            if trace_id is None:
                raise _BadRequest(f"no conversation with session id {session[:80]!r}", 404)
        if not isinstance(trace_id, str) or not trace_id:
            raise _BadRequest(
                "name the conversation: trace_id (the X-Combee-Trace header) or session_id"
            )
        stored = self.store.trace_namespace(trace_id)
        if stored is None:
            raise _BadRequest(f"no trace {trace_id[:80]!r} in this gateway's store", 404)
        reward = body.get("reward")
        if reward is not None and (
            isinstance(reward, bool)
            or not isinstance(reward, int | float)
            or not math.isfinite(reward)
        ):
            raise _BadRequest(f"reward must be a finite number (got {reward!r})")
        success = body.get("success")
        if success is not None and not isinstance(success, bool):
            raise _BadRequest(f"success must be true or false (got {success!r})")
        text = body.get("feedback") or ""
        if not isinstance(text, str) or len(text) > _FEEDBACK_CHARS:
            raise _BadRequest(f"feedback must be a text of at most {_FEEDBACK_CHARS} characters")
        if reward is None and success is None and not text:
            raise _BadRequest("give a reward, a success flag or feedback text")
        return Feedback(
            trace_id=trace_id,
            namespace=stored,
            reward=None if reward is None else float(reward),
            success=success,
            text=redact(text) if self._redact else text,
            created=time.time(),
        )

    async def _playbook(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            namespace = self._namespace(request)
        except _BadRequest as problem:
            return error(problem.status, str(problem))
        self.refresh()
        active = await self.playbook(namespace)
        versions = self.store.versions(namespace)
        return JSONResponse(
            {
                "namespace": namespace,
                "active": None if active is None else version_json(active),
                "versions": [version_json(v, text=False) for v in versions],
            }
        )

    async def _rollback(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            namespace = self._namespace(request)
            _, body = await self._json_body(request) if await request.body() else (b"", {})
            if not isinstance(body, dict):
                raise _BadRequest("the body must be a JSON object")
            target = body.get("version")
            if target is not None and (isinstance(target, bool) or not isinstance(target, int)):
                raise _BadRequest(f"version must be a whole number (got {target!r})")
            version = target if target is not None else rollback_target(self.store, namespace)
            await self.store.write_async(activate_version(namespace, version))
        except _BadRequest as problem:
            return error(problem.status, str(problem))
        except ConfigError as problem:
            return error(404, str(problem))
        self.refresh()
        logger.info("namespace %s: playbook v%d active (rollback)", namespace, version)
        return JSONResponse({"namespace": namespace, "active": version})

    async def _learn(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            namespace = self._namespace(request)
        except _BadRequest as problem:
            return error(problem.status, str(problem))
        if self.learner is None:
            return error(409, "this gateway does not learn (started without a learner model)")
        try:
            result = await self.learner.run_now(namespace)
        except Exception as problem:  # reported to the caller; the gateway keeps serving
            logger.error("learning round [%s] failed: %s", namespace, problem)
            return error(500, f"the learning round failed: {problem}", kind="server_error")
        return JSONResponse(
            {
                "namespace": namespace,
                "line": result.line(),
                "version": result.version,
                "activated": result.activated,
                "traces": result.traces,
                "check": result.check,
            }
        )

    async def _health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "in_flight": self._in_flight})

    async def _ready(self, request: Request) -> Response:
        try:
            status, _ = await asyncio.wait_for(self.upstream.get("/models"), timeout=5.0)
        except (UpstreamError, TimeoutError) as problem:
            return JSONResponse({"ready": False, "why": str(problem) or "timeout"}, 503)
        if status >= 500:
            why = f"the upstream answered {status}"
            return JSONResponse({"ready": False, "why": why}, 503)
        return JSONResponse({"ready": True})


def rollback_target(store: TraceStore, namespace: str) -> int:
    """The version a rollback without a number goes back to: the active one's parent, else the
    latest retired version."""
    versions = store.versions(namespace)
    active = next((v for v in versions if v.status == "active"), None)
    if active is not None and active.parent is not None:
        return active.parent
    retired = [v.version for v in versions if v.status == "retired"]
    if not retired:
        raise ConfigError(
            f"namespace {namespace!r} has no earlier playbook to go back to", setting="version"
        )
    return retired[-1]


def version_json(version: PlaybookVersion, *, text: bool = True) -> dict[str, Any]:
    found: dict[str, Any] = {
        "version": version.version,
        "status": version.status,
        "created": version.created,
        "parent": version.parent,
        "traces": len(version.traces),
        "check": version.check,
        "note": version.note,
    }
    if text:
        found["text"] = version.text
        found["provenance"] = dict(version.provenance)
    return found


class _ExchangeDraft:
    __slots__ = (
        "chain", "messages", "model", "namespace", "session", "started", "task", "tools",
        "trace_id", "version",
    )  # fmt: skip

    def __init__(
        self,
        *,
        trace_id: str,
        namespace: str,
        session: str,
        task: str,
        messages: list[dict[str, Any]],
        tools: list[Any],
        model: str,
        version: int | None,
        started: float,
        chain: Chain,
    ) -> None:
        self.trace_id = trace_id
        self.namespace = namespace
        self.session = session
        self.task = task
        self.messages = messages
        self.tools = tools
        self.model = model
        self.version = version
        self.started = started
        self.chain = chain


class _BadRequest(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def error(
    status: int, message: str, headers: Mapping[str, str] | None = None, *, kind: str = ""
) -> JSONResponse:
    """An error in the OpenAI API's shape, so an agent's SDK shows ``message``."""
    kind = kind or ("authentication_error" if status == 401 else "invalid_request_error")
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": status}},
        status_code=status,
        headers=dict(headers or {}),
    )


def _with_playbook(
    body: dict[str, Any], served: PlaybookVersion | None, model: str
) -> dict[str, Any]:
    """The body to send: the playbook in its system message (``body`` itself when nothing
    changes, so its bytes go on as they came)."""
    text = playbook_section(served.text) if served is not None else ""
    needs_model = not body.get("model") and model
    if not text and not needs_model:
        return body
    sent = dict(body)
    if needs_model:
        sent["model"] = model
    if text:
        messages = list(body["messages"])
        first = messages[0] if messages else None
        if (
            first is not None
            and first.get("role") in ("system", "developer")
            and isinstance(first.get("content"), str | None)
        ):
            messages[0] = {**first, "content": with_playbook(first.get("content") or "", text)}
        else:
            messages.insert(0, {"role": "system", "content": text})
        sent["messages"] = messages
    return sent


async def _drain(request: Request, budget: int) -> None:
    """Read and drop the rest of an oversized body (up to ``budget`` bytes), so the client,
    still sending, can read the 413; beyond the budget the connection is simply closed."""
    async for chunk in request.stream():
        budget -= len(chunk)
        if budget < 0:
            return


def _reply_message(content: bytes) -> dict[str, Any] | None:
    try:
        body = loads(content)
        message = body["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    return message if isinstance(message, dict) else None


def redacted(value: Any) -> Any:
    """``value`` (JSON) with every text redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redacted(item) for item in value]
    if isinstance(value, dict):
        return {key: redacted(item) for key, item in value.items()}
    return value


def _same(value: Any) -> Any:
    return value


_PROCESS = os.urandom(6).hex()
_COUNTER = itertools.count(1)


def _new_id(prefix: str) -> str:
    """Unique across processes and restarts (a random part per process, then a count): no
    call to the system's random source per request."""
    return f"{prefix}-{_PROCESS}{next(_COUNTER):010x}"


def _forget_oldest(remembered: dict[Any, Any]) -> None:
    excess = len(remembered) - _REMEMBERED
    if excess > 0:
        for key in list(islice(remembered, excess)):
            del remembered[key]
