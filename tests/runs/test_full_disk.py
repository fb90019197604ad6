"""A run directory that fills up: the run stops with one line that names the folder and what it
keeps, no file is left half-written (no ``.partial``, no cut line), and the same command
continues once there is room. On a real small file system (a tmpfs, where this process may mount
one), under a file size limit (``RLIMIT_FSIZE``: writes past it fail with ``EFBIG``, on every
Unix), and at the file layer with a write that fails halfway."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from combee.files import UnwritableRunDir, append_whole
from combee.runs.run_dir import RunDir
from combee.sim import RunningServer, serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import COMBEE

resource = pytest.importorskip("resource")  # a Unix


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(ace_responder) as running:
        yield running


def _train(
    out: Path, server: RunningServer, *extra: str, before: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            COMBEE, "train", "--task", "formula", "--batch-size", "4", "--train-limit", "40",
            "--val-limit", "0", "--test-limit", "4", "--model", "sim",
            "--base-url", server.base_url, "--out", str(out), *extra,
        ],
        capture_output=True, text=True, timeout=300, check=False, preexec_fn=before,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "400"},
    )  # fmt: skip


def _stopped_in_one_line(result: subprocess.CompletedProcess[str], out: Path) -> str:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "Logging error" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert f"{out} keeps " in errors[0] and "no file is left half-written" in errors[0]
    return errors[0]


def _nothing_half_written(out: Path) -> None:
    assert not list(out.rglob("*.partial"))
    metrics = out / "metrics.jsonl"
    for line in metrics.read_text(encoding="utf-8").splitlines() if metrics.exists() else []:
        row = json.loads(line)  # whole lines only, each with its context version
        assert (out / "contexts" / f"iter_{row['iteration']:04d}.txt").is_file()
    for name in ("config.json", "checkpoint.json"):
        if (out / name).exists():
            json.loads((out / name).read_text(encoding="utf-8"))


def _finishes_once_there_is_room(out: Path, server: RunningServer, *extra: str) -> None:
    result = _train(out, server, *extra)
    assert result.returncode == 0, result.stderr
    assert (out / "final_results.json").is_file()
    rows = (out / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(row)["iteration"] for row in rows] == list(range(1, 11))


def test_a_file_size_limit_stops_the_run_in_one_line(tmp_path: Path, server: RunningServer) -> None:
    def limited() -> None:  # in the child: writes past 20 kB fail with EFBIG, not a signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    out = tmp_path / "run"
    result = _train(out, server, "--no-cache", before=limited)
    line = _stopped_in_one_line(result, out)
    assert "File too large (past the largest file this process may write: ulimit -f)" in line
    _nothing_half_written(out)
    _finishes_once_there_is_room(out, server, "--no-cache")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, mounted where this process may (root); skipped elsewhere."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mount, umount = shutil.which("mount"), shutil.which("umount")
    if os.geteuid() != 0 or mount is None or umount is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    made = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run([umount, "-l", str(folder)], check=False)


def test_a_full_disk_stops_the_run_in_one_line(small_disk: Path, server: RunningServer) -> None:
    filler = small_disk / "filler"
    free = shutil.disk_usage(small_disk).free
    filler.write_bytes(b"\0" * (free - 200 * 1024))  # room for the first iterations' files
    out = small_disk / "run"
    result = _train(out, server)  # the response cache in the folder, logging on
    line = _stopped_in_one_line(result, out)
    assert "No space left on device (the disk is full)" in line
    # The response cache that cannot store says so once, in one line.
    assert result.stderr.count("cannot store replies") <= 1
    _nothing_half_written(out)
    filler.unlink()
    _finishes_once_there_is_room(out, server)


def test_an_append_that_fails_halfway_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = RunDir(tmp_path / "run")
    run.append_jsonl("metrics.jsonl", {"iteration": 1})
    before = (run.path / "metrics.jsonl").read_bytes()
    write = os.write

    def disk_fills(handle: int, data: bytes) -> int:
        if len(data) > 4:
            return write(handle, bytes(data)[:4])  # part of the line goes in
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", disk_fills)
    with pytest.raises(UnwritableRunDir, match="No space left on device") as caught:
        run.append_jsonl("metrics.jsonl", {"iteration": 2, "long": "x" * 100})
    with pytest.raises(OSError):
        append_whole(run.path / "run.log", "a line\n")
    monkeypatch.undo()
    assert caught.value.setting == "run_dir" and "the disk is full" in str(caught.value)
    assert (run.path / "metrics.jsonl").read_bytes() == before
    assert (run.path / "run.log").read_bytes() == b""
