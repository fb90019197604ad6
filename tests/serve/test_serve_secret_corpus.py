"""The gateway with an upstream that repeats its input, on the corpus of secret formats: the
agent gets its reply as the upstream wrote it, and neither the store nor an export of it holds
a secret the redaction finds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")

import openai
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from combee.llm.redact import redact
from combee.serve import serve_settings
from combee.serve.export import export_chat
from combee.serve.running import GatewayThread, create_gateway
from tests.security.field_corpus import FORMATS, core


async def _echo(request: Request) -> JSONResponse:
    body = json.loads(await request.body())
    said = str(body["messages"][-1]["content"])
    return JSONResponse({
        "id": "chatcmpl-echo", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": f"You said: {said}"}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    })  # fmt: skip


@pytest.fixture
def echo_upstream() -> Iterator[str]:
    app = Starlette(routes=[Route("/v1/chat/completions", _echo, methods=["POST"])])
    with GatewayThread(app) as running:
        yield running.base_url


def test_neither_the_store_nor_its_export_holds_a_secret_the_upstream_echoed(
    tmp_path: Path, echo_upstream: str
) -> None:
    _, app = create_gateway(
        echo_upstream, settings=serve_settings(store=str(tmp_path / "store"), learn_every=0)
    )
    with GatewayThread(app) as running:
        client = openai.OpenAI(base_url=running.base_url, api_key="agent", max_retries=0)
        for item in FORMATS:
            reply = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": item.text}]
            )
            assert reply.choices[0].message.content == f"You said: {item.text}"  # untouched
    exported = tmp_path / "export.jsonl"
    assert export_chat(tmp_path / "store", exported, namespace="default") == len(FORMATS)
    files = [p for p in (tmp_path / "store").rglob("*") if p.is_file()] + [exported]
    on_disk = b"".join(p.read_bytes() for p in files)
    caught = [f for f in FORMATS if core(f.secret) not in redact(f.text)]
    assert len(caught) >= 0.95 * len(FORMATS)
    assert [f.name for f in caught if core(f.secret).encode() in on_disk] == []
    assert b"[REDACTED:" in on_disk
