"""Operations whose form a reader can see through are repaired, logged and counted, so their
lessons are not lost (see :mod:`combee.methods.ace.operations`)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from combee.methods.ace.dedup import keeps_more
from combee.methods.ace.operations import apply_operations
from combee.methods.ace.playbook import Playbook, Section
from tests.methods.ace.test_ace_operations import sample_playbook


@pytest.mark.parametrize(
    ("op", "applied", "repairs"),
    [
        # A lesson whose section is missing or unknown is filed under the catch-all section.
        (
            {"type": "ADD", "section": "poetry", "content": "x"},
            ("ADD", "oth-00004"),
            {"unknown_section"},
        ),
        ({"type": "ADD", "content": "x"}, ("ADD", "oth-00004"), {"missing_section"}),
        (
            {"type": "ADD", "section": None, "content": "x"},
            ("ADD", "oth-00004"),
            {"missing_section"},
        ),
        ({"section": "checks", "content": "x"}, ("ADD", "chk-00004"), {"missing_type"}),
        (
            {"type": " update ", "bullet_id": "str-00001", "content": "x"},
            ("UPDATE", "str-00001"),
            {"type_format"},
        ),
        (
            {"type": "ADD_BULLET", "section": "checks", "content": "x"},
            ("ADD", "chk-00004"),
            {"type_format"},
        ),
        (
            {"type": "ADD", "section": "checks", "bullet_id": "str-00001", "content": "x"},
            ("ADD", "chk-00004"),
            {"stray_bullet_id"},
        ),
        # Ids that lost their form still name their bullet (same slug, or none written).
        (
            {"type": "UPDATE", "bullet_id": " [STR-00001] ", "content": "x"},
            ("UPDATE", "str-00001"),
            {"bullet_id_format"},
        ),
        (
            {"type": "UPDATE", "bullet_id": "str-1", "content": "x"},
            ("UPDATE", "str-00001"),
            {"bullet_id_format"},
        ),
        (
            {"type": "UPDATE", "bullet_id": "3", "content": "x"},
            ("UPDATE", "mis-00003"),
            {"bullet_id_format"},
        ),
        (
            {"type": "DELETE", "bullet_id": "[mis-00003]"},
            ("DELETE", "mis-00003"),
            {"bullet_id_format"},
        ),
        # An UPDATE of a bullet that never existed keeps its text as a new bullet.
        (
            {"type": "UPDATE", "bullet_id": "str-00099", "content": "x"},
            ("ADD", "str-00004"),
            {"update_to_add"},
        ),
        (
            {"type": "UPDATE", "bullet_id": "fml-00001", "content": "x"},
            ("ADD", "fml-00004"),
            {"update_to_add"},
        ),
        (
            {"type": "UPDATE", "bullet_id": 5, "content": "x"},
            ("ADD", "oth-00004"),
            {"update_to_add", "missing_section"},
        ),
        (
            {"type": "UPDATE", "bullet_id": "xyz-00009", "section": "checks", "content": "x"},
            ("ADD", "chk-00004"),
            {"update_to_add"},
        ),
        # A MERGE keeps the bullets that exist; one left is an UPDATE, none an ADD.
        (
            {
                "type": "MERGE",
                "bullet_ids": ["str-00001", "zzz-00042", "fml-00002"],
                "content": "x",
            },
            ("MERGE", "str-00004"),
            {"merge_partial"},
        ),
        (
            {"type": "MERGE", "bullet_ids": ["str-00001", "str-00001"], "content": "x"},
            ("UPDATE", "str-00001"),
            {"merge_partial", "merge_to_update"},
        ),
        (
            {"type": "MERGE", "bullet_ids": ["str-00001", None], "content": "x"},
            ("UPDATE", "str-00001"),
            {"merge_partial", "merge_to_update"},
        ),
        (
            {"type": "MERGE", "bullet_ids": "str-00001", "content": "x"},
            ("UPDATE", "str-00001"),
            {"merge_to_update"},
        ),
        (
            {"type": "MERGE", "bullet_ids": ["zzz-00042"], "content": "x"},
            ("ADD", "oth-00004"),
            {"merge_partial", "merge_to_add", "missing_section"},
        ),
    ],
)
def test_recoverable_defects_are_repaired_logged_and_counted(
    op: Any, applied: tuple[str, str], repairs: set[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="combee.methods.ace.operations"):
        result = apply_operations(sample_playbook(), [op], token_budget=None)
    assert result.rejected == [] and result.dropped == {}
    assert result.repaired == dict.fromkeys(repairs, 1)
    (done,) = result.applied
    assert (done["type"], done.get("new_id", done.get("bullet_id"))) == applied
    if done["type"] != "DELETE":
        changed = result.playbook.get(applied[1])
        assert changed is not None and changed.content == "x"
    assert "repaired playbook operation" in caplog.text


def test_repairs_are_counted_once_per_operation_and_kind() -> None:
    ops = [
        {"type": "ADD", "section": "poetry", "content": "one"},
        {"type": "ADD", "section": "prose", "content": "two"},
        {"type": "ADD", "section": "prose", "content": "two"},
    ]
    result = apply_operations(Playbook(), ops, token_budget=None)
    assert [b.section for b in result.playbook.bullets] == ["other", "other"]
    assert result.repaired == {"unknown_section": 2}
    assert result.dropped == {"duplicate": 1}


def test_catch_all_is_the_last_section_when_none_is_called_other() -> None:
    sections = (Section("a", "Alpha", "alp"), Section("b", "Beta", "bet"))
    result = apply_operations(
        Playbook(sections=sections),
        [{"type": "ADD", "section": "z", "content": "x"}],
        token_budget=None,
    )
    assert result.playbook.bullet_ids == ["bet-00001"]


def test_a_lesson_cut_at_the_length_bound_keeps_its_whole_sentences() -> None:
    whole = "The Sharpe ratio divides excess return by its standard deviation. " * 3
    cut = (whole + "The playbook is not relevant to the question and does not have a")[:280]
    short = "Use ROI = (gain - cost) / cost"  # short, no full stop: not a cut lesson
    ops = [
        {"type": "ADD", "section": "formulas", "content": cut},
        {"type": "ADD", "section": "formulas", "content": short},
    ]
    result = apply_operations(Playbook(), ops, token_budget=None)
    first, second = (bullet.content for bullet in result.playbook.bullets)
    assert first == whole.strip() and first.endswith("deviation.")
    assert second == short
    assert result.repaired == {"unfinished_sentence": 1}


def test_a_fragment_keeps_only_its_whole_sentences_and_never_replaces_a_whole_lesson() -> None:
    whole = "The playbook is empty. Check the Sharpe ratio formula before answering."
    fragment = "the Sharpe ratio formula or how to use it. Check the Sharpe ratio formula first"
    ops = [{"type": "ADD", "section": "mistakes", "content": fragment}]
    result = apply_operations(Playbook(), ops, token_budget=None)
    (bullet,) = result.playbook.bullets
    assert bullet.content == fragment  # no whole sentence in it: kept as written
    two = fragment + ". Then round to two decimals. Then add the"
    result = apply_operations(Playbook(), [{**ops[0], "content": two}], token_budget=None)
    (bullet,) = result.playbook.bullets
    assert bullet.content == "Check the Sharpe ratio formula first. Then round to two decimals."
    assert keeps_more(whole, fragment) and not keeps_more(fragment, whole)


def test_a_copied_bullet_rendering_is_dropped_from_the_lesson() -> None:
    """A curator that copies the playbook's rendering ("[mis-00004] helpful=0 harmful=5 :: ...")
    into a lesson gets the lesson alone, so the counters never turn into text."""
    lesson = "A Notath year is the calendar year minus 1970."
    ops = [
        {
            "type": "ADD",
            "section": "mistakes",
            "content": f"[mis-00004] helpful=0 harmful=5 :: {lesson}",
        },
        {
            "type": "ADD",
            "section": "domain",
            "content": "[dom-00002] :: [dom-00001] :: Fees are 6.",
        },
        {"type": "ADD", "section": "domain", "content": "[dom-00003] helpful=1 harmful=0 ::"},
    ]
    result = apply_operations(Playbook(), ops, token_budget=None)
    contents = [bullet.content for bullet in result.playbook.bullets]
    assert contents == [lesson, "Fees are 6.", "[dom-00003] helpful=1 harmful=0 ::"]
    assert result.repaired == {"bullet_prefix": 2}
