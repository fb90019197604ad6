"""Any OpenAI-compatible chat-completions endpoint, through the official ``openai`` SDK."""

from __future__ import annotations

import importlib
import time
from collections.abc import AsyncIterator
from contextvars import ContextVar
from types import ModuleType
from typing import Any, Unpack

import openai

from combee.llm.http_backend import HttpBackend, HttpKeywords
from combee.llm.reply_limit import ReplyLimit
from combee.llm.types import Completion, Request
from combee.llm.wire import chat_body, completion_from_body


class OpenAIBackend(HttpBackend):
    """One attempt per call; retries and limits live in :class:`combee.llm.client.LLM`.

    One ``AsyncOpenAI`` client, on the SDK's aiohttp transport, serves every call (proxies from
    the environment are honoured). The SDK's own retries are off. Every body it reads, a reply
    or an error, is read as a stream and refused once it passes the call's :class:`ReplyLimit`.
    """

    def __init__(
        self,
        *,
        timeout_s: float = 120.0,
        max_connections: int = 1024,
        **common: Unpack[HttpKeywords],
    ) -> None:
        super().__init__(**common)
        authorization = self._access.authorization
        library = _http_library()
        pool = library.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        self._client = openai.AsyncOpenAI(
            api_key=self._access.key,
            base_url=self._access.url,
            timeout=timeout_s,
            max_retries=0,
            http_client=_http_client(pool, timeout_s, library),
            # Credentials in the URL are sent as HTTP Basic authentication, in place of the key.
            default_headers=None if authorization is None else {"Authorization": authorization},
        )
        self._response_type = library.Response
        self.base_url: str = str(self._client.base_url).rstrip("/")

    async def complete(self, request: Request) -> Completion:
        arguments = chat_body(request, self.model, self._formats)
        started = time.perf_counter()
        # The SDK's request path (auth, headers, its HTTP client, its status errors) with the
        # body as given and the reply read raw (orjson): its typed transform of the parameters
        # and pydantic parse of the reply cost more CPU per call than the rest of the call.
        # Read as a stream: the SDK would read the whole body before returning it.
        limit = self.reply_limit(request.max_tokens)
        _CALL_LIMIT.set(limit)  # for the SDK's own reads of an error's body
        raw = await self._client.post(
            "/chat/completions", body=arguments, cast_to=self._response_type, stream=True
        )
        try:
            body = await limit.read(raw.aiter_bytes())  # decoded: a small gzip may unpack large
        finally:
            await raw.aclose()
        return completion_from_body(body, request, self.model, time.perf_counter() - started)

    async def aclose(self) -> None:
        await self._client.close()


_CALL_LIMIT: ContextVar[ReplyLimit | None] = ContextVar("combee_reply_limit", default=None)
"""The limit of the call the current task makes (the SDK's HTTP client runs in its task)."""


def _http_client(pool: Any, timeout_s: float, library: ModuleType) -> Any:
    """The SDK's client on its aiohttp transport (``openai[aiohttp]``): about a third of the CPU
    per call of its default httpx transport at hundreds of concurrent calls. Without aiohttp,
    the default transport. Either caps each body it reads (:func:`_capped`)."""
    hooks = {"response": [_capper(library)]}
    try:
        return openai.DefaultAioHttpClient(limits=pool, timeout=timeout_s, event_hooks=hooks)
    except RuntimeError:  # the SDK's aiohttp extra is not installed
        return openai.DefaultAsyncHttpxClient(limits=pool, timeout=timeout_s, event_hooks=hooks)


def _capper(library: ModuleType) -> Any:
    """A response hook that puts the raw body of every response under the call's limit, so that
    no read of it (the SDK's of an error's body included) goes past the limit."""

    class CappedStream(library.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, inner: Any, limit: ReplyLimit) -> None:
            self._inner = inner
            self._limit = limit

        def __aiter__(self) -> AsyncIterator[bytes]:
            return self._limit.capped(self._inner)

        async def aclose(self) -> None:
            await self._inner.aclose()

    async def cap(response: Any) -> None:
        limit = _CALL_LIMIT.get()
        if limit is not None:
            response.stream = CappedStream(response.stream, limit)

    return cap


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
