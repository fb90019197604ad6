"""A run directory owns its folder: a user's files are never overwritten, an earlier run's files
never mix into a new one, and an iteration is never recorded twice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import combee
from combee.runs import RunDir
from combee.runs.run_dir import MARKER_FILE
from combee.sim import RunningServer, serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import run_combee


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(ace_responder) as running:
        yield running


def train_cli(server: RunningServer, out: Path, *extra: str) -> tuple[int, str]:
    result = run_combee(
        "train", "--task", "formula", "--batch-size", "4", "--train-limit", "8", "--val-limit",
        "0", "--test-limit", "2", "--model", "sim", "--base-url", server.base_url,
        "--out", str(out), *extra,
    )  # fmt: skip
    return result.returncode, " ".join(result.stderr.split())


def test_a_folder_with_the_users_files_is_refused_and_left_as_it_was(
    server: RunningServer, tmp_path: Path
) -> None:
    (tmp_path / "config.json").write_text('{"mine": true}')
    (tmp_path / "playbook.txt").write_text("my notes")
    for extra in ((), ("--overwrite",)):
        code, message = train_cli(server, tmp_path, *extra)
        assert code == 1 and "Traceback" not in message
        assert "holds files that no Combee run wrote (config.json, playbook.txt)" in message
        assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "playbook.txt"]
    assert (tmp_path / "config.json").read_text() == '{"mine": true}'


def test_overwrite_writes_beside_unrelated_files(server: RunningServer, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("keep me")
    code, message = train_cli(server, tmp_path)
    assert code == 1 and "pass overwrite=True" in message.replace("--overwrite", "overwrite=True")
    code, message = train_cli(server, tmp_path, "--overwrite")
    assert code == 0, message
    assert (tmp_path / "notes.md").read_text() == "keep me"
    assert (tmp_path / MARKER_FILE).exists() and (tmp_path / "final_results.json").exists()


def iterations(folder: Path) -> list[int]:
    rows = (folder / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["iteration"] for line in rows]


async def test_overwrite_leaves_nothing_of_a_longer_earlier_run(
    server: RunningServer, tmp_path: Path
) -> None:
    llm = combee.llm.connect("sim", base_url=server.base_url)
    try:
        settings = {"strategy": "naive", "llm": llm, "run_dir": tmp_path, "val_limit": 0,
                    "test_limit": 2}  # fmt: skip
        await combee.train_async("formula", batch_size=2, train_limit=12, **settings)
        assert len(list((tmp_path / "contexts").iterdir())) == 6
        await combee.train_async("formula", batch_size=4, train_limit=8, overwrite=True, **settings)
    finally:
        await llm.aclose()
    assert sorted(p.name for p in (tmp_path / "contexts").iterdir()) == [
        "iter_0001.txt", "iter_0002.txt",
    ]  # fmt: skip
    assert iterations(tmp_path) == [1, 2]
    assert json.loads((tmp_path / "config.json").read_text())["batch_size"] == 4


async def test_an_unfinished_run_rerun_records_each_iteration_once(
    server: RunningServer, tmp_path: Path
) -> None:
    llm = combee.llm.connect("sim", base_url=server.base_url)
    try:
        settings = {"strategy": "naive", "batch_size": 4, "train_limit": 8, "llm": llm,
                    "run_dir": tmp_path, "val_limit": 0, "test_limit": 2}  # fmt: skip
        await combee.train_async("formula", **settings)
        (tmp_path / "final_results.json").unlink()  # as if it had died before the end
        await combee.train_async("formula", **settings)
    finally:
        await llm.aclose()
    assert iterations(tmp_path) == [1, 2]


def test_a_file_given_as_the_run_directory_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "file.txt"
    path.write_text("x")
    with pytest.raises(combee.ConfigError, match="is a file, not a folder") as caught:
        combee.train("formula", llm="sim", run_dir=path)
    assert caught.value.setting == "run_dir"


def test_a_file_that_cannot_be_written_is_one_message(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    (run.path / "metrics.jsonl").mkdir()  # stands in for a full disk or a read-only folder
    with pytest.raises(combee.ConfigError, match=r"cannot write .*metrics\.jsonl") as caught:
        run.append_jsonl("metrics.jsonl", {"iteration": 1})
    assert caught.value.setting == "run_dir"
    (run.path / "playbook.txt").mkdir()
    with pytest.raises(combee.ConfigError, match=r"cannot write .*playbook\.txt"):
        run.write_text("playbook.txt", "x")
