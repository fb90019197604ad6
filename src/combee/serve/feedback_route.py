"""``POST /v1/feedback``: an outcome for a conversation, named by its trace or session id.

Reward and success are taken from every caller the route takes; the text is stored as trusted
(the checker's, which a lesson may repeat) only when it came with the operator token, else as
untrusted data (:mod:`combee.serve.access`)."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from combee.llm.redact import redact
from combee.serve.http_errors import BadRequest, error
from combee.serve.records import Feedback
from combee.serve.request_body import json_body
from combee.serve.store_writes import record_feedback

if TYPE_CHECKING:
    from combee.serve.gateway import Gateway

_FEEDBACK_CHARS = 100_000


async def feedback_route(gateway: Gateway, request: Request) -> Response:
    refused = gateway.access.agent_refusal(request) or await gateway.store_refusal()
    if refused is not None:
        return refused
    try:
        namespace = gateway.namespace_of(request)
        _, body = await json_body(request, gateway.settings.max_body_mb)
        feedback = feedback_of(
            gateway, namespace, body, trusted=gateway.access.trusts_text_of(request)
        )
    except BadRequest as problem:
        return error(problem.status, str(problem))
    try:
        seq = await gateway.store.write_async(record_feedback(feedback))
    except Exception as problem:  # not stored: the caller must not take it as recorded
        message = f"the feedback could not be stored ({problem}); retry shortly"
        return error(503, message, {"retry-after": "1"}, kind="service_unavailable")
    if gateway.on_feedback is not None:
        gateway.on_feedback(feedback.namespace)
    return JSONResponse(
        {
            "id": seq,
            "trace_id": feedback.trace_id,
            "namespace": namespace,
            "text_trusted": feedback.trusted,
        }
    )


def feedback_of(gateway: Gateway, namespace: str, body: Any, *, trusted: bool) -> Feedback:
    """The feedback a request's body gives (its text ``trusted`` or not), or
    :class:`BadRequest` saying what is wrong."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    unknown = sorted(set(body) - {"trace_id", "session_id", "reward", "success", "feedback"})
    if unknown:
        raise BadRequest(
            f"unknown field {unknown[0]!r} (fields: trace_id or session_id, reward, success, "
            "feedback)"
        )
    trace_id = body.get("trace_id")
    session = body.get("session_id")
    if isinstance(session, str) and session and not trace_id:
        trace_id = gateway.conversations.session_trace(namespace, session)
        if trace_id is None:
            raise BadRequest(f"no conversation with session id {session[:80]!r}", 404)
    if not isinstance(trace_id, str) or not trace_id:
        raise BadRequest(
            "name the conversation: trace_id (the X-Combee-Trace header) or session_id"
        )
    stored = gateway.store.trace_namespace(trace_id)
    if stored is None:
        raise BadRequest(f"no trace {trace_id[:80]!r} in this gateway's store", 404)
    reward = body.get("reward")
    if reward is not None and (
        isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward)
    ):
        raise BadRequest(f"reward must be a finite number (got {reward!r})")
    success = body.get("success")
    if success is not None and not isinstance(success, bool):
        raise BadRequest(f"success must be true or false (got {success!r})")
    text = body.get("feedback") or ""
    if not isinstance(text, str) or len(text) > _FEEDBACK_CHARS:
        raise BadRequest(f"feedback must be a text of at most {_FEEDBACK_CHARS} characters")
    if reward is None and success is None and not text:
        raise BadRequest("give a reward, a success flag or feedback text")
    return Feedback(
        trace_id=trace_id,
        namespace=stored,
        reward=None if reward is None else float(reward),
        success=success,
        text=redact(text) if gateway.redacts else text,
        created=time.time(),
        trusted=trusted and bool(text),
    )
