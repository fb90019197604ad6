"""Text from endpoints, paths and install hints is printed as text, never read as Rich markup."""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from combee.cli import app
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.sim.responders import HTTPFault
from tests.cli_helpers import run_combee


def refuse(body: Mapping[str, Any]) -> str:
    raise HTTPFault(400, "prompt must not contain [/INST] or [bold]")


def test_an_endpoint_error_with_brackets_is_printed_as_it_came(tmp_path: Path) -> None:
    with serve_in_thread(refuse) as server:
        result = run_combee(
            "train", "--train-limit", "2", "--test-limit", "1", "--model", "sim",
            "--base-url", server.base_url, "--max-retries", "0", "--out", str(tmp_path / "run"),
        )  # fmt: skip
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "MarkupError" not in result.stderr
    assert "[/INST] or [bold]" in result.stderr


def _trains_and_prints(out: Path) -> None:
    """A small run into ``out`` ends well and prints the folder as it is named."""
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "train", "--train-limit", "2", "--val-limit", "0", "--test-limit", "1",
            "--batch-size", "2", "--model", "sim", "--base-url", server.base_url,
            "--out", str(out),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"run directory: {out}" in result.stdout


def test_an_out_path_with_brackets_trains_and_is_printed(tmp_path: Path) -> None:
    out = tmp_path / "x[/y]"
    _trains_and_prints(out)
    assert (out / "final_results.json").exists()


def test_an_install_hint_keeps_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(app, "err", Console(file=buffer, width=200))
    app.fail("the topk strategy needs embeddings: pip install 'combee[embed]'")
    assert buffer.getvalue().strip().endswith("pip install 'combee[embed]'")


@pytest.mark.parametrize("command", ["sim-server", "bench"])
def test_install_hints_in_help_keep_their_extra(command: str) -> None:
    result = run_combee(command, "--help")
    assert result.returncode == 0
    assert "pip install 'combee[sim]'" in result.stdout


def test_version_prints_the_installed_version() -> None:
    from importlib.metadata import version

    result = run_combee("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"combee {version('combee')}"


def test_eval_prints_its_result_once() -> None:
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "eval", "--limit", "3", "--model", "sim", "--base-url", server.base_url,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    both = result.stdout + result.stderr
    assert both.count("accuracy") == 1
    assert "on 3 test samples" in result.stdout


def test_train_help_groups_its_flags_and_shows_no_type_on_switches() -> None:
    result = run_combee("train", "--help", env={"COLUMNS": "120"})
    assert result.returncode == 0
    panels = [line for line in result.stdout.splitlines() if line.startswith("╭─ ")]
    titles = {line.strip("╭─ ").split(" ─")[0] for line in panels}
    assert {"Endpoint", "Training", "ACE method", "Strategy combee"} <= titles
    flags = [line for line in result.stdout.splitlines() if "--help" not in line]
    assert [line for line in flags if "<bool>" in line] == []
    assert "--screen" in result.stdout and "--baseline" in result.stdout


def test_a_result_piped_elsewhere_is_printed_wide() -> None:
    # Rich gives a console that is not a terminal 80 columns, which cuts a run table's headers
    # ("strategy" to "st…"); a command's result piped to a file is printed 200 wide.
    import subprocess
    import sys

    code = "from combee.cli.app import stdout_console; print(stdout_console().width)"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    piped = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert piped.stdout.strip() == "200"
    assert Console(file=io.StringIO()).width == 80  # what it would have been


def test_emoji_codes_in_a_path_are_printed_as_written(tmp_path: Path) -> None:
    """Rich reads ``:smile:`` as an emoji code; a file name that holds one is shown as it is,
    on the error line and on the result line."""
    missing = tmp_path / "data:smile:x.jsonl"
    refused = run_combee("train", "--task", "jsonl", "--data", str(missing), "--model", "sim")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert (
        str(missing) in refused.stderr
        and "\N{SMILING FACE WITH OPEN MOUTH AND SMILING EYES}" not in refused.stderr
    )
    out = tmp_path / "run:thumbs_up:"
    _trains_and_prints(out)
