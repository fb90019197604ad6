"""The chat-completions wire format both HTTP backends share: a fast JSON codec (orjson), a
response body read into a :class:`Completion`, an error body's message."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

from combee.llm.response_format import ResponseFormats
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


def chat_body(request: Request, model: str, formats: ResponseFormats) -> dict[str, Any]:
    """The chat-completions request body: the messages, tools and tool choice as given, and
    the sampling settings the request sends."""
    body: dict[str, Any] = {"model": model, "messages": request.chat_messages()}
    if request.sends("temperature"):
        body["temperature"] = request.temperature
    if request.sends("max_tokens"):
        body["max_tokens"] = request.max_tokens
    if request.sends("seed"):
        body["seed"] = request.seed
    if request.json_schema is not None and formats.json_mode != "none":
        body["response_format"] = formats.for_schema(request.json_schema)
    if request.tools:
        body["tools"] = [dict(tool) for tool in request.tools]
    if request.tool_choice is not None:
        body["tool_choice"] = request.tool_choice
    return body


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
    message = message if isinstance(message, dict) else {}
    text = message.get("content")
    text = text if isinstance(text, str) else ""
    calls = reply_tool_calls(message.get("tool_calls"))
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    prompt_tokens = usage.get("prompt_tokens")
    completion_count = usage.get("completion_tokens")
    if not isinstance(prompt_tokens, int):
        prompt_tokens = estimate_tokens(request.text())
        arguments = "".join(call["function"]["arguments"] for call in calls)
        completion_count = estimate_tokens(text + arguments)
    elif not isinstance(completion_count, int):
        completion_count = 0
    return Completion(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_count,
        latency_s=latency,
        model=str(data.get("model") or model),
        tool_calls=calls,
        finish_reason=finish
        if isinstance(finish := choices[0].get("finish_reason"), str)
        else None,
    )


def reply_tool_calls(raw: Any) -> tuple[dict[str, Any], ...]:
    """A reply's ``tool_calls`` in the OpenAI shape; a server that writes the arguments as an
    object (not the JSON string the API defines) has them encoded. A call without a function
    name is a ``bad_body`` failure (retried)."""
    if not raw:
        return ()
    if not isinstance(raw, list):
        raise BackendFailure("bad_body", "the reply's tool_calls is not a list")
    calls = []
    for number, call in enumerate(raw):
        call = call if isinstance(call, dict) else {}
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise BackendFailure("bad_body", f"the reply's tool call {number} names no function")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = dumps({} if arguments is None else arguments).decode("utf-8")
        call_id = call.get("id")
        calls.append(
            {
                "id": call_id if isinstance(call_id, str) and call_id else f"call_{number}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        )
    return tuple(calls)


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
