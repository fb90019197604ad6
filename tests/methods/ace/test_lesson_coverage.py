"""A curator's update keeps every short rule the feedback stated
(combee.methods.ace.coverage): the pure rule, then a curator that writes only remarks, through
the real client against the scripted server."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import combee
from combee.core.types import Reflection
from combee.llm import connect
from combee.methods.ace.coverage import REPAIR, with_stated_rules
from combee.methods.ace.grounding import contradicts, grounded_reflection
from combee.methods.ace.operations import apply_operations
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.schemas import INSIGHT_ABOUT
from combee.methods.ace.update import AceUpdate
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.rules import RulesTask

GEGAL = "A Gegal ticket costs its base fare plus a fee of 18."
PLOUQUAL = "The yield of a Plouqual is its base value multiplied by 8."
THEIM = "Every date in a Theim record is written as DD.MM.YYYY."
REMARK = "The playbook does not contain any relevant information about this entity."


def reflection(sample_id: str, rule: str, insight: str | None = None) -> Reflection:
    """A reflection on a sample whose feedback states ``rule``: the lesson ``insight``, or a
    remark on the playbook when None."""
    reply = {"key_insight": insight or REMARK, INSIGHT_ABOUT: "task" if insight else "playbook"}
    return grounded_reflection(
        sample_id,
        reply,
        correct=False,
        feedback=f"wrong: expected 96, got '12'. The rule: {rule}",
    )


def test_a_rule_no_operation_and_no_bullet_carries_is_added_once_and_counted() -> None:
    playbook = apply_operations(
        Playbook(), [{"type": "ADD", "section": "domain", "content": THEIM}], token_budget=None
    ).playbook
    update = AceUpdate(
        operations=[
            {"type": "ADD", "section": "formulas", "content": "Gegal fares add a fee of 18."},
            {"type": "ADD", "section": "mistakes", "content": f"{REMARK} Plouqual yields."},
        ],
        source="curator",
    )
    reflections = [
        reflection("1", GEGAL),
        reflection("2", PLOUQUAL),
        reflection("3", PLOUQUAL, "Multiply a Plouqual's base value by 8."),
        reflection("4", THEIM),
    ]
    kept = with_stated_rules(update, playbook, reflections)
    assert kept.operations[:2] == update.operations
    # The remark op names Plouquals but not the factor: the rule was lost, so it comes back,
    # once, in the words of the lesson that states it.
    assert kept.operations[2:] == [
        {"type": "ADD", "section": "strategies", "content": PLOUQUAL},
    ]
    assert kept.repaired == {REPAIR: 1}
    applied = apply_operations(playbook, kept.operations, token_budget=None)
    assert PLOUQUAL in [b.content for b in applied.playbook.bullets]


def test_nothing_is_added_without_a_short_specific_evidence() -> None:
    update = AceUpdate(source="curator")
    verdict_only = grounded_reflection(
        "1",
        {"key_insight": REMARK, INSIGHT_ABOUT: "playbook"},
        correct=False,
        feedback="expected 96.5, got 12",
    )
    generic = reflection("2", "check the units before answering.")
    long_list = reflection("3", " ".join(f"call_{i}(x={i})." for i in range(60)))
    assert verdict_only.evidence == "" and generic.evidence and long_list.evidence
    assert with_stated_rules(update, Playbook(), [verdict_only, generic, long_list]) is update


def _forgetful(body: Mapping[str, Any]) -> str:
    """The scripted ACE model, except that its curator only ever adds a remark."""
    reply = ace_responder(body)
    spec = (body.get("response_format") or {}).get("json_schema") or {}
    if spec.get("name") != "curator":
        return reply
    data = json.loads(reply)
    data["operations"] = [{"type": "ADD", "section": "other", "content": REMARK}]
    return json.dumps(data)


async def _forgetful_run(run_dir: Path, **settings: Any) -> tuple[str, dict[str, Any], int]:
    with serve_in_thread(_forgetful) as server:
        llm = connect("sim", base_url=server.base_url, max_retries=0)
        try:
            await combee.train_async(
                RulesTask(), strategy="combee", batch_size=16, llm=llm, run_dir=run_dir,
                seed=0, train_limit=16, val_limit=0, test_limit=0, screen=False, gate=False,
                **settings,
            )  # fmt: skip
        finally:
            await llm.aclose()
        curators = sum(r.schema_name == "curator" for r in server.records)
    results = json.loads((run_dir / "final_results.json").read_text())
    return (run_dir / "playbook.txt").read_text(), results, curators


async def test_every_stated_rule_reaches_the_playbook_when_the_curators_only_remark(
    tmp_path: Path,
) -> None:
    task = RulesTask()
    playbook, results, curators = await _forgetful_run(tmp_path / "run")
    assert curators >= 2  # several groups, each of which forgot its rules
    for entity in task.entities:
        assert entity.rule in playbook, entity.rule
    # The curator's own text is applied as it wrote it, remark or not: it is never judged
    # by its words.
    assert REMARK in playbook
    assert results["lessons_repaired_total"][REPAIR] >= 16
    # The repair is a setting: off, the playbook holds only what the curators wrote.
    off, results, _ = await _forgetful_run(tmp_path / "off", copy_rules=False)
    assert [e.rule for e in task.entities if e.rule in off] == []
    assert REPAIR not in results["lessons_repaired_total"]


STIBROU = "The yield of a Stibrou is its base value multiplied by 3."


def test_an_operation_that_contradicts_a_stated_rule_is_dropped_and_counted() -> None:
    update = AceUpdate(
        operations=[
            {"type": "ADD", "section": "formulas", "content": "A Stibrou yields base * 0.5."},
            {"type": "ADD", "section": "formulas", "content": "Stibrou: base 5 gives 15 (x 3)."},
            {"type": "ADD", "section": "domain", "content": "A Plouqual yields its base * 8."},
        ],
        source="curator",
    )
    kept = with_stated_rules(update, Playbook(), [reflection("1", STIBROU)])
    # The contradiction goes; a worked example that holds the rule's number and a lesson on
    # another entity stay; the example carries the rule's name and number, so nothing is added.
    assert [op["content"] for op in kept.operations] == [
        "Stibrou: base 5 gives 15 (x 3).",
        "A Plouqual yields its base * 8.",
    ]
    assert kept.dropped == {"contradicts_feedback": 1} and kept.repaired == {}


def test_a_contradiction_needs_every_name_and_a_whole_number_of_the_rule() -> None:
    assert contradicts("The yield of a Stibrou is its base value times 0.5.", STIBROU)
    assert not contradicts("The yield of a Plouqual is its base value times 0.5.", STIBROU)
    assert not contradicts("A Stibrou with base 5 yields 15, three times 5.", "Stibrou rules.")
    tau = 'expected actions: cancel_reservation({"reservation_id": "ZFA04Y"})'
    assert not contradicts("Call cancel_reservation within 24 hours of the request.", tau)
    # A unit names nothing: a lesson about another city's temperature is no contradiction.
    assert not contradicts("Oslo was 4 C when the agent asked.", "expected 18 C")


def test_the_reflectors_sentence_that_contradicts_the_rule_is_not_joined_to_it() -> None:
    joined = reflection("1", STIBROU, "A Stibrou's yield is its base value * 1.25. Check units.")
    assert joined.fields["key_insight"] == f"{STIBROU} Check units."
    assert joined.lesson_source == "feedback+reflector"
    alone = reflection("2", STIBROU, "A Stibrou's yield is its base value * 1.25.")
    assert alone.fields["key_insight"] == STIBROU and alone.lesson_source == "feedback"
