"""Combee against llama.cpp's own OpenAI-compatible server (``python -m llama_cpp.server``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_helpers import run_combee


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    from combee.errors import ConfigError
    from combee.llm.local.models import resolve_local_model

    try:
        model = resolve_local_model("local:smollm2", progress=False)
    except ConfigError as error:
        pytest.skip(f"SmolLM2 is not installed: {error}")
    port = _free_port()
    log = (tmp_path_factory.mktemp("llama") / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
         "--port", str(port), "--n_threads", str(os.cpu_count() or 1), "--n_ctx", "4096"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, "llama_cpp.server exited early"
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "llama_cpp.server did not start in 120 s"
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


@pytest.mark.slow
def test_default_json_schema_mode_is_refused_with_the_fix_named(
    llama_server: str, tmp_path: Path
) -> None:
    result = run_combee(
        "eval", "--task", "formula", "--limit", "1", "--model", "smollm2",
        "--base-url", llama_server, "--max-retries", "0",
    )  # fmt: skip
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "--json-mode json_object_schema" in " ".join(result.stderr.split())


@pytest.mark.slow
def test_eval_runs_with_the_json_object_schema_mode(llama_server: str, tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    result = run_combee(
        "eval", "--task", "formula", "--limit", "2", "--model", "smollm2",
        "--base-url", llama_server, "--json-mode", "json_object_schema", "--max-tokens", "256",
        "--out", str(out),
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "accuracy" in result.stdout
    report = out.read_text()
    assert '"samples": 2' in report
