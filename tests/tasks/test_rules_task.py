"""The ``rules`` task: seeded made-up entities whose rule only the feedback states, and an
exact scorer."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from combee.errors import ConfigError
from combee.tasks.registry import get_task
from combee.tasks.rules import KINDS, RulesTask, answer_instruction


def questions(task: RulesTask, split: str) -> list[tuple[str, str]]:
    splits = task.load()
    return [(s.question, s.answer) for s in getattr(splits, split)]


def test_the_generator_is_seeded() -> None:
    first, again, other = RulesTask(seed=3), RulesTask(seed=3), RulesTask(seed=4)
    for split in ("train", "val", "test"):
        assert questions(first, split) == questions(again, split)
        assert questions(first, split) != questions(other, split)
    assert [e.rule for e in first.entities] == [e.rule for e in again.entities]


def test_splits_cover_every_entity_and_kind_and_never_repeat_a_question() -> None:
    task = RulesTask(seed=0, entities=12, train_each=3, val_each=1, test_each=2)
    splits = task.load()
    assert (len(splits.train), len(splits.val), len(splits.test)) == (36, 12, 24)
    every = [s.question for s in (*splits.train, *splits.val, *splits.test)]
    assert len(set(every)) == len(every)
    assert Counter(s.meta["entity"] for s in splits.test) == {e.name: 2 for e in task.entities}
    assert {s.meta["kind"] for s in splits.train} == set(KINDS)
    # Interleaved: the first 12 training samples are one per entity.
    assert len({s.meta["entity"] for s in splits.train[:12]}) == 12


def test_no_question_states_its_rule_and_the_feedback_does() -> None:
    task = RulesTask(seed=1)
    for sample in task.load().train:
        rule = sample.meta["rule"]
        instruction = answer_instruction(sample.meta["kind"])
        assert rule not in sample.question and sample.question.endswith(instruction)
        assert sample.context == ""
        feedback = task.score("no idea", sample).feedback
        assert rule in feedback and f"expected {sample.answer}" in feedback


def test_answers_follow_the_rule() -> None:
    task = RulesTask(seed=2, entities=6, train_each=5)
    for sample in task.load().train:
        kind, rule, question = sample.meta["kind"], sample.meta["rule"], sample.question
        numbers = [int(n) for n in re.findall(r"\d+", question.split("\n")[0])]
        rule_numbers = [int(n) for n in re.findall(r"\d+", rule)]
        if kind in ("factor", "unit"):
            assert int(sample.answer) == numbers[0] * rule_numbers[0]
        elif kind == "fee":
            assert int(sample.answer) == numbers[0] + rule_numbers[0]
        elif kind == "count":
            assert int(sample.answer) == numbers[0] - rule_numbers[0]
        elif kind == "code":
            code = re.findall(r"followed by (\w+)", rule)[0]
            assert sample.answer == f"{numbers[0]}{code}"
        else:
            assert sample.answer == ("yes" if numbers[0] >= rule_numbers[0] else "no")


def test_the_scorer_is_exact() -> None:
    task = RulesTask(seed=0)
    by_kind = {s.meta["kind"]: s for s in task.load().test}
    number = by_kind["factor"]
    assert task.score(number.answer, number).correct
    assert task.score(f" {float(number.answer):.2f}. ", number).correct
    assert task.score(f"{number.answer}.", number).correct
    assert not task.score(f"{number.answer} units", number).correct
    assert not task.score(str(float(number.answer) + 0.5), number).correct
    code = by_kind["code"]
    assert task.score(code.answer.lower(), code).correct
    assert not task.score(code.answer[::-1], code).correct
    assert not task.score(code.answer[:-1], code).correct
    permit = by_kind["precondition"]
    other = "no" if permit.answer == "yes" else "yes"
    assert task.score(permit.answer.upper(), permit).correct
    assert not task.score(other, permit).correct
    score = task.score(number.answer, number)
    assert (score.matched, score.total) == (1, 1)


def test_it_is_a_named_task_with_its_own_data() -> None:
    assert isinstance(get_task("rules", seed=5), RulesTask)
    with pytest.raises(ConfigError, match="bundled data"):
        get_task("rules", data="x.jsonl")
    with pytest.raises(ConfigError, match="entities"):
        RulesTask(entities=0)
