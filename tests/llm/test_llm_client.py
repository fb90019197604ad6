"""The LLM client over real HTTP against the simulated server on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from combee.errors import ConfigError, EndpointError, InvalidReplyError, LLMCallError
from combee.llm import LLM, JsonSchema, OpenAIBackend, Prices, connect
from combee.sim import HTTPFault, RunningServer, SimConfig, peak_concurrency, serve_in_thread
from combee.sim.responders import Responder, echo_responder

ANSWER = JsonSchema(
    "answer",
    {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
        "required": ["answer", "confidence"],
    },
)
HELLO = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}]


def make_llm(base_url: str, **options: Any) -> LLM:
    json_mode = options.pop("json_mode", "json_schema")
    backend = OpenAIBackend(model="sim", base_url=base_url, json_mode=json_mode, timeout_s=5.0)
    options.setdefault("backoff_base_s", 0.001)
    options.setdefault("backoff_max_s", 0.01)
    options.setdefault("seed", 7)
    return LLM(backend, json_mode=json_mode, **options)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[RunningServer]:
    with serve_in_thread() as server:
        yield server


Serve = Callable[..., contextlib.AbstractContextManager[RunningServer]]


@pytest.fixture
def serve(shared_server: RunningServer) -> Serve:
    """One server for the module, reset to a new script and fault config by each test."""

    @contextlib.contextmanager
    def start(
        responder: Responder = echo_responder, config: SimConfig | None = None
    ) -> Iterator[RunningServer]:
        shared_server.reset(responder, config or SimConfig())
        yield shared_server

    return start


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    yield


def scripted(*replies: str) -> Responder:
    """Answers the given replies in order, then repeats the last one."""
    served: list[str] = []

    def respond(body: Mapping[str, Any]) -> str:
        reply = replies[min(len(served), len(replies) - 1)]
        served.append(reply)
        return reply

    return respond


async def test_complete_returns_text_and_accounts_usage_per_role(
    serve: Serve, no_key: None
) -> None:
    with serve(echo_responder) as server:
        llm = make_llm(server.base_url, prices=Prices(1.0, 2.0))
        first = await llm.complete(HELLO, role="generator")
        await llm.complete(HELLO, role="generator")
        await llm.complete([{"role": "user", "content": "x" * 400}], role="curator")
        await llm.aclose()
    assert first.text == "echo: hello there"
    assert first.model == "sim"
    prompt_chars = len("Be brief.") + len("hello there")
    assert first.prompt_tokens == prompt_chars // 4
    assert first.completion_tokens == len("echo: hello there") // 4
    assert first.cost == pytest.approx(
        (first.prompt_tokens * 1.0 + first.completion_tokens * 2.0) / 1e6
    )
    usage = llm.usage()
    assert set(usage) == {"generator", "curator"}
    assert usage["generator"].calls == 2
    assert usage["generator"].prompt_tokens == 2 * first.prompt_tokens
    assert usage["generator"].cost == pytest.approx(2 * (first.cost or 0.0))
    assert usage["curator"].prompt_tokens == 100
    assert [call.role for call in llm.calls].count("generator") == 2
    assert all(call.ok and call.attempts == 1 for call in llm.calls)
    assert all(call.start <= call.sent <= call.end for call in llm.calls)


async def test_usage_is_a_copy(serve: Serve, no_key: None) -> None:
    with serve() as server:
        llm = make_llm(server.base_url)
        await llm.complete(HELLO, role="generator")
        llm.usage()["generator"].calls = 99
        assert llm.usage()["generator"].calls == 1
        await llm.aclose()


async def test_json_schema_mode_sends_response_format(serve: Serve, no_key: None) -> None:
    with serve(echo_responder) as server:
        llm = make_llm(server.base_url)
        value, completion = await llm.complete_json(HELLO, role="reflector", schema=ANSWER)
        await llm.aclose()
        (record,) = server.records
    assert value == {"answer": "", "confidence": 0}
    assert json.loads(completion.text) == value
    assert record.schema_name == "answer"
    response_format = record.body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["schema"] == ANSWER.schema
    assert response_format["json_schema"]["strict"] is False
    # The schema travels in response_format only; the prompt is left as the caller wrote it.
    assert record.body["messages"] == HELLO
    assert record.body["seed"] == 7


@pytest.mark.parametrize(
    ("mode", "expected_format"),
    [
        ("json_object_schema", {"type": "json_object", "schema": dict(ANSWER.schema)}),
        ("json_object", {"type": "json_object"}),
        ("none", None),
    ],
)
async def test_other_json_modes_put_the_schema_in_the_system_prompt(
    serve: Serve, no_key: None, mode: str, expected_format: dict[str, Any] | None
) -> None:
    reply = json.dumps({"answer": "42", "confidence": 0.9})
    with serve(scripted(reply)) as server:
        llm = make_llm(server.base_url, json_mode=mode)
        value, _ = await llm.complete_json(HELLO, role="generator", schema=ANSWER)
        await llm.aclose()
        (record,) = server.records
    assert value == {"answer": "42", "confidence": 0.9}
    assert record.body.get("response_format") == expected_format
    system = record.body["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("Be brief.")
    assert '"required":["answer","confidence"]' in system["content"]
    assert record.body["messages"][1:] == HELLO[1:]


async def test_schema_instruction_adds_a_system_message_when_there_is_none(
    serve: Serve, no_key: None
) -> None:
    reply = json.dumps({"answer": "a", "confidence": 1})
    with serve(scripted(reply)) as server:
        llm = make_llm(server.base_url, json_mode="json_object")
        await llm.complete_json([{"role": "user", "content": "q"}], role="g", schema=ANSWER)
        await llm.aclose()
        messages = server.records[0].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "answer" in messages[0]["content"]


async def test_invalid_reply_is_reasked_once_with_the_error(serve: Serve, no_key: None) -> None:
    fixed = {"answer": "ok", "confidence": 1}
    with serve(scripted('{"answer": "ok"}', json.dumps(fixed))) as server:
        llm = make_llm(server.base_url)
        value, _ = await llm.complete_json(HELLO, role="curator", schema=ANSWER)
        await llm.aclose()
        records = sorted(server.records, key=lambda r: r.index)
    assert value == fixed
    assert llm.usage()["curator"].reasks == 1
    assert llm.usage()["curator"].calls == 2
    assert len(records) == 2
    retry_messages = records[1].body["messages"]
    assert retry_messages[:2] == HELLO
    assert retry_messages[2] == {"role": "assistant", "content": '{"answer": "ok"}'}
    assert retry_messages[3]["role"] == "user"
    assert "confidence" in retry_messages[3]["content"]


async def test_fenced_reply_in_prose_is_accepted_without_reask(serve: Serve, no_key: None) -> None:
    reply = 'Sure!\n```json\n{"answer": "{not a brace}", "confidence": 0.5}\n```'
    with serve(scripted(reply)) as server:
        llm = make_llm(server.base_url)
        value, _ = await llm.complete_json(HELLO, role="generator", schema=ANSWER)
        await llm.aclose()
    assert value == {"answer": "{not a brace}", "confidence": 0.5}
    assert llm.usage()["generator"].reasks == 0


async def test_reply_still_invalid_after_reask_raises(serve: Serve, no_key: None) -> None:
    with serve(scripted("I cannot answer that.")) as server:
        llm = make_llm(server.base_url)
        with pytest.raises(InvalidReplyError) as raised:
            await llm.complete_json(HELLO, role="curator", schema=ANSWER)
        await llm.aclose()
        assert len(server.records) == 2
    message = str(raised.value)
    assert "curator" in message
    assert "I cannot answer that." in message
    usage = llm.usage()["curator"]
    assert usage.reasks == 1
    assert usage.failed_calls == 1


@pytest.mark.parametrize(
    ("config", "kind", "requests"),
    [
        (SimConfig(rate_500=1.0, fault_first_n=2), "5xx", 3),
        (SimConfig(rate_bad_body=1.0, fault_first_n=2), "bad_body", 3),
        (SimConfig(rate_429=1.0, fault_first_n=1, retry_after_s=0.0), "429", 2),
    ],
)
async def test_transient_failures_are_retried(
    serve: Serve, no_key: None, config: SimConfig, kind: str, requests: int
) -> None:
    with serve(echo_responder, config) as server:
        llm = make_llm(server.base_url)
        completion = await llm.complete(HELLO, role="generator")
        await llm.aclose()
        assert len(server.records) == requests
    assert completion.text == "echo: hello there"
    usage = llm.usage()["generator"]
    assert usage.retries_by_kind == {kind: requests - 1}
    assert usage.retries == requests - 1
    assert usage.failed_calls == 0
    (call,) = llm.calls
    assert call.ok
    assert call.attempts == requests


async def test_retry_after_is_honoured(serve: Serve, no_key: None) -> None:
    config = SimConfig(rate_429=1.0, fault_first_n=1, retry_after_s=0.3)
    with serve(echo_responder, config) as server:
        # Our own backoff would wait at most 1 ms; only the header explains a longer pause.
        llm = make_llm(server.base_url, backoff_base_s=0.001, backoff_max_s=5.0)
        await llm.complete(HELLO, role="generator")
        await llm.aclose()
        first, second = sorted(server.records, key=lambda r: r.index)
    assert first.status == 429
    assert second.status == 200
    assert second.arrived - first.finished >= 0.25


async def test_hanging_request_is_cut_by_the_timeout_and_retried(
    serve: Serve, no_key: None
) -> None:
    config = SimConfig(rate_hang=1.0, fault_first_n=1, hang_s=600.0)
    with serve(echo_responder, config) as server:
        # Cuts the 600 s hang; the retry, answered at once, has ample time even on a busy machine.
        llm = make_llm(server.base_url, timeout_s=2.0)
        completion = await llm.complete(HELLO, role="generator")
        await llm.aclose()
    assert completion.text == "echo: hello there"
    assert llm.usage()["generator"].retries_by_kind == {"timeout": 1}


async def test_retries_give_up_after_max_retries(serve: Serve, no_key: None) -> None:
    with serve(echo_responder, SimConfig(rate_500=1.0)) as server:
        llm = make_llm(server.base_url, max_retries=2)
        with pytest.raises(LLMCallError) as raised:
            await llm.complete(HELLO, role="reflector")
        await llm.aclose()
        assert len(server.records) == 3
    assert "reflector" in str(raised.value)
    assert "5xx" in str(raised.value)
    usage = llm.usage()["reflector"]
    assert usage.failed_calls == 1
    assert usage.retries == 2
    (call,) = llm.calls
    assert not call.ok
    assert call.attempts == 3
    assert call.error == "5xx"


def failing(status: int) -> Responder:
    def respond(body: Mapping[str, Any]) -> str:
        raise HTTPFault(status, f"simulated {status}")

    return respond


async def test_bad_request_is_not_retried(serve: Serve, no_key: None) -> None:
    with serve(failing(400)) as server:
        llm = make_llm(server.base_url)
        with pytest.raises(LLMCallError) as raised:
            await llm.complete(HELLO, role="generator")
        await llm.aclose()
        assert len(server.records) == 1
    assert not isinstance(raised.value, EndpointError)
    assert "400" in str(raised.value)
    assert llm.usage()["generator"].retries == 0


async def test_rejected_key_names_the_variable_not_the_key(
    serve: Serve,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COMBEE_TEST_KEY", "sk-secret-value-123")
    with serve(failing(401)) as server:
        backend = OpenAIBackend(
            model="sim", base_url=server.base_url, api_key_env="COMBEE_TEST_KEY"
        )
        llm = LLM(backend, backoff_base_s=0.001)
        with pytest.raises(EndpointError) as raised:
            await llm.complete(HELLO, role="generator")
        await llm.aclose()
        assert len(server.records) == 1
    assert "COMBEE_TEST_KEY" in str(raised.value)
    assert "sk-secret-value-123" not in str(raised.value)


async def test_unknown_model_names_the_model(serve: Serve, no_key: None) -> None:
    with serve(failing(404)) as server:
        llm = make_llm(server.base_url)
        with pytest.raises(EndpointError, match="'sim'"):
            await llm.complete(HELLO, role="generator")
        await llm.aclose()


async def test_concurrency_limit_is_honoured(serve: Serve, no_key: None) -> None:
    # The gate holds the first four requests until all four are in flight, so the peak is
    # at least four; the client's limit must keep it at most four.
    config = SimConfig(gate_n=4, ttft_s=0.01)
    with serve(echo_responder, config) as server:
        llm = make_llm(server.base_url, concurrency=4)
        replies = await gather_calls(llm, 20)
        await llm.aclose()
        records = server.records
    assert len(replies) == 20
    assert len(records) == 20
    assert peak_concurrency(records) == 4


async def test_calls_overlap_when_concurrency_allows(serve: Serve, no_key: None) -> None:
    # With a limit below 16 the gate would time out and the peak would stay below 16.
    config = SimConfig(gate_n=16, gate_timeout_s=30.0)
    with serve(echo_responder, config) as server:
        llm = make_llm(server.base_url, concurrency=16)
        await gather_calls(llm, 16)
        await llm.aclose()
        assert peak_concurrency(server.records) == 16


async def gather_calls(llm: LLM, count: int) -> list[str]:
    calls = [
        llm.complete([{"role": "user", "content": f"question {i}"}], role="generator")
        for i in range(count)
    ]
    return [completion.text for completion in await asyncio.gather(*calls)]


async def test_preflight_against_a_closed_port_raises_endpoint_error(no_key: None) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    llm = make_llm(f"http://127.0.0.1:{port}/v1")
    with pytest.raises(
        EndpointError, match=r"cannot reach the LLM endpoint at http://127\.0\.0\.1"
    ):
        await llm.preflight()
    await llm.aclose()


async def test_preflight_passes_against_a_running_server(serve: Serve, no_key: None) -> None:
    with serve() as server:
        llm = make_llm(server.base_url)
        await llm.preflight()
        await llm.aclose()
        (structured,) = server.records  # one call: reachable, key, model and schemas at once
    assert structured.body["response_format"]["type"] == "json_schema"
    with serve() as server:
        llm = make_llm(server.base_url, json_mode="json_object")
        await llm.preflight()
        await llm.aclose()
        (plain,) = server.records
    assert plain.body["max_tokens"] == 1 and "response_format" not in plain.body


def test_remote_endpoint_without_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COMBEE_TEST_MISSING_KEY", raising=False)
    with pytest.raises(ConfigError, match="COMBEE_TEST_MISSING_KEY"):
        OpenAIBackend(
            model="m", base_url="https://llm.example.com/v1", api_key_env="COMBEE_TEST_MISSING_KEY"
        )


@pytest.mark.parametrize("client", ["openai", "lean"])
def test_an_openai_base_url_that_is_not_http_is_refused_by_both_clients(
    monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://127.0.0.1/v1")
    with pytest.raises(ConfigError, match=r"'ftp://127\.0\.0\.1/v1' is not an http") as caught:
        connect("sim", client=client)
    assert caught.value.setting == "base_url"


@pytest.mark.parametrize("client", ["openai", "lean"])
async def test_a_loopback_openai_base_url_needs_no_key_as_base_url_does(
    serve: Serve, no_key: None, monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    with serve() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        llm = connect("sim", client=client)  # no base_url: the environment's
        assert llm.settings["base_url"] == server.base_url
        await llm.preflight()
        await llm.aclose()
        assert len(server.records) == 1  # the call went there, with no key asked for
    monkeypatch.setenv("OPENAI_BASE_URL", "https://llm.example.com/v1")
    with pytest.raises(ConfigError, match=r"OPENAI_API_KEY is not set, but https://llm\.example"):
        connect("sim", client=client)


def test_invalid_limits_are_config_errors(no_key: None) -> None:
    backend = OpenAIBackend(model="m", base_url="http://localhost:9/v1")
    with pytest.raises(ConfigError, match="concurrency"):
        LLM(backend, concurrency=0)
