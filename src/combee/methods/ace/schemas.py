"""JSON schemas of the four ACE roles' replies.

They stay permissive (no ``additionalProperties: false``) so small models can satisfy them. The
curator's and merge's schemas constrain decoding more than they check: an operation's shape per
type and its section as an ``enum`` of the playbook's sections, yet a reply is validated only
against ``accepts``, because :mod:`combee.methods.ace.operations` repairs what still arrives
unknown (a section outside the enum files its lesson under the catch-all section) rather than
losing the lessons of a whole call to a re-ask. Operations come before the free reasoning, which
is optional: small models otherwise argue themselves out of every operation.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from combee.llm.types import JsonSchema
from combee.methods.ace.playbook import DEFAULT_SECTIONS

_STRING: dict[str, Any] = {"type": "string"}
_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}

BULLET_TAGS: tuple[str, ...] = ("helpful", "harmful", "neutral")
_TAG: dict[str, Any] = {"type": "string", "enum": list(BULLET_TAGS)}


INSIGHT_ABOUT = "key_insight_about"
"""The reflector's field that says what its ``key_insight`` is about (:data:`INSIGHT_SUBJECTS`)."""
INSIGHT_SUBJECTS: tuple[str, ...] = ("task", "playbook", "attempt")
"""``task``: a rule for solving this kind of task, in whatever voice; ``playbook`` and
``attempt``: a remark on the playbook or on this one attempt, which teaches no rule."""
REMARK_SUBJECTS = frozenset(INSIGHT_SUBJECTS) - {"task"}

OPERATION_ABOUT = "about"
"""The curator's field that says what an operation's ``content`` is about
(:data:`INSIGHT_SUBJECTS`): only a ``task`` operation reaches the playbook."""
_ABOUT: dict[str, Any] = {"type": "string", "enum": list(INSIGHT_SUBJECTS)}


def _shape(kind: str, **fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"type": {"type": "string", "enum": [kind]}, **fields},
        "required": ["type", *fields],
    }


def operation_schema(sections: Sequence[str]) -> dict[str, Any]:
    """One operation, shaped by its type, naming only ``sections``."""
    section = {"type": "string", "enum": list(sections)}
    return {
        "anyOf": [
            _shape("ADD", section=section, content=_STRING, about=_ABOUT),
            _shape("UPDATE", bullet_id=_STRING, content=_STRING, about=_ABOUT),
            _shape("MERGE", bullet_ids=_STRINGS, content=_STRING, about=_ABOUT),
            _shape("DELETE", bullet_id=_STRING),
        ]
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

_BULLET_TAGS: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"id": _STRING, "tag": _TAG},
        "required": ["id", "tag"],
    },
}
_REFLECTOR_PROPERTIES: dict[str, Any] = {
    **{name: _STRING for name in _REFLECTOR_TEXT_FIELDS},
    INSIGHT_ABOUT: {"type": "string", "enum": list(INSIGHT_SUBJECTS)},
    "bullet_tags": _BULLET_TAGS,
}

REFLECTOR = JsonSchema(
    name="reflector",
    schema={
        "type": "object",
        "properties": _REFLECTOR_PROPERTIES,
        "required": [*_REFLECTOR_TEXT_FIELDS, INSIGHT_ABOUT, "bullet_tags"],
    },
    # A reply without the subject (an endpoint that ignores the schema) is read as a lesson
    # about the task rather than asked again.
    accepts={
        "type": "object",
        "properties": _REFLECTOR_PROPERTIES,
        "required": [*_REFLECTOR_TEXT_FIELDS, "bullet_tags"],
    },
)


_NOTE: dict[str, Any] = {"type": "string", "description": "One short sentence, or nothing."}


@lru_cache(maxsize=32)
def curator_schema(sections: tuple[str, ...]) -> JsonSchema:
    """The curator's reply for a playbook with these section keys (one object per tuple)."""
    return JsonSchema(
        name="curator",
        schema={
            "type": "object",
            "properties": {
                "operations": {"type": "array", "items": operation_schema(sections)},
                "reasoning": _NOTE,
            },
            "required": ["operations"],
        },
        accepts={
            "type": "object",
            "properties": {"operations": {"type": "array"}},
            "required": ["operations"],
        },
    )


def _numbers(count: int | None) -> dict[str, Any]:
    if count is None:
        return {"type": "array", "items": {"type": "integer"}}
    number = {"type": "integer", "enum": list(range(1, count + 1))}
    return {"type": "array", "items": number, "maxItems": count}


@lru_cache(maxsize=128)
def merge_schema(count: int | None = None, *, by_exception: bool = False) -> JsonSchema:
    """The merge's reply over ``count`` numbered operations: which to keep as written, which to
    combine into one text, which to drop (numbers 1..count; any integer when None).
    ``by_exception``: no ``keep`` list, what is not listed is kept."""
    combined = {
        "type": "object",
        "properties": {"numbers": {**_numbers(count), "minItems": 1}, "content": _STRING},
        "required": ["numbers", "content"],
    }
    return JsonSchema(
        name="merge",
        schema={
            "type": "object",
            "properties": {
                **({} if by_exception else {"keep": _numbers(count)}),
                "combine": {"type": "array", "items": combined},
                "drop": _numbers(count),
                "reasoning": _NOTE,
            },
            "required": ["combine", "drop"] if by_exception else ["keep", "combine", "drop"],
        },
        accepts={"type": "object"},
    )


CURATOR = curator_schema(tuple(s.key for s in DEFAULT_SECTIONS))
MERGE = merge_schema()

SCHEMAS: dict[str, JsonSchema] = {s.name: s for s in (GENERATOR, REFLECTOR, CURATOR, MERGE)}

SUMMARIZE = JsonSchema(
    name="summarize",
    schema={
        "type": "object",
        "properties": {"reasoning": _STRING, "summary": _STRING, "key_insights": _STRINGS},
        "required": ["reasoning", "summary", "key_insights"],
    },
)
"""The condensing step of the ``summarize`` and ``hier-summarize`` strategies (not one of the
four ACE roles, so not in :data:`SCHEMAS`)."""
