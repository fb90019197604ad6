"""The gateway's refusals: in the OpenAI API's error shape, so an agent's SDK shows them."""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response


class BadRequest(Exception):
    """A request the gateway refuses, with the HTTP status to answer."""

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


async def route_error(request: Request, problem: Exception) -> Response:
    """A route the gateway does not have (404), or a method it does not take there (405), in
    the OpenAI API's error shape rather than as plain text."""
    status = problem.status_code if isinstance(problem, HTTPException) else 500
    headers = problem.headers if isinstance(problem, HTTPException) else None
    where = f"{request.method} {request.url.path}"
    if status == 405:
        allowed = (headers or {}).get("Allow", "")
        message = f"{where}: this route takes {allowed or 'other methods'}"
    elif status == 404:
        message = (
            f"{where}: no such route at this gateway (the OpenAI API is under /v1, or "
            "/agents/NAME/v1 for a namespace; /healthz and /readyz for operators)"
        )
    else:
        message = f"{where}: {problem}"
    return error(status, message, headers)


def sse_error(message: str, kind: str, status: int = 503) -> bytes:
    """The same error as one server-sent event, to end a stream that cannot finish (the OpenAI
    SDKs raise it as an APIError rather than take the stream as complete)."""
    body = {"error": {"message": message, "type": kind, "code": status}}
    return b"data: " + json.dumps(body).encode() + b"\n\n"
