"""Runs tracked in MLflow and traces read from MLflow, against a real MLflow tracking server
(``mlflow server`` on SQLite, started here) and the scripted OpenAI-compatible server."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import combee
from combee.core.loop import LoopObserver
from combee.core.loop_state import LoopState
from combee.errors import ConfigError, DatasetError
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import run_combee

mlflow = pytest.importorskip("mlflow")
from mlflow.tracking import MlflowClient  # noqa: E402

MLFLOW = str(Path(sys.executable).with_name("mlflow"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start_server(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A real MLflow tracking server on SQLite in ``home``, answering; and its URI."""
    port = _free_port()
    server = subprocess.Popen(
        [
            MLFLOW, "server", "--backend-store-uri", f"sqlite:///{home}/mlflow.db",
            "--default-artifact-root", str(home / "artifacts"),
            "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        ],
        stdout=(home / "server.log").open("w"), stderr=subprocess.STDOUT,
        start_new_session=True,  # its workers in its process group, stopped with it
    )  # fmt: skip
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"{uri}/health", timeout=2).status_code == 200:
                return server, uri
        except httpx.HTTPError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            _stop(server)
            log = (home / "server.log").read_text()[-2000:]
            raise RuntimeError(f"the MLflow server did not start:\n{log}")
        time.sleep(0.5)


def _stop(server: subprocess.Popen[bytes], how: int = signal.SIGTERM) -> None:
    """Stops the server and its workers."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, how)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


@pytest.fixture(scope="module")
def tracking_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real MLflow tracking server on SQLite, stopped at the end."""
    if not shutil.which(MLFLOW):
        pytest.skip("the mlflow command is not installed")
    server, uri = _start_server(tmp_path_factory.mktemp("mlflow"))
    try:
        yield uri
    finally:
        _stop(server)


def _runs(uri: str, experiment: str) -> list[Any]:
    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    runs: list[Any] = client.search_runs([found.experiment_id])
    return runs


@pytest.mark.mlflow_server
def test_a_tracked_train_run_is_an_mlflow_run(tracking_uri: str, tmp_path: Path) -> None:
    out = tmp_path / "formula-b2"
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "train", "--task", "formula", "--strategy", "combee", "--batch-size", "2",
            "--train-limit", "6", "--val-limit", "2", "--test-limit", "2",
            "--model", "sim", "--base-url", server.base_url, "--out", str(out), "--no-cache",
            "--track", "mlflow", "--tracking-uri", tracking_uri, "--experiment", "cli-train",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (run,) = _runs(tracking_uri, "cli-train")
    saved = json.loads((out / "mlflow_run.json").read_text(encoding="utf-8"))
    assert saved["run_id"] == run.info.run_id
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "formula-b2"  # named after the run, not at random
    params = run.data.params
    assert params["task"] == "formula" and params["strategy"] == "combee"
    assert params["batch_size"] == "2" and params["endpoint.model"] == "sim"
    assert not any(k.rsplit(".", 1)[-1] == "api_key" for k in params)
    client = MlflowClient(tracking_uri=tracking_uri)
    batch = client.get_metric_history(run.info.run_id, "batch_size")
    assert sorted(m.step for m in batch) == [1, 2, 3]  # one step per iteration
    assert all(m.value == 2 for m in batch)
    calls = client.get_metric_history(run.info.run_id, "roles.reflector.calls")
    assert [m.step for m in sorted(calls, key=lambda m: m.step)] == [1, 2, 3]
    assert len(client.get_metric_history(run.info.run_id, "val_accuracy")) == 1
    final = json.loads((out / "final_results.json").read_text(encoding="utf-8"))
    assert run.data.metrics["final.iterations"] == final["iterations"] == 3
    assert run.data.metrics["final.test_accuracy"] == final["test_accuracy"]
    # The totals are final.* figures: no per-iteration series gets a last point that is a total.
    assert "iterations" not in run.data.metrics and "test_accuracy" not in run.data.metrics
    for key in ("playbook_bullets", "ops_applied"):
        history = client.get_metric_history(run.info.run_id, key)
        assert sorted(m.step for m in history) == [1, 2, 3], key
    applied = client.get_metric_history(run.info.run_id, "ops_applied")
    assert run.data.metrics["final.ops_applied_total"] == sum(m.value for m in applied)
    assert final["ops_applied_total"] == sum(m.value for m in applied)
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"playbook.txt", "config.json", "final_results.json", "contexts"} <= artifacts
    versions = {a.path for a in client.list_artifacts(run.info.run_id, "contexts")}
    assert versions == {f"contexts/iter_000{i}.txt" for i in (1, 2, 3)}
    local = client.download_artifacts(run.info.run_id, "playbook.txt", str(tmp_path))
    assert Path(local).read_text(encoding="utf-8") == (out / "playbook.txt").read_text(
        encoding="utf-8"
    )


@pytest.mark.mlflow_server
def test_each_cell_of_a_tracked_compare_grid_is_an_mlflow_run(
    tracking_uri: str, tmp_path: Path
) -> None:
    out = tmp_path / "grid"
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "compare", "--strategies", "naive,combee", "--batch-sizes", "2", "--task", "formula",
            "--train-limit", "4", "--val-limit", "0", "--test-limit", "1", "--model", "sim",
            "--base-url", server.base_url, "--out", str(out), "--no-report", "--no-cache",
            "--track", "mlflow", "--tracking-uri", tracking_uri, "--experiment", "cli-compare",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    runs = {run.info.run_name: run for run in _runs(tracking_uri, "cli-compare")}
    assert sorted(runs) == ["combee-b2-s0", "naive-b2-s0"]
    for name, run in runs.items():
        saved = json.loads((out / name / "mlflow_run.json").read_text(encoding="utf-8"))
        assert saved["run_id"] == run.info.run_id and run.info.status == "FINISHED"
        assert run.data.params["strategy"] == name.split("-")[0]
        assert run.data.metrics["final.iterations"] == 2


class StopAfterOne(LoopObserver):
    def on_checkpoint(self, state: LoopState[object]) -> None:
        raise KeyboardInterrupt  # as a kill would, once iteration 1 is saved


@pytest.mark.mlflow_server
def test_a_resumed_run_continues_its_mlflow_run(tracking_uri: str, tmp_path: Path) -> None:
    from combee.runs.tracking import MlflowTracker

    out = tmp_path / "run"
    with serve_in_thread(ace_responder) as server:
        llm = combee.llm.connect("sim", base_url=server.base_url)
        tracker = MlflowTracker(out, tracking_uri=tracking_uri, experiment="resumed")
        with pytest.raises(KeyboardInterrupt):
            combee.train(
                "formula", batch_size=2, train_limit=6, val_limit=0, test_limit=2, llm=llm,
                run_dir=out, observers=[tracker, StopAfterOne()],
            )  # fmt: skip
        (stopped,) = _runs(tracking_uri, "resumed")
        assert stopped.info.status == "KILLED"
        resumed = run_combee("train", "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    (run,) = _runs(tracking_uri, "resumed")  # the same run, not a second one
    assert run.info.run_id == stopped.info.run_id
    assert run.info.run_name == out.name
    assert run.info.status == "FINISHED"
    assert run.data.tags["combee.resumed_after"] == "1"
    history = MlflowClient(tracking_uri=tracking_uri).get_metric_history(
        run.info.run_id, "batch_size"
    )
    assert sorted(m.step for m in history) == [1, 2, 3]


def test_a_run_without_a_folder_is_named_by_its_method_task_and_strategy() -> None:
    from combee.runs.tracking import run_name_of

    config = {"method": "ace", "task": "formula", "strategy": "combee", "batch_size": 2}
    assert run_name_of(config, None) == "ace-formula-combee"
    assert run_name_of(config, Path("runs/formula-b40")) == "formula-b40"
    assert run_name_of({}, None) == "combee"


def _agent_traces(uri: str, experiment: str, base_url: str) -> list[str]:
    """Three agent attempts recorded by MLflow's OpenAI autologging, each with a tool call and
    its result; feedback on two of them. Their trace ids."""
    import openai

    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    mlflow.openai.autolog()
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    ids = []
    try:
        client = openai.OpenAI(base_url=base_url, api_key="sk-not-a-real-key")
        for number, city in enumerate(("Paris", "Oslo", "Lima")):
            messages: list[Any] = [
                {"role": "system", "content": "You answer weather questions with the tool."},
                {"role": "user", "content": f"What is the weather in {city}?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call-{number}",
                            "type": "function",
                            "function": {
                                "name": "get_weather",
                                "arguments": json.dumps({"city": city}),
                            },
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": f"call-{number}", "content": "18C, sunny"},
            ]
            client.chat.completions.create(model="sim", messages=messages, tools=tools)
            trace_id = mlflow.get_last_active_trace_id()
            assert trace_id is not None
            ids.append(trace_id)
        mlflow.flush_trace_async_logging()
        MlflowClient(uri).set_trace_tag(ids[0], "task_id", "weather-paris")
        mlflow.log_feedback(
            trace_id=ids[0], name="correct", value=True, rationale="gave the tool's forecast"
        )
        mlflow.log_feedback(
            trace_id=ids[1], name="correct", value=False, rationale="said it was raining"
        )
    finally:
        mlflow.openai.autolog(disable=True)
    return ids


@pytest.mark.mlflow_server
def test_traces_logged_by_mlflow_autologging_are_learned_from(
    tracking_uri: str, tmp_path: Path
) -> None:
    from combee.tasks.traces import read_traces

    with serve_in_thread(ace_responder) as server:
        ids = _agent_traces(tracking_uri, "agent", server.base_url)
        imported = read_traces(["mlflow:agent"], tracking_uri=tracking_uri)
        by_id = {t.id: t for t in imported.traces}
        assert sorted(by_id) == sorted(ids)
        first, second, third = (by_id[i] for i in ids)
        assert first.task_id == "weather-paris" and second.task_id == ids[1]
        assert first.outcome.success is True and "tool's forecast" in first.outcome.feedback
        assert second.outcome.success is False and "raining" in second.outcome.feedback
        assert not third.outcome.known  # no feedback: taught anyway
        roles = [m.role for m in first.messages]
        assert roles == ["system", "user", "assistant", "tool", "assistant"]
        (call,) = first.messages[2].tool_calls
        assert call.name == "get_weather" and call.arguments == {"city": "Paris"}
        assert first.messages[3].content == "18C, sunny"

        server.clear_records()
        llm = combee.llm.connect("sim", base_url=server.base_url)
        try:
            result = combee.learn(
                ["mlflow:agent"], tracking_uri=tracking_uri, llm=llm, batch_size=3,
                run_dir=tmp_path / "learn",
            )  # fmt: skip
        finally:
            combee.sync.run_sync(llm.aclose(), async_name="aclose")
        reflections = [r for r in server.records if r.schema_name == "reflector"]
    assert len(reflections) == 3  # each trace reaches one reflection
    prompts = "\n".join(json.dumps(r.body["messages"]) for r in reflections)
    assert "What is the weather in Oslo?" in prompts and "get_weather" in prompts
    assert result.summary["iterations"] == 1
    config = json.loads((tmp_path / "learn" / "config.json").read_text(encoding="utf-8"))
    assert config["trace_import"]["traces"] == 3
    since = read_traces(["mlflow:agent"], tracking_uri=tracking_uri, since="2000-01-01T00:00")
    assert len(since.traces) == 3
    with pytest.raises(ConfigError, match="holds no traces after 2999-01-01"):
        read_traces(["mlflow:agent"], tracking_uri=tracking_uri, since="2999-01-01")


@pytest.mark.mlflow_server
def test_errors_name_what_to_fix(tracking_uri: str) -> None:
    from combee.tasks.traces import read_traces

    with pytest.raises(ConfigError, match="traces names experiment 'nowhere'"):
        read_traces(["mlflow:nowhere"], tracking_uri=tracking_uri)
    with pytest.raises(ConfigError, match=r"tracking_uri http://127\.0\.0\.1:9 does not answer"):
        read_traces(["mlflow:agent"], tracking_uri="http://127.0.0.1:9")
    with pytest.raises(ConfigError, match="since 'yesterday' is not an ISO time"):
        read_traces(["mlflow:nowhere"], tracking_uri=tracking_uri, since="yesterday")
    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment("plain")
    with mlflow.start_span("step") as span:  # a trace without chat messages
        span.set_inputs({"question": "x"})
    mlflow.flush_trace_async_logging()
    with pytest.raises(DatasetError, match="has no span with chat messages"):
        read_traces(["mlflow:plain"], tracking_uri=tracking_uri)
    MlflowClient(tracking_uri).create_experiment("empty")
    with pytest.raises(ConfigError, match="mlflow:empty: the experiment holds no traces"):
        read_traces(["mlflow:empty"], tracking_uri=tracking_uri)


class KillAt(LoopObserver):
    """Kills the tracking server as iteration ``iteration`` starts."""

    def __init__(self, server: subprocess.Popen[bytes], iteration: int) -> None:
        self.server = server
        self.iteration = iteration

    def on_iteration_start(self, epoch: int, iteration: int, batch_size: int) -> None:
        if iteration == self.iteration:
            _stop(self.server, signal.SIGKILL)


@pytest.mark.mlflow_server
def test_a_tracking_server_that_dies_mid_run_costs_the_tracking_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from combee.runs.tracking import MlflowTracker

    if not shutil.which(MLFLOW):
        pytest.skip("the mlflow command is not installed")
    home = tmp_path / "mlflow"
    home.mkdir()
    server, uri = _start_server(home)
    settings: dict[str, Any] = {
        "batch_size": 2, "train_limit": 6, "val_limit": 0, "test_limit": 2, "seed": 0,
    }  # fmt: skip
    try:
        with serve_in_thread(ace_responder) as sim:
            llm = combee.llm.connect("sim", base_url=sim.base_url)
            tracker = MlflowTracker(tmp_path / "tracked", tracking_uri=uri, experiment="outage")
            with caplog.at_level(logging.WARNING, logger="combee.runs.tracking"):
                combee.train(
                    "formula", llm=llm, run_dir=tmp_path / "tracked",
                    observers=[KillAt(server, 2), tracker], **settings,
                )  # fmt: skip
            again = combee.llm.connect("sim", base_url=sim.base_url)  # one per event loop
            combee.train("formula", llm=again, run_dir=tmp_path / "plain", **settings)
    finally:
        _stop(server)
    warnings = [r.getMessage() for r in caplog.records if r.name == "combee.runs.tracking"]
    assert len(warnings) == 1, warnings
    # Iteration 1's metrics may still be on their way (the tracker never holds up the run).
    assert re.search(r"MLflow tracking stopped: logging iteration [12] failed", warnings[0])
    tracked = json.loads((tmp_path / "tracked" / "final_results.json").read_text())
    plain = json.loads((tmp_path / "plain" / "final_results.json").read_text())
    assert tracked["iterations"] == plain["iterations"] == 3
    assert (tmp_path / "tracked" / "playbook.txt").read_text() == (
        tmp_path / "plain" / "playbook.txt"
    ).read_text()


def test_a_tracking_uri_mlflow_cannot_open_is_one_line_before_anything_is_written(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    result = run_combee(
        "train", "--task", "formula", "--model", "sim", "--base-url", "http://127.0.0.1:9/v1",
        "--out", str(out), "--track", "mlflow", "--tracking-uri", "not a uri",
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "--tracking-uri not a uri cannot be opened by MLflow" in result.stderr, result.stderr
    assert not out.exists()


@pytest.mark.mlflow_server
def test_every_key_a_run_reports_is_a_metric_mlflow_takes(tracking_uri: str) -> None:
    """A run's results name lesson sources ``feedback+reflector``: MLflow refuses "+" in a
    metric name, so it is logged as ``..._reflector`` and the run ends FINISHED."""
    from combee.runs.tracking import MlflowTracker

    tracker = MlflowTracker(tracking_uri=tracking_uri, experiment="names")
    tracker.on_run_start({"method": "ace", "task": "traces"})
    summary = {"iterations": 2, "lesson_sources": {"feedback+reflector": 3, "reflector": 1},
               "screened_out_total": {"copied-from-data": 1}, "odd key (µ)": 2}  # fmt: skip
    tracker.on_run_end(summary)
    (run,) = _runs(tracking_uri, "names")
    assert run.info.status == "FINISHED"
    metrics = run.data.metrics
    assert metrics["final.lesson_sources.feedback_reflector"] == 3
    assert metrics["final.lesson_sources.reflector"] == 1
    assert metrics["final.screened_out_total.copied-from-data"] == 1
    assert metrics["final.odd key ___"] == 2
