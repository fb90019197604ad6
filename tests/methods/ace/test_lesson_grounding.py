"""A reflection's lesson carries what the feedback states (combee.methods.ace.grounding): pure
rules first, then through the real client against the scripted server."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import combee
from combee.core.types import Reflection
from combee.llm import connect
from combee.methods.ace.grounding import (
    feedback_evidence,
    ground,
    grounded_reflection,
    is_remark,
    states,
)
from combee.methods.ace.operations import apply_operations
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.schemas import INSIGHT_ABOUT, REFLECTOR
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.agentdojo.agent import feedback_text
from combee.tasks.rules import RulesTask

RULE = "The yield of a Plouqual is its base value multiplied by 8."
REMARK = "The playbook does not contain any relevant information about this entity."


def test_the_evidence_is_what_the_feedback_states_beyond_its_verdict() -> None:
    assert feedback_evidence(f"wrong: expected 96, got '12'. The rule: {RULE}") == RULE
    assert feedback_evidence(f"correct. The rule: {RULE}") == RULE
    # A quoted answer with a full stop in it does not leak into the evidence.
    assert (
        feedback_evidence(f"wrong: expected 96, got 'It is 5. Then 12'. The rule: {RULE}") == RULE
    )
    assert feedback_evidence("expected 96.5, got 12") == ""
    assert feedback_evidence("wrong") == ""
    assert feedback_evidence(feedback_text(False)) == ""
    tau = (
        "the database did not end as the expected actions leave it. required outputs said: 0.0. "
        'expected actions: cancel_reservation({"reservation_id": "ZFA04Y"})'
    )
    assert 'cancel_reservation({"reservation_id": "ZFA04Y"})' in feedback_evidence(tau)
    assert feedback_evidence("x " * 2000).endswith("[...]")


def _reply(text: str, about: str | None = "task") -> dict[str, Any]:
    reply: dict[str, Any] = {"reasoning": "r", "key_insight": text, "bullet_tags": []}
    if about is not None:
        reply[INSIGHT_ABOUT] = about
    return reply


def test_a_remark_is_told_by_the_reflectors_field_never_by_its_words() -> None:
    assert REFLECTOR.schema["properties"][INSIGHT_ABOUT]["enum"] == ["task", "playbook", "attempt"]
    assert INSIGHT_ABOUT in REFLECTOR.schema["required"]
    for words in (
        REMARK,
        "The assistant should confirm the order number before issuing any refund.",
        "I need to convert somspans to meters first.",
        "Keep slide decks to at most five bullets per slide.",
    ):
        assert is_remark(_reply(words, "playbook")) and is_remark(_reply(words, "attempt"))
        assert not is_remark(_reply(words, "task"))
        assert not is_remark(_reply(words, None))  # no field: read as a lesson


def test_a_lesson_states_the_evidence_when_it_holds_its_numbers_and_names() -> None:
    assert states("A Plouqual yields 8 times its base value.", RULE)
    assert not states("Multiply the base value by the factor.", RULE)
    assert not states("A Plouqual yields 9 times its base value.", RULE)
    assert states("anything", "use the smaller of the two values")  # nothing specific to miss


def test_the_lesson_is_grounded_by_the_table_in_the_module() -> None:
    feedback = f"wrong: expected 96, got '12'. The rule: {RULE}"
    replaced = ground(_reply(REMARK, "playbook"), feedback)
    assert (replaced.source, replaced.fields["key_insight"]) == ("feedback", RULE)
    assert replaced.fields["reasoning"] == "r"
    dropped = ground(_reply(REMARK, "attempt"), "expected 96, got 12")
    assert (dropped.source, dropped.fields["key_insight"]) == ("dropped", "")
    missing = ground(_reply("Multiply the base value by the factor."), feedback)
    assert missing.source == "feedback+reflector"
    assert missing.fields["key_insight"] == f"{RULE} Multiply the base value by the factor."
    kept = ground(_reply("A Plouqual yields 8 times its base value."), feedback)
    assert (kept.source, kept.fields["key_insight"]) == (
        "reflector",
        "A Plouqual yields 8 times its base value.",
    )
    plain = ground(_reply("Divide the net income by revenue."), "expected 0.2, got 5")
    assert plain.source == "reflector"
    # A remark's words in a lesson about the task: the lesson, whole.
    voiced = "The model should multiply a Plouqual's base value by 8: the playbook needs it."
    assert ground(_reply(voiced), feedback).fields["key_insight"] == voiced


def test_without_copy_rules_the_lesson_is_what_the_reflector_wrote() -> None:
    feedback = f"wrong: expected 96, got '12'. The rule: {RULE}"
    written = "Multiply the base value by the factor."
    own = ground(_reply(written), feedback, copy_rules=False)
    assert (own.source, own.fields["key_insight"], own.evidence) == ("reflector", written, RULE)
    remark = ground(_reply(REMARK, "playbook"), feedback, copy_rules=False)
    assert (remark.source, remark.fields["key_insight"]) == ("dropped", "")
    wrong = "A Plouqual yields 3 times its base value. Multiply first."
    joined = ground(_reply(wrong), feedback, drop_contradictions=False)
    assert joined.fields["key_insight"] == f"{RULE} {wrong}"
    cleaned = ground(_reply(wrong), feedback)
    assert cleaned.fields["key_insight"] == f"{RULE} Multiply first."


def test_the_curator_sees_the_feedback_unless_the_lesson_carries_it() -> None:
    feedback = "expected 0.25, got 4"
    reflection = grounded_reflection(
        "s1", {"key_insight": "Divide net income by revenue."}, correct=False, feedback=feedback
    )
    assert "feedback: expected 0.25, got 4" in reflection.render()
    carried = grounded_reflection(
        "s2", _reply(REMARK, "playbook"), correct=False, feedback=f"wrong. The rule: {RULE}"
    )
    assert carried.feedback == "" and f"key_insight: {RULE}" in carried.render()
    assert isinstance(carried, Reflection) and carried.lesson_source == "feedback"


def _remarking(body: Mapping[str, Any]) -> str:
    """The scripted ACE model, except that its reflector only ever remarks on the playbook."""
    reply = ace_responder(body)
    spec = (body.get("response_format") or {}).get("json_schema") or {}
    if spec.get("name") != "reflector":
        return reply
    data = json.loads(reply)
    data["key_insight"] = REMARK
    data[INSIGHT_ABOUT] = "playbook"
    return json.dumps(data)


def _user(body: Mapping[str, Any]) -> str:
    return str(next(m["content"] for m in body["messages"] if m["role"] == "user"))


async def one_batch(
    task: Any, batch: int, run_dir: Path, **settings: Any
) -> tuple[str, int, dict[str, Any]]:
    """One naive batch against the remarking reflector: the curator's prompt ("" when no
    curator was asked), the reflector calls the server saw, and the run's final results."""
    with serve_in_thread(_remarking) as server:
        llm = connect("sim", base_url=server.base_url, max_retries=0)
        try:
            await combee.train_async(
                task, strategy="naive", batch_size=batch, llm=llm, run_dir=run_dir, seed=0,
                train_limit=batch, val_limit=0, test_limit=0, gate=False, **settings,
            )  # fmt: skip
        finally:
            await llm.aclose()
        records = server.records
    curators = [_user(r.body) for r in records if r.schema_name == "curator"]
    assert len(curators) <= 1
    reflected = sum(r.schema_name == "reflector" for r in records)
    results = json.loads((run_dir / "final_results.json").read_text())
    return "".join(curators), reflected, results


async def test_the_feedbacks_rule_reaches_the_curator_when_the_reflector_only_remarks(
    tmp_path: Path,
) -> None:
    task = RulesTask()
    prompt, reflected, results = await one_batch(task, 16, tmp_path / "run", screen=False)
    assert reflected == 16
    for entity in task.entities:
        assert entity.rule in prompt, entity.rule
    assert REMARK not in prompt
    assert results["lesson_sources"] == {"feedback": 16}


async def test_a_remark_with_no_evidence_to_replace_it_is_dropped_and_counted(
    tmp_path: Path,
) -> None:
    prompt, reflected, results = await one_batch("formula", 8, tmp_path / "run")
    # No reflection holds a lesson, so no curator is asked.
    assert reflected == 8 and prompt == ""
    assert results["lesson_sources"] == {"dropped": 8}


def test_the_curators_lessons_are_applied_whatever_their_words() -> None:
    ops = [
        {"type": "ADD", "section": "mistakes", "content": content}
        for content in (
            "The assistant should confirm the order number before issuing any refund.",
            "Keep slide decks to at most five bullets per slide.",
            "The generator must be grounded before refuelling.",
        )
    ]
    result = apply_operations(Playbook(), ops, token_budget=None)
    assert [b.content for b in result.playbook.bullets] == [op["content"] for op in ops]
    assert result.dropped == {} and result.repaired == {}
