"""Mistakes a user can make end in one clear message and a non-zero exit, never a traceback."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from combee.sim import HTTPFault, serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import run_combee


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _fails_with(result_args: list[str], *needles: str, env: dict[str, str] | None = None) -> str:
    result = run_combee(*result_args, env=env)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    message = " ".join(result.stderr.split())
    for needle in needles:
        assert needle in message, message
    return message


@pytest.fixture(scope="module")
def base_url() -> str:
    with serve_in_thread(ace_responder) as server:
        yield server.base_url


def test_unknown_task(tmp_path: Path, base_url: str) -> None:
    _fails_with(
        [
            "train",
            "--task",
            "nope",
            "--model",
            "sim",
            "--base-url",
            base_url,
            "--out",
            str(tmp_path / "r"),
        ],
        "unknown task",
        "nope",
        "formula",
    )


def test_unknown_strategy(tmp_path: Path, base_url: str) -> None:
    _fails_with(
        [
            "train",
            "--strategy",
            "greedy",
            "--model",
            "sim",
            "--base-url",
            base_url,
            "--out",
            str(tmp_path / "r"),
        ],
        "unknown strategy",
        "greedy",
        "combee",
    )


def test_malformed_dataset_line_names_file_and_line(tmp_path: Path, base_url: str) -> None:
    data = tmp_path / "mine.jsonl"
    data.write_text(
        '{"question": "1+1?", "answer": "2"}\n'
        '{"question": "2+2?", "answer": "4"}\n'
        '{"question": "3+3?", "answer": \n'
    )
    _fails_with(
        [
            "train",
            "--task",
            "jsonl",
            "--data",
            str(data),
            "--model",
            "sim",
            "--base-url",
            base_url,
            "--out",
            str(tmp_path / "r"),
        ],
        f"{data}:3",
    )


def test_wrongly_typed_dataset_field_names_file_and_line(tmp_path: Path, base_url: str) -> None:
    data = tmp_path / "typed.jsonl"
    data.write_text('{"question": "1+1?", "answer": "2"}\n{"question": ["x"], "answer": "4"}\n')
    _fails_with(
        [
            "train",
            "--task",
            "jsonl",
            "--data",
            str(data),
            "--model",
            "sim",
            "--base-url",
            base_url,
            "--out",
            str(tmp_path / "r"),
        ],
        f"{data}:2",
        "question",
    )


def test_unreachable_endpoint(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    _fails_with(
        [
            "train",
            "--model",
            "sim",
            "--base-url",
            url,
            "--max-retries",
            "1",
            "--out",
            str(tmp_path / "r"),
        ],
        "cannot reach",
        url,
    )


def test_missing_key_for_a_remote_endpoint(tmp_path: Path) -> None:
    _fails_with(
        [
            "train",
            "--model",
            "gpt-4o-mini",
            "--base-url",
            "https://api.example.com/v1",
            "--api-key-env",
            "COMBEE_SURELY_UNSET_KEY",
            "--out",
            str(tmp_path / "r"),
        ],
        "COMBEE_SURELY_UNSET_KEY",
    )


def test_a_finished_run_is_not_overwritten_by_accident(tmp_path: Path, base_url: str) -> None:
    out = tmp_path / "r"
    args = [
        "train",
        "--batch-size",
        "2",
        "--train-limit",
        "2",
        "--val-limit",
        "0",
        "--test-limit",
        "1",
        "--model",
        "sim",
        "--base-url",
        base_url,
        "--out",
        str(out),
    ]
    first = run_combee(*args)
    assert first.returncode == 0, first.stderr
    _fails_with(args, "already holds a finished run", "--overwrite")
    assert run_combee(*args, "--overwrite").returncode == 0


def test_a_server_without_json_schema_support_gets_the_setting_that_fixes_it(
    tmp_path: Path,
) -> None:
    def no_json_schema(body: Mapping[str, Any]) -> str:
        response_format = body.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            raise HTTPFault(400, "response_format type json_schema is not supported")
        return ace_responder(body)

    with serve_in_thread(no_json_schema) as server:
        _fails_with(
            ["train", "--model", "sim", "--base-url", server.base_url,
             "--out", str(tmp_path / "r")],
            "--json-mode json_object_schema",
        )  # fmt: skip
        result = run_combee(
            "train", "--model", "sim", "--base-url", server.base_url, "--json-mode",
            "json_object_schema", "--batch-size", "2", "--train-limit", "2", "--val-limit", "0",
            "--test-limit", "1", "--out", str(tmp_path / "ok"),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
