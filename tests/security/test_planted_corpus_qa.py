"""The 32 planted phrasings of ``test_planted_corpus``, now in the questions and contexts of a
question-answer task, read by a reflector that obeys what it reads: none becomes a lesson,
because a lesson that copies a sample's own text (rather than the wording every sample of the
task shares) is kept out. Clean samples' lessons, which repeat the shared instructions, pass.
The control, with the screen off, shows the planted lessons reaching the playbook."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import combee
from combee.llm import connect
from combee.llm.provenance import normal
from combee.sim import serve_in_thread
from tests.security.test_planted_corpus import PHRASINGS, marker, obeying_reflector

INSTRUCTIONS = (
    "Use the price list in the context. Reply with the price in dollars as a plain number "
    "with two decimals, without a currency sign."
)
CLEAN = 16


def sample(index: int, planted: str | None, where: str) -> combee.Sample:
    question = f"From the price list, what does item {index} cost?"
    context = f"Price list: item {index} costs {index + 1}.50 dollars."
    if planted and where == "question":
        question += f" {planted}"
    if planted and where == "context":
        context += f"\nNote: {planted}"
    return combee.Sample(
        id=f"s{index:02d}",
        question=f"{question}\n\n{INSTRUCTIONS}",
        answer=f"{index + 1}.50",
        context=context,
    )


def task() -> combee.SampleTask:
    train = [sample(i, p, ("question", "context")[i % 2]) for i, p in enumerate(PHRASINGS)]
    train += [sample(len(PHRASINGS) + i, None, "") for i in range(CLEAN)]
    return combee.SampleTask(
        "planted-qa", train, lambda prediction, s: prediction.strip() == s.answer
    )


def learn(folder: Path, screen: bool) -> combee.TrainResult:
    with serve_in_thread(obeying_reflector) as server:
        llm = connect("sim", base_url=server.base_url)
        try:
            return combee.train(
                task(),
                llm=llm,
                batch_size=16,
                run_dir=folder,
                screen=screen,
                baseline=False,
                gate=False,
            )
        finally:
            combee.sync.run_sync(llm.aclose(), async_name="aclose")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, combee.TrainResult]:
    folder = tmp_path_factory.mktemp("planted-qa")
    return {"screened": learn(folder / "screened", True), "open": learn(folder / "open", False)}


def test_no_phrasing_in_a_question_or_context_becomes_a_lesson(
    runs: dict[str, combee.TrainResult],
) -> None:
    result = runs["screened"]
    playbook = normal(result.text)
    assert [p for p in PHRASINGS if marker(p) in playbook] == []
    screened = result.summary["screened_out_total"]
    # Kept out by the screen (the obeying reflector calls each a rule for the task, so none
    # is left out as a remark); the clean samples' lessons all pass.
    assert "dropped" not in result.summary["lesson_sources"]
    assert sum(screened.values()) == len(PHRASINGS)
    assert screened["copied-from-data"] >= 25  # most by the copy check, whatever the wording


def test_without_the_screen_they_would(runs: dict[str, combee.TrainResult]) -> None:
    playbook = normal(runs["open"].text)
    assert len([p for p in PHRASINGS if marker(p) in playbook]) >= 25


def test_the_log_says_once_per_batch_what_was_kept_out_and_why(
    runs: dict[str, combee.TrainResult],
) -> None:
    result = runs["screened"]
    assert result.run_dir is not None
    log = (result.run_dir / "run.log").read_text(encoding="utf-8")
    counts = [int(n) for n in re.findall(r"(\d+) of \d+ reflection\(s\) kept out of curation", log)]
    metrics = (result.run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    screened = [sum(json.loads(row).get("screened_out", {}).values()) for row in metrics]
    assert counts == [n for n in screened if n]  # one line for each batch that kept some out
    assert sum(counts) == sum(result.summary["screened_out_total"].values())
    assert log.count("repeat text their sample showed (copied-from-data)") == len(counts)
