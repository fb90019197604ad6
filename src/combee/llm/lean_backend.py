"""An OpenAI-compatible chat-completions backend without the SDK (``--client lean``).

Same wire format, same key handling and the same failure kinds as
:class:`combee.llm.openai_backend.OpenAIBackend`, straight on ``aiohttp`` with a fast JSON codec
(``orjson`` when installed). At hundreds of concurrent calls the SDK's own per-call CPU cost
dominates a training run's client time; this backend keeps it to a fraction of a millisecond.
Proxies are read from the environment (``HTTPS_PROXY``, ``NO_PROXY``, ...), as the SDK does.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from combee.errors import ConfigError
from combee.llm.openai_backend import DEFAULT_KEY_ENV, estimate_tokens, is_loopback
from combee.llm.redact import without_credentials
from combee.llm.response_format import ResponseFormats
from combee.llm.retry import BackendFailure, retry_after_seconds
from combee.llm.types import Completion, JsonMode, Request


def _std_dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _codec() -> tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    """orjson when installed, else the standard library."""
    try:
        fast = importlib.import_module("orjson")
    except ImportError:
        return _std_dumps, json.loads
    return fast.dumps, fast.loads


_dumps, _loads = _codec()

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class LeanBackend:
    """One attempt per call over one ``aiohttp`` session (keep-alive connections, made on the
    first call in the running event loop)."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = None,
        json_mode: JsonMode = "json_schema",
        max_connections: int = 1024,
    ) -> None:
        self.model = model
        self.api_key_env = api_key_env or DEFAULT_KEY_ENV
        self.json_mode: JsonMode = json_mode
        url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"{without_credentials(url)!r} is not an http(s) URL", setting="base_url"
            )
        key = os.environ.get(self.api_key_env)
        if not key:
            if not is_loopback(url):
                raise ConfigError(
                    f"the environment variable {self.api_key_env} is not set, but {url} needs "
                    f"an API key: export {self.api_key_env}=... or name another variable with "
                    "api_key_env"
                )
            key = "no-key-needed"
        self.base_url = url
        self._url = f"{url}/chat/completions"
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "combee",
            "Authorization": f"Bearer {key}",
        }
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._formats = ResponseFormats(json_mode)

    def __repr__(self) -> str:
        return f"LeanBackend(model={self.model!r}, base_url={without_credentials(self.base_url)!r})"

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0)
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers=self._headers,
                trust_env=True,
                timeout=aiohttp.ClientTimeout(total=None),
                auto_decompress=True,
            )
        return self._session

    async def complete(self, request: Request) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": r, "content": c} for r, c in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.json_schema is not None and self.json_mode != "none":
            body["response_format"] = self._formats.for_schema(request.json_schema)
        session = self._open()
        started = time.perf_counter()
        answered = False
        try:
            async with session.post(self._url, data=_dumps(body)) as response:
                answered = True
                status, headers = response.status, response.headers
                raw = await response.read()
        except aiohttp.ClientConnectorError as error:
            raise BackendFailure("connection", f"connection error: {error}") from None
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as error:
            kind = "bad_body" if answered else "connection"
            raise BackendFailure(kind, f"the response broke off: {error!r}") from None
        except (aiohttp.ClientError, OSError) as error:
            raise BackendFailure("connection", f"connection error: {error!r}") from None
        latency = time.perf_counter() - started
        if status != 200:
            raise _status_failure(status, headers, raw)
        return _completion(raw, request, self.model, latency)

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
            await asyncio.sleep(0)  # let the connector close its sockets


def _completion(raw: bytes, request: Request, model: str, latency: float) -> Completion:
    try:
        data = _loads(raw)
    except ValueError:
        raise BackendFailure("bad_body", "the response body is not JSON") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BackendFailure("bad_body", "the response has no choices")
    message = choices[0].get("message")
    text = message.get("content") if isinstance(message, dict) else None
    text = text if isinstance(text, str) else ""
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    prompt_tokens = usage.get("prompt_tokens")
    completion_count = usage.get("completion_tokens")
    if not isinstance(prompt_tokens, int):
        prompt_tokens = estimate_tokens("".join(c for _, c in request.messages))
        completion_count = estimate_tokens(text)
    elif not isinstance(completion_count, int):
        completion_count = 0
    return Completion(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_count,
        latency_s=latency,
        model=str(data.get("model") or model),
    )


def _status_failure(status: int, headers: Mapping[str, str], body: bytes) -> BackendFailure:
    detail = _error_message(body) or f"HTTP {status}"
    if status == 429:
        return BackendFailure(
            "429", detail, status=status, retry_after_s=retry_after_seconds(headers)
        )
    if status >= 500:
        return BackendFailure(
            "5xx", detail, status=status, retry_after_s=retry_after_seconds(headers)
        )
    if status == 408:
        return BackendFailure("timeout", detail, status=status)
    return BackendFailure("4xx", detail, status=status)


def _error_message(body: bytes) -> str | None:
    try:
        data = _loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    error = data.get("error", data.get("message"))
    if isinstance(error, dict):
        error = error.get("message")
    return error[:200] if isinstance(error, str) and error else None
