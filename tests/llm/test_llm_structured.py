"""Lenient JSON parsing and schema validation of model replies (pure functions)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from combee.llm.structured import SchemaValidators, parse_json_reply, schema_instruction
from combee.llm.types import JsonSchema


def test_plain_json() -> None:
    assert parse_json_reply('{"a": 1, "b": [1, 2]}') == {"a": 1, "b": [1, 2]}


def test_code_fences_are_stripped() -> None:
    assert parse_json_reply('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json_reply('```\n{"a": 2}\n```\n') == {"a": 2}


def test_prose_around_the_object_is_ignored() -> None:
    text = 'Here is my answer: {"answer": "42"} Hope this helps {not json}.'
    assert parse_json_reply(text) == {"answer": "42"}


def test_braces_inside_strings_do_not_confuse_the_parser() -> None:
    text = 'Note {draft} then {"code": "if (x) { return \\"}\\"; }", "n": {"m": 1}} trailing }'
    assert parse_json_reply(text) == {"code": 'if (x) { return "}"; }', "n": {"m": 1}}


def test_fence_inside_prose() -> None:
    text = 'Sure.\n```json\n{"k": "v"}\n```\nAnything else?'
    assert parse_json_reply(text) == {"k": "v"}


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2, 3]", '"just a string"', "{broken"])
def test_no_object_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        parse_json_reply(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@given(
    value=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    before=st.text(alphabet=st.characters(blacklist_characters="{"), max_size=20),
    after=st.text(max_size=20),
    fenced=st.booleans(),
)
def test_any_object_survives_surrounding_prose(
    value: dict[str, Any], before: str, after: str, fenced: bool
) -> None:
    encoded = json.dumps(value)
    if fenced:
        encoded = f"```json\n{encoded}\n```"
    assert parse_json_reply(f"{before}{encoded}{after}") == value


SCHEMA = JsonSchema(
    "reflection",
    {
        "type": "object",
        "properties": {
            "key_insight": {"type": "string"},
            "bullet_tags": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"tag": {"enum": ["helpful", "harmful", "neutral"]}},
                    "required": ["tag"],
                },
            },
        },
        "required": ["key_insight", "bullet_tags"],
    },
)


def test_valid_value_has_no_error() -> None:
    validators = SchemaValidators()
    value = {"key_insight": "x", "bullet_tags": [{"tag": "helpful"}]}
    assert validators.error(SCHEMA, value) is None


def test_error_names_the_failing_place() -> None:
    validators = SchemaValidators()
    error = validators.error(SCHEMA, {"key_insight": "x", "bullet_tags": [{"tag": "great"}]})
    assert error is not None
    assert "bullet_tags/0/tag" in error
    assert "'great'" in error
    missing = validators.error(SCHEMA, {"bullet_tags": []})
    assert missing is not None
    assert "key_insight" in missing


def test_instruction_carries_the_schema() -> None:
    text = schema_instruction(SCHEMA)
    assert "reflection" in text
    assert json.loads(text.split("\n", 1)[1]) == SCHEMA.schema


def test_a_raw_newline_inside_a_string_is_kept_as_text() -> None:
    reply = '{ "reasoning": "first line\nsecond\tline", "final_answer": "2.0\n</" }'
    assert parse_json_reply(reply) == {
        "reasoning": "first line\nsecond\tline",
        "final_answer": "2.0\n</",
    }
    assert parse_json_reply("Here: " + reply + " done") == parse_json_reply(reply)
