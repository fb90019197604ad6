"""``combee eval`` on a JSONL file over real HTTP: ``--split all`` scores every line of it;
without it the test share of the documented 60/20/20 split is scored, and the command says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import run_combee


@pytest.fixture
def heldout(tmp_path: Path) -> Path:
    path = tmp_path / "heldout.jsonl"
    lines = [{"id": f"h{i}", "question": f"What is {i} plus {i}?", "answer": str(2 * i)}
             for i in range(10)]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def questions_scored(split: str, data: Path) -> tuple[str, str, set[str]]:
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "eval", "--task", "jsonl", "--data", str(data), "--split", split,
            "--model", "sim", "--base-url", server.base_url,
        )  # fmt: skip
        asked = {
            next(m["content"] for m in r.body["messages"] if m["role"] == "user")
            for r in server.records
            if r.schema_name == "generator"
        }
    assert result.returncode == 0, result.stderr
    return result.stdout, result.stderr, asked


def test_split_all_scores_every_line_of_the_file(heldout: Path) -> None:
    stdout, stderr, asked = questions_scored("all", heldout)
    assert "on 10 samples (all splits)" in stdout
    assert len(asked) == 10
    assert all(any(f"What is {i} plus {i}?" in text for text in asked) for i in range(10))
    assert "note:" not in stderr


def test_the_test_split_is_its_share_and_the_command_says_so(heldout: Path) -> None:
    stdout, stderr, asked = questions_scored("test", heldout)
    assert "on 2 test samples" in stdout and len(asked) == 2
    note = " ".join(stderr.split())
    assert "split 60/20/20" in note and "--split all scores the whole file" in note
