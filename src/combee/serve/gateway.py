"""The learning gateway: an OpenAI-compatible endpoint in front of the user's own.

Each ``/v1/chat/completions`` request gets its namespace's active playbook in its system message
(:mod:`combee.serve.playbook_injection`), goes to the upstream, and comes back as the upstream
sent it (status, body, stream), with the trace id in the ``X-Combee-Trace`` header. The exchange
is in the store before the agent has its reply. A ``/v1/responses`` request is relayed the same
way, the playbook in its ``instructions`` (:mod:`combee.serve.exchange_form`). Every other
``/v1/...`` route is passed through unchanged and not stored (:mod:`combee.serve.passthrough`).

Namespaces: ``/agents/NAME/v1/...`` or the ``X-Combee-Agent: NAME`` header (else ``default``).
Conversations: the ``X-Combee-Session`` header, else the messages' prefix
(:mod:`combee.serve.conversations`). ``X-Combee-Playbook: off`` sends a request as it came.
The feedback and playbook routes are in :mod:`combee.serve.feedback_route` and
:mod:`combee.serve.playbook_routes`; who may call which route, in :mod:`combee.serve.access`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from combee.llm.wire import dumps
from combee.serve.access import Access
from combee.serve.agent_presence import AgentGone, while_agent_waits
from combee.serve.conversations import Conversations, new_id
from combee.serve.exchange_draft import ExchangeDraft
from combee.serve.exchange_form import CHAT, RESPONSES, ExchangeForm, ReplyStream
from combee.serve.feedback_route import feedback_route
from combee.serve.forwarded_headers import to_upstream
from combee.serve.http_errors import BadRequest, error, route_error, sse_error
from combee.serve.learner import ContinuousLearner
from combee.serve.passthrough import passthrough_route
from combee.serve.playbook_routes import learn_route, playbook_route, rollback_route
from combee.serve.records import DEFAULT_NAMESPACE, PlaybookVersion
from combee.serve.request_body import json_body
from combee.serve.served_playbooks import ServedPlaybooks
from combee.serve.settings import ServeSettings
from combee.serve.store import TraceStore
from combee.serve.store_database import StoreUnavailable
from combee.serve.store_health import StoreHealth
from combee.serve.store_writes import record_exchange
from combee.serve.upstream import HttpUpstream, UpstreamError, UpstreamReply, UpstreamTimeout

logger = logging.getLogger(__name__)

TRACE_HEADER = "x-combee-trace"
VERSION_HEADER = "x-combee-playbook-version"
AGENT_HEADER = "x-combee-agent"
SESSION_HEADER = "x-combee-session"
TASK_HEADER = "x-combee-task"
PLAYBOOK_HEADER = "x-combee-playbook"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

_DOWN = "service_unavailable"

_ANY = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]

Listener = Callable[[str], None]
Handler = Callable[["Gateway", Request], Awaitable[Response]]


class Gateway:
    """The gateway's state and its routes (:meth:`app`)."""

    def __init__(
        self,
        upstream: HttpUpstream,
        store: TraceStore,
        settings: ServeSettings,
        *,
        model: str = "",
        access: Access | None = None,
        redact: bool = True,
        initial: str = "",
        on_feedback: Listener | None = None,
    ) -> None:
        self.upstream = upstream
        self.store = store
        self.settings = settings
        self.model = model
        if access is None:
            access = Access(open_operator_routes=settings.open_operator_routes)
        self.access = access
        """Who may call which route, and whose feedback text is trusted."""
        self.redacts = redact
        """Whether secret-like strings are replaced in what the store keeps."""
        self._initial = initial
        self.on_feedback = on_feedback
        """Told the namespace of each feedback stored."""
        self.conversations = Conversations(store)
        self.store_health = StoreHealth(store)
        self.served = ServedPlaybooks(store, initial, settings.max_namespaces)
        self._in_flight = 0
        self.learner: ContinuousLearner | None = None
        """Runs learning rounds (``POST /v1/learn``); None when this gateway does not learn."""

    # --- the playbook served ----------------------------------------------------------------

    async def playbook(self, namespace: str) -> PlaybookVersion | None:
        """The active playbook of ``namespace`` (version 1, the starting one, stored when the
        namespace is first seen; :class:`~combee.serve.served_playbooks.NamespaceRefused` past
        the ``max_namespaces`` setting)."""
        return await self.served.active(namespace)

    def refresh(self, namespace: str = "") -> None:
        """Serve the active playbooks as the store has them now (after a round, a rollback, or
        another process's write): ``namespace``'s, or ("") every namespace's, are read again
        when next needed. Costs nothing per namespace; safe to call from any thread."""
        self.served.forget(namespace)

    # --- routes -------------------------------------------------------------------------------

    def app(self, lifespan: Any = None) -> Starlette:
        chat = self._relaying(CHAT)
        responses = self._relaying(RESPONSES)
        passthrough = self._route(passthrough_route)
        feedback = self._route(feedback_route)
        playbook = self._route(playbook_route)
        rollback = self._route(rollback_route)
        learn = self._route(learn_route)
        return Starlette(
            routes=[
                Route("/v1/chat/completions", chat, methods=["POST"]),
                Route("/agents/{agent}/v1/chat/completions", chat, methods=["POST"]),
                Route("/v1/responses", responses, methods=["POST"]),
                Route("/agents/{agent}/v1/responses", responses, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/agents/{agent}/v1/models", self._models, methods=["GET"]),
                Route("/v1/feedback", feedback, methods=["POST"]),
                Route("/agents/{agent}/v1/feedback", feedback, methods=["POST"]),
                Route("/v1/playbook", playbook, methods=["GET"]),
                Route("/agents/{agent}/v1/playbook", playbook, methods=["GET"]),
                Route("/v1/playbook/rollback", rollback, methods=["POST"]),
                Route("/agents/{agent}/v1/playbook/rollback", rollback, methods=["POST"]),
                Route("/v1/learn", learn, methods=["POST"]),
                Route("/agents/{agent}/v1/learn", learn, methods=["POST"]),
                Route("/healthz", self._health, methods=["GET"]),
                Route("/readyz", self._ready, methods=["GET"]),
                Route("/v1/{path:path}", passthrough, methods=_ANY),
                Route("/agents/{agent}/v1/{path:path}", passthrough, methods=_ANY),
            ],
            lifespan=lifespan,
            exception_handlers={404: route_error, 405: route_error},
        )

    def _relaying(self, form: ExchangeForm) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await self._relay(request, form)

        return endpoint

    def _route(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await handler(self, request)

        return endpoint

    def namespace_of(self, request: Request) -> str:
        """The request's agent namespace (:class:`BadRequest` for a name out of form)."""
        name = request.path_params.get("agent") or request.headers.get(AGENT_HEADER)
        if not name:
            return DEFAULT_NAMESPACE
        if not _NAME.fullmatch(name):
            raise BadRequest(
                f"agent namespace {name[:80]!r}: letters, digits, '.', '-' and '_', "
                "at most 64, starting with a letter or digit"
            )
        return str(name)

    async def _relay(self, request: Request, form: ExchangeForm) -> Response:
        refused = self.access.agent_refusal(request) or await self.store_refusal()
        if refused is not None:
            return refused
        try:
            namespace = self.namespace_of(request)
            raw, body = await json_body(request, self.settings.max_body_mb)
            messages = form.messages(body)
            playbook = await self.playbook(namespace)  # a new namespace is made, or refused
        except BadRequest as problem:
            return error(problem.status, str(problem))
        except StoreUnavailable as problem:
            return error(503, f"{problem}; retry shortly", {"retry-after": "1"}, kind=_DOWN)
        session = request.headers.get(SESSION_HEADER, "")[:256]
        trace_id, chain = self.conversations.trace_for(namespace, session, messages)
        served = playbook if request.headers.get(PLAYBOOK_HEADER, "").lower() != "off" else None
        sent_body = form.with_playbook(body, served, self.model)
        outgoing = raw if sent_body is body else dumps(sent_body)
        headers = {TRACE_HEADER: trace_id}
        if served is not None:
            headers[VERSION_HEADER] = str(served.version)
        exchange = ExchangeDraft(
            trace_id=trace_id,
            namespace=namespace,
            session=session,
            task=request.headers.get(TASK_HEADER, "")[:256],
            messages=messages,
            tools=form.tools(body),
            model=str(sent_body.get("model") or ""),
            version=None if served is None else served.version,
            started=time.perf_counter(),
            chain=chain,
        )
        self._in_flight += 1
        try:
            posted = self.upstream.post(
                form.path, outgoing, to_upstream(request.headers.items()), request.url.query
            )
            reply = await while_agent_waits(request, posted)
        except (UpstreamError, AgentGone) as problem:
            self._in_flight -= 1
            return await self._unanswered(problem, exchange, headers)
        if body.get("stream") is True and reply.status == 200:
            return StreamingResponse(
                self._stream(reply, exchange, form.stream()),
                status_code=200,
                headers={**reply.headers, **headers},
                media_type=reply.headers.get("content-type", "text/event-stream"),
            )
        try:
            content = await while_agent_waits(request, reply.body())
        except (UpstreamError, AgentGone) as problem:  # broke off, went silent, or nobody waits
            reply.abort()
            self._in_flight -= 1
            return await self._unanswered(problem, exchange, headers)
        finally:
            reply.close()
        answered = time.perf_counter()
        try:
            message = form.reply(content) if reply.status == 200 else None
            await self._record(exchange, message, reply.status)
        except Exception as problem:  # not stored: the agent must not take it as recorded
            logger.error("an exchange could not be stored: %s", problem)
            return error(503, _unstored(problem), {**headers, "retry-after": "1"}, kind=_DOWN)
        finally:
            self._in_flight -= 1
        # Where the time went, for operators and benchmarks (the W3C Server-Timing header).
        headers["server-timing"] = (
            f"upstream;dur={1000 * (answered - exchange.started):.2f}, "
            f"store;dur={1000 * (time.perf_counter() - answered):.2f}"
        )
        passed = {k: v for k, v in reply.headers.items() if k != "content-type"}
        return Response(
            content,
            status_code=reply.status,
            headers={**passed, **headers},
            media_type=reply.headers.get("content-type", "application/json"),
        )

    async def _stream(
        self, reply: UpstreamReply, exchange: ExchangeDraft, reader: ReplyStream
    ) -> AsyncIterator[bytes]:
        recorded = False
        try:
            async for chunk in reply.chunks():
                ready = reader.feed(chunk)
                if ready:
                    yield ready
            try:
                await self._record(exchange, reader.message(), 200)
            except Exception as problem:  # not stored: end the stream with an error, not [DONE]
                recorded = True
                logger.error("an exchange could not be stored: %s", problem)
                yield sse_error(_unstored(problem), _DOWN)
                return
            recorded = True
            rest = reader.rest()
            if rest:
                yield rest
        except UpstreamError as problem:  # the upstream broke off or went silent mid-stream
            status, message = self._upstream_failure(problem)
            yield sse_error(message, "upstream_error", status)
        finally:
            self._in_flight -= 1
            if recorded:
                reply.close()
            else:  # the agent or the upstream went away mid-stream: its connection is closed
                reply.abort()
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._record(exchange, reader.message(), 499))

    async def _unanswered(
        self, problem: Exception, exchange: ExchangeDraft, headers: Mapping[str, str]
    ) -> Response:
        """The answer to a request the upstream did not answer: it failed (502), stayed silent
        past the upstream timeout (504), or the agent left first (recorded as 499, as a stream
        the agent left is)."""
        if isinstance(problem, AgentGone):
            with contextlib.suppress(Exception):
                await asyncio.shield(self._record(exchange, None, 499))
            return error(499, "the agent closed its connection", headers)
        status, message = self._upstream_failure(problem)
        return error(status, message, headers, kind="upstream_error")

    def _upstream_failure(self, problem: Exception) -> tuple[int, str]:
        if isinstance(problem, UpstreamTimeout):
            return 504, (
                f"{problem} for {self.upstream.timeout_s:g} s, the gateway's upstream_timeout "
                "(--upstream-timeout); its call was closed"
            )
        return 502, str(problem)

    async def _record(
        self, draft: ExchangeDraft, reply: Mapping[str, Any] | None, status: int
    ) -> None:
        key = draft.chain.extended(reply) if reply is not None else ""
        exchange = draft.exchange(new_id("ex"), reply, status, key, redacts=self.redacts)
        await self.store.write_async(record_exchange(exchange))
        if key:
            self.conversations.remember(draft.namespace, key, draft.trace_id, draft.chain, reply)

    async def _models(self, request: Request) -> Response:
        refused = self.access.agent_refusal(request)
        if refused is not None:
            return refused
        try:
            reply = await self.upstream.send(
                "GET", "/models", b"", to_upstream(request.headers.items()), request.url.query
            )
            status, content = reply.status, await reply.body()
            reply.close()
        except UpstreamError as problem:
            return error(502, str(problem), kind="upstream_error")
        if status == 200 or not self.model:
            return Response(content, status_code=status, media_type="application/json")
        listed = {"id": self.model, "object": "model", "created": 0, "owned_by": "upstream"}
        return JSONResponse({"object": "list", "data": [listed]})

    async def store_refusal(self) -> Response | None:
        """A 503 while the store cannot write (checked before anything is sent upstream)."""
        problem = await self.store_health.problem()
        if problem is None:
            return None
        return error(503, self.store_health.refusal(problem), {"retry-after": "1"}, kind=_DOWN)

    async def _health(self, request: Request) -> Response:
        store = self.store.problem or "ok"
        return JSONResponse({"status": "ok", "in_flight": self._in_flight, "store": store})

    async def _ready(self, request: Request) -> Response:
        problem = await self.store_health.problem(probe=True)
        if problem is not None:
            return JSONResponse({"ready": False, "why": self.store_health.refusal(problem)}, 503)
        try:
            status, _ = await asyncio.wait_for(self.upstream.get("/models"), timeout=5.0)
        except (UpstreamError, TimeoutError) as problem:
            return JSONResponse({"ready": False, "why": str(problem) or "timeout"}, 503)
        if status >= 500:
            why = f"the upstream answered {status}"
            return JSONResponse({"ready": False, "why": why}, 503)
        return JSONResponse({"ready": True})


def _unstored(problem: BaseException) -> str:
    return f"the exchange could not be stored ({problem}); retry shortly"
