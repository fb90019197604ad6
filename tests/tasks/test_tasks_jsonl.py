"""Generic JSONL task: loading, seeded cuts, line-numbered errors, scorers, the registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from combee.errors import ConfigError, DatasetError
from combee.tasks import TASK_NAMES, FinerTask, FormulaTask, JsonlTask, get_task
from combee.tasks.scoring import contains_score, exact_score, get_scorer, numeric_score


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _rows(n: int) -> list[object]:
    return [{"question": f"q{i}", "answer": str(i)} for i in range(n)]


def test_cuts_val_and_test_from_train(tmp_path: Path) -> None:
    splits = JsonlTask(_write(tmp_path / "d.jsonl", _rows(10))).load()
    assert (len(splits.train), len(splits.val), len(splits.test)) == (6, 2, 2)
    ids = [s.id for part in (splits.train, splits.val, splits.test) for s in part]
    assert sorted(ids) == sorted(f"train-{i:05d}" for i in range(1, 11))
    assert splits.train[0].meta["line"] < splits.train[1].meta["line"]  # file order kept


def test_cut_is_deterministic_per_seed(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", _rows(50))
    first = JsonlTask(path, seed=5).load()
    again = JsonlTask(path, seed=5).load()
    other = JsonlTask(path, seed=6).load()
    assert [s.id for s in first.val] == [s.id for s in again.val]
    assert [s.id for s in first.test] == [s.id for s in again.test]
    assert [s.id for s in first.val] != [s.id for s in other.val]
    assert (len(first.train), len(first.val), len(first.test)) == (30, 10, 10)


def test_given_files_are_used_as_is(tmp_path: Path) -> None:
    train = _write(tmp_path / "train.jsonl", _rows(5))
    val = _write(tmp_path / "val.jsonl", _rows(3))
    test = _write(tmp_path / "test.jsonl", _rows(2))
    splits = JsonlTask(train, val, test).load()
    assert (len(splits.train), len(splits.val), len(splits.test)) == (5, 3, 2)
    assert splits.val[0].id == "val-00001"

    only_val = JsonlTask(train, val_path=val, test_fraction=0.4).load()
    assert (len(only_val.train), len(only_val.val), len(only_val.test)) == (3, 3, 2)


def test_fields_ids_numbers_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"question": "How much?", "answer": 42, "context": "ctx", "id": "a"}\n'
        "\n"
        '{"question": "Pi?", "answer": 3.14, "id": 7}\n'
        "   \n"
        '{"question": "Capital?", "answer": "Paris"}\n',
        encoding="utf-8",
    )
    task = JsonlTask(path, scorer="numeric", val_fraction=0, test_fraction=0)
    samples = task.load().train
    assert [(s.id, s.answer, s.context) for s in samples] == [
        ("a", "42", "ctx"),
        ("7", "3.14", ""),
        ("train-00005", "Paris", ""),
    ]
    assert task.score("42.0", samples[0]).correct
    assert task.score("paris", samples[2]).correct is False


@pytest.mark.parametrize(
    ("content", "line", "problem"),
    [
        ('{"question": "a", "answer": "b"}\n\n{"question": "c", "answer": \n', 3, "not valid JSON"),
        ('{"question": "a", "answer": "b"}\n["question", "answer"]\n', 2, "expected a JSON object"),
        ('{"answer": "b"}\n', 1, 'missing required field "question"'),
        ('{"question": "a"}\n', 1, 'missing required field "answer"'),
        ('{"question": 5, "answer": "b"}\n', 1, 'field "question" must be a string, got int'),
        ('{"question": "a", "answer": ["b"]}\n', 1, 'field "answer" must be a string or a number'),
        ('{"question": "a", "answer": true}\n', 1, 'field "answer" must be a string or a number'),
        ('{"question": "a", "answer": "b", "context": null}\n', 1, 'field "context" must be'),
        ('{"question": "a", "answer": "b", "id": 1.5}\n', 1, 'field "id" must be'),
        (
            '{"question": "a", "answer": "b", "id": "x"}\n'
            '{"question": "c", "answer": "d", "id": "x"}',
            2,
            'id "x" already used on line 1',
        ),
    ],
)
def test_bad_lines_name_file_and_line(
    tmp_path: Path, content: str, line: int, problem: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        JsonlTask(path).load()
    assert caught.value.path == str(path)
    assert caught.value.line == line
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_missing_empty_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="file not found") as caught:
        JsonlTask(tmp_path / "nope.jsonl").load()
    assert caught.value.line is None
    assert str(tmp_path / "nope.jsonl") in str(caught.value)

    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(DatasetError, match="no samples"):
        JsonlTask(blank).load()

    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"question": "caf\xe9", "answer": "x"}\n')
    with pytest.raises(DatasetError, match="not UTF-8"):
        JsonlTask(latin).load()

    with pytest.raises(DatasetError, match="directory"):
        JsonlTask(tmp_path).load()


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    train = _write(tmp_path / "train.jsonl", [{"question": "a", "answer": "b", "id": "same"}])
    val = _write(tmp_path / "val.jsonl", [{"question": "c", "answer": "d", "id": "same"}])
    with pytest.raises(DatasetError, match="unique across files") as caught:
        JsonlTask(train, val_path=val, test_fraction=0).load()
    assert caught.value.path == str(val)
    assert caught.value.line == 1


def test_bad_settings_are_config_errors(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    with pytest.raises(ConfigError, match="exact, numeric, contains"):
        JsonlTask(path, scorer="fuzzy")
    with pytest.raises(ConfigError, match="val_fraction"):
        JsonlTask(path, val_fraction=1.5)
    with pytest.raises(ConfigError, match="below 1"):
        JsonlTask(path, val_fraction=0.5, test_fraction=0.5)
    with pytest.raises(ConfigError, match="tolerance"):
        get_scorer("numeric", tolerance=-1)


def test_scorers() -> None:
    assert exact_score("  PARIS ", "paris").correct
    assert not exact_score("Paris, France", "paris").correct
    assert contains_score("The answer is Paris.", " paris ").correct
    assert not contains_score("London", "paris").correct
    assert numeric_score("1,000", "1000.0").correct
    assert not numeric_score("1000.4", "1000").correct
    assert numeric_score("1000.4", "1000", tolerance=0.5).correct
    assert get_scorer("numeric", tolerance=0.5)("1000.4", "1000").correct
    assert numeric_score("approx. five", "approx. five").correct
    score = exact_score("b", "a")
    assert (score.correct, score.matched, score.total, score.feedback) == (
        False,
        0,
        1,
        "expected a, got b",
    )


def test_registry(tmp_path: Path) -> None:
    assert TASK_NAMES == ("formula", "finer", "jsonl", "rules", "rules-unstated")
    assert isinstance(get_task("formula"), FormulaTask)
    finer = get_task("finer", seed=3)
    assert isinstance(finer, FinerTask)
    assert finer.seed == 3

    path = _write(tmp_path / "d.jsonl", _rows(10))
    by_prefix = get_task(f"jsonl:{path}", scorer="contains", seed=2)
    by_data = get_task("jsonl", data=str(path), scorer="contains", seed=2)
    assert isinstance(by_prefix, JsonlTask) and isinstance(by_data, JsonlTask)
    assert [s.id for s in by_prefix.load().val] == [s.id for s in by_data.load().val]
    sample = by_prefix.load().train[0]
    assert by_prefix.score(f"it is {sample.answer}!", sample).correct
    assert not by_prefix.score("nothing", sample).correct

    with pytest.raises(ConfigError, match="formula, finer, jsonl"):
        get_task("gsm8k")
    with pytest.raises(ConfigError, match="needs a data file"):
        get_task("jsonl")
    with pytest.raises(ConfigError, match="bundled data"):
        get_task("formula", data=str(path))
    with pytest.raises(ConfigError, match="scorer must be one of exact, numeric, contains"):
        get_task("jsonl", data=str(path), scorer="fuzzy")


def test_loading_is_lazy_and_cached(tmp_path: Path) -> None:
    path = tmp_path / "later.jsonl"
    task = get_task("jsonl", data=str(path))  # no file yet: nothing is read here
    _write(path, _rows(10))
    first = task.load()
    path.unlink()
    assert task.load() is first


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"question": "q", "answer": ' + "9" * 5000 + "}", "more than 4,300 digits"),
        ('{"question": "q", "answer": "a", "x": ' + "[" * 100000 + "]" * 100000 + "}",
         "nests arrays or objects too deeply"),
        ('{"question": "q", "answer": NaN}', "NaN is not a JSON number"),
    ],
)  # fmt: skip
def test_json_that_python_cannot_hold_is_a_dataset_error(
    tmp_path: Path, line: str, problem: str
) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(DatasetError, match=problem) as caught:
        JsonlTask(path).load()
    assert caught.value.line == 1
