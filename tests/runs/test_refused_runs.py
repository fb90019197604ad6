"""A run that is refused leaves nothing behind: a new ``--out`` is not created (not even the
response cache), and an existing run's cache is left byte for byte as it was."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import run_combee

SMALL = ("--train-limit", "4", "--val-limit", "2", "--test-limit", "2", "--batch-size", "2")


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve_in_thread(ace_responder) as server:
        yield server.base_url


def train(base_url: str, out: Path, *extra: str) -> tuple[int, str]:
    result = run_combee(
        "train", "--model", "sim", "--base-url", base_url, "--out", str(out), *SMALL, *extra
    )
    assert "Traceback" not in result.stderr + result.stdout
    return result.returncode, " ".join(result.stderr.split())


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (("--token-budget", "5"), "--token-budget"),
        (("--initial-playbook", "{bad}"), "--initial-playbook"),
    ],
)
def test_a_refused_setting_leaves_no_new_folder(
    tmp_path: Path, base_url: str, flags: tuple[str, ...], needle: str
) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("just some notes, not a playbook\n", encoding="utf-8")
    out = tmp_path / "run"
    code, message = train(base_url, out, *(f.format(bad=bad) for f in flags))
    assert code != 0
    assert needle in message, message
    assert not out.exists()


def test_a_refused_resume_leaves_the_cache_as_it_was(tmp_path: Path, base_url: str) -> None:
    out = tmp_path / "run"
    assert train(base_url, out)[0] == 0
    (out / "final_results.json").unlink()  # as if the run had been stopped before its end
    cache = out / "cache.sqlite"
    before = (hashlib.sha256(cache.read_bytes()).hexdigest(), cache.stat().st_mtime_ns)
    for extra in (("--seed", "5"), ("--token-budget", "5")):
        code, message = train(base_url, out, *extra)
        assert code != 0
        assert extra[0] in message or "seed" in message, message
        assert (hashlib.sha256(cache.read_bytes()).hexdigest(), cache.stat().st_mtime_ns) == before
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("cache")) == ["cache.sqlite"]


def test_a_refused_setting_removes_the_folders_it_would_have_made(
    tmp_path: Path, base_url: str
) -> None:
    out = tmp_path / "new" / "deeper" / "run"
    code, message = train(base_url, out, "--token-budget", "5")
    assert code != 0 and "--token-budget" in message
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["train", "learn"])
def test_an_out_that_cannot_be_made_is_named_as_out(
    tmp_path: Path, base_url: str, command: str
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    out = blocker / "run"
    source = ("--traces", "tau-airline") if command == "learn" else ()
    result = run_combee(
        command, *source, "--model", "sim", "--base-url", base_url, "--out", str(out)
    )
    message = " ".join(result.stderr.split())
    assert result.returncode != 0 and "Traceback" not in message
    assert f"--out {out} cannot be made" in message, message
    assert "--cache" not in message
