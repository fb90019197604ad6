from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from combee.methods.ace.operations import apply_operations
from combee.methods.ace.playbook import Bullet, Playbook, count_tokens


def sample_playbook() -> Playbook:
    return Playbook(
        bullets=(
            Bullet("str-00001", "strategies", "Read the units before computing.", 3, 0),
            Bullet("fml-00002", "formulas", "ROI = (gain - cost) / cost.", 1, 2),
            Bullet("mis-00003", "mistakes", "Percent is not a fraction.", 0, 0),
        ),
        next_id=4,
    )


def test_add_creates_bullet_with_next_global_id() -> None:
    result = apply_operations(
        sample_playbook(),
        [{"type": "ADD", "section": "checks", "content": "  Re-add   the\ncomponents. "}],
        token_budget=None,
    )
    added = result.playbook.get("chk-00004")
    assert added == Bullet("chk-00004", "checks", "Re-add the components.", 0, 0)
    assert result.playbook.next_id == 5
    assert result.applied == [
        {
            "type": "ADD",
            "section": "checks",
            "content": "Re-add the components.",
            "new_id": "chk-00004",
        }
    ]
    assert result.rejected == [] and result.evicted == []


def test_add_accepts_section_title_and_lower_case_type() -> None:
    result = apply_operations(
        sample_playbook(),
        [{"type": "add", "section": "Domain knowledge", "content": "EBIT excludes interest."}],
        token_budget=None,
    )
    assert result.playbook.get("dom-00004") is not None


def test_update_keeps_counters_and_position() -> None:
    result = apply_operations(
        sample_playbook(),
        [
            {
                "type": "UPDATE",
                "bullet_id": "[fml-00002]",
                "content": "ROI = (gain - cost) / cost. Gain is the sale price.",
            }
        ],
        token_budget=None,
    )
    bullet = result.playbook.get("fml-00002")
    assert bullet is not None
    assert (bullet.helpful, bullet.harmful, bullet.section) == (1, 2, "formulas")
    assert bullet.content.endswith("Gain is the sale price.")
    assert result.playbook.bullet_ids == ["str-00001", "fml-00002", "mis-00003"]
    assert result.playbook.next_id == 4


def test_merge_sums_counters_and_replaces_bullets() -> None:
    result = apply_operations(
        sample_playbook(),
        [
            {
                "type": "MERGE",
                "bullet_ids": ["fml-00002", "str-00001"],
                "content": "Units, then ROI.",
            }
        ],
        token_budget=None,
    )
    playbook = result.playbook
    assert "fml-00002" not in playbook and "str-00001" not in playbook
    merged = playbook.get("fml-00004")
    assert merged == Bullet("fml-00004", "formulas", "Units, then ROI.", 4, 2)
    assert result.applied[0]["bullet_ids"] == ["fml-00002", "str-00001"]


def test_delete_removes_bullet_and_never_reuses_its_id() -> None:
    result = apply_operations(
        sample_playbook(),
        [
            {"type": "DELETE", "bullet_id": "mis-00003"},
            {"type": "ADD", "section": "mistakes", "content": "New mistake."},
        ],
        token_budget=None,
    )
    assert "mis-00003" not in result.playbook
    assert result.playbook.get("mis-00004") is not None


def test_operations_see_the_state_earlier_ones_left() -> None:
    result = apply_operations(
        sample_playbook(),
        [
            {"type": "ADD", "section": "other", "content": "Fresh lesson."},
            {"type": "UPDATE", "bullet_id": "oth-00004", "content": "Fresh lesson, sharpened."},
            {"type": "DELETE", "bullet_id": "str-00001"},
            {"type": "UPDATE", "bullet_id": "str-00001", "content": "Too late."},
        ],
        token_budget=None,
    )
    assert [op["type"] for op in result.applied] == ["ADD", "UPDATE", "DELETE"]
    assert result.rejected[0][1] == "unknown bullet str-00001"
    bullet = result.playbook.get("oth-00004")
    assert bullet is not None and bullet.content == "Fresh lesson, sharpened."


@pytest.mark.parametrize(
    ("op", "reason", "code"),
    [
        ("ADD everything", "operation is not an object", "not_an_object"),
        (["ADD"], "operation is not an object", "not_an_object"),
        (
            {"type": "RENAME", "bullet_id": "str-00001"},
            "unknown operation type 'RENAME'",
            "unknown_type",
        ),
        ({"section": "other"}, "unknown operation type None", "unknown_type"),
        ({"type": "ADD", "section": "other", "content": "  \n "}, "content is empty", "no_content"),
        ({"type": "ADD", "section": "other"}, "content must be a string", "no_content"),
        (
            {"type": "ADD", "section": "other", "content": 7},
            "content must be a string",
            "no_content",
        ),
        (
            {"type": "ADD", "section": "poetry", "content": "percent  is NOT a fraction."},
            "content duplicates bullet mis-00003",
            "duplicate",
        ),
        (
            {"type": "UPDATE", "bullet_id": "str-00001", "content": ""},
            "content is empty",
            "no_content",
        ),
        ({"type": "UPDATE", "bullet_id": "str-00099"}, "content must be a string", "no_content"),
        (
            {"type": "UPDATE", "bullet_id": "str-00001", "content": "Percent is not a fraction."},
            "content duplicates bullet mis-00003",
            "duplicate",
        ),
        (
            {"type": "DELETE", "bullet_id": "nope-00001"},
            "unknown bullet nope-00001",
            "unknown_bullet",
        ),
        (
            {"type": "DELETE", "bullet_id": "fml-00001"},
            "unknown bullet fml-00001",
            "unknown_bullet",
        ),
        (
            {"type": "DELETE", "bullet_id": "str-00099"},
            "unknown bullet str-00099",
            "unknown_bullet",
        ),
        ({"type": "DELETE"}, "bullet_id must be a non-empty string", "bad_bullet_id"),
        (
            {"type": "MERGE", "bullet_ids": 7, "content": "x"},
            "bullet_ids must be a list",
            "bad_bullet_id",
        ),
        (
            {"type": "MERGE", "bullet_ids": ["str-00001", "fml-00002"], "content": " "},
            "content is empty",
            "no_content",
        ),
        (
            {
                "type": "MERGE",
                "bullet_ids": ["str-00001", "fml-00002"],
                "content": "Percent is not a fraction.",
            },
            "content duplicates bullet mis-00003",
            "duplicate",
        ),
    ],
)
def test_invalid_operations_are_rejected_logged_and_counted(
    op: Any, reason: str, code: str, caplog: pytest.LogCaptureFixture
) -> None:
    playbook = sample_playbook()
    good = {"type": "ADD", "section": "other", "content": "Still applied."}
    with caplog.at_level(logging.INFO, logger="combee.methods.ace.operations"):
        result = apply_operations(playbook, [op, good], token_budget=None)
    assert len(result.rejected) == 1
    rejected_op, why = result.rejected[0]
    assert rejected_op is op
    assert why.startswith(reason)
    assert reason in caplog.text
    assert result.dropped == {code: 1} and result.repaired == {}
    assert [a["content"] for a in result.applied] == ["Still applied."]
    assert result.playbook.bullet_ids == [*playbook.bullet_ids, "oth-00004"]


def test_merge_may_reuse_the_content_of_a_merged_bullet() -> None:
    result = apply_operations(
        sample_playbook(),
        [
            {
                "type": "MERGE",
                "bullet_ids": ["str-00001", "mis-00003"],
                "content": "Percent is not a fraction.",
            }
        ],
        token_budget=None,
    )
    assert result.rejected == []


def test_duplicate_adds_in_one_batch_keep_the_first() -> None:
    ops = [{"type": "ADD", "section": "other", "content": "Same lesson."}] * 2
    result = apply_operations(Playbook(), ops, token_budget=None)
    assert len(result.playbook) == 1
    assert result.rejected[0][1] == "content duplicates bullet oth-00001"


def test_input_playbook_and_operations_never_change() -> None:
    playbook = sample_playbook()
    before = (playbook.render(), playbook.next_id)
    ops = [
        {"type": "DELETE", "bullet_id": "str-00001"},
        {"type": "MERGE", "bullet_ids": ["fml-00002", "mis-00003"], "content": "m"},
        {"type": "bogus"},
    ]
    ops_before = copy.deepcopy(ops)
    result = apply_operations(playbook, ops, token_budget=10)
    assert (playbook.render(), playbook.next_id) == before
    assert ops == ops_before
    assert result.playbook is not playbook


def test_budget_evicts_lowest_net_then_oldest() -> None:
    playbook = Playbook(
        bullets=(
            Bullet("str-00001", "strategies", "old untested lesson", 0, 0),
            Bullet("str-00002", "strategies", "proven lesson", 5, 1),
            Bullet("mis-00003", "mistakes", "misleading lesson", 1, 4),
            Bullet("chk-00004", "checks", "newer untested lesson", 0, 0),
        ),
        next_id=5,
    )
    headers = Playbook().token_count()

    def cost(bullet_id: str) -> int:
        bullet = playbook.get(bullet_id)
        assert bullet is not None
        return count_tokens(bullet.render())

    # Room for exactly two bullets: the proven one and the newer untested one must survive.
    budget = headers + cost("str-00002") + cost("chk-00004")
    result = apply_operations(playbook, [], token_budget=budget)
    assert result.evicted == ["mis-00003", "str-00001"]
    assert result.playbook.bullet_ids == ["str-00002", "chk-00004"]
    assert result.playbook.token_count() == budget
    assert apply_operations(playbook, [], token_budget=budget - 1).evicted == [
        "mis-00003",
        "str-00001",
        "chk-00004",
    ]


def test_budget_not_exceeded_evicts_nothing() -> None:
    playbook = sample_playbook()
    result = apply_operations(playbook, [], token_budget=playbook.token_count())
    assert result.evicted == [] and result.playbook == playbook


def test_budget_below_headers_empties_the_playbook() -> None:
    result = apply_operations(sample_playbook(), [], token_budget=0)
    assert len(result.playbook) == 0
    assert sorted(result.evicted) == ["fml-00002", "mis-00003", "str-00001"]


# -- properties ---------------------------------------------------------------------------------

texts = st.sampled_from(
    ["alpha", "beta rule", "gamma: x = y / z", "delta check", "epsilon", "zeta units", "eta", ""]
)
ids = st.sampled_from([f"{slug}-{n:05d}" for slug in ("str", "fml", "mis") for n in range(1, 9)])
operations = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.just("ADD"),
            "section": st.sampled_from(["strategies", "formulas", "mistakes", "bad"]),
            "content": texts.map(lambda t: t and f"{t} lesson"),
        }
    ),
    st.fixed_dictionaries({"type": st.just("UPDATE"), "bullet_id": ids, "content": texts}),
    st.fixed_dictionaries(
        {"type": st.just("MERGE"), "bullet_ids": st.lists(ids, max_size=3), "content": texts}
    ),
    st.fixed_dictionaries({"type": st.just("DELETE"), "bullet_id": ids}),
    st.just({"type": "NOPE"}),
    st.just("garbage"),
)


@st.composite
def start_playbooks(draw: st.DrawFn) -> Playbook:
    adds = draw(st.lists(operations, max_size=8))
    return apply_operations(Playbook(), adds, token_budget=None).playbook


@settings(max_examples=200)
@given(start_playbooks(), st.lists(operations, max_size=12), st.none() | st.integers(0, 200))
def test_apply_properties(playbook: Playbook, ops: list[Any], budget: int | None) -> None:
    before = (playbook.render(), playbook.next_id, playbook.bullets)
    result = apply_operations(playbook, ops, token_budget=budget)
    after = result.playbook
    # The input never changes.
    assert (playbook.render(), playbook.next_id, playbook.bullets) == before
    # Every operation is accounted for exactly once.
    assert len(result.applied) + len(result.rejected) == len(ops)
    assert sum(result.dropped.values()) == len(result.rejected)
    assert all(0 < n <= len(result.applied) for n in result.repaired.values())
    # Ids are unique and below next_id; next_id never goes back.
    assert len(set(after.bullet_ids)) == len(after.bullet_ids)
    assert all(b.number < after.next_id for b in after.bullets)
    assert after.next_id >= playbook.next_id
    # The budget holds unless nothing is left to evict.
    if budget is not None:
        assert after.token_count() <= budget or len(after) == 0
        assert set(result.evicted).isdisjoint(after.bullet_ids)
    else:
        assert result.evicted == []
    # No two bullets say the same thing (ignoring case and spacing).
    contents = [b.content.casefold() for b in after.bullets]
    assert len(set(contents)) == len(contents)
    # The result renders to text that parses back to the same bullets.
    assert Playbook.parse(after.render()).bullets == after.bullets
