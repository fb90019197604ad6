"""The gateway as the plain ``openai`` SDK sees it: replies byte-faithful (plain and streamed),
upstream errors passed on, the playbook put in by one rule per namespace, conversations chained,
the client's token checked and never forwarded, the upstream's key never stored."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

import openai
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from combee.bench.server_process import free_port
from combee.serve import serve_settings
from combee.serve.records import PlaybookVersion
from combee.serve.running import GatewayThread, create_gateway
from combee.serve.store_writes import add_version

# Deliberately unusual bytes: spacing, key order, escapes, an extra field.
PLAIN = (
    b'{"id":"chatcmpl-x1",  "object":"chat.completion","created":1,"model":"m",'
    b'"choices":[{"index":0,"message":{"role":"assistant","content":"caf\\u00e9 \xe2\x98\x95",'
    b'"refusal":null},"finish_reason":"stop","logprobs":null}],'
    b'"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5},"vendor_extra":[1,2]}'
)
STREAM = [
    b": keep-alive comment\n\n",
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n',
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"lo \\u2603"},"finish_reason":null}]}\n\n',
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",',
    b'"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",'
    b'"function":{"name":"look","arguments":"{\\"q\\": "}}]},"finish_reason":null}]}\n\n',
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":'
    b'"\\"x\\"}"}}]},"finish_reason":"tool_calls"}]}\n\n',
    b"data: [DONE]\n\n",
]


class Upstream:
    """An OpenAI-compatible stand-in that answers fixed bytes and keeps what it received."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.status = 200
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    async def _chat(self, request: Request) -> Response:
        body = await request.body()
        self.requests.append((dict(request.headers), body))
        if self.status != 200:
            return Response(
                b'{"error":{"message":"slow down","type":"rate_limit_error"}}',
                status_code=self.status,
                headers={"retry-after": "7"},
                media_type="application/json",
            )
        if json.loads(body).get("stream"):

            async def chunks() -> Any:
                for chunk in STREAM:
                    yield chunk
                    await asyncio.sleep(0)

            return StreamingResponse(chunks(), media_type="text/event-stream")
        return Response(PLAIN, media_type="application/json")

    async def _models(self, request: Request) -> Response:
        return Response(b'{"object":"list","data":[{"id":"m","object":"model"}]}')

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.requests]


@pytest.fixture
def upstream() -> Iterator[tuple[Upstream, str]]:
    fake = Upstream()
    with GatewayThread(fake.app) as running:
        yield fake, running.base_url


def gateway(
    tmp_path: Path, upstream_url: str, monkeypatch: pytest.MonkeyPatch, **extra: Any
) -> tuple[Any, Any]:
    monkeypatch.setenv("UPSTREAM_KEY", "sk-upstream-secret-0123456789abcdef")
    return create_gateway(
        upstream_url,
        settings=serve_settings(store=str(tmp_path / "store"), learn_every=0),
        api_key_env="UPSTREAM_KEY",
        **extra,
    )


def test_plain_and_streamed_replies_reach_the_sdk_byte_for_byte(
    tmp_path: Path, upstream: tuple[Upstream, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, url = upstream
    gate, app = gateway(tmp_path, url, monkeypatch)
    messages = [{"role": "user", "content": "hi"}]
    with GatewayThread(app) as running:
        client = openai.OpenAI(base_url=running.base_url, api_key="agent")
        raw = client.chat.completions.with_raw_response.create(model="m", messages=messages)
        completion = raw.parse()
        with client.chat.completions.with_streaming_response.create(
            model="m", messages=messages, stream=True
        ) as streamed:
            received = b"".join(streamed.iter_bytes())
        chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True))
        client.close()
    assert raw.http_response.content == PLAIN
    assert completion.choices[0].message.content == "café ☕"
    assert raw.headers["x-combee-trace"].startswith("tr-")
    assert raw.headers["x-combee-playbook-version"] == "1"
    assert received == b"".join(STREAM)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello ☃"
    # What reached the upstream is what the agent sent (the empty v1 playbook adds nothing).
    assert fake.bodies()[0] == {"model": "m", "messages": messages}
    assert fake.bodies()[1]["stream"] is True
    # The streamed reply is stored as one assistant message, tool call included.
    stored = gate.store.exchanges(gate.store.trace_ids("default")[-1])[-1]
    assert stored.reply == {
        "role": "assistant",
        "content": "Hello ☃",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "look", "arguments": '{"q": "x"}'},
            }
        ],
    }


def test_upstream_errors_pass_through_and_an_unreachable_upstream_is_named(
    tmp_path: Path, upstream: tuple[Upstream, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, url = upstream
    fake.status = 429
    _, app = gateway(tmp_path, url, monkeypatch)
    with GatewayThread(app) as running:
        client = openai.OpenAI(base_url=running.base_url, api_key="a", max_retries=0)
        with pytest.raises(openai.RateLimitError) as limited:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.response.content == (
        b'{"error":{"message":"slow down","type":"rate_limit_error"}}'
    )
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    _, dead = gateway(tmp_path / "b", nowhere, monkeypatch)
    with GatewayThread(dead) as running:
        client = openai.OpenAI(base_url=running.base_url, api_key="a", max_retries=0)
        with pytest.raises(openai.APIStatusError) as failed:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert failed.value.status_code == 502
    assert f"the upstream {nowhere} did not answer" in failed.value.message


def test_token_checked_and_keys_kept_apart(
    tmp_path: Path, upstream: tuple[Upstream, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, url = upstream
    # ``token``, the agent token's earlier name, still sets it.
    gate, app = gateway(tmp_path, url, monkeypatch, token="client-token-42")
    secret_message = (
        "my key is sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 please keep it; "
        "AWS secret key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # the AWS docs' example
    )
    with GatewayThread(app) as running:
        refused = openai.OpenAI(base_url=running.base_url, api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            refused.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        client = openai.OpenAI(base_url=running.base_url, api_key="client-token-42")
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": secret_message}]
        )
        with pytest.raises(openai.PermissionDeniedError, match="operator route"):
            client.get("/playbook", cast_to=object)  # the agent token reads no playbook
    headers, _ = fake.requests[-1]
    assert len(fake.requests) == 1  # the refused call never reached the upstream
    assert headers["authorization"] == "Bearer sk-upstream-secret-0123456789abcdef"
    assert fake.bodies()[0]["messages"][0]["content"] == secret_message
    raw = (tmp_path / "store" / "traces.sqlite").read_bytes()
    for path in (tmp_path / "store").glob("traces.sqlite*"):
        raw += path.read_bytes()
    assert b"sk-upstream-secret" not in raw and b"client-token-42" not in raw
    assert b"AbCdEfGhIjKlMnOpQrStUvWxYz0123456789" not in raw
    assert b"bPxRfiCYEXAMPLEKEY" not in raw  # a key written in prose, no rule's format
    stored = gate.store.exchanges(gate.store.trace_ids("default")[0])[0]
    assert "[REDACTED:" in stored.messages[0]["content"]


def test_playbook_per_namespace_off_on_request_and_conversations_chained(
    tmp_path: Path, upstream: tuple[Upstream, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, url = upstream
    gate, app = gateway(tmp_path, url, monkeypatch)
    store = gate.store
    for namespace, rule in (("default", "Always greet."), ("billing", "Quote the invoice id.")):
        text = f"## Strategies and rules\n[str-00001] helpful=0 harmful=0 :: {rule}\n"
        store.write(
            add_version(
                PlaybookVersion(namespace, 0, text, 0.0, "active", traces=["t"]), activate=True
            )
        )
    system = {"role": "system", "content": "You help."}
    with GatewayThread(app) as running:
        plain = openai.OpenAI(base_url=running.base_url, api_key="a")
        first = plain.chat.completions.with_raw_response.create(
            model="m", messages=[system, {"role": "user", "content": "one"}]
        )
        reply = first.parse().choices[0].message
        follow = plain.chat.completions.with_raw_response.create(
            model="m",
            messages=[
                system,
                {"role": "user", "content": "one"},
                {"role": "assistant", "content": reply.content},
                {"role": "user", "content": "two"},
            ],
        )
        other = plain.chat.completions.with_raw_response.create(
            model="m", messages=[system, {"role": "user", "content": "one"}]
        )
        by_path = openai.OpenAI(base_url=running.url + "/agents/billing/v1", api_key="a")
        by_path.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        by_header = openai.OpenAI(
            base_url=running.base_url,
            api_key="a",
            default_headers={"X-Combee-Agent": "billing", "X-Combee-Playbook": "off"},
        )
        by_header.chat.completions.create(
            model="m", messages=[system, {"role": "user", "content": "q"}]
        )
        bad = openai.OpenAI(
            base_url=running.base_url, api_key="a", max_retries=0,
            default_headers={"X-Combee-Agent": "../etc"},
        )  # fmt: skip
        with pytest.raises(openai.BadRequestError, match="agent namespace"):
            bad.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
    sent = fake.bodies()
    assert sent[0]["messages"][0]["content"].startswith("You help.\n\n")
    assert "Always greet." in sent[0]["messages"][0]["content"]
    assert "Quote the invoice id." in sent[3]["messages"][0]["content"]  # a system message added
    assert sent[3]["messages"][0]["role"] == "system" and len(sent[3]["messages"]) == 2
    assert sent[4]["messages"][0] == system  # off: as the agent sent it
    # The follow-up continues the first conversation; the same opening later starts another.
    assert follow.headers["x-combee-trace"] == first.headers["x-combee-trace"]
    assert other.headers["x-combee-trace"] != first.headers["x-combee-trace"]
    with sqlite3.connect(tmp_path / "store" / "traces.sqlite") as db:
        namespaces = sorted(row[0] for row in db.execute("SELECT namespace FROM exchanges"))
    assert namespaces == ["billing", "billing", "default", "default", "default"]


def test_what_an_attacker_or_a_log_file_sends_gets_one_clear_answer(
    tmp_path: Path, upstream: tuple[Upstream, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import urllib.error
    import urllib.request

    fake, url = upstream
    gate, app = create_gateway(
        url,
        settings=serve_settings(store=str(tmp_path / "store"), learn_every=0, max_body_mb=2),
        operator_token="operator-7",
    )
    blob = "token " + "0123456789abcdef" * 65_536  # a 1 MB hex dump after a cue word

    def send(path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(
            running.url + path,
            data=body,
            headers={"Content-Type": "application/json", "Authorization": "Bearer operator-7"},
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as refused:
            return refused.code, json.loads(refused.read())

    with GatewayThread(app) as running:
        status, _ = send(
            "/v1/chat/completions",
            json.dumps({"model": "m", "messages": [{"role": "user", "content": blob}]}).encode(),
        )
        assert status == 200
        (trace,) = gate.store.trace_ids("default")
        known = f'{{"trace_id": "{trace}"'.encode()
        cases = [
            ("/v1/chat/completions", b"x" * 3_000_000, 413, "over 2 MB"),
            ("/v1/chat/completions", b"{not json", 400, "not JSON"),
            ("/v1/chat/completions", b'{"messages": "hi"}', 400, "'messages' list"),
            ("/v1/chat/completions", b'{"messages": [1, 2]}', 400, "JSON object"),
            ("/v1/feedback", b'{"trace_id": "tr-nope", "success": true}', 404, "no trace"),
            ("/v1/feedback", b'{"session_id": "s", "success": true}', 404, "no conversation"),
            ("/v1/feedback", known + b', "rewrd": 1}', 400, "unknown field 'rewrd'"),
            ("/v1/feedback", known + b', "reward": "high"}', 400, "finite number"),
            ("/v1/feedback", known + b', "success": "yes"}', 400, "true or false"),
            ("/v1/feedback", known + b"}", 400, "give a reward"),
            ("/v1/playbook/rollback", b'{"version": "2"}', 400, "whole number"),
            ("/v1/playbook/rollback", b"{}", 404, "no earlier playbook"),
            ("/v1/learn", b"{}", 409, "does not learn"),
        ]
        for path, body, expected, words in cases:
            status, answer = send(path, body)
            assert status == expected, (path, body[:40], answer)
            assert words in answer["error"]["message"], answer
    assert len(fake.requests) == 1  # only the well-formed request went upstream
    assert gate.store.count("feedback") == 0
    kept = gate.store.exchanges(trace)[0].messages[0]["content"]
    assert "0123456789abcdef" * 4 not in kept and "[REDACTED:" in kept
