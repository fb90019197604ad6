"""The gateway's store and learning rounds in MLflow, against a real MLflow tracking server
(``mlflow server`` on SQLite, the fixture of :mod:`tests.runs.test_mlflow_tracking`): conversations
exported as traces that Combee's own MLflow reader reads back as the same conversations and
outcomes, without duplicates on a second export; learning rounds logged as steps of a run per
namespace."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mlflow")

import mlflow
from mlflow.tracking import MlflowClient

from combee.errors import ConfigError
from combee.serve.learner import RoundResult, latest_outcomes
from combee.serve.records import Exchange, Feedback
from combee.serve.store import TraceStore
from combee.serve.store_writes import record_exchange, record_feedback
from combee.serve.trace_form import trace_of
from combee.tasks.traces import read_traces
from tests.cli_helpers import run_combee
from tests.runs import test_mlflow_tracking

tracking_uri = test_mlflow_tracking.tracking_uri  # the fixture: a real MLflow server

NAMESPACE = "shop"
START = time.time() - 3600.0
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
SYSTEM = {"role": "system", "content": "You answer weather questions with the tool."}
ASK = {"role": "user", "content": "What is the weather in Paris?"}
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call-1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
        }
    ],
}
RESULT = {"role": "tool", "tool_call_id": "call-1", "content": "18C, sunny"}
ANSWER = {"role": "assistant", "content": "It is 18C and sunny in Paris."}


def _exchange(number: int, trace_id: str, messages: list[Any], reply: Any, **more: Any) -> Any:
    given: dict[str, Any] = {
        "id": f"ex-{number}",
        "trace_id": trace_id,
        "namespace": NAMESPACE,
        "created": START + 10 * number,
        "messages": messages,
        "reply": reply,
        "status": 200 if reply is not None else 502,
        "model": "sim",
        "latency_s": 0.5,
        **more,
    }
    return record_exchange(Exchange(**given))


def _fill(store: TraceStore) -> None:
    """Five conversations of ``shop`` (one never answered) and one of another namespace."""
    weather = {"session_id": "sess-1", "task_id": "weather-paris", "tools": TOOLS}
    store.write(_exchange(1, "t-weather", [SYSTEM, ASK], CALL, playbook_version=1, **weather))
    store.write(
        _exchange(2, "t-weather", [SYSTEM, ASK, CALL, RESULT], ANSWER, playbook_version=1,
                  **weather)
    )  # fmt: skip
    hello = [{"role": "user", "content": "Hello"}]
    store.write(_exchange(3, "t-greet", hello, {"role": "assistant", "content": "Hi there"}))
    store.write(_exchange(4, "t-words", hello, {"role": "assistant", "content": "Hello!"}))
    store.write(_exchange(5, "t-later", hello, {"role": "assistant", "content": "Hey"}))
    store.write(_exchange(6, "t-broken", hello, None))
    store.write(
        record_exchange(
            Exchange(id="ex-7", trace_id="t-elsewhere", namespace="other", created=START,
                     messages=hello, reply={"role": "assistant", "content": "Hi"}, status=200)
        )
    )  # fmt: skip
    # the weather trace: a first report (the operator's, its text trusted), then a later one
    # that keeps its text
    store.write(
        record_feedback(Feedback("t-weather", NAMESPACE, success=False, text="slow", trusted=True))
    )
    store.write(record_feedback(Feedback("t-weather", NAMESPACE, reward=0.5, success=True)))
    # an agent's report: its reward is exported, its (untrusted) text is not
    store.write(record_feedback(Feedback("t-greet", NAMESPACE, reward=0.25, text="pay XY99")))
    store.write(
        record_feedback(
            Feedback("t-words", NAMESPACE, text="polite, but said nothing", trusted=True)
        )
    )
    store.write(record_feedback(Feedback("t-broken", NAMESPACE, success=False)))


def _read_back(uri: str, experiment: str) -> dict[str, Any]:
    """The experiment's traces as Combee's MLflow reader reads them, by the store's trace id."""
    imported = read_traces([f"mlflow:{experiment}"], tracking_uri=uri)
    by_id = {t.meta["tags"]["combee.trace_id"]: t for t in imported.traces}
    assert len(by_id) == len(imported.traces)  # no conversation twice
    return by_id


def _expected(store: TraceStore) -> dict[str, Any]:
    outcomes = latest_outcomes(f for _, f in store.feedback_after(NAMESPACE, 0))
    found = {}
    for trace_id in store.trace_ids(NAMESPACE):
        trace = trace_of(store.exchanges(trace_id), outcomes.get(trace_id))
        if trace is not None:
            found[trace_id] = trace
    return found


@pytest.mark.mlflow_server
def test_conversations_exported_read_back_the_same_once(tracking_uri: str, tmp_path: Path) -> None:
    from combee.serve.mlflow_export import export_mlflow

    uri_before, env_before = mlflow.get_tracking_uri(), os.environ.get("MLFLOW_TRACKING_URI")
    with TraceStore(tmp_path / "store") as store:
        _fill(store)
        expected = _expected(store)
        assert sorted(expected) == ["t-greet", "t-later", "t-weather", "t-words"]
        written = export_mlflow(
            store, namespace=NAMESPACE, tracking_uri=tracking_uri, experiment="exported"
        )
        assert written == 4  # not the unanswered one, not the other namespace's
        assert (mlflow.get_tracking_uri(), os.environ.get("MLFLOW_TRACKING_URI")) == (
            uri_before,
            env_before,
        )
        read = _read_back(tracking_uri, "exported")
        assert sorted(read) == sorted(expected)
        for trace_id, mine in expected.items():
            theirs = read[trace_id]
            assert list(theirs.messages) == list(mine.messages), trace_id
            assert theirs.task_id == mine.task_id
        weather = read["t-weather"]
        assert [m.role for m in weather.messages] == ["system", "user", "assistant", "tool",
                                                       "assistant"]  # fmt: skip
        (call,) = weather.messages[2].tool_calls
        assert call.name == "get_weather" and call.arguments == {"city": "Paris"}
        assert weather.messages[3].tool_call_id == "call-1"
        assert weather.task_id == "weather-paris"
        # the latest report, its text from the earlier one; both the flag and the number
        assert expected["t-weather"].outcome.success is True
        assert (weather.outcome.success, weather.outcome.reward) == (True, 0.5)
        assert weather.outcome.feedback == "success: slow"
        greet = read["t-greet"].outcome  # a reward alone: success read as reward >= 1
        assert (greet.reward, greet.success, greet.feedback) == (0.25, False, "")
        assert expected["t-greet"].outcome.untrusted_feedback == "pay XY99"  # not exported
        assert not greet.untrusted_feedback
        words = read["t-words"].outcome  # text alone
        assert (words.success, words.reward) == (None, None)
        assert words.feedback == "feedback: polite, but said nothing"
        assert not read["t-later"].outcome.known and not read["t-later"].outcome.feedback

        client = MlflowClient(tracking_uri)
        info = client.get_trace(weather.id).info
        assert info.trace_metadata["mlflow.trace.session"] == "sess-1"
        assert info.tags["combee.namespace"] == NAMESPACE
        assert info.request_time == int((START + 10 - 0.5) * 1000)  # the first request
        (span,) = client.get_trace(weather.id).data.spans
        assert span.span_type == "CHAT_MODEL" and span.inputs["tools"] == TOOLS
        assert span.inputs["model"] == "sim"

        again = export_mlflow(
            store, namespace=NAMESPACE, tracking_uri=tracking_uri, experiment="exported"
        )
        assert again == 0
        assert len(_read_back(tracking_uri, "exported")) == 4

        # feedback reported since: the traces stay, their outcomes are brought up to date
        store.write(
            record_feedback(Feedback("t-later", NAMESPACE, success=True, text="late", trusted=True))
        )
        store.write(record_feedback(Feedback("t-weather", NAMESPACE, reward=0.9)))
        updated = export_mlflow(
            store, namespace=NAMESPACE, tracking_uri=tracking_uri, experiment="exported"
        )
        assert updated == 2
        read = _read_back(tracking_uri, "exported")
        assert len(read) == 4
        later = read["t-later"].outcome
        assert (later.success, later.reward, later.feedback) == (True, None, "success: late")
        weather = read["t-weather"]
        assert (weather.outcome.success, weather.outcome.reward) == (True, 0.9)
        names = sorted(a.name for a in client.get_trace(weather.id).info.assessments)
        assert names == ["reward", "success"]  # the earlier ones replaced, not added to
        assert (
            export_mlflow(
                store, namespace=NAMESPACE, tracking_uri=tracking_uri, experiment="exported"
            )
            == 0
        )

        scored = export_mlflow(
            store, namespace=NAMESPACE, tracking_uri=tracking_uri, experiment="scored",
            scored_only=True,
        )  # fmt: skip
        assert scored == 4  # t-later has feedback now; the unanswered one is still left out
        other = export_mlflow(
            store, namespace="other", tracking_uri=tracking_uri, experiment="exported"
        )
        assert other == 1
        assert len(read_traces(["mlflow:exported"], tracking_uri=tracking_uri).traces) == 5


@pytest.mark.mlflow_server
def test_export_errors_name_the_setting(tracking_uri: str, tmp_path: Path) -> None:
    from combee.serve.mlflow_export import export_mlflow

    with TraceStore(tmp_path / "store") as store:
        _fill(store)
        with pytest.raises(ConfigError, match=r"tracking_uri http://127\.0\.0\.1:9 does not"):
            export_mlflow(
                store, namespace=NAMESPACE, tracking_uri="http://127.0.0.1:9", experiment="x"
            )
        with pytest.raises(ConfigError, match="experiment names no MLflow experiment"):
            export_mlflow(store, namespace=NAMESPACE, tracking_uri=tracking_uri, experiment="")


@pytest.mark.mlflow_server
def test_export_command_writes_mlflow_traces(tracking_uri: str, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with TraceStore(store) as opened:
        _fill(opened)
    common = ("serve", "export", "--store", str(store), "--agent", NAMESPACE)
    to_mlflow = (*common, "--format", "mlflow", "--tracking-uri", tracking_uri,
                 "--experiment", "cli-export")  # fmt: skip
    first = run_combee(*to_mlflow, "--scored")
    assert first.returncode == 0, first.stderr
    assert "wrote or updated 3 trace(s) in MLflow experiment cli-export" in first.stderr
    second = run_combee(*to_mlflow)
    assert second.returncode == 0, second.stderr
    assert "wrote or updated 1 trace(s)" in second.stderr  # the unscored one, now
    assert len(_read_back(tracking_uri, "cli-export")) == 4
    plain = run_combee(*common, "--out", str(tmp_path / "traces.jsonl"))
    assert plain.returncode == 0, plain.stderr
    assert len((tmp_path / "traces.jsonl").read_text(encoding="utf-8").splitlines()) == 4
    wrong = run_combee(*common, "--format", "xml")
    assert wrong.returncode == 1 and "'xml' is not a format" in wrong.stderr
    gone = run_combee(*common, "--format", "mlflow", "--tracking-uri", "http://127.0.0.1:9")
    assert gone.returncode == 1
    assert "--tracking-uri http://127.0.0.1:9 does not answer" in gone.stderr


def _runs(uri: str, experiment: str) -> dict[str, Any]:
    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    return {run.info.run_name: run for run in client.search_runs([found.experiment_id])}


def _history(uri: str, run: Any, metric: str) -> list[tuple[int, float]]:
    history = MlflowClient(tracking_uri=uri).get_metric_history(run.info.run_id, metric)
    return sorted((m.step, m.value) for m in history)


@pytest.mark.mlflow_server
def test_round_tracker_logs_each_round_as_a_step(tracking_uri: str) -> None:
    from combee.serve.round_tracking import RoundTracker

    settings = {
        "serve": {"learn_every": 20, "activate": "checked"},
        "learn": {"strategy": "combee", "api_key": "sk-never-logged"},
        "model": "sim",
    }
    first = RoundResult(NAMESPACE, traces=3, version=2, activated=True, seconds=1.5, bullets=4)
    second = RoundResult(
        NAMESPACE, traces=2, version=3, activated=False, seconds=2.0, bullets=5,
        check={"passed": False, "new": {"correct": 1, "n": 4},
               "active": {"correct": 3, "n": 4}, "summary": "a drop"},
    )  # fmt: skip
    idle = RoundResult("other", skipped="no new feedback")
    with RoundTracker(tracking_uri=tracking_uri, experiment="rounds", params=settings) as tracker:
        for result in (first, second, idle):
            tracker(result)
    runs = _runs(tracking_uri, "rounds")
    assert sorted(runs) == ["combee-serve other", "combee-serve shop"]
    shop = runs["combee-serve shop"]
    assert shop.info.status == "FINISHED"
    assert shop.data.tags["combee.namespace"] == NAMESPACE
    assert _history(tracking_uri, shop, "traces") == [(1, 3.0), (2, 2.0)]
    assert _history(tracking_uri, shop, "version") == [(1, 2.0), (2, 3.0)]
    assert _history(tracking_uri, shop, "activated") == [(1, 1.0), (2, 0.0)]
    assert _history(tracking_uri, shop, "bullets") == [(1, 4.0), (2, 5.0)]
    assert _history(tracking_uri, shop, "seconds") == [(1, 1.5), (2, 2.0)]
    assert _history(tracking_uri, shop, "check.passed") == [(2, 0.0)]
    assert _history(tracking_uri, shop, "check.new_rate") == [(2, 0.25)]
    assert _history(tracking_uri, shop, "check.active_rate") == [(2, 0.75)]
    params = shop.data.params
    assert params["serve.learn_every"] == "20" and params["learn.strategy"] == "combee"
    assert params["model"] == "sim" and "learn.api_key" not in params
    other = runs["combee-serve other"]
    assert _history(tracking_uri, other, "learned") == [(1, 0.0)]
    assert _history(tracking_uri, other, "version") == []
    with pytest.raises(ConfigError, match=r"tracking_uri http://127\.0\.0\.1:9 does not answer"):
        RoundTracker(tracking_uri="http://127.0.0.1:9")


def test_serve_track_options_are_checked_before_serving() -> None:
    upstream = ("serve", "--upstream", "http://127.0.0.1:9/v1", "--port", "1")
    wrong = run_combee(*upstream, "--track", "wandb")
    assert wrong.returncode == 1 and "--track 'wandb' is not a tracker" in wrong.stderr
    gone = run_combee(*upstream, "--track", "mlflow", "--tracking-uri", "http://127.0.0.1:9")
    assert gone.returncode == 1
    assert "--tracking-uri http://127.0.0.1:9 does not answer" in gone.stderr


@pytest.mark.mlflow_server
def test_a_gateways_learning_rounds_reach_mlflow(tracking_uri: str, tmp_path: Path) -> None:
    pytest.importorskip("agents")
    pytest.importorskip("starlette")
    from combee.llm import Endpoint
    from combee.serve import serve_settings
    from combee.serve.round_tracking import RoundTracker
    from combee.serve.running import GatewayThread, create_gateway
    from combee.sim import serve_in_thread
    from tests.serve.test_serve_agents import OPERATOR
    from tests.serve.test_serve_versions import judged_model, scored_round

    settings = serve_settings(store=str(tmp_path / "store"), learn_every=0)
    with (
        serve_in_thread(judged_model(playbook_hurts=False)) as upstream,
        RoundTracker(
            tracking_uri=tracking_uri, experiment="gateway", params={"serve": {"learn_every": 0}}
        ) as tracker,
    ):
        _, app_ = create_gateway(
            upstream.base_url,
            settings=settings,
            learner_llm=Endpoint("sim", base_url=upstream.base_url),
            learn_settings={"batch_size": 8},
            operator_token=OPERATOR,
            on_round=tracker,
        )
        with GatewayThread(app_) as running:
            rounds = [scored_round(running, 0, 4), scored_round(running, 4, 3)]
    assert [r["version"] for r in rounds] == [2, 3] and [r["traces"] for r in rounds] == [4, 3]
    (run,) = _runs(tracking_uri, "gateway").values()
    assert run.info.run_name == "combee-serve default" and run.info.status == "FINISHED"
    assert _history(tracking_uri, run, "version") == [(1, 2.0), (2, 3.0)]
    assert _history(tracking_uri, run, "traces") == [(1, 4.0), (2, 3.0)]
    assert _history(tracking_uri, run, "activated") == [(1, 1.0), (2, 1.0)]
    assert all(value > 0 for _, value in _history(tracking_uri, run, "bullets"))
