"""Progress off a terminal: a line now and then, so slow samples (an agent's episodes on a local
model) show in a log."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

import combee
from combee.progress import ConsoleProgress
from combee.progress import console as progress
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder


def test_off_a_terminal_each_sample_gets_a_line_when_they_are_slow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = io.StringIO()
    watch = ConsoleProgress(Console(file=out, force_terminal=False, width=200))
    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0)
    watch.on_evaluation_start("baseline", 3)
    for _ in range(3):
        watch.on_sample_done()
    watch.close()
    lines = [line for line in out.getvalue().splitlines() if line]
    assert [line.split(" (")[0] for line in lines] == [
        "baseline: 1/3 done", "baseline: 2/3 done", "baseline: 3/3 done",
    ]  # fmt: skip


def test_fast_samples_are_not_logged_one_by_one() -> None:
    out = io.StringIO()
    watch = ConsoleProgress(Console(file=out, force_terminal=False, width=200))
    watch.on_evaluation_start("test", 100)
    for _ in range(100):
        watch.on_sample_done()
    watch.close()
    assert "done" not in out.getvalue()


def test_a_validation_counts_its_own_samples_and_training_goes_on_from_where_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = io.StringIO()
    watch = ConsoleProgress(Console(file=out, force_terminal=False, width=200))
    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0)
    with serve_in_thread(ace_responder) as server:
        combee.train(
            "formula", strategy="naive", batch_size=2, train_limit=4, val_limit=3, test_limit=1,
            val_every=1, llm=combee.llm.Endpoint("sim", base_url=server.base_url),
            observers=[watch],
        )  # fmt: skip
    watch.close()
    shown = out.getvalue().splitlines()
    counted = [line.split(" (")[0] for line in shown if " done (" in line]
    validate = ["validate: 1/3 done", "validate: 2/3 done", "validate: 3/3 done"]
    assert counted == [
        "train: 1/4 done", "train: 2/4 done", *validate,
        "train: 3/4 done", "train: 4/4 done", *validate,
        "test: 1/1 done",
    ]  # fmt: skip
    assert "validate: accuracy" not in out.getvalue()  # the iteration's line has it
    # The test after training is no validation: its result has a line of its own.
    tested = [line.split(" (")[0] for line in shown if line.startswith("test: ")]
    assert len(tested) == 2 and tested[0] == "test: 1/1 done"
    assert re.fullmatch(r"test: accuracy \d\.\d{3} on 1 samples", tested[1])
    assert out.getvalue().count("  val ") == 2
