"""Formula task on the bundled real data: splits, question extraction, scoring."""

from __future__ import annotations

from importlib import resources

import pytest

from combee.tasks.base import Sample, accuracy
from combee.tasks.formula import ANSWER_INSTRUCTION, FormulaTask, extract_question, formula_sample
from combee.tasks.scoring import numeric_score


@pytest.fixture(scope="module")
def task() -> FormulaTask:
    return FormulaTask()


def _question_body(sample: Sample) -> str:
    assert sample.question.endswith(ANSWER_INSTRUCTION)
    return sample.question[: -len(ANSWER_INSTRUCTION)].rstrip()


def test_split_sizes_and_ids(task: FormulaTask) -> None:
    splits = task.load()
    assert (len(splits.train), len(splits.val), len(splits.test)) == (500, 300, 200)
    assert splits.train[0].id == "formula-train-00001"
    assert splits.val[-1].id == "formula-val-00300"
    assert splits.test[199].id == "formula-test-00200"
    ids = [s.id for part in (splits.train, splits.val, splits.test) for s in part]
    assert len(set(ids)) == 1000


def test_load_is_cached(task: FormulaTask) -> None:
    assert task.load() is task.load()


def test_first_test_row_has_a_curly_closing_quote(task: FormulaTask) -> None:
    sample = task.load().test[0]
    assert _question_body(sample) == (
        "For a landscaping business that earned a revenue of $300,000 and an Operating Income "
        "of $45,000 last year, find the Operating Margin."
    )
    assert sample.context.startswith("Use formula Operating Margin to answer the question.")
    assert sample.context.endswith("Revenue: Total sales.")
    assert "Question:" not in sample.context
    assert sample.answer == "15.0"


def test_unquoted_question_is_extracted(task: FormulaTask) -> None:
    sample = task.load().test[4]
    assert _question_body(sample) == (
        "If an entertainment company's earnings before interest and taxes total $900,000 with "
        "$180,000 in interest payments, what does the Interest Coverage Ratio show?"
    )
    assert sample.answer == "5.0"


def test_question_with_newline_before_answer_cue(task: FormulaTask) -> None:
    sample = task.load().test[58]
    assert _question_body(sample) == (
        "What will be the total simple interest of a $3,200 loan at an annual rate of 5.5% "
        "over 7 years?"
    )
    assert sample.answer == "1232.0"


def test_every_row_yields_a_clean_question(task: FormulaTask) -> None:
    splits = task.load()
    for sample in [*splits.train, *splits.val, *splits.test]:
        body = _question_body(sample)
        assert body, sample.id
        assert not body.startswith(('"', "“")), sample.id
        assert not body.endswith(('"', "”", "Answer:")), sample.id
        assert "Question:" not in body, sample.id
        assert sample.context.startswith("Use formula"), sample.id


def test_extraction_failure_keeps_the_whole_context() -> None:
    assert extract_question("Formula: X = Y, no question here") is None
    sample = formula_sample("train", 7, "Formula: X = Y, no question here", "1.0")
    assert sample.id == "formula-train-00007"
    assert sample.question.startswith("Formula: X = Y, no question here")
    assert sample.context == ""


def test_real_targets_score_correct(task: FormulaTask) -> None:
    splits = task.load()
    rows = [*splits.train, *splits.val, *splits.test]
    scores = [task.score(s.answer, s) for s in rows]
    assert all(s.correct and s.matched == 1 and s.total == 1 for s in scores)
    assert accuracy(scores) == 1.0


def test_scoring_on_hand_checked_rows(task: FormulaTask) -> None:
    splits = task.load()
    margin = splits.test[0]  # gold 15.0
    assert task.score("15.00", margin).correct
    assert task.score(" 15 ", margin).correct
    assert not task.score("15.01", margin).correct
    assert not task.score("15%", margin).correct  # not a number: string equality, no match

    wrong = task.score("14.0", margin)
    assert (wrong.correct, wrong.matched, wrong.total) == (False, 0, 1)
    assert wrong.feedback == "expected 15.0, got 14.0"

    interest = splits.test[58]  # gold 1232.0
    assert task.score("1,232", interest).correct
    assert task.score("1,232.00", interest).correct

    market_cap = splits.train[43]  # gold 6000000.0: 500,000 shares at $12
    assert market_cap.answer == "6000000.0"
    assert task.score("6,000,000", market_cap).correct
    assert not task.score("6 million", market_cap).correct

    trade = splits.train[49]  # gold -80000000.0: exports 120 million, imports 200 million
    assert trade.answer == "-80000000.0"
    assert task.score("-80,000,000.00", trade).correct
    assert not task.score("80000000.0", trade).correct


def test_numeric_rule_falls_back_to_string_equality() -> None:
    assert numeric_score("1,000", "1000.0").correct
    assert numeric_score("N/A", "N/A").correct
    assert numeric_score(" N/A ", "N/A").correct
    assert not numeric_score("n/a", "N/A").correct
    assert not numeric_score("abc", "15.0").correct


def test_data_is_bundled_with_licences() -> None:
    data = resources.files("combee.tasks") / "data"
    assert (data / "ATTRIBUTION.md").is_file()
    for name in (
        "LICENSE-XBRL-Agent-MIT.txt",
        "LICENSE-FinLoRA-OpenMDW-1.0.txt",
        "LICENSE-ace-agent-ace-Apache-2.0.txt",
    ):
        assert (data / "formula" / name).is_file(), name
    for name in ("LICENSE-nlpaueb-finer-MIT.txt", "LICENSE-FinLoRA-OpenMDW-1.0.txt"):
        assert (data / "finer" / name).is_file(), name
