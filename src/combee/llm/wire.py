"""The chat-completions wire format both HTTP backends share: a fast JSON codec (orjson), a
response body read into a :class:`Completion`, an error body's message."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

from combee.llm.retry import BackendFailure
from combee.llm.types import Completion, Request


def estimate_tokens(text: str) -> int:
    """About four characters per token, for servers that report no usage."""
    return max(1, len(text) // 4)


def _std_dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _codec() -> tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    """orjson when installed, else the standard library."""
    try:
        fast = importlib.import_module("orjson")
    except ImportError:
        return _std_dumps, json.loads
    return fast.dumps, fast.loads


dumps, loads = _codec()


def completion_from_body(raw: bytes, request: Request, model: str, latency: float) -> Completion:
    """A chat-completions response body as a :class:`Completion`; a body that is not one is a
    ``bad_body`` failure (retried)."""
    try:
        data = loads(raw)
    except ValueError:
        raise BackendFailure("bad_body", "the response body is not JSON") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BackendFailure("bad_body", "the response has no choices")
    message = choices[0].get("message")
    text = message.get("content") if isinstance(message, dict) else None
    text = text if isinstance(text, str) else ""
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    prompt_tokens = usage.get("prompt_tokens")
    completion_count = usage.get("completion_tokens")
    if not isinstance(prompt_tokens, int):
        prompt_tokens = estimate_tokens("".join(c for _, c in request.messages))
        completion_count = estimate_tokens(text)
    elif not isinstance(completion_count, int):
        completion_count = 0
    return Completion(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_count,
        latency_s=latency,
        model=str(data.get("model") or model),
    )


def error_message(body: bytes) -> str | None:
    try:
        data = loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    error = data.get("error", data.get("message"))
    if isinstance(error, dict):
        error = error.get("message")
    return error[:200] if isinstance(error, str) and error else None
