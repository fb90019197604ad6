"""The OpenAI routes the gateway does not learn from (embeddings, files, moderations, a stored
response, ...): passed to the upstream as they came (method, body, query string, the OpenAI
request headers) and back as the upstream answered (status, body, content type, its rate-limit
headers). Nothing is stored and no playbook is added. The agent's own ``Authorization`` stays
here: the upstream gets the gateway's key, as on every route."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from combee.serve.forwarded_headers import to_upstream
from combee.serve.http_errors import BadRequest, error
from combee.serve.request_body import raw_body
from combee.serve.upstream import UpstreamError, UpstreamReply

if TYPE_CHECKING:
    from combee.serve.gateway import Gateway

GATEWAY_ROUTES = frozenset({"feedback", "playbook", "playbook/rollback", "learn"})
"""The gateway's own routes under ``/v1``: another method on them is refused, not passed on."""


async def passthrough_route(gateway: Gateway, request: Request) -> Response:
    refused = gateway.access.agent_refusal(request)
    if refused is not None:
        return refused
    path = str(request.path_params["path"]).strip("/")
    if path in GATEWAY_ROUTES:
        return error(405, f"{request.method} is not a method of the gateway's /v1/{path}")
    try:
        gateway.namespace_of(request)
        body = await raw_body(request, gateway.settings.max_body_mb)
    except BadRequest as problem:
        return error(problem.status, str(problem))
    headers = to_upstream(request.headers.items())
    if "content-type" in request.headers:
        headers["content-type"] = request.headers["content-type"]
    try:
        reply = await gateway.upstream.send(
            request.method, f"/{path}", body, headers, request.url.query
        )
    except UpstreamError as problem:
        return error(502, str(problem), kind="upstream_error")
    passed = {k: v for k, v in reply.headers.items() if k != "content-type"}
    return StreamingResponse(
        _body(reply),
        status_code=reply.status,
        headers=passed,
        media_type=reply.headers.get("content-type"),
    )


async def _body(reply: UpstreamReply) -> AsyncIterator[bytes]:
    try:
        async for chunk in reply.chunks():
            yield chunk
    finally:
        reply.close()
