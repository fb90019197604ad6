"""The ``response_format`` a chat-completions request carries for a role's schema."""

from __future__ import annotations

from typing import Any

from combee.llm.types import JsonMode, JsonSchema


class ResponseFormats:
    """Builds each schema's ``response_format`` once per ``json_mode`` (the hot path reuses it)."""

    def __init__(self, json_mode: JsonMode) -> None:
        self.json_mode = json_mode
        self._built: dict[int, tuple[JsonSchema, dict[str, Any]]] = {}

    def for_schema(self, schema: JsonSchema) -> dict[str, Any]:
        cached = self._built.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        body = dict(schema.schema)
        if self.json_mode == "json_schema":
            spec = {"name": schema.name, "schema": body, "strict": False}
            response_format: dict[str, Any] = {"type": "json_schema", "json_schema": spec}
        elif self.json_mode == "json_object_schema":
            response_format = {"type": "json_object", "schema": body}
        else:
            response_format = {"type": "json_object"}
        if len(self._built) >= 256:
            self._built.clear()
        self._built[id(schema)] = (schema, response_format)
        return response_format
