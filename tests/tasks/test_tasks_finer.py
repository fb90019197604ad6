"""FiNER task on the bundled real data: sentence-grouped split, parsing, entity-level scoring."""

from __future__ import annotations

import ast
import inspect
from collections import Counter

import pytest

from combee.tasks import finer, scoring
from combee.tasks.base import Sample, accuracy
from combee.tasks.finer import FinerTask, grouped_cut, parse_row, sentence_groups


@pytest.fixture(scope="module")
def task() -> FinerTask:
    return FinerTask(seed=0)


def _sentences(samples: list[Sample] | tuple[Sample, ...]) -> set[str]:
    return {sentence for s in samples for sentence in s.meta["sentences"]}


def test_split_sizes(task: FinerTask) -> None:
    splits = task.load()
    assert len(splits.train) + len(splits.val) == 500
    assert abs(len(splits.val) - 100) <= 5
    assert len(splits.test) == 441
    entities = sum(len(s.answer.split(",")) for s in [*splits.train, *splits.val])
    assert entities == 2000
    assert sum(len(s.answer.split(",")) for s in splits.test) == 1764


@pytest.mark.parametrize("seed", [0, 1, 2, 7])
def test_no_sentence_on_both_sides(seed: int) -> None:
    splits = FinerTask(seed=seed).load()
    shared = _sentences(list(splits.train)) & _sentences(list(splits.val))
    print(
        f"seed {seed}: train {len(splits.train)} rows / {len(_sentences(list(splits.train)))} "
        f"sentences, val {len(splits.val)} rows / {len(_sentences(list(splits.val)))} sentences, "
        f"shared {len(shared)}"
    )
    assert shared == set()
    ids = sorted(s.id for s in [*splits.train, *splits.val])
    assert ids == [f"finer-dev-{i:05d}" for i in range(1, 501)]


def test_questions_sharing_a_sentence_match_the_data_readme(task: FinerTask) -> None:
    splits = task.load()
    counts = Counter(x for s in [*splits.train, *splits.val] for x in s.meta["sentences"])
    sharing = sum(n for n in counts.values() if n > 1)
    assert sharing == 1108


def test_split_is_deterministic_per_seed() -> None:
    first = FinerTask(seed=3).load()
    again = FinerTask(seed=3).load()
    other = FinerTask(seed=4).load()
    assert [s.id for s in first.val] == [s.id for s in again.val]
    assert [s.id for s in first.train] == [s.id for s in again.train]
    assert {s.id for s in first.val} != {s.id for s in other.val}


def test_sentence_groups_join_transitively() -> None:
    groups = sentence_groups([["a"], ["b"], ["c", "a"], ["c"], ["d", "b"], ["e"]])
    assert groups == [[0, 2, 3], [1, 4], [5]]
    chosen = grouped_cut(groups, 0.5, seed=0)
    assert len(chosen) <= 3
    for group in groups:
        assert set(group) <= chosen or not set(group) & chosen


def test_parse_real_test_row(task: FinerTask) -> None:
    sample = task.load().test[0]
    assert sample.id == "finer-test-00001"
    assert sample.meta["entities"] == ("231,312", "6.5", "2.32", "34.2")
    assert sample.meta["sentences"][0] == (
        "As of March 31 , 2020 , the Company had 231,312 authorized shares available for future "
        "issuance under the 2016 Plan ."
    )
    assert sample.context.startswith("You are XBRL expert.")
    assert "What is best tag" not in sample.context
    assert "Answer the following" not in sample.context
    lines = sample.question.splitlines()
    assert lines[0].startswith('1. What is best tag for entity "231,312" in sentence:')
    assert lines[3].startswith('4. What is best tag for entity "34.2" in sentence:')
    assert "exactly 4" in sample.question
    assert "Output US GAAP tags" not in sample.question


def test_context_holds_the_139_tag_options(task: FinerTask) -> None:
    splits = task.load()
    for sample in [*splits.train, *splits.val, *splits.test]:
        listed = sample.context.split("options:", 1)[1].rstrip(".").split(",")
        options = {tag.strip().lower() for tag in listed if tag.strip()}
        assert len(options) == 139, sample.id
        assert {tag.lower() for tag in sample.answer.split(",")} <= options, sample.id


def test_every_row_has_four_questions(task: FinerTask) -> None:
    splits = task.load()
    for sample in [*splits.train, *splits.val, *splits.test]:
        assert len(sample.meta["entities"]) == 4, sample.id
        assert len(sample.answer.split(",")) == 4, sample.id


def test_parse_row_without_questions_keeps_everything() -> None:
    row = parse_row("just some text")
    assert row.questions == ()
    sample = finer.finer_sample("x-1", "just some text", "A,B")
    assert sample.question.startswith("just some text")
    assert "exactly 2" in sample.question


def test_scoring_on_real_rows(task: FinerTask) -> None:
    splits = task.load()
    row = splits.test[0]
    gold = row.answer.split(",")

    full = task.score(row.answer, row)
    assert (full.correct, full.matched, full.total) == (True, 4, 4)

    one_wrong = task.score(",".join([gold[0], "SharePrice", gold[2], gold[3]]), row)
    assert (one_wrong.correct, one_wrong.matched, one_wrong.total) == (False, 3, 4)
    assert "#2 expected" in one_wrong.feedback
    assert gold[1] in one_wrong.feedback

    fewer = task.score(",".join(gold[:2]), row)
    assert (fewer.correct, fewer.matched, fewer.total) == (False, 2, 4)
    assert "#3" in fewer.feedback and "#4" in fewer.feedback

    noisy = task.score("  " + " ,  ".join(t.upper() for t in gold) + "\n", row)
    assert (noisy.correct, noisy.matched) == (True, 4)

    extra = task.score(row.answer + ",SharePrice", row)
    assert (extra.correct, extra.matched, extra.total) == (True, 4, 4)

    empty = task.score("", row)
    assert (empty.correct, empty.matched, empty.total) == (False, 0, 4)

    second = splits.test[1]  # gold tags 1 and 3 are the same tag
    g = second.answer.split(",")
    swapped = task.score(",".join([g[1], g[0], g[2], g[3]]), second)
    assert (swapped.matched, swapped.correct) == (2, False)

    assert accuracy([full, one_wrong, fewer]) == pytest.approx(9 / 12)


def test_no_eval_of_model_output() -> None:
    for module in (finer, scoring):
        tree = ast.parse(inspect.getsource(module))
        called = {
            n.func.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        assert not called & {"eval", "exec"}, module.__name__
    malicious = "__import__('os').getcwd(),A,B,C"
    score = scoring.tag_list_score(malicious, "A,A,B,C")
    assert (score.matched, score.correct) == (3, False)
