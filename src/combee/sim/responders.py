"""Responders decide the sim server's assistant content from the request body."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

Responder = Callable[[Mapping[str, Any]], str]
"""Receives the parsed chat-completions request body, returns the assistant's content."""


class HTTPFault(Exception):
    """Raised by a responder to answer with an HTTP error (400, 401, 404, ...) instead."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def echo_responder(body: Mapping[str, Any]) -> str:
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
