"""Input that would hang a run or flood the model is refused at the start, in one line: a named
pipe given as the data (no writer: reading it would wait for ever), and a sample larger than
``max_sample_chars`` (sent whole in every call about it), named by file and line. Real files,
the command line, and the scripted server counting the calls that reached it (none)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import combee
from combee.errors import DatasetError
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import run_combee


def _rows(count: int) -> list[dict[str, str]]:
    return [{"question": f"What is 2 + {i}?", "answer": str(2 + i)} for i in range(count)]


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a Unix thing")
def test_a_named_pipe_as_the_data_is_refused_not_waited_on(tmp_path: Path) -> None:
    pipe = tmp_path / "data.jsonl"
    os.mkfifo(pipe)  # no writer: an open() for reading would block for ever
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "train", "--task", "jsonl", "--data", str(pipe), "--model", "sim",
            "--base-url", server.base_url, "--out", str(tmp_path / "run"), timeout=60,
        )  # fmt: skip
        calls = len(server.records)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"error: {pipe}: cannot be read (is a named pipe, not a file" in result.stderr
    assert calls == 0 and not (tmp_path / "run").exists()


def test_a_sample_past_max_sample_chars_is_refused_by_file_and_line(tmp_path: Path) -> None:
    rows = _rows(10)
    rows[3]["question"] = "What is 2 + 2? " + "x" * 4_500_000  # line 4: 4.5 MB
    data = _write(tmp_path / "data.jsonl", rows)
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "train", "--task", "jsonl", "--data", str(data), "--model", "sim",
            "--base-url", server.base_url, "--out", str(tmp_path / "run"),
        )  # fmt: skip
        calls = len(server.records)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    message = " ".join(result.stderr[result.stderr.index("error:") :].split())
    assert f"{data}:4: the sample holds 4,500,016 characters" in message
    assert "more than --max-sample-chars 4000000 allows" in message
    assert calls == 0 and not (tmp_path / "run").exists()  # nothing was sent


def test_max_sample_chars_bounds_train_and_evaluate(tmp_path: Path) -> None:
    data = _write(tmp_path / "data.jsonl", _rows(10))
    with pytest.raises(DatasetError, match=r"data\.jsonl:\d+: the sample holds 1\d characters"):
        combee.train(f"jsonl:{data}", llm="sim", max_sample_chars=10, run_dir=tmp_path / "r")
    with pytest.raises(DatasetError, match="more than max_sample_chars=10 allows") as caught:
        combee.evaluate(f"jsonl:{data}", llm="sim", split="all", max_sample_chars=10)
    assert caught.value.path == str(data) and caught.value.line is not None


def test_combee_eval_takes_max_sample_chars_and_names_it(tmp_path: Path) -> None:
    """The refusal tells the user to raise ``--max-sample-chars``: ``combee eval`` has the flag,
    applies it and checks its bounds, before any call is sent."""
    data = _write(tmp_path / "data.jsonl", _rows(10))
    with serve_in_thread(ace_responder) as server:
        common = ("eval", "--task", f"jsonl:{data}", "--split", "all", "--model", "sim",
                  "--base-url", server.base_url)  # fmt: skip
        refused = run_combee(*common, "--max-sample-chars", "10")
        zero = run_combee(*common, "--max-sample-chars", "0")
        calls = len(server.records)
        scored = run_combee(*common, "--max-sample-chars", "100")
    for result in (refused, zero):
        assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "more than --max-sample-chars 10 allows" in " ".join(refused.stderr.split())
    assert "--max-sample-chars" in zero.stderr and "at least 1" in zero.stderr
    assert calls == 0
    assert scored.returncode == 0, scored.stderr
    assert "on 10 samples (all splits)" in scored.stdout
