"""The merge by reference: numbered operations kept verbatim, combined or dropped; the union
when the merge fails or places nothing; what was dropped and repaired reaches the metrics."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import pytest

from combee.errors import LLMCallError
from combee.llm.types import Completion, JsonSchema, Message
from combee.methods.ace import AceMethod, AceUpdate, Bullet, Playbook
from combee.methods.ace.learner import AceLearner
from combee.methods.ace.merging import (
    LIST_KEEP_UP_TO,
    dedup,
    operations_of,
    resolve_merge,
    union,
)
from combee.methods.ace.settings import AceSettings
from combee.tasks.base import Sample, Score

PLAYBOOK = Playbook(
    bullets=(Bullet("str-00001", "strategies", "Read the units.", 2, 0),), next_id=2
)

FIRST = AceUpdate(
    [
        {"type": "ADD", "section": "formulas", "content": "ROI = (gain - cost) / cost."},
        {"type": "UPDATE", "bullet_id": "str-00001", "content": "Read the units first."},
    ],
    "",
    "curator",
)
SECOND = AceUpdate(
    [
        {"type": "ADD", "section": "formulas", "content": "ROI divides the net gain by cost."},
        {"type": "ADD", "section": "checks", "content": "Check that percentages add to 100."},
        {"type": "DELETE", "bullet_id": "str-00001"},
    ],
    "",
    "curator",
)


def score(prediction: str, sample: Sample) -> Score:
    return Score(correct=prediction == sample.answer, matched=0, total=1)


def test_kept_operations_are_copied_verbatim_and_combined_ones_take_the_new_text() -> None:
    updates = copy.deepcopy([FIRST, SECOND])
    reply = {
        "keep": [2, 4],
        "combine": [{"numbers": [1, 3], "content": "ROI = (gain - cost) / cost; net gain / cost."}],
        "drop": [5],
        "reasoning": "#5 contradicts #2.",
    }
    merged = resolve_merge(updates, reply)
    assert merged is not None and merged.source == "merge"
    assert merged.operations == [
        {
            "type": "ADD",
            "section": "formulas",
            "content": "ROI = (gain - cost) / cost; net gain / cost.",
        },
        FIRST.operations[1],
        SECOND.operations[1],
    ]
    assert merged.dropped == {"merge_drop": 1} and merged.repaired == {}
    assert merged.combined == 2 and merged.reasoning == "#5 contradicts #2."
    assert updates == [FIRST, SECOND]  # the local updates are not touched


def test_numbers_are_read_leniently_and_unlisted_operations_are_kept() -> None:
    reply = {"keep": ["#1", "2", 4.0, "op 9", True, None], "drop": "3", "combine": "none"}
    merged = resolve_merge([FIRST, SECOND], reply)
    assert merged is not None
    assert merged.operations == [
        FIRST.operations[0],
        FIRST.operations[1],
        SECOND.operations[1],
        SECOND.operations[2],  # #5 was never placed: kept, and counted
    ]
    assert merged.dropped == {"merge_drop": 1}
    assert merged.repaired == {"merge_unlisted": 1}


def test_a_number_placed_twice_counts_once_combine_before_keep_before_drop() -> None:
    reply = {
        "keep": [1, 2, 2],
        "combine": [{"numbers": [1, 3], "content": "one"}, {"numbers": [3, 4], "content": "two"}],
        "drop": [1, 4, 5],
    }
    merged = resolve_merge([FIRST, SECOND], reply)
    assert merged is not None
    assert [op.get("content") for op in merged.operations] == [
        "one",
        "Read the units first.",
        "two",
    ]
    assert merged.dropped == {"merge_drop": 1} and merged.combined == 3


def test_a_combine_without_text_leaves_its_operations_as_written() -> None:
    reply = {"keep": [], "combine": [{"numbers": [1, 3], "content": " "}], "drop": [2, 4, 5]}
    merged = resolve_merge([FIRST, SECOND], reply)
    assert merged is not None
    # #4's "100" is carried by nothing else: its drop is overruled.
    assert merged.operations == [FIRST.operations[0], SECOND.operations[0], SECOND.operations[1]]
    assert merged.repaired == {"merge_unlisted": 2, "merge_drop_overruled": 1}
    assert merged.combined == 0


def test_a_drop_stands_only_when_something_else_carries_the_lessons_specifics() -> None:
    local = AceUpdate(
        [
            {"type": "ADD", "section": "formulas", "content": "Use the Vabril factor 1.08."},
            {"type": "ADD", "section": "formulas", "content": "Apply Vabril: multiply by 1.08."},
            {"type": "ADD", "section": "formulas", "content": "Quemath dates are DD.MM.YYYY."},
            {"type": "ADD", "section": "checks", "content": "Check the Theislev limit of 40."},
            {"type": "ADD", "section": "checks", "content": "Check the result twice."},
        ],
        "",
        "curator",
    )
    reply = {"keep": [1], "combine": [], "drop": [2, 3, 4, 5]}
    known = "[chk-00001] Calls to Theislev allow at most 40 items."
    merged = resolve_merge([local, AceUpdate()], reply, known=known)
    assert merged is not None
    # #2 repeats #1's specifics, #4 the playbook's, #5 names none: those drops stand.
    assert [op["content"] for op in merged.operations] == [
        "Use the Vabril factor 1.08.",
        "Quemath dates are DD.MM.YYYY.",
    ]
    assert merged.dropped == {"merge_drop": 3}
    assert merged.repaired == {"merge_drop_overruled": 1}
    # The repair is a setting: off, every drop of the reply stands.
    plain = resolve_merge([local, AceUpdate()], reply, known=known, overrule_drops=False)
    assert plain is not None
    assert [op["content"] for op in plain.operations] == ["Use the Vabril factor 1.08."]
    assert plain.dropped == {"merge_drop": 4} and plain.repaired == {}


def test_a_name_that_opens_the_lesson_counts_as_one_of_its_specifics() -> None:
    local = AceUpdate(
        [
            {
                "type": "ADD",
                "section": "formulas",
                "content": "A Plouqual yields 6 times its base.",
            },
            {"type": "ADD", "section": "domain", "content": "Duplix spans are 6 meters each."},
            {"type": "ADD", "section": "domain", "content": "The Plouqual factor is 6."},
        ],
        "",
        "curator",
    )
    merged = resolve_merge([local, AceUpdate()], {"keep": [1], "combine": [], "drop": [2, 3]})
    assert merged is not None
    # "6" is carried by #1, "Duplix" by nothing else: #2 is no repeat; #3 is one.
    assert [op["content"] for op in merged.operations] == [
        "A Plouqual yields 6 times its base.",
        "Duplix spans are 6 meters each.",
    ]
    assert merged.repaired == {"merge_drop_overruled": 1}


@pytest.mark.parametrize(
    "reply",
    [
        {},
        {"keep": [], "combine": [], "drop": []},
        {"keep": [0, 6, "x"], "drop": [-1]},
        {"operations": [{"type": "ADD", "section": "other", "content": "old form"}]},
    ],
)
def test_a_reply_that_places_no_valid_number_is_not_usable(reply: dict[str, Any]) -> None:
    assert resolve_merge([FIRST, SECOND], reply) is None


def test_exact_repeats_are_dropped_and_counted() -> None:
    repeat = AceUpdate(
        [{"type": "ADD", "section": "other", "content": " roi = (GAIN - cost) / cost. "}]
    )
    merged = resolve_merge([FIRST, repeat], {"keep": [1, 2, 3], "combine": [], "drop": []})
    assert merged is not None and merged.operations == FIRST.operations
    assert merged.dropped == {"duplicate": 1}
    kept, repeats = dedup([*FIRST.operations, *FIRST.operations])
    assert kept == FIRST.operations and repeats == 2
    fallback = union([FIRST, repeat, FIRST])
    assert fallback.source == "merge-fallback" and fallback.operations == FIRST.operations
    assert fallback.dropped == {"duplicate": 3}


class ByReference:
    """A model whose merge answers with ``reply`` (or raises ``error``)."""

    def __init__(self, reply: dict[str, Any] | None = None, error: Exception | None = None):
        self.reply = reply
        self.error = error
        self.schemas: list[JsonSchema] = []
        self.systems: list[str] = []

    async def complete_json(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        schema: JsonSchema,
        temperature: float = 0.0,
        max_tokens: int = 2048,
    ) -> tuple[dict[str, Any], Completion]:
        assert role == "merge"
        self.schemas.append(schema)
        self.systems.append(messages[0]["content"])
        if self.error is not None:
            raise self.error
        assert self.reply is not None
        return self.reply, Completion("{}", 1, 1, 0.0, "m")


async def test_method_merge_applies_the_kept_operations_verbatim() -> None:
    model = ByReference({"keep": [1, 3, 4], "combine": [], "drop": [2, 5]})
    method = AceMethod(model, score, ace=AceSettings(token_budget=None))
    merged = await method.merge(PLAYBOOK, [FIRST, AceUpdate(), SECOND])
    assert model.schemas[0].schema["properties"]["keep"]["items"]["enum"] == [1, 2, 3, 4, 5]
    assert merged.source == "merge"
    assert merged.operations == [FIRST.operations[0], *SECOND.operations[:2]]
    playbook = method.apply(PLAYBOOK, merged)
    assert [b.content for b in playbook.bullets] == [
        "Read the units.",
        "ROI = (gain - cost) / cost.",
        "ROI divides the net gain by cost.",
        "Check that percentages add to 100.",
    ]
    assert method.last_apply is not None
    assert method.last_apply.dropped == {"merge_drop": 2}


def lessons(first: int, count: int) -> AceUpdate:
    return AceUpdate(
        [
            {"type": "ADD", "section": "formulas", "content": f"Rule {n}: multiply by {n}."}
            for n in range(first, first + count)
        ],
        "",
        "curator",
    )


@pytest.mark.parametrize(
    "reply",
    [
        {
            "combine": [{"numbers": [1, 101], "content": "Rule 1: multiply by 1, always."}],
            "drop": [3],
        },
        {},
    ],
    ids=["combine-and-drop", "lists-nothing"],
)
async def test_a_large_merge_lists_only_what_to_combine_or_drop(reply: dict[str, Any]) -> None:
    updates = [lessons(1, 100), lessons(1, 100)]  # two curators, the same 100 lessons
    assert len(operations_of(updates)) > LIST_KEEP_UP_TO
    model = ByReference(reply)
    merged = await AceMethod(model, score, ace=AceSettings(token_budget=None)).merge(
        Playbook(), updates
    )
    assert "keep" not in model.schemas[0].schema["properties"]
    assert model.schemas[0].schema["required"] == ["combine", "drop"]
    assert "every number you do not list is kept" in model.systems[0]
    assert merged.source == "merge" and merged.repaired == {}
    texts = [op["content"] for op in merged.operations]
    assert len(texts) == 100 and texts.count("Rule 3: multiply by 3.") == 1
    if reply:
        assert texts[0] == "Rule 1: multiply by 1, always." and merged.combined == 2
        assert merged.dropped == {"merge_drop": 1, "duplicate": 98}
    else:
        assert texts == [op["content"] for op in updates[0].operations]
        assert merged.dropped == {"duplicate": 100}


async def test_a_small_merge_still_places_every_number() -> None:
    model = ByReference({"keep": [1, 2, 3, 4, 5], "combine": [], "drop": []})
    await AceMethod(model, score).merge(PLAYBOOK, [FIRST, SECOND])
    assert model.schemas[0].schema["required"] == ["keep", "combine", "drop"]
    assert "Put every number in exactly one of keep" in model.systems[0]


@pytest.mark.parametrize(
    "model",
    [
        ByReference(error=LLMCallError("merge: the endpoint is down")),
        ByReference({"keep": [], "combine": [], "drop": []}),
        ByReference({"keep": [], "combine": [], "drop": [1, 2, 3, 4, 5, 6]}),
    ],
    ids=["call-failed", "placed-nothing", "dropped-everything"],
)
async def test_method_merge_falls_back_to_the_union_of_the_local_updates(
    model: ByReference,
) -> None:
    repeat = AceUpdate([FIRST.operations[0]], "", "curator", dropped={"not_an_object": 1})
    merged = await AceMethod(model, score).merge(PLAYBOOK, [FIRST, SECOND, repeat])
    assert merged.source == "merge-fallback"
    assert merged.operations == FIRST.operations + SECOND.operations
    assert merged.dropped == {"not_an_object": 1, "duplicate": 1}


async def test_dropped_and_repaired_lessons_reach_the_learners_figures() -> None:
    local = AceUpdate(
        [
            {
                "type": "ADD",
                "section": "poetry",
                "content": "Gross margin = (revenue - COGS) / revenue.",
            },
            {"type": "UPDATE", "bullet_id": " [STR-00001] ", "content": "Read the units twice."},
            {"type": "ADD", "section": "other", "content": "read THE units twice."},
        ],
        "",
        "curator",
        dropped={"not_an_object": 2},
    )
    other = AceUpdate([{"type": "ADD", "section": "checks", "content": "Check the sign."}])
    model = ByReference({"keep": [1, 2, 3], "combine": [], "drop": [4]})
    method = AceMethod(model, score, ace=AceSettings(token_budget=None))
    learner = AceLearner(method)
    playbook = method.apply(PLAYBOOK, await method.merge(PLAYBOOK, [local, other]))
    assert playbook.get("oth-00002") is not None  # the unknown section's lesson, under Other
    stats = learner.iteration_stats(playbook)
    assert stats["lessons_dropped"] == {"duplicate": 1, "merge_drop": 1, "not_an_object": 2}
    assert stats["lessons_repaired"] == {"bullet_id_format": 1, "unknown_section": 1}
    assert stats["lessons_combined"] == 0
    assert stats["ops_applied"] == 2 and stats["ops_rejected"] == 1
    method.tally(playbook, [])  # the next iteration starts: no figures until it applies
    assert "lessons_dropped" not in learner.iteration_stats(playbook)
    assert learner.results()["lessons_dropped_total"] == stats["lessons_dropped"]
    method.apply(playbook, AceUpdate([{"type": "DELETE", "bullet_id": "zzz"}]))
    totals = learner.results()
    assert totals["ops_applied_total"] == 2 and totals["ops_rejected_total"] == 2
    assert totals["lessons_dropped_total"] == {
        "duplicate": 1,
        "merge_drop": 1,
        "not_an_object": 2,
        "unknown_bullet": 1,
    }
