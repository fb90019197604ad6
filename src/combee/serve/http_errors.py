"""The gateway's refusals: in the OpenAI API's error shape, so an agent's SDK shows them."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse


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
