"""A task made from the user's own samples and scoring function, in memory."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from combee.errors import ConfigError
from combee.tasks.base import Sample, Score, Splits

UserScorer = Callable[[str, Sample], "Score | bool | float"]
"""``(prediction, sample)`` to a :class:`Score`, a bool (correct or not) or a float in [0, 1]
(1.0 counts as correct)."""


def as_score(value: Score | bool | float) -> Score:
    """A user scorer's return value as a :class:`Score`."""
    if isinstance(value, Score):
        return value
    if isinstance(value, bool):
        return Score(value, int(value), 1)
    if isinstance(value, int | float) and math.isfinite(value) and 0.0 <= value <= 1.0:
        # Scale to a whole-number fraction so accuracy sums stay exact for 0/1 scores.
        matched = round(float(value) * 1000)
        return Score(value >= 1.0, matched, 1000)
    raise ConfigError(
        f"must return a Score, a bool or a number in [0, 1] (it returned {value!r})",
        setting="score",
    )


@dataclass
class SampleTask:
    """A :class:`combee.tasks.base.Task` over lists of :class:`Sample` and a scoring function.

    ``scorer(prediction, sample)`` may return a :class:`Score`, a bool or a number in [0, 1].
    """

    name: str
    train: Sequence[Sample]
    scorer: UserScorer
    val: Sequence[Sample] = field(default_factory=list)
    test: Sequence[Sample] = field(default_factory=list)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for split in (self.train, self.val, self.test):
            for sample in split:
                if not isinstance(sample, Sample):
                    raise ConfigError(
                        f"of task {self.name!r} must hold Sample objects, not "
                        f"{type(sample).__name__}",
                        setting="samples",
                    )
                if sample.id in seen:
                    raise ConfigError(
                        f"of task {self.name!r} repeat the id {sample.id!r}; ids must be unique",
                        setting="samples",
                    )
                seen.add(sample.id)

    def load(self) -> Splits:
        return Splits(list(self.train), list(self.val), list(self.test))

    def score(self, prediction: str, sample: Sample) -> Score:
        return as_score(self.scorer(prediction, sample))
