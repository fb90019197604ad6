"""Running the simulated server: in a background thread for tests, or in the foreground."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from combee.errors import ConfigError
from combee.sim.config import SimConfig
from combee.sim.extra import missing, needs
from combee.sim.request_log import ASGIApp, RequestLog
from combee.sim.responders import Responder, echo_responder
from combee.sim.server import RequestRecord, SimServer

try:
    import uvicorn
except ImportError as error:  # a plain install, without the sim extra
    absent = missing() or [str(error.name)]
    raise ImportError(needs("the scripted server", absent), name=error.name) from error


class RunningServer:
    """A :class:`SimServer` served by uvicorn on a background thread; a context manager."""

    def __init__(self, sim: SimServer, server: uvicorn.Server, thread: threading.Thread) -> None:
        self.sim = sim
        self._server = server
        self._thread = thread
        sockets = server.servers[0].sockets
        host, port = sockets[0].getsockname()[:2]
        self.host: str = host
        self.port: int = port
        self.base_url = f"http://{host}:{port}/v1"

    @property
    def records(self) -> list[RequestRecord]:
        return self.sim.records

    @property
    def flood_sent(self) -> int:
        return self.sim.flood_sent

    def clear_records(self) -> None:
        self.sim.clear_records()

    def reset(self, responder: Responder | None = None, config: SimConfig | None = None) -> None:
        self.sim.reset(responder, config)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10.0)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def _uvicorn_config(app: ASGIApp, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        backlog=4096,
        timeout_graceful_shutdown=1,
    )


def serve_in_thread(
    responder: Responder = echo_responder,
    config: SimConfig | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
) -> RunningServer:
    """Start the server on a background thread with its own event loop; return once it listens."""
    sim = SimServer(responder, config)
    server = uvicorn.Server(_uvicorn_config(sim.app, host, port))
    failure: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(server.serve())
        except BaseException as error:  # reported to the starting thread below
            failure.append(error)

    thread = threading.Thread(target=run, name="combee-sim-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10.0
    while not server.started:
        if failure or not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            reason = failure[0] if failure else "it did not start"
            raise ConfigError(f"sim server: cannot listen on {host}:{port}: {reason}")
        time.sleep(0.01)
    return RunningServer(sim, server, thread)


def run_server(
    responder: Responder = echo_responder,
    config: SimConfig | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    log: Path | None = None,
) -> None:
    """Serve until interrupted (the ``combee sim-server`` command); with ``log``, each chat
    request's times are appended to that file (:mod:`combee.sim.request_log`)."""
    sim = SimServer(responder, config)
    app: ASGIApp = sim.app if log is None else RequestLog(sim.app, log)
    uvicorn.Server(_uvicorn_config(app, host, port)).run()


def peak_concurrency(records: Sequence[RequestRecord]) -> int:
    """The largest number of requests the server held at once (from arrival to reply)."""
    events = sorted(
        [(r.arrived, 1) for r in records] + [(r.finished, -1) for r in records],
        key=lambda event: (event[0], event[1]),
    )
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak


__all__ = ["RunningServer", "peak_concurrency", "run_server", "serve_in_thread"]
