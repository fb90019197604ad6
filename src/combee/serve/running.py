"""``combee.serve.serve``: the gateway on uvicorn, its learner beside it, until a signal stops it.

On SIGINT or SIGTERM uvicorn stops accepting, lets in-flight requests finish (their exchanges are
stored), then the learner's round in progress is cancelled (nothing of it is stored: a version
and its activation are written together or not at all) and the store's queued writes are
committed.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from combee.errors import ConfigError
from combee.files import read_setting_file
from combee.llm.connect import Endpoint
from combee.llm.types import DEFAULT_KEY_ENV
from combee.serve.access import Access
from combee.serve.gateway import Gateway
from combee.serve.learner import ContinuousLearner, RoundResult
from combee.serve.local_upstream import MODEL_ALIAS, LocalUpstream, is_local
from combee.serve.settings import ServeSettings
from combee.serve.store import TraceStore
from combee.serve.upstream import HttpUpstream

logger = logging.getLogger(__name__)


def create_gateway(
    upstream: str,
    *,
    settings: ServeSettings,
    model: str = "",
    api_key_env: str = DEFAULT_KEY_ENV,
    agent_token: str | None = None,
    operator_token: str | None = None,
    token: str | None = None,
    redact: bool = True,
    learner_llm: Any = None,
    learn_settings: Mapping[str, Any] | None = None,
    on_round: Callable[[RoundResult], None] | None = None,
) -> tuple[Gateway, Any]:
    """The gateway and its ASGI app.

    ``upstream``: an OpenAI-compatible base URL, or ``local`` (``local:smollm2``,
    ``local:PATH.gguf``) for the embedded model behind llama.cpp's server. The learner starts
    with the app when ``learner_llm`` is given and ``settings.learn_every`` is not 0.
    ``redact``: secret-like strings are replaced in what the store keeps (as in all of Combee's
    LLM traffic).

    ``agent_token``: what agents send to chat and post feedback (None: anyone may);
    ``operator_token``: what learn, rollback and the playbook routes take, and what makes
    feedback text trusted (None: those routes are closed unless
    ``settings.open_operator_routes``); see :mod:`combee.serve.access`. ``token`` is the agent
    token's earlier name."""
    access = Access(
        agent_token=_agent_token(agent_token, token),
        operator_token=operator_token,
        open_operator_routes=settings.open_operator_routes,
    )
    initial = starting_playbook(settings.playbook)
    local = None
    if is_local(upstream):  # the embedded model, behind llama.cpp's own server
        local = LocalUpstream(upstream)
        atexit.register(local.stop)
        upstream, model = local.base_url, model or MODEL_ALIAS
        learner_llm = _learning_locally(learner_llm, local.base_url)
    store = TraceStore(settings.store, folder=settings.rounds_folder or None)
    http = HttpUpstream(
        upstream,
        api_key_env=api_key_env,
        timeout_s=settings.upstream_timeout,
        max_reply_bytes=int(settings.max_reply_mb * 2**20),
    )
    learner: ContinuousLearner | None = None
    gateway: Gateway

    def round_done(result: RoundResult) -> None:
        gateway.refresh(result.namespace)
        logger.info("%s", result.line())
        if on_round is not None:
            on_round(result)

    if learner_llm is not None:
        learner = ContinuousLearner(
            store,
            llm=learner_llm,
            settings=settings,
            learn_settings=learn_settings,
            on_round=round_done,
            initial=initial,
        )
    gateway = Gateway(
        http,
        store,
        settings,
        model=model,
        access=access,
        redact=redact,
        initial=initial,
        on_feedback=None if learner is None else learner.poke,
    )
    gateway.learner = learner

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        if learner is not None:
            learner.start()
        try:
            # A version activated elsewhere (a replica, `combee serve rollback`) is served here.
            with store.watch(gateway.refresh):
                yield
        finally:
            if learner is not None:
                await learner.stop()
            await http.aclose()
            await asyncio.to_thread(store.close)
            if local is not None:
                local.stop()

    return gateway, gateway.app(lifespan=lifespan)


def _agent_token(agent_token: str | None, token: str | None) -> str | None:
    """The agent token, given by its name or by its earlier one (``token``)."""
    if agent_token and token and agent_token != token:
        raise ConfigError(
            "and token (its earlier name) name two different tokens: give one",
            setting="agent_token",
        )
    return agent_token or token


def _learning_locally(learner: Any, base_url: str) -> Any:
    """An embedded-model learner of a gateway in front of the embedded model: the same server,
    rather than a second copy of the model in this process."""
    if isinstance(learner, Endpoint) and learner.base_url is None and is_local(learner.model):
        return dataclasses.replace(
            learner, model=MODEL_ALIAS, base_url=base_url, json_mode="json_object_schema"
        )
    return learner


def starting_playbook(path: str) -> str:
    """The text of the ``playbook`` setting's file ("" when none is named)."""
    if not path:
        return ""
    return read_setting_file(path, "playbook")


def serve(app: Any, settings: ServeSettings, *, log_level: str = "warning") -> None:
    """Run ``app`` on uvicorn at the settings' host and port until SIGINT/SIGTERM."""
    import uvicorn

    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        timeout_graceful_shutdown=30,
        access_log=False,
        proxy_headers=False,  # the gateway records no client address: nothing to read
        backlog=4096,
    )


class GatewayThread:
    """The gateway's app on uvicorn in a background thread (tests, notebooks, an agent's own
    process); :meth:`stop` shuts it down as a signal would."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        import threading
        import time

        import uvicorn

        config = uvicorn.Config(
            app, host=host, port=port, log_level="warning", access_log=False, backlog=4096
        )
        self._server = uvicorn.Server(config)
        failure: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(self._server.serve())
            except BaseException as problem:  # reported to the starting thread below
                failure.append(problem)

        self._thread = threading.Thread(target=run, name="combee-gateway", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30.0
        while not self._server.started:
            if failure or not self._thread.is_alive() or time.monotonic() > deadline:
                self._server.should_exit = True
                reason = failure[0] if failure else "it did not start"
                raise ConfigError(f"gateway: cannot listen on {host}:{port}: {reason}")
            time.sleep(0.01)
        bound = self._server.servers[0].sockets[0].getsockname()
        self.url = f"http://{bound[0]}:{bound[1]}"
        self.base_url = f"{self.url}/v1"

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=60.0)

    def __enter__(self) -> GatewayThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
