"""A simulated OpenAI-compatible LLM server for tests and benchmarks."""

from combee.sim.config import SimConfig
from combee.sim.responders import HTTPFault, Responder, echo_responder, minimal_instance
from combee.sim.running import RunningServer, peak_concurrency, run_server, serve_in_thread
from combee.sim.server import RequestRecord, SimServer

__all__ = [
    "HTTPFault",
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
