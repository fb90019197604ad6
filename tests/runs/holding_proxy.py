"""A TCP proxy in front of a server that can stop answering: after :meth:`HoldingProxy.hold`
what clients send is kept, not forwarded, so their calls wait for an answer that does not come
(the connection stays open: a hung server, not a dead one); :meth:`HoldingProxy.release`
forwards what was kept, and the server answers late."""

from __future__ import annotations

import contextlib
import socket
import threading


class _Connection:
    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.kept: list[bytes] = []
        self.open = True


class HoldingProxy:
    """Listens on 127.0.0.1 and forwards to ``host:port`` until :meth:`close`."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.uri = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._holding = False
        self._connections: list[_Connection] = []
        self.held = 0
        """Pieces of requests kept while holding."""
        threading.Thread(target=self._accept, daemon=True).start()

    def hold(self) -> None:
        with self._lock:
            self._holding = True

    def release(self) -> None:
        with self._lock:
            self._holding = False
            for connection in self._connections:
                for data in connection.kept:
                    with contextlib.suppress(OSError):
                        connection.upstream.sendall(data)
                connection.kept.clear()

    def waiting(self) -> int:
        """Open connections whose client sent something kept and has not given up."""
        with self._lock:
            return sum(1 for c in self._connections if c.open and c.kept)

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for connection in self._connections:
                for side in (connection.client, connection.upstream):
                    with contextlib.suppress(OSError):
                        side.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
                upstream = socket.create_connection(self._target)
            except OSError:
                return
            connection = _Connection(client, upstream)
            with self._lock:
                self._connections.append(connection)
            threading.Thread(target=self._up, args=(connection,), daemon=True).start()
            threading.Thread(target=self._down, args=(connection,), daemon=True).start()

    def _up(self, connection: _Connection) -> None:
        while True:
            try:
                data = connection.client.recv(65536)
            except OSError:
                data = b""
            with self._lock:
                if not data:
                    connection.open = False
                    with contextlib.suppress(OSError):
                        connection.upstream.shutdown(socket.SHUT_WR)
                    return
                if self._holding:
                    connection.kept.append(data)
                    self.held += 1
                    continue
            try:
                connection.upstream.sendall(data)
            except OSError:
                return

    def _down(self, connection: _Connection) -> None:
        while True:
            try:
                data = connection.upstream.recv(65536)
                if not data:
                    break
                connection.client.sendall(data)
            except OSError:
                break
        with contextlib.suppress(OSError):
            connection.client.close()
