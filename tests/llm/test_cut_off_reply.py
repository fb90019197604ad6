"""A reply the server cut off at ``max_tokens`` (``finish_reason: length``), over real HTTP on
both clients: named as cut off with the flag to raise, and never re-asked (the same limit would
cut the corrected reply again)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import run_combee

MAX_TOKENS = 200


def long_curator(body: dict[str, Any]) -> str:
    """The scripted model, except that the curator writes far more operations than
    ``MAX_TOKENS`` holds: the server cuts its reply there and says ``finish_reason: length``."""
    if '"name": "curator"' not in json.dumps(body.get("response_format")):
        return ace_responder(body)
    operations = [
        {"type": "ADD", "section": "formulas", "content": f"Lesson number {i} about ratios."}
        for i in range(60)
    ]
    return json.dumps({"reasoning": "many lessons", "operations": operations})


@pytest.mark.parametrize("client", ["openai", "lean"])
def test_a_cut_off_curator_reply_names_max_tokens_and_is_not_reasked(
    tmp_path: Path, client: str
) -> None:
    with serve_in_thread(long_curator) as server:
        result = run_combee(
            "train", "--task", "formula", "--strategy", "naive", "--batch-size", "2",
            "--train-limit", "2", "--val-limit", "0", "--test-limit", "1", "--no-gate",
            "--model", "sim", "--base-url", server.base_url, "--client", client,
            "--max-tokens", str(MAX_TOKENS), "--no-cache", "--out", str(tmp_path / "run"),
        )  # fmt: skip
        curator_bodies = [r.body for r in server.records if r.schema_name == "curator"]
    assert result.returncode == 0, result.stderr
    assert len(curator_bodies) == 1  # no re-ask with the same limit
    stderr = " ".join(result.stderr.split())
    assert f"the reply was cut off at the {MAX_TOKENS}-token limit" in stderr
    assert f"raise --max-tokens (now {MAX_TOKENS})" in stderr
    assert "required property" not in stderr
    run_log = (tmp_path / "run" / "run.log").read_text(encoding="utf-8")
    assert "cut off" in run_log and "max_tokens" in run_log
