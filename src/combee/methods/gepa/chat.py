"""What the GEPA roles need from the LLM layer (``combee.llm.client.LLM`` provides it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from combee.llm.types import Completion, JsonSchema, Message


class ChatModel(Protocol):
    async def complete_json(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        schema: JsonSchema,
        temperature: float = 0.0,
        max_tokens: int = 2048,
    ) -> tuple[dict[str, Any], Completion]: ...
