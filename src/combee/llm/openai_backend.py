"""Any OpenAI-compatible chat-completions endpoint, through the official ``openai`` SDK."""

from __future__ import annotations

import importlib
import ipaddress
import os
import time
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import openai

from combee.errors import ConfigError, parameter
from combee.llm.guards import oversized_body, reply_byte_limit
from combee.llm.redact import basic_auth, without_credentials
from combee.llm.response_format import ResponseFormats
from combee.llm.retry import BackendFailure
from combee.llm.types import (
    DEFAULT_JSON_MODE,
    DEFAULT_KEY_ENV,
    Completion,
    JsonMode,
    ModelLimits,
    Request,
)
from combee.llm.wire import chat_body, completion_from_body

_LOCAL_PLACEHOLDER_KEY = "no-key-needed"
BASE_URL_ENV = "OPENAI_BASE_URL"
"""Where the OpenAI SDK sends calls when no base URL is given; honoured the same way here."""


class OpenAIBackend:
    """One attempt per call; retries and limits live in :class:`combee.llm.client.LLM`.

    One ``AsyncOpenAI`` client, on the SDK's aiohttp transport, serves every call (proxies from
    the environment are honoured). The SDK's own retries are off.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = None,
        json_mode: JsonMode = DEFAULT_JSON_MODE,
        timeout_s: float = 120.0,
        max_connections: int = 1024,
        context_window: int | None = None,
    ) -> None:
        self.model = model
        self.context_window = context_window
        """Tokens the served model reads and writes per call, as the user declared it."""
        self.api_key_env = api_key_env or DEFAULT_KEY_ENV
        self.json_mode: JsonMode = json_mode
        # Resolved before the key is judged: a loopback OPENAI_BASE_URL needs no key either.
        base_url, authorization = basic_auth(base_url_of(base_url))
        key = os.environ.get(self.api_key_env)
        if not key:
            if authorization is None and (base_url is None or not is_loopback(base_url)):
                where = base_url or "the OpenAI API"
                raise ConfigError(
                    f"the environment variable {self.api_key_env} is not set, but {where} needs "
                    f"an API key: export {self.api_key_env}=... or name another variable with "
                    + parameter("api_key_env")
                )
            key = _LOCAL_PLACEHOLDER_KEY
        library = _http_library()
        pool = library.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        self._client = openai.AsyncOpenAI(
            api_key=key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            http_client=_http_client(pool, timeout_s),
            # Credentials in the URL are sent as HTTP Basic authentication, in place of the key.
            default_headers=None if authorization is None else {"Authorization": authorization},
        )
        self._response_type = library.Response
        self.base_url: str = str(self._client.base_url).rstrip("/")
        self._formats = ResponseFormats(json_mode)

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(model={self.model!r}, base_url={without_credentials(self.base_url)!r})"
        )

    def limits(self) -> ModelLimits:
        return ModelLimits(context_window=self.context_window)

    async def complete(self, request: Request) -> Completion:
        arguments = chat_body(request, self.model, self._formats)
        started = time.perf_counter()
        # The SDK's request path (auth, headers, its HTTP client, its status errors) with the
        # body as given and the reply read raw (orjson): its typed transform of the parameters
        # and pydantic parse of the reply cost more CPU per call than the rest of the call.
        raw = await self._client.post(
            "/chat/completions", body=arguments, cast_to=self._response_type
        )
        limit = reply_byte_limit(request.max_tokens)
        chunks: list[bytes] = []
        read = 0
        async for chunk in raw.aiter_bytes():
            read += len(chunk)
            if read > limit:  # a server that ignores max_tokens must not fill the memory
                await raw.aclose()
                raise BackendFailure("oversized", oversized_body(read, request.max_tokens))
            chunks.append(chunk)
        body = b"".join(chunks)
        return completion_from_body(body, request, self.model, time.perf_counter() - started)

    async def aclose(self) -> None:
        await self._client.close()


def base_url_of(given: str | None) -> str | None:
    """``given``, else ``OPENAI_BASE_URL`` from the environment, else None (OpenAI's API)."""
    return given or os.environ.get(BASE_URL_ENV) or None


def is_loopback(base_url: str) -> bool:
    """True for a URL on this machine (127.x, ::1, localhost), which needs no API key."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _http_client(pool: Any, timeout_s: float) -> Any:
    """The SDK's client on its aiohttp transport (``openai[aiohttp]``): about a third of the CPU
    per call of its default httpx transport at hundreds of concurrent calls. Without aiohttp,
    the default transport."""
    try:
        return openai.DefaultAioHttpClient(limits=pool, timeout=timeout_s)
    except RuntimeError:  # the SDK's aiohttp extra is not installed
        return openai.DefaultAsyncHttpxClient(limits=pool, timeout=timeout_s)


def _http_library() -> ModuleType:
    """The HTTP library the installed SDK is built on (httpx, or httpx2 in newer releases)."""
    for name in ("httpx2", "httpx"):
        try:
            library = importlib.import_module(name)
        except ImportError:
            continue
        if issubclass(openai.DefaultAsyncHttpxClient, library.AsyncClient):
            return library
    raise RuntimeError("cannot tell which HTTP library the openai SDK uses")
