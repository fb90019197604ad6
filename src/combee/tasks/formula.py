"""Formula: numerical reasoning with a given financial formula (bundled data, ACE's splits)."""

from __future__ import annotations

from combee.tasks.base import Sample, Score, Splits
from combee.tasks.jsonl import read_bundled, require_text
from combee.tasks.scoring import numeric_score

FILES = {
    "train": "formula_train_subset_500.jsonl",
    "val": "formula_val_subset_300.jsonl",
    "test": "formula_test.jsonl",
}

ANSWER_INSTRUCTION = (
    "Reply with a single plain floating point number rounded to the nearest hundredth. "
    "Do any unit conversion first (for example, 5 million is written 5000000.0) and leave out "
    "units, currency symbols, percent signs and thousands separators."
)

_MARKER = "Question:"
_ANSWER_CUE = "Answer:"
_OPENING_QUOTES = "\"'“‘"
_CLOSING_QUOTES = "\"'”’"


def extract_question(context: str) -> tuple[str, str] | None:
    """Split a formula row's context into ``(formula text, question)``.

    The question follows ``Question:``, usually quoted (straight or curly quotes, not always
    matching), and is followed by ``. Answer:``. None when there is no ``Question:`` marker.
    """
    at = context.rfind(_MARKER)
    if at < 0:
        return None
    formula_text = context[:at].strip()
    question = context[at + len(_MARKER) :].strip()
    if question.endswith(_ANSWER_CUE):
        question = question[: -len(_ANSWER_CUE)].rstrip()
        # The dot that separates the question from "Answer:" belongs to neither.
        if question.endswith("."):
            question = question[:-1].rstrip()
    if question and question[0] in _OPENING_QUOTES:
        question = question[1:]
        if question and question[-1] in _CLOSING_QUOTES:
            question = question[:-1]
    question = question.strip()
    if not question:
        return None
    return formula_text, question


def formula_sample(split: str, index: int, context: str, target: str) -> Sample:
    """Sample number ``index`` (1-based) of ``split`` built from one raw row."""
    parts = extract_question(context)
    if parts is None:
        formula_text, question = "", context.strip()
    else:
        formula_text, question = parts
    return Sample(
        id=f"formula-{split}-{index:05d}",
        question=f"{question}\n\n{ANSWER_INSTRUCTION}",
        answer=target.strip(),
        context=formula_text,
        meta={"split": split, "row": index},
    )


def _load_split(split: str) -> list[Sample]:
    filename = FILES[split]
    source = f"combee/tasks/data/formula/{filename}"
    samples = []
    for index, (line, record) in enumerate(read_bundled("formula", filename), start=1):
        context = require_text(record, "context", source, line)
        target = require_text(record, "target", source, line)
        samples.append(formula_sample(split, index, context, target))
    return samples


class FormulaTask:
    """train 500 / val 300 / test 200; scored by exact float equality after removing commas."""

    def __init__(self) -> None:
        self.name = "formula"
        self._splits: Splits | None = None

    def load(self) -> Splits:
        if self._splits is None:
            self._splits = Splits(
                train=_load_split("train"), val=_load_split("val"), test=_load_split("test")
            )
        return self._splits

    def score(self, prediction: str, sample: Sample) -> Score:
        return numeric_score(prediction, sample.answer)
