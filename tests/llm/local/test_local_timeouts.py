"""An in-process model is not a remote endpoint: no per-attempt timeout, so a slow CPU never
turns into retries of the same computation."""

from __future__ import annotations

import asyncio

import pytest

from combee.errors import ConfigError, LLMCallError
from combee.llm import LLM, Completion, Endpoint, Request


class SlowBackend:
    model = "slow"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.attempts = 0

    async def complete(self, request: Request) -> Completion:
        self.attempts += 1
        await asyncio.sleep(self.seconds)
        return Completion("ok", 1, 1, self.seconds, self.model)

    async def aclose(self) -> None:
        return None


async def test_without_a_timeout_a_slow_call_is_awaited_once() -> None:
    backend = SlowBackend(0.3)
    llm = LLM(backend, timeout_s=None, max_retries=3)
    completion = await llm.complete([{"role": "user", "content": "hi"}], role="generator")
    assert completion.text == "ok" and backend.attempts == 1


async def test_with_a_timeout_the_same_slow_call_fails_after_its_retries() -> None:
    backend = SlowBackend(0.3)
    llm = LLM(backend, timeout_s=0.05, max_retries=1, backoff_base_s=0.01)
    with pytest.raises(LLMCallError) as raised:
        await llm.complete([{"role": "user", "content": "hi"}], role="generator")
    assert raised.value.kind == "timeout" and backend.attempts == 2


async def test_the_embedded_model_is_connected_without_a_per_attempt_timeout() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    try:
        llm = Endpoint("local:smollm2", timeout_s=5.0).connect()
    except ConfigError as error:  # the model package is optional
        pytest.skip(f"SmolLM2 is not installed: {error}")
    try:
        assert llm.settings["timeout_s"] is None
    finally:
        await llm.aclose()
