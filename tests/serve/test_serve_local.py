"""The embedded model as the gateway's upstream (llama.cpp's own server in a child process):
a request through the gateway is answered by the real model and stored, and the child process
ends with the gateway."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")

import openai

from combee.errors import ConfigError
from combee.serve import serve_settings
from combee.serve.running import GatewayThread, create_gateway


@pytest.mark.slow
def test_the_embedded_model_serves_behind_the_gateway(tmp_path: Path) -> None:
    try:
        gateway, app = create_gateway(
            "local:smollm2", settings=serve_settings(store=str(tmp_path / "s"), learn_every=0)
        )
    except ConfigError as problem:
        pytest.skip(f"SmolLM2 is not installed: {problem}")
    local_url = gateway.upstream.base_url
    with GatewayThread(app) as running:
        client = openai.OpenAI(base_url=running.base_url, api_key="unused")
        raw = client.chat.completions.with_raw_response.create(
            model="anything",
            messages=[{"role": "user", "content": "Name a colour."}],
            max_tokens=8,
        )
        reply = raw.parse()
    assert reply.choices[0].message.content
    stored = gateway.store.exchanges(raw.headers["x-combee-trace"])
    assert stored[0].reply is not None
    assert stored[0].reply["content"] == reply.choices[0].message.content
    # The model's server stopped with the gateway.
    with pytest.raises(openai.APIConnectionError):
        openai.OpenAI(base_url=local_url, api_key="x", max_retries=0).models.list()
