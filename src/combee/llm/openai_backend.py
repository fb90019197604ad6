"""Any OpenAI-compatible chat-completions endpoint, through the official ``openai`` SDK."""

from __future__ import annotations

import importlib
import time
from types import ModuleType
from typing import Any, Unpack

import openai

from combee.llm.guards import oversized_body, reply_byte_limit
from combee.llm.http_backend import HttpBackend, HttpKeywords
from combee.llm.retry import BackendFailure
from combee.llm.types import Completion, Request
from combee.llm.wire import chat_body, completion_from_body


class OpenAIBackend(HttpBackend):
    """One attempt per call; retries and limits live in :class:`combee.llm.client.LLM`.

    One ``AsyncOpenAI`` client, on the SDK's aiohttp transport, serves every call (proxies from
    the environment are honoured). The SDK's own retries are off.
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
            http_client=_http_client(pool, timeout_s),
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
