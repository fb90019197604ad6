"""OpenAI chat messages (the shape most agent frameworks record) into :class:`TraceMessage`."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from combee.tasks.traces.model import ToolCall, TraceMessage

ROLES = ("system", "developer", "user", "assistant", "tool", "function")


class MessageError(ValueError):
    """A message that is not an OpenAI chat message; the text says which field and why."""


def chat_messages(raw: Any) -> list[TraceMessage]:
    """The messages of ``raw`` (a list of OpenAI chat messages)."""
    if not isinstance(raw, list):
        raise MessageError(f"messages must be a list, got {type(raw).__name__}")
    return named_results([_message(item, index) for index, item in enumerate(raw)])


def named_results(messages: list[TraceMessage]) -> list[TraceMessage]:
    """``messages`` with each tool result that names no tool named after the call it answers
    (OpenAI's tool messages carry only the call's id)."""
    called = {c.id: c.name for m in messages for c in m.tool_calls if c.id}
    return [
        dataclasses.replace(m, name=called[m.tool_call_id])
        if m.role == "tool" and not m.name and m.tool_call_id in called
        else m
        for m in messages
    ]


def _message(item: Any, index: int) -> TraceMessage:
    where = f"message {index}"
    if not isinstance(item, Mapping):
        raise MessageError(f"{where} is not an object")
    role = item.get("role")
    if role not in ROLES:
        raise MessageError(f"{where} has role {role!r}; expected one of {', '.join(ROLES)}")
    calls = item.get("tool_calls") or []
    if not isinstance(calls, list):
        raise MessageError(f"{where}: tool_calls must be a list")
    return TraceMessage(
        role="system" if role == "developer" else "tool" if role == "function" else str(role),
        content=content_text(item.get("content")),
        tool_calls=tuple(_call(call, f"{where} tool call {n}") for n, call in enumerate(calls)),
        tool_call_id=str(item.get("tool_call_id") or ""),
        name=str(item.get("name") or ""),
    )


def _call(call: Any, where: str) -> ToolCall:
    if not isinstance(call, Mapping):
        raise MessageError(f"{where} is not an object")
    function = call.get("function", call)
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise MessageError(f"{where} has no function name")
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):  # else kept as the text the model wrote
            arguments = json.loads(arguments)
    return ToolCall(name=function["name"], arguments=arguments, id=str(call.get("id") or ""))


def content_text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text", "")) if isinstance(part, Mapping) else str(part)
            for part in content
        ]
        return "\n".join(part for part in parts if part)
    return json.dumps(content, ensure_ascii=False)
