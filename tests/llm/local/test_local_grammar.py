"""The embedded model's grammar: the reply is bounded as a whole, lessons keep their full length,
and llama.cpp parses every grammar the backend sends."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from combee.llm.bounded import MAX_ITEMS, MAX_STRING_CHARS, bounded_schema, open_schema
from combee.llm.types import JsonSchema
from combee.methods.ace import schemas as ace_schemas
from combee.methods.gepa import schemas as gepa_schemas

MAX_TOKENS = (256, 768, 2048, 4096, 8192)


def role_schemas() -> dict[str, JsonSchema]:
    found = {s.name: s for s in ace_schemas.SCHEMAS.values()}
    found["summarize"] = ace_schemas.SUMMARIZE
    for count in (4, 40, 300):
        found[f"merge-{count}"] = ace_schemas.merge_schema(count)
    found["curator-custom"] = ace_schemas.curator_schema(("alpha", "beta"))
    for schema in (gepa_schemas.GENERATOR, gepa_schemas.PROPOSAL, gepa_schemas.MERGE):
        found[schema.name] = schema
    return found


def nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from nodes(value)


def longest(node: Mapping[str, Any]) -> int:
    """The longest JSON text the schema admits (strings count as their bound; None: unbounded)."""
    if "anyOf" in node:
        return max(longest(branch) for branch in node["anyOf"])
    if "enum" in node:
        return max(len(json.dumps(v)) for v in node["enum"])
    kind = node.get("type")
    if kind == "string":
        return 2 + node["maxLength"]
    if kind == "array":
        return 2 + node["maxItems"] * (longest(node["items"]) + 2)
    if kind == "object":
        fields = node["properties"].items()
        return 2 + sum(len(json.dumps(k)) + 4 + longest(v) for k, v in fields)
    return 12


def operations(max_tokens: int) -> dict[str, Any]:
    bounded = bounded_schema(ace_schemas.CURATOR.schema, max_tokens)
    return bounded["properties"]["operations"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("max_tokens", MAX_TOKENS)
def test_the_curator_reply_is_bounded_as_a_whole_never_per_fragment(max_tokens: int) -> None:
    bounded = bounded_schema(ace_schemas.CURATOR.schema, max_tokens)
    ops = bounded["properties"]["operations"]
    for branch in ops["items"]["anyOf"]:
        content = branch["properties"].get("content")
        if content is not None:
            # A whole lesson fits (the old grammar cut it near 76 characters at 768 tokens).
            assert content["maxLength"] >= (200 if max_tokens >= 768 else 150)
        for name in ("bullet_id", "bullet_ids"):
            if name in branch["properties"]:
                assert "maxLength" in json.dumps(branch["properties"][name])
    assert bounded["properties"]["reasoning"]["maxLength"] <= 240  # a short note, last
    assert list(bounded["properties"]) == ["operations", "reasoning"]
    assert longest(bounded) <= 2 * max_tokens  # the whole reply closes within the limit


def test_more_tokens_allow_more_operations_not_longer_fragments() -> None:
    counts = [operations(m)["maxItems"] for m in MAX_TOKENS]
    assert counts == sorted(counts) and counts[0] >= 1
    assert operations(768)["maxItems"] >= 3 and operations(2048)["maxItems"] >= 8
    assert operations(8192)["maxItems"] <= MAX_ITEMS


def test_merge_numbers_cover_every_operation_and_combined_lessons_are_whole() -> None:
    bounded = bounded_schema(ace_schemas.merge_schema(30).schema, 2048)
    properties = bounded["properties"]
    assert properties["keep"]["maxItems"] == properties["drop"]["maxItems"] == 30
    combined = properties["combine"]["items"]["properties"]
    assert combined["content"]["maxLength"] >= 200
    assert longest(bounded) <= 2 * 2048


def test_free_text_fields_share_the_budget_and_tags_stay_few() -> None:
    reflector = bounded_schema(ace_schemas.REFLECTOR.schema, 600)
    fields = reflector["properties"]
    free = [f for f in fields.values() if f.get("type") == "string" and "enum" not in f]
    assert len(free) == 5 and len({f["maxLength"] for f in free}) == 1
    assert "maxLength" not in fields["key_insight_about"]  # an enum, as the tags are
    assert free[0]["maxLength"] >= 100
    assert fields["bullet_tags"]["maxItems"] <= 6
    assert "maxLength" not in fields["bullet_tags"]["items"]["properties"]["tag"]  # an enum
    assert longest(reflector) <= 2 * 600
    assert ace_schemas.REFLECTOR.schema["properties"]["reasoning"].get("maxLength") is None


def test_no_field_is_left_open_past_the_parsers_string_bound() -> None:
    generator = bounded_schema(ace_schemas.GENERATOR.schema, 8192)["properties"]
    assert generator["reasoning"]["maxLength"] == MAX_STRING_CHARS
    assert generator["final_answer"]["maxLength"] == MAX_STRING_CHARS
    small = bounded_schema(ace_schemas.GENERATOR.schema, 256)["properties"]
    assert small["final_answer"]["maxLength"] < MAX_STRING_CHARS
    for name, schema in role_schemas().items():
        for max_tokens in MAX_TOKENS:
            for node in nodes(bounded_schema(schema.schema, max_tokens)):
                if node.get("type") == "string" and "enum" not in node:
                    assert "maxLength" in node, (name, max_tokens)


def test_a_shared_schema_node_gets_one_bound_per_field() -> None:
    text = {"type": "string"}
    schema = {
        "type": "object",
        "properties": {"id": text, "notes": text, "items": {"type": "array", "items": text}},
    }
    bounded = bounded_schema(schema, 1024)["properties"]
    assert bounded["id"]["maxLength"] < bounded["notes"]["maxLength"]
    assert bounded["items"]["items"]["maxLength"] >= 200
    assert "maxLength" not in text


@pytest.mark.parametrize("max_tokens", MAX_TOKENS)
def test_bounds_stay_where_the_grammar_parser_accepts_them(max_tokens: int) -> None:
    for name, schema in role_schemas().items():
        bounded = bounded_schema(schema.schema, max_tokens)
        for node in nodes(bounded):
            assert node.get("maxLength", 0) <= MAX_STRING_CHARS, name
            assert node.get("maxItems", 0) <= MAX_ITEMS, name
        assert longest(bounded) <= 2 * max_tokens, name  # every reply closes in time


CHECK = textwrap.dedent(
    """
    import json, sys
    import llama_cpp
    from combee.llm.local.call_arguments import grammar_accepted
    for line in sys.stdin:
        print(json.dumps(grammar_accepted(llama_cpp, json.loads(line))), flush=True)
    """
)


def accepted(schemas: list[Mapping[str, Any]]) -> list[bool]:
    """llama.cpp's verdict on each schema's grammar, in a child process (a refused grammar
    must not take the test run down with it)."""
    done = subprocess.run(
        [sys.executable, "-c", CHECK],
        input="".join(json.dumps(s) + "\n" for s in schemas),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_every_bounded_grammar_parses_in_llama_cpp() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    cases = [
        (name, max_tokens, bounded_schema(schema.schema, max_tokens))
        for max_tokens in MAX_TOKENS
        for name, schema in role_schemas().items()
    ]
    refused = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 1500}}}
    verdicts = accepted([bounded for _, _, bounded in cases] + [refused])
    assert verdicts[-1] is False  # the check does see a grammar llama.cpp refuses
    failed = [(name, m) for (name, m, _), ok in zip(cases, verdicts[:-1], strict=True) if not ok]
    assert failed == []


def test_the_backend_never_sends_a_grammar_llama_cpp_refuses() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from combee.llm.local.backend import LocalBackend

    arguments = LocalBackend("never-loaded.gguf")._call_arguments
    curator = arguments.response_format(ace_schemas.CURATOR, 2048)
    assert curator == {
        "type": "json_object",
        "schema": bounded_schema(ace_schemas.CURATOR.schema, 2048),
    }
    assert arguments.response_format(ace_schemas.CURATOR, 2048) is curator  # built once
    # A bound the bounding leaves alone (a pattern's repetition) and llama.cpp refuses.
    hopeless = JsonSchema(
        "hopeless",
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "^a{0,3000}$"}}},
    )
    assert accepted([bounded_schema(hopeless.schema, 256), open_schema(hopeless.schema)]) == [
        False,
        False,
    ]
    assert arguments.response_format(hopeless, 256) == {"type": "json_object"}
