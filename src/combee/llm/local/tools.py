"""Tool calls on the embedded model: the same ``tool_calls`` shape an OpenAI endpoint returns.

A small GGUF chat template knows nothing of OpenAI's tools, so the conversation is written as
text the template takes: the tools described in the system message, each assistant tool call
as the JSON the model itself would write, tool results as user turns. The reply is decoded under
a grammar (:func:`tool_reply_schema`): ``{"tool_calls": [{"name", "arguments"}], "content"}``,
where each call's name is one of the tools offered and its arguments follow that tool's
parameters schema. :func:`tool_completion` turns it back into OpenAI tool calls, with ids
numbered after the conversation's earlier calls (deterministic, so replies cache and replay).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from combee.llm.messages import MessageError, content_text, forced_tool
from combee.llm.structured import parse_json_reply
from combee.llm.types import JsonSchema, Request

TOOL_REPLY_NAME = "tool_reply"

REPLY_FORMAT = (
    "Reply with one JSON object: "
    '{"tool_calls": [{"name": "<tool>", "arguments": {...}}], "content": "..."}. '
    "To use tools, list the calls (their results come back in the next message); when you are "
    'done, list no calls and write your reply to the user in "content".'
)


def offered_tools(request: Request) -> list[Mapping[str, Any]]:
    """The tools the model may call in this reply (none under ``tool_choice`` "none", only the
    named one when a function is forced)."""
    if request.tool_choice == "none":
        return []
    functions = [tool["function"] for tool in request.tools]
    name = forced_tool(request.tool_choice)
    return [f for f in functions if f["name"] == name] if name else functions


_SCHEMAS: dict[str, JsonSchema] = {}


def tool_reply_schema(request: Request) -> JsonSchema:
    """The grammar's schema for a reply to ``request``, which offers tools: one object per
    distinct tools and tool choice (the backend builds each grammar once)."""
    if request.json_schema is not None:
        raise MessageError("the embedded model takes tools or a JSON schema in one call, not both")
    key = json.dumps([request.tools, request.tool_choice], sort_keys=True)
    known = _SCHEMAS.get(key)
    if known is None:
        if len(_SCHEMAS) >= 64:
            _SCHEMAS.clear()
        known = _SCHEMAS[key] = _reply_schema(request)
    return known


def _reply_schema(request: Request) -> JsonSchema:
    choices = [
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": [function["name"]]},
                "arguments": _parameters(function),
            },
            "required": ["name", "arguments"],
        }
        for function in offered_tools(request)
    ]
    calls: dict[str, Any] = {"type": "array", "items": {"anyOf": choices}}
    if request.tool_choice == "required" or forced_tool(request.tool_choice):
        calls["minItems"] = 1
    return JsonSchema(
        name=TOOL_REPLY_NAME,
        schema={
            "type": "object",
            "properties": {"tool_calls": calls, "content": {"type": "string"}},
            "required": ["tool_calls", "content"],
        },
    )


def _parameters(function: Mapping[str, Any]) -> dict[str, Any]:
    parameters = function.get("parameters") or {}
    schema = {k: v for k, v in parameters.items() if k not in ("title", "description")}
    schema.setdefault("type", "object")
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
    return schema


def prompt_messages(request: Request) -> list[dict[str, str]]:
    """The conversation as text messages a chat template takes."""
    tools = offered_tools(request)
    guide = "\n\n".join(p for p in (tools_text(tools), REPLY_FORMAT if tools else "") if p)
    out: list[dict[str, str]] = []
    for message in request.messages:
        role = message["role"]
        text = content_text(message.get("content"))
        if role in ("system", "developer"):
            out.append({"role": "system", "content": text})
        elif role == "assistant" and message.get("tool_calls"):
            out.append({"role": "assistant", "content": _written_calls(message)})
        elif role == "tool":
            result = f"Result of {message.get('name') or 'the tool'} ({message['tool_call_id']}):"
            result = f"{result}\n{text}"
            if out and out[-1]["role"] == "user" and out[-1]["content"].startswith("Result of "):
                out[-1] = {"role": "user", "content": f"{out[-1]['content']}\n\n{result}"}
            else:
                out.append({"role": "user", "content": result})
        else:
            out.append({"role": role, "content": text})
    if guide:
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{guide}".strip()}
        else:
            out.insert(0, {"role": "system", "content": guide})
    return out


def tools_text(tools: Sequence[Mapping[str, Any]]) -> str:
    if not tools:
        return ""
    lines = ["Tools (call them by name, with JSON arguments):"]
    for function in tools:
        description = " ".join(str(function.get("description", "")).split())
        parameters = json.dumps(_parameters(function), ensure_ascii=False)
        lines.append(f"- {function['name']}: {description}\n  parameters: {parameters}")
    return "\n".join(lines)


def _written_calls(message: Mapping[str, Any]) -> str:
    calls = []
    for call in message.get("tool_calls") or ():
        function = call["function"]
        try:
            arguments = json.loads(function["arguments"])
        except ValueError:
            arguments = function["arguments"]
        calls.append({"name": function["name"], "arguments": arguments})
    content = content_text(message.get("content"))
    return json.dumps({"tool_calls": calls, "content": content}, ensure_ascii=False)


def tool_completion(text: str, request: Request) -> tuple[str, tuple[dict[str, Any], ...]]:
    """The reply decoded under :func:`tool_reply_schema` as (content, OpenAI tool calls); a
    reply that is not such an object is content with no calls."""
    try:
        value = parse_json_reply(text)
    except ValueError:
        return text, ()
    made = sum(len(m.get("tool_calls") or ()) for m in request.messages)
    calls: list[dict[str, Any]] = []
    for call in value.get("tool_calls") or ():
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            continue
        arguments = call.get("arguments")
        calls.append(
            {
                "id": f"call_{made + len(calls)}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": json.dumps(
                        arguments if arguments is not None else {}, ensure_ascii=False
                    ),
                },
            }
        )
    content = value.get("content")
    return (content if isinstance(content, str) else ""), tuple(calls)
