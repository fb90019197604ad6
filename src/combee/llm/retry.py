"""Which backend failures are worth retrying, and how long to wait before the next attempt.

Every backend raises; this module is the one place that turns an exception into a
:class:`Failure`. Transient kinds are retried: ``429``, ``5xx``, ``timeout``, ``connection``,
``bad_body``. Anything else is permanent.
"""

from __future__ import annotations

import importlib
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import aiohttp
import openai
import pydantic

from combee.errors import CombeeError, EndpointError, LLMCallError, parameter

TRANSIENT_KINDS = frozenset({"429", "5xx", "timeout", "connection", "bad_body"})


def _http_libraries() -> list[ModuleType]:
    """httpx, and httpx2 where the installed openai SDK is built on it."""
    found = []
    for name in ("httpx", "httpx2"):
        try:
            found.append(importlib.import_module(name))
        except ImportError:
            continue
    return found


def _errors(name: str) -> tuple[type[BaseException], ...]:
    return tuple(getattr(library, name) for library in _http_libraries())


_TIMEOUTS = (*_errors("TimeoutException"), TimeoutError)
_MALFORMED = (*_errors("RemoteProtocolError"), *_errors("DecodingError"))
_TRANSPORT = (*_errors("TransportError"), ConnectionError)


class BackendFailure(Exception):
    """A failure a backend has already classified (for backends that do not speak HTTP via openai).

    ``kind`` is one of the transient kinds above, or any other word for a permanent failure.
    """

    def __init__(
        self,
        kind: str,
        detail: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.status = status
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class Failure:
    """A classified failure of one attempt."""

    kind: str
    """``429``, ``5xx``, ``timeout``, ``connection``, ``bad_body`` (transient), or e.g. ``4xx``."""
    status: int | None
    detail: str
    retry_after_s: float | None = None

    @property
    def transient(self) -> bool:
        return self.kind in TRANSIENT_KINDS


def classify(error: BaseException) -> Failure:
    """Classify an exception raised by one backend attempt."""
    if isinstance(error, BackendFailure):
        return Failure(error.kind, error.status, error.detail, error.retry_after_s)
    if isinstance(error, openai.APIStatusError):
        return _from_status(error.status_code, error.response.headers, _short(error))
    if isinstance(error, openai.APIResponseValidationError):
        return Failure("bad_body", error.status_code, "the response body did not parse")
    refused = _refused_connection(error)
    if refused is not None:
        return Failure("connection", None, f"connection error: {refused}")
    if isinstance(error, (openai.APITimeoutError, *_TIMEOUTS)):
        return Failure("timeout", None, "the request timed out")
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__
        if isinstance(cause, _TIMEOUTS):
            return Failure("timeout", None, "the request timed out")
        if isinstance(cause, _MALFORMED):
            return Failure("bad_body", None, f"malformed response: {cause}")
        return Failure("connection", None, f"connection error: {cause or error}")
    if isinstance(error, _MALFORMED):
        return Failure("bad_body", None, f"malformed response: {error}")
    if isinstance(error, _TRANSPORT):
        return Failure("connection", None, f"connection error: {error}")
    if isinstance(error, json.JSONDecodeError | pydantic.ValidationError):
        return Failure("bad_body", None, "the response body is not the expected JSON")
    return Failure("error", None, f"{type(error).__name__}: {error}")


def _refused_connection(error: BaseException) -> BaseException | None:
    """The connection failure at the root of ``error``, if any. The SDK's aiohttp transport
    reports a refused connection as a connect *timeout*; its cause says what happened."""
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, aiohttp.ClientConnectorError | ConnectionRefusedError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _from_status(status: int, headers: Mapping[str, str], detail: str) -> Failure:
    if status == 429:
        return Failure("429", status, detail, retry_after_seconds(headers))
    if status >= 500:
        return Failure("5xx", status, detail, retry_after_seconds(headers))
    if status == 408:
        return Failure("timeout", status, detail)
    return Failure("4xx", status, detail)


def _short(error: openai.APIStatusError) -> str:
    body: Any = error.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("error", {})
        if isinstance(message, dict):
            message = message.get("message")
        if isinstance(message, str) and message:
            return message[:200]
    return f"HTTP {error.status_code}"


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's requested wait in seconds (``retry-after-ms`` or numeric ``retry-after``)."""
    millis = headers.get("retry-after-ms")
    seconds = headers.get("retry-after")
    try:
        if millis is not None:
            return max(0.0, float(millis) / 1000.0)
        if seconds is not None:
            return max(0.0, float(seconds))
    except ValueError:
        return None  # an HTTP date: rare from LLM servers, fall back to our own backoff
    return None


def backoff_delay(
    attempt: int,
    failure: Failure,
    *,
    base_s: float,
    max_s: float,
    rng: random.Random,
) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (0-based).

    The server's Retry-After wins when present; otherwise exponential backoff with full jitter.
    Both are capped by ``max_s``.
    """
    if failure.retry_after_s is not None:
        return min(failure.retry_after_s, max_s)
    return rng.uniform(0.0, min(max_s, base_s * (2.0**attempt)))


def failure_error(
    failure: Failure,
    *,
    role: str,
    attempts: int,
    model: str,
    url: str | None,
    key_variable: str | None,
) -> CombeeError:
    """What a call that failed for good tells the user: a rejected key or an unknown model is
    an :class:`EndpointError` naming the setting to fix; anything else an
    :class:`LLMCallError` the run records and goes on from."""
    if failure.status in (401, 403):
        variable = key_variable or "the API key variable"
        return EndpointError(
            f"the endpoint rejected the API key in ${variable} (HTTP {failure.status}) "
            f"for model '{model}': check the key and its access to the model",
            setting="api_key_env",
        )
    if failure.status == 404:
        return EndpointError(
            f"the endpoint {url or ''} answered 404 for model '{model}': check "
            f"{parameter('model')}, and that {parameter('base_url')} ends where the server's "
            "/chat/completions lives (usually .../v1)",
            setting="model",
        )
    status = f", HTTP {failure.status}" if failure.status is not None else ""
    return LLMCallError(
        f"{role} call failed ({failure.kind}{status}) after {attempts} attempt(s): "
        f"{failure.detail}",
        role=role,
        kind=failure.kind,
        status=failure.status,
        attempts=attempts,
    )
