"""The endpoint behind the gateway, reached over HTTP with ``aiohttp``.

A gateway passes bytes through: the upstream's status, body and stream reach the agent as the
upstream sent them, so the SDK's typed request and parsed reply (built for a client, not a proxy)
are not in the path. The upstream's key is read from the environment once and sent only to the
upstream; the agent's own ``Authorization`` header is never forwarded.

A call's time limit is the upstream's silence: ``timeout_s`` before its reply starts, and again
between two parts of the reply (a long stream that keeps sending is not cut). Past it the call
fails with :class:`UpstreamTimeout` and its connection is closed.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from combee.errors import ConfigError
from combee.llm.http_backend import is_loopback
from combee.llm.lean_backend import env_proxy
from combee.llm.redact import basic_auth, without_credentials
from combee.llm.types import DEFAULT_KEY_ENV
from combee.serve.forwarded_headers import to_agent


@dataclass
class UpstreamReply:
    """An open reply: its status, the headers passed on, and its body as it arrives."""

    status: int
    headers: dict[str, str]
    response: aiohttp.ClientResponse
    limit: int = 64 * 2**20
    """The most bytes :meth:`body` reads."""

    async def body(self) -> bytes:
        """The whole body, read no further than :attr:`limit` (:class:`UpstreamError` past it:
        a reply that large is refused, not held in memory)."""
        parts: list[bytes] = []
        size = 0
        try:
            async for chunk in self.response.content.iter_any():
                size += len(chunk)
                if size > self.limit:
                    raise UpstreamError(
                        f"the upstream's reply passed {self.limit:,} bytes, the gateway's "
                        "max_reply_mb (--max-reply-mb): it was not read further"
                    )
                parts.append(chunk)
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            raise _failure(error, "its reply") from None
        return b"".join(parts)

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.response.content.iter_any():
                yield chunk
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            raise _failure(error, "its stream") from None

    def close(self) -> None:
        """Done with the reply: a connection read to its end goes back to the pool."""
        self.response.release()

    def abort(self) -> None:
        """Close the reply's connection, whatever is left unread (the upstream sees it close)."""
        self.response.close()


class UpstreamError(Exception):
    """The upstream could not be reached or broke off; the text says which and why."""


class UpstreamTimeout(UpstreamError):
    """The upstream stayed silent longer than the call's time limit."""


def _failure(error: BaseException, what: str) -> UpstreamError:
    if isinstance(error, TimeoutError):
        return UpstreamTimeout(f"the upstream stayed silent ({what} unfinished)")
    return UpstreamError(f"the upstream broke off {what}: {error or type(error).__name__}")


_IDLE_S = 4.0
"""How long an idle connection to the upstream is kept: under uvicorn's 5 s (vLLM's and
llama.cpp's Python servers), so the gateway rarely reuses one the upstream is closing."""


def _dropped_before_reply(error: BaseException) -> bool:
    """A kept-alive connection the upstream closed as the request went out (no reply began):
    sent again once, on a new connection, rather than answered 502."""
    if isinstance(error, aiohttp.ClientConnectorError):  # a new connection failed: no retry
        return False
    return isinstance(error, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError))


class HttpUpstream:
    """An OpenAI-compatible endpoint at ``base_url`` (``.../v1``)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str = DEFAULT_KEY_ENV,
        timeout_s: float = 120.0,
        max_connections: int = 4096,
        max_reply_bytes: int = 64 * 2**20,
    ) -> None:
        plain, authorization = basic_auth(base_url)
        if not plain or not plain.startswith(("http://", "https://")):
            raise ConfigError(
                f"{without_credentials(base_url)!r} is not an http(s) URL of an "
                "OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1)",
                setting="upstream",
            )
        self.base_url = plain.rstrip("/")
        key = os.environ.get(api_key_env)
        if authorization is None and key:
            authorization = f"Bearer {key}"
        if authorization is None and not is_loopback(self.base_url):
            raise ConfigError(
                f"the environment variable {api_key_env} is not set, but {self.base_url} needs "
                f"an API key: export {api_key_env}=... or name another variable with "
                "--api-key-env",
                setting="api_key_env",
            )
        self._headers = {"Authorization": authorization} if authorization else {}
        self.timeout_s = timeout_s
        self.max_reply_bytes = max_reply_bytes
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=min(30.0, timeout_s), sock_read=timeout_s
        )
        self._max_connections = max_connections
        # Read once: aiohttp's trust_env would read the proxy settings and ~/.netrc again on
        # every request, on a worker thread.
        self._proxy = env_proxy(self.base_url)
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"HttpUpstream({self.base_url!r})"

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=self._max_connections, limit_per_host=0, keepalive_timeout=_IDLE_S
            )
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self._timeout, auto_decompress=True
            )
        return self._session

    async def post(
        self, path: str, body: bytes, extra: Mapping[str, str], query: str = ""
    ) -> UpstreamReply:
        """POST ``body`` (JSON) to ``path``; the reply open, to be read or streamed."""
        return await self.send(
            "POST", path, body, {**extra, "Content-Type": "application/json"}, query
        )

    async def send(
        self, method: str, path: str, body: bytes, extra: Mapping[str, str], query: str = ""
    ) -> UpstreamReply:
        """``method`` on ``path`` with the query string ``query`` as the agent wrote it, the
        headers ``extra`` and the upstream's key; the reply open, its headers those an agent
        sees (:func:`combee.serve.forwarded_headers.to_agent`)."""
        headers = {**extra, **self._headers}
        url = URL(self.base_url + path)
        if query:  # as the agent wrote it: re-quoting could change what a signature covers
            url = URL(f"{url}?{query}", encoded=True)

        def request() -> Any:
            return self._client().request(
                method, url, data=body or None, headers=headers, proxy=self._proxy
            )

        try:
            try:
                response = await request()
            except (aiohttp.ClientError, OSError) as error:
                if not _dropped_before_reply(error):
                    raise
                response = await request()  # once more, on a new connection
        except TimeoutError:
            raise UpstreamTimeout(f"the upstream {self.base_url} stayed silent") from None
        except (aiohttp.ClientError, OSError) as error:
            raise UpstreamError(self._why(error)) from None
        headers = to_agent(response.headers.items())
        return UpstreamReply(response.status, headers, response, self.max_reply_bytes)

    async def get(self, path: str) -> tuple[int, bytes]:
        try:
            async with self._client().get(
                self.base_url + path, headers=self._headers, proxy=self._proxy
            ) as r:
                return r.status, await r.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            raise UpstreamError(self._why(error)) from None

    def _why(self, error: BaseException) -> str:
        reason = str(error) or type(error).__name__
        return f"the upstream {self.base_url} did not answer: {reason}"

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
