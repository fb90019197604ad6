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
    without_remarks,
)
from combee.methods.ace.operations import apply_operations
from combee.methods.ace.playbook import Playbook
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.agentdojo.agent import feedback_text
from combee.tasks.rules import RulesTask
from tests.paths import DATA

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


def test_remarks_on_the_playbook_or_the_attempt_are_told_from_lessons() -> None:
    for remark in (
        REMARK,
        "The playbook is empty.",
        "No bullets cover Gegal tickets.",
        "The model did not show its work.",
        "The attempt ignored the fee.",
        "Therefore, I cannot provide a valid answer based on the given context.",
        "I'm unable to compute the ratio.",
    ):
        assert is_remark(remark), remark
    for lesson in (
        RULE,
        "Convert somspans to meters: one somspan is 9 meters.",
        "The answer is given in meters.",
        "Add the fee of 18 to a Gegal ticket's base fare.",
        "In the annuity formula, I is the periodic interest rate.",
        "I/O-bound steps are cached.",
    ):
        assert not is_remark(lesson), lesson
    # A curator's lesson of the embedded model on Formula, cut short by the reply bound: every
    # sentence of it speaks of the playbook or of the model itself.
    recorded = (
        "The playbook is empty and does not provide any information about the formula or the "
        "context for the question. Therefore, I cannot prov..."
    )
    assert without_remarks(recorded) == ""


def test_a_lesson_states_the_evidence_when_it_holds_its_numbers_and_names() -> None:
    assert states("A Plouqual yields 8 times its base value.", RULE)
    assert not states("Multiply the base value by the factor.", RULE)
    assert not states("A Plouqual yields 9 times its base value.", RULE)
    assert states("anything", "use the smaller of the two values")  # nothing specific to miss


def test_the_lesson_is_grounded_by_the_table_in_the_module() -> None:
    feedback = f"wrong: expected 96, got '12'. The rule: {RULE}"
    other = {"reasoning": "r", "bullet_tags": []}
    replaced = ground({**other, "key_insight": REMARK}, feedback)
    assert (replaced.source, replaced.fields["key_insight"]) == ("feedback", RULE)
    assert replaced.fields["reasoning"] == "r"
    dropped = ground({**other, "key_insight": REMARK}, "expected 96, got 12")
    assert (dropped.source, dropped.fields["key_insight"]) == ("dropped", "")
    missing = ground({"key_insight": "Multiply the base value by the factor."}, feedback)
    assert missing.source == "feedback+reflector"
    assert missing.fields["key_insight"] == f"{RULE} Multiply the base value by the factor."
    kept = ground({"key_insight": "A Plouqual yields 8 times its base value."}, feedback)
    assert (kept.source, kept.fields["key_insight"]) == (
        "reflector",
        "A Plouqual yields 8 times its base value.",
    )
    plain = ground({"key_insight": "Divide the net income by revenue."}, "expected 0.2, got 5")
    assert plain.source == "reflector"


def test_the_curator_sees_the_feedback_unless_the_lesson_carries_it() -> None:
    feedback = "expected 0.25, got 4"
    reflection = grounded_reflection(
        "s1", {"key_insight": "Divide net income by revenue."}, correct=False, feedback=feedback
    )
    assert "feedback: expected 0.25, got 4" in reflection.render()
    carried = grounded_reflection(
        "s2", {"key_insight": REMARK}, correct=False, feedback=f"wrong. The rule: {RULE}"
    )
    assert carried.feedback == "" and f"key_insight: {RULE}" in carried.render()
    assert isinstance(carried, Reflection) and carried.lesson_source == "feedback"


def test_remarks_of_the_embedded_model_are_recognised() -> None:
    """Key insights the embedded model (Qwen2.5-Coder-1.5B) wrote on the `rules` task, each
    labelled by hand: a remark on the playbook or the attempt, or a lesson."""
    path = DATA / "embedded_key_insights.json"
    recorded = json.loads(path.read_text())
    assert len(recorded) >= 16
    wrong = [r["text"] for r in recorded if is_remark(r["text"]) != r["remark"]]
    assert wrong == []


def _remarking(body: Mapping[str, Any]) -> str:
    """The scripted ACE model, except that its reflector only ever remarks on the playbook."""
    reply = ace_responder(body)
    spec = (body.get("response_format") or {}).get("json_schema") or {}
    if spec.get("name") != "reflector":
        return reply
    data = json.loads(reply)
    data["key_insight"] = REMARK
    return json.dumps(data)


def _user(body: Mapping[str, Any]) -> str:
    return str(next(m["content"] for m in body["messages"] if m["role"] == "user"))


async def one_batch(
    task: Any, batch: int, run_dir: Path, **settings: Any
) -> tuple[str, int, dict[str, Any]]:
    """One naive batch against the remarking reflector: the curator's prompt, the reflector
    calls the server saw, and the run's final results."""
    with serve_in_thread(_remarking) as server:
        llm = connect("sim", base_url=server.base_url, max_retries=0)
        try:
            await combee.train_async(
                task, strategy="naive", batch_size=batch, llm=llm, run_dir=run_dir, seed=0,
                train_limit=batch, val_limit=0, test_limit=0, **settings,
            )  # fmt: skip
        finally:
            await llm.aclose()
        records = server.records
    (curator,) = [r for r in records if r.schema_name == "curator"]
    reflected = sum(r.schema_name == "reflector" for r in records)
    return _user(curator.body), reflected, json.loads((run_dir / "final_results.json").read_text())


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
    assert reflected == 8 and REMARK not in prompt
    assert prompt.count("feedback: expected ") == 8  # the verdicts reach the curator instead
    assert results["lesson_sources"] == {"dropped": 8}


def test_the_curator_writes_no_remark_into_the_playbook() -> None:
    ops = [
        {"type": "ADD", "section": "mistakes", "content": REMARK},
        {"type": "ADD", "section": "formulas", "content": f"{RULE} The playbook lacked it."},
    ]
    result = apply_operations(Playbook(), ops, token_budget=None)
    assert [b.content for b in result.playbook.bullets] == [RULE]
    assert result.dropped == {"remark": 1} and result.repaired == {"remark": 1}


def test_a_remark_keeps_the_rule_it_points_to() -> None:
    assert (
        without_remarks(
            "The generator did not know the Theim date rule: every date in a Theim record is "
            "written as DD.MM.YYYY."
        )
        == "Every date in a Theim record is written as DD.MM.YYYY."
    )
    assert (
        without_remarks(
            "The playbook should hold a rule such as 'Trekour records write an amount followed by "
            "WSD'. The playbook is empty."
        )
        == "Trekour records write an amount followed by WSD."
    )
    assert without_remarks(REMARK) == ""
    # Without evidence, what the remark points to is the lesson; with none, it is dropped.
    pointed = ground({"key_insight": f"The playbook lacks this rule: {RULE}"}, "expected 9, got 8")
    assert (pointed.source, pointed.fields["key_insight"]) == ("reflector", RULE)
