"""``rules``: a seeded synthetic task where only the lessons decide the answer.

Each question is about a made-up entity ("a Plouqual", "Vouklur records") whose rule, a
factor, a unit, a fee, a written form, a counting start or a precondition, is stated
nowhere in the question. The scorer's feedback on a training sample states the rule, so a
reflector can turn it into a lesson; test questions ask about the same entities with other
numbers. Without a playbook a model can only guess (near 0, yes/no questions aside); with a
playbook that kept the entity's rule the question is one multiplication, addition or
comparison.

``rules-unstated`` is the same task with feedback that gives only the verdict and the reference
answer ("wrong: expected 96, got '12'."): the reflector must infer the rule from the question, the
answer and the feedback, as on Formula and FiNER, and no repair can copy it from the feedback.

A controlled experiment beside Formula and FiNER, not a benchmark of its own: it measures
whether specific lessons reach the playbook and are used, which is what aggregation can lose.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from combee.errors import ConfigError
from combee.tasks.base import Sample, Score, Splits
from combee.tasks.scoring import numbers_equal

ANSWER_INSTRUCTIONS = {
    "code": "Reply with the amount only, written the way the records write it.",
    "precondition": "Reply with yes or no only.",
}
"""The kinds answered in text, and how; every other kind is answered with a number."""
NUMBER_INSTRUCTION = "Reply with the number only, without units."

KINDS = ("factor", "unit", "fee", "code", "count", "precondition")

_ONSETS = (
    "b", "br", "d", "dr", "f", "g", "gr", "k", "kl", "m", "n", "p", "pl", "qu", "r", "s", "st",
    "t", "tr", "v", "z",
)  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_CODAS = ("", "n", "r", "x", "l", "th", "sk", "m")


@dataclass(frozen=True)
class Entity:
    """A made-up entity and its rule: ``ask`` makes a (question, answer) from a random source."""

    name: str
    kind: str
    rule: str
    ask: Callable[[random.Random], tuple[str, str]]


def _name(rng: random.Random, taken: set[str]) -> str:
    while True:
        syllables = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(2)]
        name = ("".join(syllables) + rng.choice(_CODAS)).capitalize()
        if name not in taken and len(name) >= 5:
            taken.add(name)
            return name


def _entity(kind: str, name: str, rng: random.Random) -> Entity:
    if kind == "factor":
        factor = rng.choice((3, 4, 6, 7, 8, 9, 12))
        rule = f"The yield of a {name} is its base value multiplied by {factor}."

        def ask(r: random.Random) -> tuple[str, str]:
            base = r.randint(2, 20)
            question = f"A {name} has a base value of {base}. What is its yield?"
            return question, str(base * factor)

    elif kind == "unit":
        size = rng.choice((3, 4, 6, 8, 9, 12))
        unit = name.lower()[:3] + "span"
        rule = f"{name} distances are given in {unit}s; one {unit} is {size} meters."

        def ask(r: random.Random) -> tuple[str, str]:
            count = r.randint(2, 20)
            question = f"A {name} road is {count} {unit}s long. How many meters is that?"
            return question, str(count * size)

    elif kind == "fee":
        fee = rng.randint(3, 19)
        rule = f"A {name} ticket costs its base fare plus a fee of {fee}."

        def ask(r: random.Random) -> tuple[str, str]:
            fare = r.randint(10, 90)
            question = f"A {name} ticket has a base fare of {fare}. What does it cost?"
            return question, str(fare + fee)

    elif kind == "code":
        code = "".join(rng.choice("BCDFGHJKLMNPQRSTVWXZ") for _ in range(3))
        rule = f"{name} records write an amount as the number followed by {code}, with no space."

        def ask(r: random.Random) -> tuple[str, str]:
            amount = r.randint(10, 990)
            question = f"A {name} invoice is for {amount}. How does its record write that amount?"
            return question, f"{amount}{code}"

    elif kind == "count":
        start = rng.choice((1900, 1950, 1960, 1970, 1980))
        rule = (
            f"{name} years are counted from {start}: "
            f"a {name} year is the calendar year minus {start}."
        )

        def ask(r: random.Random) -> tuple[str, str]:
            year = r.randint(start + 5, 2030)
            question = f"Which {name} year is the year {year}?"
            return question, str(year - start)

    else:
        least = rng.randint(3, 9) * 5
        rule = f"A {name} permit is granted only to applicants with at least {least} points."

        def ask(r: random.Random) -> tuple[str, str]:
            points = least + r.choice((-1, 1)) * r.randint(1, 10)
            question = f"An applicant for a {name} permit has {points} points. Is it granted?"
            return question, "yes" if points >= least else "no"

    return Entity(name, kind, rule, ask)


def answer_instruction(kind: str) -> str:
    """What a question of ``kind`` asks for: the form of the answer, never the rule."""
    return ANSWER_INSTRUCTIONS.get(kind, NUMBER_INSTRUCTION)


class RulesTask:
    """``entities`` made-up entities, kinds in turn; per entity ``train_each`` training,
    ``val_each`` validation and ``test_each`` test questions, all drawn from ``seed``.
    ``state_rule``: the feedback states the entity's rule after the verdict (``rules``); False:
    the verdict and the reference answer only (``rules-unstated``)."""

    def __init__(
        self,
        *,
        seed: int = 0,
        entities: int = 16,
        train_each: int = 4,
        val_each: int = 1,
        test_each: int = 2,
        state_rule: bool = True,
    ) -> None:
        for setting, value in (("entities", entities), ("train_each", train_each)):
            if value < 1:
                raise ConfigError(f"must be at least 1 (got {value})", setting=setting)
        self.name = "rules" if state_rule else "rules-unstated"
        self.seed = seed
        self.state_rule = state_rule
        rng = random.Random(seed)
        taken: set[str] = set()
        self.entities = [
            _entity(KINDS[i % len(KINDS)], _name(rng, taken), rng) for i in range(entities)
        ]
        self._counts = {"train": train_each, "val": val_each, "test": test_each}
        self._splits: Splits | None = None

    def load(self) -> Splits:
        if self._splits is None:
            train = self._split("train", set())
            seen = {s.question for s in train}
            val = self._split("val", seen)
            test = self._split("test", seen | {s.question for s in val})
            self._splits = Splits(train=train, val=val, test=test)
        return self._splits

    def _split(self, split: str, avoid: set[str]) -> list[Sample]:
        """The split's questions, none of them one of ``avoid`` (another split's)."""
        rng = random.Random(f"{self.seed}/{split}")
        per_entity: list[list[Sample]] = []
        for index, entity in enumerate(self.entities):
            asked: set[str] = set()
            samples: list[Sample] = []
            while len(samples) < self._counts[split]:
                question, answer = entity.ask(rng)
                question = f"{question}\n\n{answer_instruction(entity.kind)}"
                if question in asked or question in avoid:
                    continue
                asked.add(question)
                samples.append(
                    Sample(
                        id=f"rules-{split}-{index:02d}-{len(samples)}",
                        question=question,
                        answer=answer,
                        meta={"entity": entity.name, "kind": entity.kind, "rule": entity.rule},
                    )
                )
            per_entity.append(samples)
        # Interleaved, so that any prefix of the split (a --train-limit) covers the entities.
        return [s[i] for i in range(self._counts[split]) for s in per_entity if i < len(s)]

    def score(self, prediction: str, sample: Sample) -> Score:
        """Exact: the same number, or the same text after trimming, case and a final period;
        the feedback states the entity's rule when :attr:`state_rule`."""
        given = prediction.strip().rstrip(".").strip()
        if sample.meta.get("kind") in ANSWER_INSTRUCTIONS:
            correct = given.casefold() == sample.answer.casefold()
        else:
            correct = numbers_equal(given, sample.answer)
        verdict = "correct" if correct else f"wrong: expected {sample.answer}, got {given[:80]!r}"
        rule = f" The rule: {sample.meta.get('rule', '')}" if self.state_rule else ""
        return Score(correct, int(correct), 1, f"{verdict}.{rule}")
