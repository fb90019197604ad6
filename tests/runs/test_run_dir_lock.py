"""One run directory, one writer: a second process given the same folder is refused while the
first writes; --overwrite clears only what runs wrote."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from combee.runs.run_dir import RunDir
from combee.sim import SimConfig, serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import COMBEE, run_combee


def train_args(base_url: str, out: Path) -> list[str]:
    return [
        "train", "--train-limit", "8", "--val-limit", "0", "--test-limit", "2",
        "--batch-size", "2", "--model", "sim", "--base-url", base_url, "--out", str(out),
    ]  # fmt: skip


def test_a_second_process_is_refused_while_the_first_writes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with serve_in_thread(ace_responder, SimConfig(ttft_s=0.3)) as server:
        args = train_args(server.base_url, out)
        env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
        first = subprocess.Popen([COMBEE, *args], env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while not (out / "config.json").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            second = run_combee(*args)
        finally:
            _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert "another process is writing a run in this folder now" in second.stderr
    rows = (out / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == 4  # each iteration once: the second process wrote nothing


def test_a_second_resume_of_a_folder_being_written_names_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with serve_in_thread(ace_responder, SimConfig(ttft_s=0.3)) as server:
        args = train_args(server.base_url, out)
        env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
        first = subprocess.Popen([COMBEE, *args], env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while not (out / "checkpoint.json").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            second = run_combee("train", "--resume", str(out))
        finally:
            _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert f"--resume {out}" in second.stderr and "--out" not in second.stderr, second.stderr


def test_the_same_process_may_open_its_folder_again(tmp_path: Path) -> None:
    first = RunDir(tmp_path / "run")
    again = RunDir(tmp_path / "run", resume=True)
    assert first.path == again.path


def test_overwrite_keeps_a_users_file_inside_contexts(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with serve_in_thread(ace_responder) as server:
        args = (
            "train", "--train-limit", "2", "--val-limit", "0", "--test-limit", "1",
            "--batch-size", "2", "--model", "sim", "--base-url", server.base_url,
            "--out", str(out),
        )  # fmt: skip
        assert run_combee(*args).returncode == 0
        notes = out / "contexts" / "my-notes.md"
        notes.write_text("mine")
        again = run_combee(*args, "--overwrite")
    assert again.returncode == 0, again.stderr
    assert notes.read_text() == "mine"
    assert sorted(p.name for p in (out / "contexts").iterdir()) == ["iter_0001.txt", "my-notes.md"]
