"""An OpenAI-compatible chat-completions backend without the SDK (``--client lean``).

Same wire format, same key handling and the same failure kinds as
:class:`combee.llm.openai_backend.OpenAIBackend`, straight on ``aiohttp`` with a fast JSON codec
(``orjson`` when installed). At hundreds of concurrent calls the SDK's own per-call CPU cost
dominates a training run's client time; this backend keeps it to a fraction of a millisecond.
Proxies are read from the environment (``HTTPS_PROXY``, ``NO_PROXY``, ...) once, as the SDK does.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections.abc import Mapping
from typing import Unpack
from urllib.parse import urlsplit

import aiohttp

from combee.llm.http_backend import HttpBackend, HttpKeywords
from combee.llm.retry import BackendFailure, retry_after_seconds
from combee.llm.types import Completion, Request
from combee.llm.wire import chat_body, completion_from_body, dumps, error_message

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class LeanBackend(HttpBackend):
    """One attempt per call over one ``aiohttp`` session (keep-alive connections, made on the
    first call in the running event loop)."""

    def __init__(self, *, max_connections: int = 1024, **common: Unpack[HttpKeywords]) -> None:
        super().__init__(**common)
        url = self._access.url or DEFAULT_BASE_URL
        self.base_url = url
        self._url = f"{url}/chat/completions"
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "combee",
            # Credentials in the URL are sent as HTTP Basic authentication, in place of the key.
            "Authorization": self._access.authorization or f"Bearer {self._access.key}",
        }
        self._max_connections = max_connections
        # Read once: aiohttp's trust_env would read the proxy settings (and ~/.netrc) again on
        # every request, about 1 ms of CPU per call.
        self._proxy = env_proxy(url)
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0)
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=None),
                auto_decompress=True,
            )
        return self._session

    async def complete(self, request: Request) -> Completion:
        body = chat_body(request, self.model, self._formats)
        session = self._open()
        started = time.perf_counter()
        answered = False
        try:
            async with session.post(self._url, data=dumps(body), proxy=self._proxy) as response:
                answered = True
                status, headers = response.status, response.headers
                limit = self.reply_limit(request.max_tokens)
                # A reply or an error; leaving the block early closes the connection unread.
                raw = await limit.read(response.content.iter_chunked(1 << 16))
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
        return completion_from_body(raw, request, self.model, latency)

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
            await asyncio.sleep(0)  # let the connector close its sockets


def env_proxy(url: str) -> str | None:
    """The proxy the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``)
    sets for ``url``, as the SDK and curl read them; None: connect directly."""
    parts = urlsplit(url)
    if urllib.request.proxy_bypass_environment(parts.hostname or ""):  # type: ignore[attr-defined]
        return None
    proxies = urllib.request.getproxies_environment()
    return proxies.get(parts.scheme) or proxies.get("all")


def _status_failure(status: int, headers: Mapping[str, str], body: bytes) -> BackendFailure:
    detail = error_message(body) or f"HTTP {status}"
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
