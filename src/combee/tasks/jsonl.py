"""JSON Lines reading (user files and the bundled data) and the generic JSONL task."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from combee.errors import ConfigError, DatasetError
from combee.files import read_text
from combee.tasks.base import Sample, Score, Splits
from combee.tasks.scoring import SCORER_NAMES, Scorer, get_scorer

Record = dict[str, Any]


def parse_jsonl(text: str, source: str) -> list[tuple[int, Record]]:
    """``(1-based line number, object)`` for every non-blank line; DatasetError on a bad line."""
    records: list[tuple[int, Record]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            problem = f"not valid JSON ({exc.msg} at column {exc.colno})"
            raise DatasetError(source, number, problem) from None
        except RecursionError:
            raise DatasetError(source, number, "nests arrays or objects too deeply") from None
        except ValueError as exc:  # a number too long to convert, or NaN / Infinity
            problem = str(exc)
            if "integer string conversion" in problem:
                problem = "holds a number with more than 4,300 digits; write it as a string"
            raise DatasetError(source, number, f"not usable JSON ({problem})") from None
        if not isinstance(value, dict):
            raise DatasetError(
                source, number, f"expected a JSON object, got {type(value).__name__}"
            )
        records.append((number, value))
    return records


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; write the value as a string or a number")


def read_jsonl_file(path: Path) -> list[tuple[int, Record]]:
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise DatasetError(str(path), None, "file not found; check the dataset path") from None
    except IsADirectoryError:
        raise DatasetError(str(path), None, "is a directory; give a .jsonl file") from None
    except UnicodeDecodeError as exc:
        raise DatasetError(str(path), None, f"not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise DatasetError(str(path), None, f"cannot be read ({exc.strerror})") from None
    return parse_jsonl(text, str(path))


def read_bundled(folder: str, filename: str) -> list[tuple[int, Record]]:
    """Records of a data file shipped inside the package (works from an installed wheel)."""
    resource = resources.files("combee.tasks") / "data" / folder / filename
    return parse_jsonl(
        resource.read_text(encoding="utf-8"), f"combee/tasks/data/{folder}/{filename}"
    )


def require_text(record: Record, key: str, source: str, line: int) -> str:
    """``record[key]`` as a string; DatasetError if it is missing or not a string."""
    if key not in record:
        raise DatasetError(source, line, f'missing required field "{key}"')
    value = record[key]
    if not isinstance(value, str):
        raise DatasetError(
            source, line, f'field "{key}" must be a string, got {type(value).__name__}'
        )
    return value


def _answer_text(record: Record, source: str, line: int) -> str:
    if "answer" not in record:
        raise DatasetError(source, line, 'missing required field "answer"')
    value = record["answer"]
    # bool is an int subclass; true/false as an answer is almost surely a mistake in the file.
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise DatasetError(
        source, line, f'field "answer" must be a string or a number, got {type(value).__name__}'
    )


def _sample_id(record: Record, default: str, source: str, line: int) -> str:
    if "id" not in record or record["id"] is None:
        return default
    value = record["id"]
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise DatasetError(source, line, 'field "id" must be a non-empty string or an integer')


def load_samples(path: Path, role: str) -> list[Sample]:
    """Samples of one user JSONL file; ids default to ``<role>-<line number>``."""
    source = str(path)
    samples: list[Sample] = []
    seen: dict[str, int] = {}
    for line, record in read_jsonl_file(path):
        question = require_text(record, "question", source, line)
        answer = _answer_text(record, source, line)
        context = require_text(record, "context", source, line) if "context" in record else ""
        sample_id = _sample_id(record, f"{role}-{line:05d}", source, line)
        if sample_id in seen:
            raise DatasetError(
                source, line, f'id "{sample_id}" already used on line {seen[sample_id]}'
            )
        seen[sample_id] = line
        samples.append(
            Sample(
                id=sample_id,
                question=question,
                answer=answer,
                context=context,
                meta={"source": source, "line": line},
            )
        )
    if not samples:
        raise DatasetError(source, None, "contains no samples (every line is blank)")
    return samples


def seeded_cut(
    items: Sequence[Sample], fraction: float, seed: int
) -> tuple[list[Sample], list[Sample]]:
    """Split into ``(kept, cut)``: about ``fraction`` of the items, chosen by a seeded shuffle, are
    cut. Both parts keep the input order; at least one item is always kept."""
    count = min(round(len(items) * fraction), len(items) - 1)
    if count <= 0:
        return list(items), []
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    chosen = set(order[:count])
    kept = [s for i, s in enumerate(items) if i not in chosen]
    cut = [s for i, s in enumerate(items) if i in chosen]
    return kept, cut


def _check_unique_ids(parts: Sequence[Sequence[Sample]]) -> None:
    first_seen: dict[str, Sample] = {}
    for part in parts:
        for sample in part:
            earlier = first_seen.setdefault(sample.id, sample)
            if earlier is not sample:
                raise DatasetError(
                    str(sample.meta["source"]),
                    int(sample.meta["line"]),
                    f'id "{sample.id}" is also used in {earlier.meta["source"]} '
                    f"line {earlier.meta['line']}; ids must be unique across files",
                )


def _check_fraction(name: str, value: float) -> None:
    if not 0.0 <= value < 1.0:
        raise ConfigError(f"{name} must be in [0, 1), got {value}")


class JsonlTask:
    """A task from user JSON Lines files: ``{"question", "answer", "context"?, "id"?}`` per line.

    Missing validation/test files are cut from the training file with a seeded shuffle
    (test first, then validation, each a fraction of the training file's rows).
    """

    def __init__(
        self,
        train_path: str | Path,
        val_path: str | Path | None = None,
        test_path: str | Path | None = None,
        scorer: str = "exact",
        val_fraction: float = 0.2,
        test_fraction: float = 0.2,
        seed: int = 0,
        tolerance: float = 0.0,
    ) -> None:
        if scorer not in SCORER_NAMES:
            raise ConfigError(
                f"must be one of {', '.join(SCORER_NAMES)} for the jsonl task (got {scorer!r})",
                setting="scorer",
            )
        _check_fraction("val_fraction", val_fraction)
        _check_fraction("test_fraction", test_fraction)
        if val_path is None and test_path is None and val_fraction + test_fraction >= 1.0:
            raise ConfigError(
                f"val_fraction + test_fraction must be below 1, got {val_fraction + test_fraction}"
            )
        self.name = "jsonl"
        self.train_path = Path(train_path)
        self.val_path = Path(val_path) if val_path is not None else None
        self.test_path = Path(test_path) if test_path is not None else None
        self.scorer_name = scorer
        self.val_fraction = val_fraction
        self.test_fraction = test_fraction
        self.seed = seed
        self._scorer: Scorer = get_scorer(scorer, tolerance=tolerance)
        self._splits: Splits | None = None

    def load(self) -> Splits:
        if self._splits is None:
            self._splits = self._read()
        return self._splits

    def _read(self) -> Splits:
        pool = load_samples(self.train_path, "train")
        total = len(pool)
        if self.test_path is not None:
            test = load_samples(self.test_path, "test")
        else:
            pool, test = seeded_cut(pool, self.test_fraction, self.seed)
        if self.val_path is not None:
            val = load_samples(self.val_path, "val")
        else:
            # Fraction of the whole training file, not of what is left after the test cut.
            remaining = self.val_fraction * total / len(pool)
            pool, val = seeded_cut(pool, min(remaining, 1.0), self.seed + 1)
        _check_unique_ids([pool, val, test])
        return Splits(train=pool, val=val, test=test)

    def score(self, prediction: str, sample: Sample) -> Score:
        return self._scorer(prediction, sample.answer)
