"""An outage during the test evaluation stops the run without results (exit 1), and the same
command evaluates again once the endpoint is back."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.sim.responders import HTTPFault
from tests.cli_helpers import run_combee


class DownAfterTraining:
    """Answers until the first curator call, then refuses every generator call."""

    def __init__(self) -> None:
        self.curated = False
        self.back = False

    def __call__(self, body: Mapping[str, Any]) -> str:
        name = str(((body.get("response_format") or {}).get("json_schema") or {}).get("name"))
        if name == "curator":
            self.curated = True
        if self.curated and name == "generator" and not self.back:
            raise HTTPFault(503, "the endpoint is down for maintenance")
        return ace_responder(body)


def test_an_outage_in_the_test_evaluation_writes_no_results(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = (
        "train", "--train-limit", "2", "--val-limit", "0", "--test-limit", "4",
        "--batch-size", "2", "--model", "sim", "--max-retries", "0", "--out", str(out),
    )  # fmt: skip
    endpoint = DownAfterTraining()
    with serve_in_thread(endpoint) as server:
        down = run_combee(*args, "--base-url", server.base_url)
        finished_while_down = (out / "final_results.json").exists()
        endpoint.back = True
        again = run_combee(*args, "--base-url", server.base_url)
    assert down.returncode == 1
    assert "the test evaluation lost 4 of 4 samples to failed calls" in down.stderr
    assert "down for maintenance" in down.stderr and "Traceback" not in down.stderr
    assert not finished_while_down
    assert (out / "playbook.txt").exists()  # the learned playbook is kept
    assert again.returncode == 0, again.stderr
    summary = json.loads((out / "final_results.json").read_text())
    assert summary["test_samples"] == 4 and summary["test_failed_samples"] == 0
