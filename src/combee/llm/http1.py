"""A small HTTP/1.1 keep-alive client on asyncio protocols, for the lean backend.

It does only what an OpenAI-compatible POST needs: one request per connection at a time,
``Content-Length`` or chunked replies, a pool of reusable connections capped at
``max_connections``. Per call it costs a few tens of microseconds, where general-purpose clients
spend milliseconds once hundreds of calls are in flight.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from combee.errors import ConfigError

_HEADER_END = b"\r\n\r\n"


class ConnectFailed(ConnectionError):
    """No connection could be opened."""


class ResponseBroken(ConnectionError):
    """The connection ended before a whole response arrived; ``started`` if any byte came."""

    def __init__(self, message: str, *, started: bool) -> None:
        super().__init__(message)
        self.started = started


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    """Lower-case names."""
    body: bytes


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int
    path: str
    """The base path without a trailing slash, e.g. ``/v1``."""

    @staticmethod
    def parse(base_url: str) -> Origin:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"{base_url!r} must look like http(s)://host[:port]/v1", setting="base_url"
            )
        default = 443 if parts.scheme == "https" else 80
        return Origin(parts.scheme, parts.hostname, parts.port or default, parts.path.rstrip("/"))


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reusable = True
        self._buffer = bytearray()
        self._waiter: asyncio.Future[Response] | None = None
        self._status = 0
        self._headers: dict[str, str] | None = None
        self._body_start = 0

    @property
    def closed(self) -> bool:
        return self.transport is None or self.transport.is_closing()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.reusable = False
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            started = bool(self._buffer) or self._headers is not None
            headers = self._headers
            if (
                headers is not None
                and "content-length" not in headers
                and "chunked" not in headers.get("transfer-encoding", "")
            ):
                # A reply delimited by the end of the connection is complete now.
                body = bytes(self._buffer[self._body_start :])
                waiter.set_result(Response(self._status, headers, body))
                return
            waiter.set_exception(
                ResponseBroken(f"the server closed the connection: {exc or 'EOF'}", started=started)
            )

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        try:
            response = self._parse()
        except ValueError as error:
            self.reusable = False
            waiter.set_exception(ResponseBroken(f"malformed HTTP response: {error}", started=True))
            return
        if response is not None:
            waiter.set_result(response)

    async def send(self, payload: bytes) -> Response:
        assert self.transport is not None
        self._buffer.clear()
        self._headers = None
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(payload)
        try:
            return await self._waiter
        finally:
            self._waiter = None

    def close(self) -> None:
        self.reusable = False
        if self.transport is not None:
            self.transport.abort()

    def _parse(self) -> Response | None:
        buffer = self._buffer
        if self._headers is None:
            end = buffer.find(_HEADER_END)
            if end < 0:
                return None
            lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
            status_line = lines[0].split(" ", 2)
            if len(status_line) < 2 or not status_line[0].startswith("HTTP/"):
                raise ValueError(f"bad status line {lines[0][:80]!r}")
            self._status = int(status_line[1])
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            self._headers = headers
            self._body_start = end + len(_HEADER_END)
            if headers.get("connection", "").lower() == "close" or status_line[0] == "HTTP/1.0":
                self.reusable = False
        headers = self._headers
        length = headers.get("content-length")
        if length is not None:
            stop = self._body_start + int(length)
            if len(buffer) < stop:
                return None
            return Response(self._status, headers, bytes(buffer[self._body_start : stop]))
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = _dechunk(buffer, self._body_start)
            return None if body is None else Response(self._status, headers, body)
        if self._status in (204, 304) or 100 <= self._status < 200:
            return Response(self._status, headers, b"")
        self.reusable = False  # the body runs until the server closes the connection
        return None


def _dechunk(buffer: bytearray, start: int) -> bytes | None:
    """The body of a complete chunked message, or None while more bytes are due."""
    parts: list[bytes] = []
    at = start
    while True:
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            return None
        size = int(bytes(buffer[at:line_end]).split(b";")[0].strip() or b"0", 16)
        at = line_end + 2
        if size == 0:
            return b"".join(parts) if buffer.find(b"\r\n", at) >= 0 else None
        if len(buffer) < at + size + 2:
            return None
        parts.append(bytes(buffer[at : at + size]))
        at += size + 2


class Http1Pool:
    """Keep-alive connections to one origin; at most ``max_connections`` requests at once."""

    def __init__(self, origin: Origin, *, max_connections: int = 1024) -> None:
        self.origin = origin
        self._ssl = ssl.create_default_context() if origin.scheme == "https" else None
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(max_connections)
        self._open: set[_Connection] = set()

    async def request(self, payload: bytes) -> Response:
        """Send one complete HTTP/1.1 request (head and body); the whole response back."""
        async with self._slots:
            reused = True
            connection = self._take_idle()
            if connection is None:
                reused = False
                connection = await self._connect()
            try:
                response = await connection.send(payload)
            except ResponseBroken as broken:
                connection.close()
                self._open.discard(connection)
                if not (reused and not broken.started):
                    raise
                # The server closed an idle keep-alive connection as we wrote: one fresh try.
                connection = await self._connect()
                try:
                    response = await connection.send(payload)
                except BaseException:
                    self._discard(connection)
                    raise
            except BaseException:
                self._discard(connection)
                raise
            if connection.reusable and not connection.closed:
                self._idle.append(connection)
            else:
                self._discard(connection)
            return response

    async def aclose(self) -> None:
        for connection in list(self._open):
            connection.close()
        self._open.clear()
        self._idle.clear()

    def _take_idle(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and connection.reusable:
                return connection
            self._open.discard(connection)
        return None

    def _discard(self, connection: _Connection) -> None:
        connection.close()
        self._open.discard(connection)

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        origin = self.origin
        try:
            _, connection = await loop.create_connection(
                _Connection,
                origin.host,
                origin.port,
                ssl=self._ssl,
                server_hostname=origin.host if self._ssl else None,
            )
        except OSError as error:
            raise ConnectFailed(
                f"cannot connect to {origin.host}:{origin.port}: {error.strerror or error}"
            ) from None
        self._open.add(connection)
        return connection
