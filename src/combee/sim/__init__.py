"""A simulated OpenAI-compatible LLM server for tests and benchmarks.

The server itself (:class:`SimServer`, :func:`serve_in_thread`, :func:`run_server`) needs
starlette and uvicorn, the ``sim`` extra (``pip install 'combee[sim]'``): those names are
imported when first used, so the configuration and the scripted responders import without it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from combee.sim.config import SimConfig
from combee.sim.responders import HTTPFault, Reply, Responder, echo_responder, minimal_instance

if TYPE_CHECKING:
    from combee.sim.running import RunningServer, peak_concurrency, run_server, serve_in_thread
    from combee.sim.server import RequestRecord, SimServer

_SERVING = {
    "RunningServer": "combee.sim.running",
    "peak_concurrency": "combee.sim.running",
    "run_server": "combee.sim.running",
    "serve_in_thread": "combee.sim.running",
    "RequestRecord": "combee.sim.server",
    "SimServer": "combee.sim.server",
}
"""Names that need the sim extra -> their module, imported on first use."""


def __getattr__(name: str) -> Any:
    module = _SERVING.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "HTTPFault",
    "Reply",
    "RequestRecord",
    "Responder",
    "RunningServer",
    "SimConfig",
    "SimServer",
    "echo_responder",
    "minimal_instance",
    "peak_concurrency",
    "run_server",
    "serve_in_thread",
]
