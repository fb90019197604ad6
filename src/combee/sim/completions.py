"""The scripted server's reply body: a responder's answer as an OpenAI chat completion, its
token counts estimated from the text (four characters a token)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from combee.sim.responders import Reply, content_text


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _message_text(messages: Sequence[Any]) -> str:
    parts: list[str] = []
    for message in messages:
        if not isinstance(message, dict):
            parts.append(content_text(message))
            continue
        parts.append(content_text(message.get("content")))
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                parts.append(
                    str(function.get("name", "")) + content_text(function.get("arguments"))
                )
    return "".join(parts)


def _tool_call(index: int, n: int, call: Mapping[str, Any]) -> dict[str, Any]:
    """One call a responder gave, in OpenAI's shape with its arguments as a JSON string."""
    function = call.get("function")
    spec = function if isinstance(function, Mapping) else call
    arguments = spec.get("arguments", {})
    call_id = call.get("id")
    return {
        "id": call_id if isinstance(call_id, str) and call_id else f"call_{index}_{n}",
        "type": "function",
        "function": {
            "name": str(spec["name"]),
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        },
    }


def completion_body(
    index: int, body: Mapping[str, Any], answer: str | Reply, honour_max_tokens: bool = True
) -> dict[str, Any]:
    reply = answer if isinstance(answer, Reply) else Reply(answer)
    content = reply.content or ""
    finish_reason = "stop"
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    over = isinstance(limit, int) and limit > 0 and _estimate_tokens(content) > limit
    if honour_max_tokens and isinstance(limit, int) and over:
        content = content[: limit * 4]
        finish_reason = "length"
    message: dict[str, Any] = {"role": "assistant", "content": content}
    calls = [_tool_call(index, n, call) for n, call in enumerate(reply.tool_calls)]
    if calls:
        message = {"role": "assistant", "content": content or None, "tool_calls": calls}
        finish_reason = "tool_calls"
    prompt_tokens = _estimate_tokens(_message_text(body["messages"]))
    generated = content + "".join(call["function"]["arguments"] for call in calls)
    completion_tokens = _estimate_tokens(generated) if generated else 0
    return {
        "id": f"chatcmpl-sim-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model") or "sim"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
