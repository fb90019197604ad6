"""Near-duplicate lessons fold into the bullet they repeat (ACE's grow-and-refine)."""

from __future__ import annotations

import itertools
import json
import math
import zlib
from collections.abc import Sequence
from pathlib import Path

import pytest

import combee
from combee.bench.lessons import make_lessons
from combee.errors import ConfigError
from combee.llm import connect
from combee.methods.ace import Playbook
from combee.methods.ace.dedup import (
    NearDuplicates,
    default_near_duplicates,
    keeps_more,
    specifics,
)
from combee.methods.ace.operations import apply_operations
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.base import Sample


class WordEmbedder:
    """Bag-of-words vectors: texts sharing most words are close (pure logic, no model)."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        vectors = []
        for text in texts:
            vector = [0.0] * 256
            for word in set(text.casefold().split()):
                vector[zlib.crc32(word.encode()) % 256] = 1.0
            vectors.append(vector)
        return vectors


def add(content: str, section: str = "strategies") -> dict[str, str]:
    return {"type": "ADD", "section": section, "content": content}


def test_a_longer_repeat_updates_the_bullet_and_a_shorter_one_is_dropped() -> None:
    near = NearDuplicates(WordEmbedder(), threshold=0.8)
    start = apply_operations(
        Playbook(), [add("round the ratio to two decimals")], token_budget=None
    ).playbook
    (bullet,) = start.bullets
    ops = [
        add("always round the ratio to two decimals"),  # longer: it replaces the text
        add("round the ratio to two decimals"),  # the old text again, shorter: dropped
        add("dates in iso format", "mistakes"),  # another lesson: a new bullet
    ]
    result = apply_operations(start, ops, token_budget=None, near_duplicates=near)

    assert result.near_duplicates == 2
    assert result.dropped == {"near_duplicate": 1}
    assert result.repaired == {"near_duplicate": 1}
    assert [op["type"] for op in result.applied] == ["UPDATE", "ADD"]
    contents = {b.id: b.content for b in result.playbook.bullets}
    assert contents[bullet.id] == "always round the ratio to two decimals"
    assert len(contents) == 2


def test_without_a_detector_paraphrases_are_separate_bullets() -> None:
    ops = [add("round the ratio to two decimals"), add("always round the ratio to two decimals")]
    result = apply_operations(Playbook(), ops, token_budget=None)
    assert len(result.playbook) == 2 and result.near_duplicates == 0


def test_each_text_is_embedded_once() -> None:
    embedder = WordEmbedder()
    near = NearDuplicates(embedder, threshold=0.99)
    ops = [add(f"{word} ratio") for word in ("round", "two", "dates", "iso")]
    apply_operations(Playbook(), ops, token_budget=None, near_duplicates=near)
    embedded = list(itertools.chain.from_iterable(embedder.calls))
    assert sorted(embedded) == sorted(set(embedded))


@pytest.mark.parametrize("threshold", [0.0, -1, 1.5, math.nan, "high"])
def test_a_threshold_outside_zero_to_one_is_a_setting_error(threshold: object) -> None:
    with pytest.raises(ConfigError) as caught:
        NearDuplicates(WordEmbedder(), threshold=threshold)  # type: ignore[arg-type]
    assert caught.value.setting == "dedup_threshold"


def test_the_environment_switch_turns_the_default_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMBEE_DEDUP", "0")
    assert default_near_duplicates() is None
    assert default_near_duplicates(False) is None


@pytest.fixture(scope="module")
def real() -> NearDuplicates:
    pytest.importorskip("sentence_transformers", reason="the embed extra is not installed")
    near = default_near_duplicates(True)
    assert near is not None
    return near


def test_with_all_minilm_paraphrases_fold_and_distinct_rules_stay(real: NearDuplicates) -> None:
    rule = "Annualise daily volatility by multiplying it by the square root of 252."
    paraphrase = "To annualise a daily volatility, multiply it by the square root of 252."
    found = real.closest(paraphrase, ["Dates are written as YYYY-MM-DD.", rule])
    assert found is not None and found[0] == 1

    # Sixty-four distinct rules, many from one template: every one keeps its own bullet.
    lessons = make_lessons(64, seed=3)
    result = apply_operations(
        Playbook(),
        [add(lesson.rule) for lesson in lessons],
        token_budget=None,
        near_duplicates=real,
    )
    assert result.near_duplicates == 0, result.dropped
    assert len(result.playbook) == 64


def test_specifics_tell_two_templated_rules_apart() -> None:
    first = "the Vouthul convention: pressures in kilopascals are reported with 3 figures"
    second = "the Hoquoth convention: pressures in kilopascals are reported with 3 figures"
    assert specifics(first) == {"vouthul", "3"}
    assert specifics("pass dry_run=true and dates as DD.MM.YYYY (UTC+2)") >= {
        "dry_run",
        "dd.mm.yyyy",
        "utc+2",
    }
    near = NearDuplicates(WordEmbedder(), threshold=0.5)
    assert near.closest(second, [first]) is None  # same words, another name: two lessons
    assert near.closest("pressures in kilopascals are reported with 3 figures", [first])
    assert keeps_more(first, "pressures in kilopascals are reported with figures")


def test_a_run_with_dedup_counts_folded_lessons_in_its_metrics(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="the embed extra is not installed")
    samples = [Sample(f"s{i}", f"Use formula F{i % 3} to answer: case {i}?", "1") for i in range(6)]
    task = combee.SampleTask("t", train=samples, test=[], scorer=lambda p, s: 0.0)
    with serve_in_thread(ace_responder) as server:
        result = combee.train(
            task, strategy="naive", batch_size=3, llm=connect("sim", base_url=server.base_url),
            dedup=True, run_dir=tmp_path / "run",
        )  # fmt: skip
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert len(rows) == 2 and all(isinstance(row["near_duplicates"], int) for row in rows)
    totals = json.loads((tmp_path / "run" / "final_results.json").read_text())
    assert totals["near_duplicates_total"] == sum(row["near_duplicates"] for row in rows)
    assert result.summary["playbook_bullets"] >= 1


def test_only_lessons_that_could_fold_are_embedded_and_in_one_batch() -> None:
    embedder = WordEmbedder()
    near = NearDuplicates(embedder, threshold=0.8)
    start = apply_operations(
        Playbook(),
        [add("the Vouthul rate is 3.5"), add("the Hoquoth rate is 2.1")],
        token_budget=None,
    ).playbook
    ops = [
        add("the Quenby rate is 7.25"),  # names what no bullet names: never compared
        add("the Vouthul rate is 3.5 percent"),  # compared with the Vouthul bullet only
    ]
    result = apply_operations(start, ops, token_budget=None, near_duplicates=near)
    assert embedder.calls == [["the Vouthul rate is 3.5 percent", "the Vouthul rate is 3.5"]]
    assert result.near_duplicates == 1 and len(result.playbook) == 3
    # A lesson that names no specific is compared with every bullet, all embedded at once.
    apply_operations(
        result.playbook, [add("always state the rate")], token_budget=None, near_duplicates=near
    )
    assert embedder.calls[1] == [
        "always state the rate",
        "the Hoquoth rate is 2.1",
        "the Quenby rate is 7.25",
    ]


def test_an_update_that_restates_its_bullet_is_dropped_not_applied() -> None:
    start = apply_operations(
        Playbook(), [add("Always round the ratio to two decimals.")], token_budget=None
    ).playbook
    (bullet,) = start.bullets
    near = NearDuplicates(WordEmbedder(), threshold=0.8)
    ops = [
        {
            "type": "UPDATE",
            "bullet_id": bullet.id,
            "content": " Always round the ratio to two decimals.",
        },
        {"type": "UPDATE", "bullet_id": bullet.id, "content": "Round the ratio to two decimals."},
    ]
    result = apply_operations(start, ops, token_budget=None, near_duplicates=near)
    assert result.applied == []
    assert result.dropped == {"restated": 2}
    assert result.playbook.bullets == start.bullets
    # Without the embedder, only the same text is a restatement; a sharper text still applies.
    sharper = "Always round the ratio to two decimals, half up: 0.125 becomes 0.13."
    ops = [*ops[:1], {"type": "UPDATE", "bullet_id": bullet.id, "content": sharper}]
    result = apply_operations(start, ops, token_budget=None)
    assert result.dropped == {"restated": 1}
    assert [op["content"] for op in result.applied] == [sharper]
