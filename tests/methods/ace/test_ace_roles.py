"""Schemas, prompt builders and the scripted ACE responder, checked against each other."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import jsonschema
import pytest

from combee.core.types import Reflection, Trajectory
from combee.llm.types import JsonSchema, Message
from combee.methods.ace import prompts, schemas
from combee.methods.ace.operations import apply_operations
from combee.methods.ace.playbook import Bullet, Playbook
from combee.methods.ace.update import AceUpdate
from combee.sim.ace_script import ace_responder, scripted_answer, topic_of, wrong_answer
from combee.tasks.base import Sample, Score

CONTEXT = (
    "Use formula Current Ratio to answer the question. Formula: Current Ratio = Current Assets / "
    "Current Liabilities."
)
SAMPLE = Sample(
    id="f-7",
    question='"A firm has current assets of $1,000,000 and liabilities of $500,000."',
    answer="2.0",
    context=CONTEXT,
)
PLAYBOOK = Playbook(
    bullets=(
        Bullet("str-00001", "strategies", "Read every unit before computing.", 1, 0),
        Bullet(
            "fml-00002", "formulas", "Current Ratio divides current assets by liabilities.", 0, 0
        ),
    ),
    next_id=3,
)


def body(messages: Sequence[Message], schema: JsonSchema | None) -> dict[str, Any]:
    request: dict[str, Any] = {"model": "sim", "messages": [dict(m) for m in messages]}
    if schema is not None:
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema.name, "schema": dict(schema.schema)},
        }
    return request


def ask(messages: Sequence[Message], schema: JsonSchema, with_format: bool = True) -> Any:
    reply = json.loads(ace_responder(body(messages, schema if with_format else None)))
    jsonschema.validate(reply, schema.schema)
    return reply


def test_schema_names() -> None:
    assert [s.name for s in schemas.SCHEMAS.values()] == [
        "generator",
        "reflector",
        "curator",
        "merge",
    ]
    for schema in schemas.SCHEMAS.values():
        jsonschema.Draft202012Validator.check_schema(schema.schema)


EXAMPLES: dict[str, dict[str, Any]] = {
    "generator": {"reasoning": "r", "bullet_ids": ["str-00001"], "final_answer": "2.0"},
    "reflector": {
        "reasoning": "r",
        "error_identification": "",
        "root_cause_analysis": "",
        "correct_approach": "c",
        "key_insight": "k",
        "key_insight_about": "task",
        "bullet_tags": [{"id": "str-00001", "tag": "neutral"}],
    },
    "curator": {
        "reasoning": "r",
        "operations": [
            {"type": "ADD", "section": "other", "content": "x", "about": "task"},
            {"type": "UPDATE", "bullet_id": "str-00001", "content": "y", "about": "task"},
            {"type": "MERGE", "bullet_ids": ["a", "b"], "content": "z", "about": "playbook"},
            {"type": "DELETE", "bullet_id": "str-00001"},
        ],
    },
    "merge": {"keep": [1], "combine": [{"numbers": [2, 3], "content": "z"}], "drop": [4]},
}


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_schemas_accept_example_replies(name: str) -> None:
    jsonschema.validate(EXAMPLES[name], schemas.SCHEMAS[name].schema)


@pytest.mark.parametrize(
    ("name", "reply"),
    [
        ("generator", {"reasoning": "r", "bullet_ids": []}),
        ("generator", {"reasoning": "r", "bullet_ids": "str-00001", "final_answer": "1"}),
        ("reflector", {**EXAMPLES["reflector"], "bullet_tags": [{"id": "x", "tag": "great"}]}),
        ("curator", {"reasoning": "r", "operations": [{"type": "INSERT"}]}),
        ("merge", {"reasoning": "r"}),
        ("merge", {"keep": ["1"], "combine": [], "drop": []}),
    ],
)
def test_schemas_reject_wrong_replies(name: str, reply: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(reply, schemas.SCHEMAS[name].schema)


def test_generator_prompt_holds_playbook_context_and_question() -> None:
    system, user = prompts.generator_messages(PLAYBOOK, SAMPLE)
    assert system["content"] == prompts.GENERATOR_SYSTEM
    assert f"<playbook>\n{PLAYBOOK.render()}\n</playbook>" in user["content"]
    assert f"<context>\n{CONTEXT}\n</context>" in user["content"]
    assert f"<question>\n{SAMPLE.question}\n</question>" in user["content"]
    empty = prompts.generator_messages(Playbook(), SAMPLE)[1]["content"]
    assert prompts.EMPTY_NOTE in empty


def trajectory(prediction: str, correct: bool, cited: list[str]) -> Trajectory:
    score = Score(correct=correct, matched=int(correct), total=1, feedback="expected 2.0")
    return Trajectory(SAMPLE, prediction, score, {"reasoning": "I divided.", "bullet_ids": cited})


def test_reflector_prompt_shows_gold_feedback_and_cited_bullets() -> None:
    traj = trajectory("3.0", False, ["fml-00002", "ghost-00009"])
    user = prompts.reflector_messages(PLAYBOOK, traj)[1]["content"]
    for expected in ("3.0", "2.0", "expected 2.0", "I divided.", "<outcome>\nwrong\n</outcome>"):
        assert expected in user
    cited = PLAYBOOK.get("fml-00002")
    assert cited is not None and cited.render() in user
    assert "str-00001" not in user and "ghost-00009" not in user


def test_generator_learns_from_a_playbook_bullet_about_the_formula() -> None:
    empty = ask(prompts.generator_messages(Playbook(), SAMPLE), schemas.GENERATOR)
    assert (
        empty["final_answer"] == wrong_answer(SAMPLE.question) != scripted_answer(SAMPLE.question)
    )
    assert empty["bullet_ids"] == []
    unrelated = Playbook(bullets=PLAYBOOK.bullets[:1], next_id=2)
    guess = ask(prompts.generator_messages(unrelated, SAMPLE), schemas.GENERATOR)
    assert guess["final_answer"] == wrong_answer(SAMPLE.question)
    assert guess["bullet_ids"] == ["str-00001"]
    learned = ask(prompts.generator_messages(PLAYBOOK, SAMPLE), schemas.GENERATOR)
    assert learned["final_answer"] == scripted_answer(SAMPLE.question)
    assert learned["bullet_ids"] == ["fml-00002"]


def test_topic_and_answers() -> None:
    assert topic_of(SAMPLE.question, CONTEXT) == "Current Ratio"
    assert topic_of("x", "Formula: Debt Ratio = Debt / Assets") == "Debt Ratio"
    assert topic_of("What is one plus two plus three, please?") == "What is one plus two plus"
    assert scripted_answer("q  one") == scripted_answer("q one")
    assert scripted_answer("q one") != scripted_answer("q two")


@pytest.mark.parametrize("correct", [True, False])
def test_reflector_names_the_formula_and_tags_cited_bullets(correct: bool) -> None:
    traj = trajectory("2.0" if correct else "3.0", correct, ["str-00001", "fml-00002"])
    reply = ask(prompts.reflector_messages(PLAYBOOK, traj), schemas.REFLECTOR)
    assert "Current Ratio" in reply["key_insight"]
    tags = {t["id"]: t["tag"] for t in reply["bullet_tags"]}
    if correct:
        assert tags == {"str-00001": "neutral", "fml-00002": "helpful"}
    else:
        assert tags == {"str-00001": "harmful", "fml-00002": "harmful"}


def reflections() -> list[Reflection]:
    return [
        Reflection("a", {"key_insight": "For Current Ratio questions, divide.", "bullet_tags": []}),
        Reflection("b", {"key_insight": "For ROI questions, subtract cost first."}, correct=True),
        Reflection("c", {"reasoning": "no insight here"}),
    ]


def test_curator_prompt_numbers_reflections_and_names_sections() -> None:
    user = prompts.curator_messages(PLAYBOOK, reflections(), token_budget=900)[1]["content"]
    for index, reflection in enumerate(reflections(), start=1):
        assert f"### Reflection {index}\n{reflection.render()}" in user
    assert "Allowed sections: strategies (Strategies and rules), formulas (" in user
    assert (
        f"Token budget: 900 (the playbook now uses about {PLAYBOOK.token_count()} tokens)" in user
    )
    # The task is restated after the last reflection, with their count.
    assert user.endswith(prompts.curator_closing(len(reflections())))
    assert "Those were 3 reflections." in user
    one = prompts.curator_messages(PLAYBOOK, reflections()[:1], token_budget=None)[1]["content"]
    assert "Those were 1 reflection." in one


@pytest.mark.parametrize("with_format", [True, False])
def test_curator_adds_one_lesson_per_reflection(with_format: bool) -> None:
    messages = prompts.curator_messages(PLAYBOOK, reflections(), token_budget=900)
    reply = ask(messages, schemas.CURATOR, with_format)
    contents = [op["content"] for op in reply["operations"]]
    assert contents == [
        "For Current Ratio questions, divide.",
        "For ROI questions, subtract cost first.",
    ]
    result = apply_operations(PLAYBOOK, reply["operations"], token_budget=None)
    assert result.rejected == [] and len(result.playbook) == 4


def test_curator_and_merge_schemas_constrain_more_than_they_accept() -> None:
    schema = schemas.curator_schema(("alpha", "beta"))
    assert schema is schemas.curator_schema(("alpha", "beta"))  # built once
    assert schema.name == "curator"
    properties = schema.schema["properties"]
    assert list(properties) == ["operations", "reasoning"]  # the operations come first
    assert schema.schema["required"] == ["operations"]
    assert "maxItems" not in properties["operations"]
    add, update, merge, delete = properties["operations"]["items"]["anyOf"]
    assert add["properties"]["section"]["enum"] == ["alpha", "beta"]
    assert add["required"] == ["type", "section", "content", "about"]
    assert update["required"] == ["type", "bullet_id", "content", "about"]
    assert merge["required"] == ["type", "bullet_ids", "content", "about"]
    assert delete["required"] == ["type", "bullet_id"]
    unknown = {
        "operations": [{"type": "ADD", "section": "poetry", "content": "x", "about": "task"}]
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(unknown, schema.schema)
    assert schema.accepts is not None
    jsonschema.validate(unknown, schema.accepts)  # what still arrives unknown is repaired
    assert schemas.CURATOR.schema["properties"]["operations"]["items"]["anyOf"][0]["properties"][
        "section"
    ]["enum"] == [s.key for s in PLAYBOOK.sections]

    merge_schema = schemas.merge_schema(3)
    assert merge_schema is schemas.merge_schema(3) and merge_schema.name == "merge"
    assert list(merge_schema.schema["properties"]) == ["keep", "combine", "drop", "reasoning"]
    jsonschema.validate({"keep": [1, 3], "combine": [], "drop": [2]}, merge_schema.schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"keep": [4], "combine": [], "drop": []}, merge_schema.schema)
    assert merge_schema.accepts is not None
    jsonschema.validate({"keep": ["#4"]}, merge_schema.accepts)


def test_merge_prompt_numbers_every_operation_and_the_reply_keeps_distinct_ones() -> None:
    add = {"type": "ADD", "section": "formulas", "content": "ROI subtracts cost first."}
    updates = [
        AceUpdate([add, {"type": "DELETE", "bullet_id": "str-00001"}], "r1", "curator"),
        AceUpdate([{**add, "content": "roi   subtracts cost first."}], "r2", "curator"),
        AceUpdate([{"type": "ADD", "section": "checks", "content": "Check ```json fences."}]),
    ]
    messages = prompts.merge_messages(PLAYBOOK, updates, token_budget=None)
    user = messages[1]["content"]
    assert "Token budget: none" in user
    assert (
        "### Local update 1\n"
        '#1 {"type": "ADD", "section": "formulas", "content": "ROI subtracts cost first."}\n'
        '#2 {"type": "DELETE", "bullet_id": "str-00001"}\n\n'
        "### Local update 2\n"
        '#3 {"type": "ADD", "section": "formulas", "content": "roi   subtracts cost first."}\n\n'
        "### Local update 3\n"
        '#4 {"type": "ADD", "section": "checks", "content": "Check ```json fences."}'
    ) in user
    for with_format in (True, False):
        reply = ask(messages, schemas.merge_schema(4), with_format)
        assert reply == {
            "keep": [1, 2, 4],
            "combine": [],
            "drop": [3],
            "reasoning": "3 distinct operation(s) kept, 1 repeat(s) dropped.",
        }


def test_reflector_and_generator_detected_without_response_format() -> None:
    traj = trajectory("2.0", True, ["fml-00002"])
    ask(prompts.reflector_messages(PLAYBOOK, traj), schemas.REFLECTOR, with_format=False)
    ask(prompts.generator_messages(PLAYBOOK, SAMPLE), schemas.GENERATOR, with_format=False)


def test_non_ace_request_gets_an_echo() -> None:
    # A client's connectivity check is not an ACE role; it must still get a reply.
    reply = ace_responder({"messages": [{"role": "user", "content": "hello"}]})
    assert reply == "echo: hello"


def test_responder_is_deterministic() -> None:
    request = body(prompts.generator_messages(PLAYBOOK, SAMPLE), schemas.GENERATOR)
    assert ace_responder(request) == ace_responder(json.loads(json.dumps(request)))
