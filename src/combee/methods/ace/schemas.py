"""JSON schemas of the four ACE roles' replies.

They stay permissive (no ``additionalProperties: false``, operation details optional) so small
models can satisfy them; :mod:`combee.methods.ace.operations` checks each operation's details.
"""

from __future__ import annotations

from typing import Any

from combee.llm.types import JsonSchema
from combee.methods.ace.operations import OP_TYPES

_STRING: dict[str, Any] = {"type": "string"}
_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}

BULLET_TAGS: tuple[str, ...] = ("helpful", "harmful", "neutral")
_TAG: dict[str, Any] = {"type": "string", "enum": list(BULLET_TAGS)}

OPERATION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "enum": list(OP_TYPES)},
        "section": _STRING,
        "bullet_id": _STRING,
        "bullet_ids": _STRINGS,
        "content": _STRING,
    },
    "required": ["type"],
}

GENERATOR = JsonSchema(
    name="generator",
    schema={
        "type": "object",
        "properties": {"reasoning": _STRING, "bullet_ids": _STRINGS, "final_answer": _STRING},
        "required": ["reasoning", "bullet_ids", "final_answer"],
    },
)

_REFLECTOR_TEXT_FIELDS = (
    "reasoning",
    "error_identification",
    "root_cause_analysis",
    "correct_approach",
    "key_insight",
)

REFLECTOR = JsonSchema(
    name="reflector",
    schema={
        "type": "object",
        "properties": {
            **{name: _STRING for name in _REFLECTOR_TEXT_FIELDS},
            "bullet_tags": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"id": _STRING, "tag": _TAG},
                    "required": ["id", "tag"],
                },
            },
        },
        "required": [*_REFLECTOR_TEXT_FIELDS, "bullet_tags"],
    },
)


def _operations_schema(name: str) -> JsonSchema:
    return JsonSchema(
        name=name,
        schema={
            "type": "object",
            "properties": {
                "reasoning": _STRING,
                "operations": {"type": "array", "items": OPERATION},
            },
            "required": ["reasoning", "operations"],
        },
    )


CURATOR = _operations_schema("curator")
MERGE = _operations_schema("merge")

SCHEMAS: dict[str, JsonSchema] = {s.name: s for s in (GENERATOR, REFLECTOR, CURATOR, MERGE)}
