"""FiNER-139: XBRL tagging of numeric entities, four questions per row (bundled data).

ACE's FiNER training file is not bundled, so the learning pool and the validation set are both cut
from ACE's 500-row validation file. Many rows quote the same sentence; a row that shares a sentence
with a training row would leak its answer, so rows are grouped by shared sentences (union-find)
and whole groups go to one side.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from combee.errors import ConfigError
from combee.tasks.base import Sample, Score, Splits
from combee.tasks.jsonl import read_bundled, require_text
from combee.tasks.scoring import tag_list_score

POOL_FILE = "finer_val_batched_500_samples.jsonl"
TEST_FILE = "finer_test_subset_006_seed42.jsonl"

_QUESTION_LINE = re.compile(
    r'^\s*(\d+)\.\s*What is best tag for entity "(.*?)" in sentence: "(.*)\?"\s*$', re.MULTILINE
)
_ACE_INSTRUCTION = "Answer the following"


@dataclass(frozen=True)
class FinerQuestion:
    number: int
    entity: str
    sentence: str
    text: str


@dataclass(frozen=True)
class FinerRow:
    options: str
    questions: tuple[FinerQuestion, ...]


def parse_row(context: str) -> FinerRow:
    """The tag option list and the numbered questions of one row's context."""
    found = list(_QUESTION_LINE.finditer(context))
    questions = tuple(
        FinerQuestion(int(m.group(1)), m.group(2), m.group(3), m.group(0).strip()) for m in found
    )
    end = found[0].start() if found else len(context)
    instruction_at = context.find(_ACE_INSTRUCTION, 0, end)
    if instruction_at >= 0:
        end = instruction_at
    return FinerRow(options=context[:end].strip(), questions=questions)


def answer_instruction(count: int) -> str:
    return (
        f"Give exactly {count} US GAAP tags taken from the list, separated by commas, in the order "
        f"of the questions (the first tag answers question 1). Write only the tags, nothing else."
    )


def finer_sample(sample_id: str, context: str, target: str) -> Sample:
    row = parse_row(context)
    count = len(target.split(","))
    if row.questions:
        question_text = "\n".join(q.text for q in row.questions)
        task_context = row.options
    else:
        question_text, task_context = context.strip(), ""
    return Sample(
        id=sample_id,
        question=f"{question_text}\n\n{answer_instruction(count)}",
        answer=target.strip(),
        context=task_context,
        meta={
            "entities": tuple(q.entity for q in row.questions),
            "sentences": tuple(q.sentence for q in row.questions),
        },
    )


def _load(filename: str, prefix: str) -> list[Sample]:
    source = f"combee/tasks/data/finer/{filename}"
    samples = []
    for index, (line, record) in enumerate(read_bundled("finer", filename), start=1):
        context = require_text(record, "context", source, line)
        target = require_text(record, "target", source, line)
        samples.append(finer_sample(f"{prefix}-{index:05d}", context, target))
    return samples


def sentence_groups(sentences_per_row: Sequence[Sequence[str]]) -> list[list[int]]:
    """Rows joined whenever they share a sentence, transitively; groups ordered by first row."""
    parent = list(range(len(sentences_per_row)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_row: dict[str, int] = {}
    for row, sentences in enumerate(sentences_per_row):
        for sentence in sentences:
            other = first_row.setdefault(sentence, row)
            a, b = root(row), root(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for row in range(len(sentences_per_row)):
        groups.setdefault(root(row), []).append(row)
    return sorted(groups.values(), key=lambda g: g[0])


def grouped_cut(groups: Sequence[Sequence[int]], fraction: float, seed: int) -> set[int]:
    """Rows chosen for the cut: whole groups in seeded random order, adding a group only while
    the cut stays within ``round(fraction * rows)``."""
    rows = sum(len(g) for g in groups)
    target = round(rows * fraction)
    order = list(groups)
    random.Random(seed).shuffle(order)
    chosen: set[int] = set()
    for group in order:
        if len(chosen) + len(group) <= target:
            chosen.update(group)
        if len(chosen) == target:
            break
    return chosen


class FinerTask:
    """Train and validation cut from ACE's FiNER validation file by sentence group; test = 441 rows.

    Sample ids follow the source row: ``finer-dev-00042`` is row 42 of the 500-row file whichever
    side it lands on; ``finer-test-00001`` is row 1 of the test file.
    """

    def __init__(self, val_fraction: float = 0.2, seed: int = 0) -> None:
        if not 0.0 <= val_fraction < 1.0:
            raise ConfigError(f"FiNER val_fraction must be in [0, 1), got {val_fraction}")
        self.name = "finer"
        self.val_fraction = val_fraction
        self.seed = seed
        self._splits: Splits | None = None

    def load(self) -> Splits:
        if self._splits is None:
            pool = _load(POOL_FILE, "finer-dev")
            groups = sentence_groups([s.meta["sentences"] for s in pool])
            val_rows = grouped_cut(groups, self.val_fraction, self.seed)
            self._splits = Splits(
                train=[s for i, s in enumerate(pool) if i not in val_rows],
                val=[s for i, s in enumerate(pool) if i in val_rows],
                test=_load(TEST_FILE, "finer-test"),
            )
        return self._splits

    def score(self, prediction: str, sample: Sample) -> Score:
        return tag_list_score(prediction, sample.answer)
