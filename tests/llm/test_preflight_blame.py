"""A failed test call names what failed: json_mode only when the server refused the request."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from combee.sim import serve_in_thread
from combee.sim.responders import HTTPFault
from tests.cli_helpers import run_combee


def failing(status: int) -> Any:
    def respond(body: Mapping[str, Any]) -> str:
        raise HTTPFault(status, f"status {status} from the test server")

    return respond


@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_server_error_is_not_blamed_on_json_mode(tmp_path: Path, status: int) -> None:
    with serve_in_thread(failing(status)) as server:
        result = run_combee(
            "train", "--model", "sim", "--base-url", server.base_url, "--max-retries", "0",
            "--out", str(tmp_path / "run"),
        )  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "failed a test call" in result.stderr and f"status {status}" in result.stderr
    assert "json_mode" not in result.stderr and "--json-mode" not in result.stderr


def test_a_refused_structured_call_points_at_json_mode(tmp_path: Path) -> None:
    with serve_in_thread(failing(400)) as server:
        result = run_combee(
            "train", "--model", "sim", "--base-url", server.base_url, "--max-retries", "0",
            "--out", str(tmp_path / "run"),
        )  # fmt: skip
    assert result.returncode == 1
    assert "refused a structured-output call" in result.stderr and "--json-mode" in result.stderr
