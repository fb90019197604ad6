"""A request's body (as JSON, or as bytes), read up to the gateway's size limit."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from combee.llm.wire import loads
from combee.serve.http_errors import BadRequest


async def json_body(request: Request, max_body_mb: float) -> tuple[bytes, Any]:
    """The body's bytes and its JSON; :class:`BadRequest` when it is over ``max_body_mb``
    (413) or not JSON."""
    raw = await raw_body(request, max_body_mb)
    try:
        return raw, loads(raw)
    except ValueError as problem:
        raise BadRequest(f"the body is not JSON ({problem})") from None


async def raw_body(request: Request, max_body_mb: float) -> bytes:
    """The body's bytes; :class:`BadRequest` (413) when it is over ``max_body_mb``."""
    max_body = int(max_body_mb * 1_000_000)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_body:
            await _drain(request, 8 * max_body - size)
            raise BadRequest(f"the body is over {max_body_mb:g} MB", 413)
        chunks.append(chunk)
    return b"".join(chunks)


async def _drain(request: Request, budget: int) -> None:
    """Read and drop the rest of an oversized body (up to ``budget`` bytes), so the client,
    still sending, can read the 413; beyond the budget the connection is simply closed."""
    async for chunk in request.stream():
        budget -= len(chunk)
        if budget < 0:
            return
