"""The lean backend (``--client lean``) over real HTTP against the simulated server."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from combee.errors import ConfigError, EndpointError, LLMCallError
from combee.llm import LLM, JsonSchema
from combee.llm.lean_backend import LeanBackend
from combee.sim import HTTPFault, RunningServer, SimConfig, peak_concurrency, serve_in_thread
from combee.sim.responders import Responder, echo_responder

HANG_TIMEOUT_S = 2.0
"""Cuts a hanging call (the server holds it for 600 s); a loaded machine answers in far less."""

HELLO = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}]
ANSWER = JsonSchema(
    "answer",
    {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    },
)


def lean_llm(base_url: str, **options: Any) -> LLM:
    backend = LeanBackend(model="sim", base_url=base_url)
    options.setdefault("backoff_base_s", 0.001)
    options.setdefault("backoff_max_s", 0.01)
    return LLM(backend, **options)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[RunningServer]:
    with serve_in_thread() as server:
        yield server


Serve = Callable[..., contextlib.AbstractContextManager[RunningServer]]


@pytest.fixture
def serve(shared_server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> Serve:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    @contextlib.contextmanager
    def start(
        responder: Responder = echo_responder, config: SimConfig | None = None
    ) -> Iterator[RunningServer]:
        shared_server.reset(responder, config or SimConfig())
        yield shared_server

    return start


async def test_reply_text_usage_and_wire_format(serve: Serve) -> None:
    with serve() as server:
        llm = lean_llm(server.base_url)
        value, completion = await llm.complete_json(HELLO, role="generator", schema=ANSWER)
        await llm.aclose()
        (record,) = server.records
    assert value == {"answer": ""}
    assert completion.prompt_tokens > 0 and completion.model == "sim"
    body = record.body
    assert body["model"] == "sim" and body["messages"] == HELLO
    assert body["response_format"]["json_schema"]["name"] == "answer"
    usage = llm.usage()["generator"]
    assert usage.calls == 1 and usage.prompt_tokens == completion.prompt_tokens


async def test_many_concurrent_calls_share_keep_alive_connections(serve: Serve) -> None:
    # The server holds the first round's 40 calls until all have arrived.
    with serve(echo_responder, SimConfig(gate_n=40)) as server:
        llm = lean_llm(server.base_url, concurrency=64)
        for _ in range(2):  # the second round reuses the first round's connections
            replies = await asyncio.gather(
                *(llm.complete([{"role": "user", "content": f"n{i}"}], role="g") for i in range(40))
            )
            assert [r.text for r in replies] == [f"echo: n{i}" for i in range(40)]
        await llm.aclose()
        records = server.records
    assert len(records) == 80
    assert peak_concurrency(records) == 40


@pytest.mark.parametrize(
    "config, kind",
    [
        (SimConfig(rate_429=1.0, fault_first_n=2, retry_after_s=0.01), "429"),
        (SimConfig(rate_500=1.0, fault_first_n=2), "5xx"),
        (SimConfig(rate_bad_body=1.0, fault_first_n=2), "bad_body"),
    ],
)
async def test_transient_failures_are_classified_and_retried(
    serve: Serve, config: SimConfig, kind: str
) -> None:
    with serve(echo_responder, config) as server:
        llm = lean_llm(server.base_url)
        completion = await llm.complete(HELLO, role="generator")
        await llm.aclose()
    assert completion.text == "echo: hello there"
    assert llm.usage()["generator"].retries_by_kind == {kind: 2}


async def test_hang_is_cut_by_the_timeout_and_retried(serve: Serve) -> None:
    with serve(echo_responder, SimConfig(rate_hang=1.0, fault_first_n=1)) as server:
        llm = lean_llm(server.base_url, timeout_s=HANG_TIMEOUT_S)
        completion = await llm.complete(HELLO, role="generator")
        await llm.aclose()
    assert completion.text == "echo: hello there"
    assert llm.usage()["generator"].retries_by_kind == {"timeout": 1}


async def test_rejected_key_names_the_variable(serve: Serve) -> None:
    def refuse(body: Any) -> str:
        raise HTTPFault(401, "bad key")

    with serve(refuse) as server:
        llm = lean_llm(server.base_url)
        with pytest.raises(EndpointError, match="OPENAI_API_KEY"):
            await llm.complete(HELLO, role="generator")
        await llm.aclose()


async def test_bad_request_is_not_retried(serve: Serve) -> None:
    def reject(body: Any) -> str:
        raise HTTPFault(400, "no")

    with serve(reject) as server:
        llm = lean_llm(server.base_url)
        with pytest.raises(LLMCallError, match="4xx"):
            await llm.complete(HELLO, role="generator")
        await llm.aclose()
        assert len(server.records) == 1


async def test_closed_port_fails_the_preflight(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    llm = lean_llm(f"http://127.0.0.1:{port}/v1")
    with pytest.raises(EndpointError, match="cannot reach"):
        await llm.preflight()
    await llm.aclose()


def test_key_is_needed_off_loopback_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        LeanBackend(model="m", base_url="https://api.example.com/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    backend = LeanBackend(model="m", base_url="https://api.example.com/v1")
    assert "sk-secret" not in repr(backend)


def test_a_base_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(ConfigError, match="is not an http") as caught:
        LeanBackend(model="m", base_url="ftp://127.0.0.1/v1")
    assert caught.value.setting == "base_url"


async def test_proxies_come_from_the_environment(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A proxy that does not exist: the call can only fail if the setting is honoured.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("NO_PROXY", "")
    with serve() as server:
        llm = lean_llm(server.base_url.replace("127.0.0.1", "localhost"), max_retries=0)
        with pytest.raises(LLMCallError, match="connection"):
            await llm.complete(HELLO, role="generator")
        await llm.aclose()
        assert not server.records  # it went to the proxy, not to the server
