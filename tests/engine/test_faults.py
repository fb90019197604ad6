"""A run that cannot get answers fails, loudly and with its finished work saved; a run whose calls
fail now and then finishes with nothing lost. Against the scripted server over real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import combee
from combee.core.loop import IterationReport, LoopObserver
from combee.errors import LLMCallError, RunFailedError
from combee.llm import JsonSchema, connect
from combee.sim import SimConfig, serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.sim.responders import HTTPFault, request_schema
from tests.cli_helpers import COMBEE, run_combee

ROLES = {"generator", "reflector", "curator", "merge"}


def roles_refused(body: Mapping[str, Any]) -> str:
    """Answers the client's checks, refuses every ACE role call with a permanent 400."""
    fmt = body.get("response_format")
    name = fmt.get("json_schema", {}).get("name") if isinstance(fmt, Mapping) else None
    if name in ROLES:
        raise HTTPFault(400, "this model does not support the requested feature")
    return ace_responder(body)


def test_every_call_refused_fails_the_run_at_the_first_iteration(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with serve_in_thread(roles_refused) as server:
        result = run_combee(
            "train", "--task", "formula", "--batch-size", "4", "--train-limit", "8",
            "--val-limit", "0", "--test-limit", "2", "--model", "sim",
            "--base-url", server.base_url, "--out", str(out),
        )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.count("error:") == 1, result.stderr
    message = " ".join(result.stderr[result.stderr.index("error:") :].split())
    assert "iteration 1 lost 4 of 4 samples" in message
    assert "does not support the requested feature" in message  # what the endpoint said
    assert "Traceback" not in result.stderr and "done:" not in result.stdout
    assert not (out / "final_results.json").exists()


def test_everything_refused_fails_before_any_work(tmp_path: Path) -> None:
    def refuse(body: Mapping[str, Any]) -> str:
        raise HTTPFault(400, "bad request")

    with serve_in_thread(refuse) as server:
        result = run_combee(
            "train", "--task", "formula", "--batch-size", "4", "--train-limit", "4",
            "--model", "sim", "--base-url", server.base_url, "--out", str(tmp_path / "run"),
        )  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "error:" in result.stderr and "400" in result.stderr
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


async def test_a_server_that_dies_after_iteration_1_fails_the_run_and_keeps_iteration_1(
    tmp_path: Path,
) -> None:
    server = serve_in_thread(ace_responder)

    class KillAfterFirst(LoopObserver):
        def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
            if report.iteration == 1:
                server.stop()

    llm = connect("sim", base_url=server.base_url, max_retries=1, timeout_s=5.0)
    try:
        with pytest.raises(RunFailedError) as caught:
            await combee.train_async(
                "formula", strategy="combee", batch_size=4, llm=llm, run_dir=tmp_path,
                train_limit=12, val_limit=0, test_limit=2, observers=[KillAfterFirst()],
            )  # fmt: skip
    finally:
        await llm.aclose()
        server.stop()
    message = str(caught.value)
    assert "iteration 2 lost 4 of 4 samples" in message and str(tmp_path) in message
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2]  # iteration 2 recorded as what it lost
    assert rows[0]["failed_samples"] == 0 and rows[1]["failed_samples"] == 4
    assert (tmp_path / "playbook.txt").read_text().strip()  # iteration 1's lessons kept
    assert not (tmp_path / "final_results.json").exists()


async def test_a_fifth_of_calls_faulting_loses_nothing(tmp_path: Path) -> None:
    faults = SimConfig(seed=4, rate_500=0.1, rate_429=0.05, rate_bad_body=0.05, retry_after_s=0.01)
    with serve_in_thread(ace_responder, faults) as server:
        llm = connect("sim", base_url=server.base_url, max_retries=6)
        try:
            result = await combee.train_async(
                "formula", strategy="combee", batch_size=8, llm=llm, run_dir=tmp_path,
                train_limit=24, val_limit=0, test_limit=8, gate=False,
            )  # fmt: skip
        finally:
            await llm.aclose()
        faulted = sum(1 for r in server.records if r.status != 200)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert faulted > 5  # the faults happened
    assert sum(r["reflections"] for r in rows) == 24 and not any(r["failed_samples"] for r in rows)
    assert result.summary["test_samples"] == 8 and result.summary["test_failed_samples"] == 0


def test_max_failed_share_is_checked() -> None:
    with pytest.raises(combee.ConfigError) as caught:
        combee.train("formula", llm="sim", max_failed_share=1.5)
    assert caught.value.setting == "max_failed_share"


def test_schema_of_refused_calls_is_an_ace_role() -> None:
    body = {"response_format": {"type": "json_schema", "json_schema": {"name": "curator",
            "schema": {"type": "object"}}}}  # fmt: skip
    assert request_schema(body) is not None
    with pytest.raises(HTTPFault):
        roles_refused(body)


def test_an_unreachable_endpoint_leaves_no_run_directory_behind(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_combee(
        "train", "--model", "sim", "--base-url", "http://127.0.0.1:9/v1", "--train-limit", "4",
        "--max-retries", "0", "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 1 and "cannot reach the LLM endpoint" in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()


def test_a_duplication_that_only_adds_calls_is_refused(tmp_path: Path) -> None:
    result = run_combee(
        "train", "--model", "sim", "--duplication", "100000", "--out", str(tmp_path / "r")
    )
    assert result.returncode == 1 and "--duplication must be at most 16" in result.stderr
    assert not (tmp_path / "r").exists()


def test_concurrency_beyond_the_open_file_limit_is_capped_with_a_warning(
    tmp_path: Path,
) -> None:
    with serve_in_thread(ace_responder) as server:
        command = [
            COMBEE, "train", "--task", "formula", "--batch-size", "8", "--train-limit", "8",
            "--val-limit", "0", "--test-limit", "2", "--concurrency", "1000", "--model", "sim",
            "--base-url", server.base_url, "--out", str(tmp_path / "run"),
        ]  # fmt: skip
        result = subprocess.run(
            ["bash", "-c", 'ulimit -Sn 256 && ulimit -Hn 256 && exec "$@"', "_", *command],
            capture_output=True, text=True, timeout=180, check=False,
            env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    message = " ".join(result.stderr.split())
    assert "concurrency 1000 needs about 1064 open files" in message
    assert "running 192 calls at once instead" in message
    assert (tmp_path / "run" / "final_results.json").exists()


def test_a_server_that_answers_with_nothing_fails_the_preflight(tmp_path: Path) -> None:
    with serve_in_thread(lambda body: "") as server:
        result = run_combee(
            "train", "--model", "sim", "--base-url", server.base_url, "--train-limit", "4",
            "--out", str(tmp_path / "run"),
        )  # fmt: skip
    message = " ".join(result.stderr.split())
    assert result.returncode == 1 and "answered a structured test call with 'no content'" in message
    assert "Traceback" not in message and not (tmp_path / "run").exists()


async def test_a_reply_far_beyond_max_tokens_is_refused_and_not_cached(tmp_path: Path) -> None:
    schema = JsonSchema("answer", {"type": "object"})
    huge = '{"a": "' + "x" * 300_000 + '"}'
    with serve_in_thread(lambda body: huge, SimConfig(honour_max_tokens=False)) as server:
        llm = connect("sim", base_url=server.base_url, cache=tmp_path / "c.sqlite", max_retries=0)
        try:
            with pytest.raises(LLMCallError, match="more than 64 tokens can hold") as caught:
                await llm.complete_json(
                    [{"role": "user", "content": "hi"}], role="probe", schema=schema, max_tokens=64
                )
        finally:
            await llm.aclose()
        asked = [r for r in server.records if r.schema_name == "answer"]
    assert caught.value.kind == "oversized"
    assert len(asked) == 1  # not re-asked with the huge reply sent back
    assert (tmp_path / "c.sqlite").stat().st_size < 100_000


def test_calls_failing_in_a_row_stop_the_run_inside_its_first_iteration(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with serve_in_thread(roles_refused) as server:
        result = run_combee(
            "train", "--task", "formula", "--batch-size", "40", "--train-limit", "40",
            "--val-limit", "0", "--test-limit", "2", "--max-failed-share", "1",
            "--max-failures-in-a-row", "5", "--concurrency", "2", "--model", "sim",
            "--base-url", server.base_url, "--out", str(out),
        )  # fmt: skip
        generate = [r for r in server.records if r.schema_name == "generator"]
    assert result.returncode == 1, result.stderr
    message = " ".join(result.stderr[result.stderr.index("error:") :].split())
    assert "5 LLM calls in a row failed for good" in message
    assert "does not support the requested feature" in message  # what the endpoint said
    assert "Traceback" not in result.stderr and not (out / "final_results.json").exists()
    assert len(generate) < 10  # the other samples of the batch were cancelled, not sent


def test_max_failures_in_a_row_is_checked() -> None:
    with pytest.raises(combee.ConfigError) as caught:
        connect("sim", max_failures_in_a_row=0)
    assert caught.value.setting == "max_failures_in_a_row"


def test_a_curate_call_that_fails_costs_its_iteration_not_the_run(tmp_path: Path) -> None:
    def curator_refused(body: Mapping[str, Any]) -> str:
        fmt = body.get("response_format")
        if isinstance(fmt, Mapping) and fmt.get("json_schema", {}).get("name") == "curator":
            raise HTTPFault(400, "context length exceeded")
        return ace_responder(body)

    out = tmp_path / "run"
    with serve_in_thread(curator_refused) as server:
        result = run_combee(
            "train", "--task", "formula", "--strategy", "naive", "--batch-size", "4",
            "--train-limit", "8", "--val-limit", "0", "--test-limit", "2", "--model", "sim",
            "--base-url", server.base_url, "--out", str(out), "--no-gate",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (
        "the curate call over 4 reflections failed and is skipped" in (out / "run.log").read_text()
    )
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["roles"]["curator"]["failed_calls"] for r in rows] == [1, 1]
