"""The OpenAI surface around the learned routes, over real HTTP with the ``openai`` SDK: other
``/v1`` routes pass through unchanged and unstored, the OpenAI request headers and the query
string reach the upstream on every proxied route (never the agent's key), the upstream's
rate-limit and request-id headers come back, and a route the gateway does not know answers in
the OpenAI error shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("starlette")

import openai

from combee.serve import serve_settings
from combee.serve.gateway import Gateway
from combee.serve.running import GatewayThread, create_gateway
from tests.serve.responses_upstream import (
    CHAT,
    EMBEDDINGS,
    REPLY_HEADERS,
    ResponsesUpstream,
)

KEY_ENV = "COMBEE_TEST_UPSTREAM_KEY"
QUERY = {"api-version": "2024-10-21"}
PASSED_BACK = [name for name in REPLY_HEADERS if name != "x-upstream-internal"]


@pytest.fixture
def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[ResponsesUpstream, Gateway, GatewayThread]]:
    monkeypatch.setenv(KEY_ENV, "the-gateways-own-key")
    scripted = ResponsesUpstream()
    with GatewayThread(scripted.app()) as upstream:
        gateway, app = create_gateway(
            upstream.base_url,
            settings=serve_settings(store=str(tmp_path / "s"), learn_every=0),
            api_key_env=KEY_ENV,
        )
        with GatewayThread(app) as running:
            yield scripted, gateway, running


def agent_client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=base_url,
        api_key="the-agents-key",
        organization="org-agent",
        project="proj_agent",
        default_query=QUERY,
    )


def test_embeddings_pass_through_byte_for_byte_and_unstored(
    served: tuple[ResponsesUpstream, Gateway, GatewayThread],
) -> None:
    scripted, gateway, running = served
    client = agent_client(running.base_url)
    raw = client.embeddings.with_raw_response.create(
        model="embed-sim",
        input=["a", "b"],
        encoding_format="float",
        extra_headers={"Idempotency-Key": "idem-1", "OpenAI-Beta": "assistants=v2"},
    )
    vectors = [d.embedding for d in raw.parse().data]
    client.close()
    (arrival,) = scripted.calls("/v1/embeddings")
    assert raw.http_response.content == EMBEDDINGS
    assert vectors == [[0.125, -1.0e-05, 0.33333334, 7], [150.0, 0.0, -0.25, 0.1000000001]]
    assert arrival.body == raw.http_request.content
    assert arrival.query == "api-version=2024-10-21"
    sent = arrival.headers
    assert sent["openai-organization"] == "org-agent"
    assert sent["openai-project"] == "proj_agent"
    assert sent["idempotency-key"] == "idem-1" and sent["openai-beta"] == "assistants=v2"
    assert sent["x-stainless-lang"] == "python" and "x-stainless-package-version" in sent
    assert sent["authorization"] == "Bearer the-gateways-own-key"
    assert not any("the-agents-key" in value for value in sent.values())
    for name in PASSED_BACK:
        assert raw.headers[name] == REPLY_HEADERS[name]
    assert "x-upstream-internal" not in raw.headers
    assert gateway.store.count("exchanges") == 0


def test_the_learned_routes_pass_the_query_string_and_the_headers_both_ways(
    served: tuple[ResponsesUpstream, Gateway, GatewayThread],
) -> None:
    scripted, gateway, running = served
    client = agent_client(running.base_url)
    chat = client.chat.completions.with_raw_response.create(
        model="sim", messages=[{"role": "user", "content": "hi"}]
    )
    responses = client.responses.with_raw_response.create(
        model="sim", input="What is the temperature in Paris?"
    )
    client.close()
    assert chat.http_response.content == CHAT
    assert responses.parse().output[0].type == "function_call"
    for arrival in [*scripted.calls("/v1/chat/completions"), *scripted.calls("/v1/responses")]:
        assert arrival.query == "api-version=2024-10-21"
        assert arrival.headers["openai-organization"] == "org-agent"
        assert arrival.headers["authorization"] == "Bearer the-gateways-own-key"
        assert "x-combee-trace" not in arrival.headers
    for reply in (chat, responses):
        for name in PASSED_BACK:
            assert reply.headers[name] == REPLY_HEADERS[name]
        assert "x-upstream-internal" not in reply.headers
        assert reply.headers["x-combee-trace"]
    assert gateway.store.count("exchanges") == 2


def test_any_other_v1_route_and_method_is_the_upstreams_answer(
    served: tuple[ResponsesUpstream, Gateway, GatewayThread],
) -> None:
    scripted, gateway, running = served
    with httpx.Client(base_url=running.url) as http:
        deleted = http.delete("/v1/files/file-1?purpose=x", headers={"OpenAI-Project": "p"})
        namespaced = http.post("/agents/team/v1/moderations", json={"input": "text"})
        own = http.get("/v1/learn")
    assert deleted.status_code == 404
    assert deleted.json()["error"]["message"] == "upstream: no route /v1/files/file-1"
    assert namespaced.json()["error"]["message"] == "upstream: no route /v1/moderations"
    first, second = scripted.arrivals
    assert first.method == "DELETE" and first.query == "purpose=x"
    assert first.headers["openai-project"] == "p"
    assert (second.method, json.loads(second.body)) == ("POST", {"input": "text"})
    # The gateway's own routes are not passed on under another method.
    assert own.status_code == 405 and len(scripted.arrivals) == 2
    assert gateway.store.count("exchanges") == 0


def test_an_unknown_route_and_method_get_the_openai_error_shape(
    served: tuple[ResponsesUpstream, Gateway, GatewayThread],
) -> None:
    scripted, _, running = served
    missing, wrong_method = (
        httpx.get(running.url + "/v2/chat/completions"),
        httpx.post(running.url + "/healthz"),
    )
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/json"
    error = missing.json()["error"]
    assert set(error) == {"message", "type", "code"} and error["code"] == 404
    assert "GET /v2/chat/completions" in error["message"]
    assert wrong_method.status_code == 405 and set(wrong_method.headers["allow"].split(", ")) == {
        "GET",
        "HEAD",
    }
    assert wrong_method.json()["error"]["type"] == "invalid_request_error"
    assert scripted.arrivals == []
    # The SDK shows the gateway's message.
    client = openai.OpenAI(base_url=running.url + "/nowhere", api_key="k")
    with pytest.raises(openai.NotFoundError, match="no such route at this gateway"):
        client.models.list()
    client.close()
