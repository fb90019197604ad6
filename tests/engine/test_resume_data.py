"""A run on a JSONL file resumes from any folder, and refuses to continue on an edited file."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import combee
from combee.core.loop import LoopObserver
from combee.core.loop_state import LoopState
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import COMBEE


class StopAfterOne(LoopObserver):
    def on_checkpoint(self, state: LoopState[object]) -> None:
        raise KeyboardInterrupt  # as Ctrl-C would, once iteration 1 is saved


def write_data(path: Path, rows: int) -> None:
    lines = [
        json.dumps({"question": f"What is the ratio in case {i}?", "answer": str(i)})
        for i in range(rows)
    ]
    path.write_text("\n".join(lines) + "\n")


def interrupted_run(work: Path, base_url: str) -> Path:
    write_data(work / "data.jsonl", 20)
    os.chdir(work)
    llm = combee.llm.connect("sim", base_url=base_url)
    with pytest.raises(KeyboardInterrupt):
        combee.train(
            "jsonl:data.jsonl", batch_size=4, llm=llm, run_dir="run", observers=[StopAfterOne()]
        )
    return work / "run"


def resume_elsewhere(run: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "300"}
    return subprocess.run(
        [COMBEE, "train", "--resume", str(run)],
        cwd=cwd, capture_output=True, text=True, env=env, timeout=180, check=False,
    )  # fmt: skip


def test_resume_from_another_folder_finds_the_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with serve_in_thread(ace_responder) as server:
        run = interrupted_run(tmp_path / "work", server.base_url)
        config = json.loads((run / "config.json").read_text())
        assert config["task_spec"] == f"jsonl:{tmp_path / 'work' / 'data.jsonl'}"
        resumed = resume_elsewhere(run, elsewhere)
    assert resumed.returncode == 0, resumed.stderr
    assert (run / "final_results.json").exists()


def test_an_edited_data_file_is_not_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    with serve_in_thread(ace_responder) as server:
        run = interrupted_run(tmp_path / "work", server.base_url)
        write_data(tmp_path / "work" / "data.jsonl", 21)  # one more row
        refused = resume_elsewhere(run, tmp_path)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "data_sha256" in refused.stderr and "other settings" in refused.stderr
    assert not (run / "final_results.json").exists()
