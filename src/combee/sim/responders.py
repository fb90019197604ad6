"""Responders decide the sim server's assistant message from the request body."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reply:
    """An assistant message with native tool calls: each call is ``{"name", "arguments"}``
    (arguments a dict or a JSON string) or already in OpenAI's ``{"id", "type", "function"}``
    shape; the server writes them all in OpenAI's shape."""

    content: str | None
    tool_calls: Sequence[Mapping[str, Any]] = ()


Responder = Callable[[Mapping[str, Any]], "str | Reply"]
"""Receives the parsed chat-completions request body, returns the assistant's content (a
``str``) or a :class:`Reply` with tool calls."""


class HTTPFault(Exception):
    """Raised by a responder to answer with an HTTP error (400, 401, 404, ...) instead."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def echo_responder(body: Mapping[str, Any]) -> str | Reply:
    """One call to the first offered tool (or the one ``tool_choice`` names) with minimal
    arguments, unless the last message is a tool result; otherwise :func:`echo_text`."""
    tools = callable_tools(body)
    if tools and last_role(body) != "tool":
        arguments = minimal_instance(tool_parameters(tools[0]))
        return Reply(None, [{"name": tools[0]["name"], "arguments": arguments}])
    return echo_text(body)


def echo_text(body: Mapping[str, Any]) -> str:
    """A minimal valid JSON object when the request carries a schema; otherwise a short echo."""
    schema = request_schema(body)
    if schema is not None:
        return json.dumps(minimal_instance(schema))
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping) and response_format.get("type") == "json_object":
        return "{}"
    return "echo: " + last_user_text(body)[:80]


def request_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The JSON schema in ``response_format`` (json_schema or llama.cpp's json_object form)."""
    response_format = body.get("response_format")
    if not isinstance(response_format, Mapping):
        return None
    spec = response_format.get("json_schema")
    if isinstance(spec, Mapping) and isinstance(spec.get("schema"), Mapping):
        return spec["schema"]  # type: ignore[no-any-return]
    schema = response_format.get("schema")
    return schema if isinstance(schema, Mapping) else None


def callable_tools(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``function`` specs of the offered tools the model may call now: none under
    ``tool_choice`` "none", only the named one under a named ``tool_choice``."""
    choice = body.get("tool_choice")
    if choice == "none":
        return []
    functions = [
        tool["function"]
        for tool in body.get("tools") or []
        if isinstance(tool, Mapping)
        and isinstance(tool.get("function"), Mapping)
        and isinstance(tool["function"].get("name"), str)
    ]
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        wanted = choice["function"].get("name")
        return [function for function in functions if function["name"] == wanted]
    return functions


def tool_parameters(function: Mapping[str, Any]) -> Mapping[str, Any]:
    """A function's parameters schema with its local ``$ref``s inlined (none: an empty object)."""
    parameters = function.get("parameters")
    if not isinstance(parameters, Mapping):
        return {"type": "object", "properties": {}}
    return inline_refs(parameters)


def inline_refs(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` with each local ``$ref`` (``#/$defs/Name``, as pydantic writes them) replaced
    by what it points to; a recursive or dangling one becomes the empty (any-value) schema."""

    def target(ref: str) -> Any:
        node: Any = schema
        for key in ref.removeprefix("#/").split("/"):
            node = node.get(key) if isinstance(node, Mapping) else None
        return node if isinstance(node, Mapping) else {}

    def resolve(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            rest = {key: value for key, value in node.items() if key != "$ref"}
            inlined = {} if ref in seen else resolve(target(ref), seen | {ref})
            return {**inlined, **resolve(rest, seen)}
        return {key: resolve(value, seen) for key, value in node.items()}

    top = {key: value for key, value in schema.items() if key not in ("$defs", "definitions")}
    return resolve(top, frozenset())  # type: ignore[no-any-return]


def calls_required(body: Mapping[str, Any]) -> bool:
    """Whether ``tool_choice`` forces a tool call ("required" or a named function)."""
    choice = body.get("tool_choice")
    return choice == "required" or isinstance(choice, Mapping)


def last_role(body: Mapping[str, Any]) -> str | None:
    messages = body.get("messages") or []
    last = messages[-1] if messages else None
    return str(last.get("role")) if isinstance(last, Mapping) else None


def content_text(content: Any) -> str:
    """A message's content as text: a string, the text parts of a list, nothing for null."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) if isinstance(part, Mapping) else str(part)
            for part in content
        )
    return json.dumps(content)


def last_user_text(body: Mapping[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def minimal_instance(schema: Mapping[str, Any]) -> Any:
    """The smallest value satisfying a simple JSON schema: required fields filled by type."""
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for combinator in ("anyOf", "oneOf", "allOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return minimal_instance(options[0])
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {
            name: minimal_instance(properties.get(name, {})) for name in schema.get("required", [])
        }
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [minimal_instance(schema.get("items") or {}) for _ in range(count)]
    if kind == "string":
        return "x" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        return low + 1 if "exclusiveMinimum" in schema and "minimum" not in schema else low
    if kind == "boolean":
        return False
    return None
