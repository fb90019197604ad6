"""``combee train`` end to end: the real command, over real HTTP, against the scripted server."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from combee.methods.ace import Playbook
from combee.sim import RequestRecord, SimConfig, peak_concurrency, serve_in_thread
from combee.sim.ace_script import ace_responder, numbered_operations
from combee.sim.gates import wave
from tests.cli_helpers import COMBEE, run_combee

SECRET = "sk-test-never-written-anywhere-1234"
TRAIN_ID = re.compile(r"formula-train-\d+")


def _user_text(record: RequestRecord) -> str:
    return "\n".join(m["content"] for m in record.body["messages"])


def _key(op: dict[str, Any]) -> str:
    return json.dumps(op, sort_keys=True)


def _adds(reply: str) -> list[str]:
    return [op["content"] for op in json.loads(reply)["operations"] if op["type"] == "ADD"]


@pytest.fixture(scope="module")
def combee_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[RequestRecord]]:
    out = tmp_path_factory.mktemp("run") / "formula-combee"
    # The server holds the batch's 16 rollouts, its 16 reflections and its 4 curate calls, each
    # wave until all of it has arrived: calls sent at once show up together, whatever the load.
    gates = (wave("generator", 16), wave("reflector", 16), wave("curator", 4))
    with serve_in_thread(ace_responder, SimConfig(gates=gates)) as server:
        result = run_combee(
            "train",
            "--task",
            "formula",
            "--strategy",
            "combee",
            "--batch-size",
            "16",
            "--train-limit",
            "16",
            "--val-limit",
            "0",
            "--test-limit",
            "8",
            "--model",
            "sim",
            "--base-url",
            server.base_url,
            "--api-key-env",
            "COMBEE_TEST_KEY",
            "--seed",
            "0",
            "--no-gate",  # every sample of the batch is learned from: the waves count them all
            "--out",
            str(out),
            env={"COMBEE_TEST_KEY": SECRET},
        )
        records = server.records
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return out, records


def _phases(records: list[RequestRecord]) -> dict[str, list[RequestRecord]]:
    first_curate = min(r.index for r in records if r.schema_name == "curator")
    training = [r for r in records if r.index < first_curate]
    return {
        "generator": [r for r in training if r.schema_name == "generator"],
        "reflector": [r for r in training if r.schema_name == "reflector"],
        "curator": [r for r in records if r.schema_name == "curator"],
        "merge": [r for r in records if r.schema_name == "merge"],
        "test": [r for r in records if r.index > first_curate and r.schema_name == "generator"],
    }


def test_map_calls_all_run_at_once(combee_run: tuple[Path, list[RequestRecord]]) -> None:
    phases = _phases(combee_run[1])
    assert len(phases["generator"]) == 16
    assert len(phases["reflector"]) == 16
    assert peak_concurrency(phases["generator"]) == 16
    assert peak_concurrency(phases["reflector"]) == 16
    role_calls = [r for r in combee_run[1] if r.schema_name is not None]
    assert all(r.body["response_format"]["type"] == "json_schema" for r in role_calls)


def test_four_concurrent_curates_each_reflection_in_two_calls(
    combee_run: tuple[Path, list[RequestRecord]],
) -> None:
    phases = _phases(combee_run[1])
    curates = phases["curator"]
    assert len(curates) == 4
    assert peak_concurrency(curates) == 4
    per_call = [set(TRAIN_ID.findall(_user_text(r))) for r in curates]
    appearances = Counter(sample for ids in per_call for sample in ids)
    assert set(appearances) == {f"formula-train-{i:05d}" for i in range(1, 17)}
    assert all(count == 2 for count in appearances.values())  # two different calls (sets)


def test_one_merge_sees_every_curate_output_and_its_adds_reach_the_playbook(
    combee_run: tuple[Path, list[RequestRecord]],
) -> None:
    out, records = combee_run
    phases = _phases(records)
    assert len(phases["merge"]) == 1
    merge = phases["merge"][0]
    assert merge.arrived >= max(r.finished for r in phases["curator"])
    merge_prompt = _user_text(merge)
    local_ops: list[dict[str, Any]] = []
    for curate in phases["curator"]:
        local_adds = _adds(ace_responder(curate.body))
        assert local_adds
        assert all(json.dumps(t, ensure_ascii=False)[1:-1] in merge_prompt for t in local_adds)
        local_ops += json.loads(ace_responder(curate.body))["operations"]
    # The merge sees every local operation once, numbered 1..n, and answers by number; it reads
    # them as the curators wrote them, less what they are about (all lessons here).
    local_ops = [{k: v for k, v in op.items() if k != "about"} for op in local_ops]
    numbered = numbered_operations(merge_prompt)
    assert sorted(numbered) == list(range(1, len(local_ops) + 1))
    assert sorted(map(_key, numbered.values())) == sorted(map(_key, local_ops))
    reply = json.loads(ace_responder(merge.body))
    assert reply["combine"] == []
    assert sorted(reply["keep"] + reply["drop"]) == sorted(numbered)
    kept = [numbered[n]["content"] for n in reply["keep"]]
    assert kept and len(set(kept)) == len(kept)
    assert all(numbered[n]["content"] in kept for n in reply["drop"])  # only exact repeats go
    # The kept operations reach the playbook verbatim, each once, in the sections they named.
    playbook = Playbook.parse((out / "playbook.txt").read_text())
    assert [(b.section, b.content) for b in playbook.bullets] == sorted(
        ((numbered[n]["section"], numbered[n]["content"]) for n in reply["keep"]),
        key=lambda pair: [s.key for s in playbook.sections].index(pair[0]),
    )
    row = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert row["ops_applied"] == len(kept) and row["ops_rejected"] == 0
    assert row["lessons_dropped"] == ({"merge_drop": len(reply["drop"])} if reply["drop"] else {})
    assert row["lessons_repaired"] == {} and row["lessons_combined"] == 0


def test_run_directory_holds_config_metrics_playbooks_and_results(
    combee_run: tuple[Path, list[RequestRecord]],
) -> None:
    out, records = combee_run
    config = json.loads((out / "config.json").read_text())
    assert config["strategy"] == "combee" and config["batch_size"] == 16
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == 1
    row = metrics[0]
    assert row["batch_size"] == 16 and row["reduce_levels"] == [4, 1]
    assert row["roles"]["generator"]["calls"] == 16
    assert row["roles"]["curator"]["calls"] == 4 and row["roles"]["merge"]["calls"] == 1
    assert row["playbook_bullets"] > 0 and row["playbook_tokens"] > 0
    assert (out / "contexts" / "iter_0001.txt").read_text() == (out / "playbook.txt").read_text()
    results = json.loads((out / "final_results.json").read_text())
    assert results["llm_calls"] == {
        "preflight": 1,
        "generator": 24,
        "reflector": 16,
        "curator": 4,
        "merge": 1,
    }
    assert 0.0 <= results["test_accuracy"] <= 1.0
    assert results["train_seconds"] > 0
    assert len(_phases(records)["test"]) == 8


def test_the_api_key_never_reaches_the_run_directory(
    combee_run: tuple[Path, list[RequestRecord]],
) -> None:
    out, _ = combee_run
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_reply_invalid_after_the_reask_skips_only_that_sample(tmp_path: Path) -> None:
    def responder(body: dict[str, Any]) -> str:
        is_reflector = '"name": "reflector"' in json.dumps(body.get("response_format"))
        # The first training row of formula: its reflection never comes back as JSON.
        if is_reflector and "software development firm lists its current assets" in json.dumps(
            body
        ):
            return "I refuse to answer in JSON."
        return ace_responder(body)

    with serve_in_thread(responder) as server:
        result = run_combee(
            "train",
            "--task",
            "formula",
            "--strategy",
            "combee",
            "--batch-size",
            "4",
            "--train-limit",
            "4",
            "--val-limit",
            "0",
            "--test-limit",
            "2",
            "--model",
            "sim",
            "--base-url",
            server.base_url,
            "--no-gate",  # each of the 4 samples is reflected on
            "--out",
            str(tmp_path / "run"),
            "--no-cache",
        )
        reflector_calls = [r for r in server.records if r.schema_name == "reflector"]
    assert result.returncode == 0, result.stderr
    assert len(reflector_calls) == 5  # 4 samples + one re-ask
    failures = [
        json.loads(x) for x in (tmp_path / "run" / "failures.jsonl").read_text().splitlines()
    ]
    assert len(failures) == 1 and failures[0]["stage"] == "reflect"
    assert failures[0]["sample_id"] == "formula-train-00001"
    assert "reflector" in failures[0]["error"]
    metrics = json.loads((tmp_path / "run" / "metrics.jsonl").read_text())
    assert metrics["reflections"] == 3 and metrics["failed_samples"] == 1
    assert json.loads((tmp_path / "run" / "final_results.json").read_text())["test_samples"] == 2


def test_train_against_the_sim_server_command(tmp_path: Path) -> None:
    port = _free_port()
    server = subprocess.Popen(
        [COMBEE, "sim-server", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_port(port, server)
        result = run_combee(
            "train",
            "--task",
            "formula",
            "--strategy",
            "naive",
            "--batch-size",
            "4",
            "--train-limit",
            "8",
            "--val-limit",
            "2",
            "--test-limit",
            "2",
            "--model",
            "sim",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--out",
            str(tmp_path / "run"),
        )
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert result.returncode == 0, result.stderr
    metrics = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["batch_size"] for m in metrics] == [4, 4]
    assert [m["reduce_levels"] for m in metrics] == [[1], [1]]
    assert metrics[-1]["val_accuracy"] is not None
    assert "helpful=" in (tmp_path / "run" / "playbook.txt").read_text()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(
                f"sim-server exited: {process.stderr.read() if process.stderr else ''}"
            )
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError("sim-server did not start listening within 30 s")
