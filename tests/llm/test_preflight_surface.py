"""The test call reaches the client only through its public surface (no import cycle)."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Sequence

import pytest

from combee.errors import EndpointError
from combee.llm import preflight
from combee.llm.client import LLM
from combee.llm.types import Completion, JsonMode, JsonSchema, Message, Request


def test_preflight_imports_nothing_of_the_client_and_no_private_member() -> None:
    tree = ast.parse(inspect.getsource(preflight))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "combee.llm.client" not in imported
    private = [
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "llm"
        and node.attr.startswith("_")
    ]
    assert private == []


def test_the_client_has_the_surface_the_preflight_asks_for() -> None:
    for name in ("json_mode", "shown_endpoint", "build_request", "probe"):
        assert hasattr(LLM, name), name


class _Fake:
    """A client whose test call answers ``text``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.sent: list[tuple[Request, str]] = []

    @property
    def json_mode(self) -> JsonMode:
        return "json_schema"

    @property
    def shown_endpoint(self) -> str:
        return "http://example.invalid/v1"

    def build_request(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 2048,
        json_schema: JsonSchema | None = None,
        seed: int | None = None,
    ) -> Request:
        return Request.build(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            json_schema=json_schema,
            seed=seed,
        )

    async def probe(self, request: Request, *, role: str) -> tuple[Completion, str | None]:
        self.sent.append((request, role))
        problem = None if self.text.startswith("{") else "the reply is not a JSON object"
        completion = Completion(self.text, 1, 1, latency_s=0.0, model="fake")
        return completion, problem


async def test_any_client_with_the_surface_can_be_tested() -> None:
    fake = _Fake('{"ok": true}')
    await preflight.run_preflight(fake)
    [(request, role)] = fake.sent
    assert role == "preflight" and request.json_schema is not None

    with pytest.raises(EndpointError, match=r"example\.invalid.*'nope'") as raised:
        await preflight.run_preflight(_Fake("nope"))
    assert raised.value.setting == "json_mode"
