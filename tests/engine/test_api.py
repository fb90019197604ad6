"""The Python front door: the docs' example as written, names and objects, typed errors."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import combee
from combee.errors import ConfigError, LLMCallError
from combee.llm import Endpoint, connect
from combee.sim import HTTPFault, RunningServer, serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.base import Sample
from tests.paths import ROOT

DOCS = ROOT / "docs" / "api.md"
DOCS_URL = "http://127.0.0.1:8000/v1"


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(ace_responder) as running:
        yield running


def first_python_block(text: str) -> str:
    match = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    assert match, "docs/api.md has no python example"
    return match.group(1)


def test_the_docs_example_runs_as_written(
    server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = first_python_block(DOCS.read_text(encoding="utf-8"))
    assert len(example.strip().splitlines()) <= 20
    assert DOCS_URL in example
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(example.replace(DOCS_URL, server.base_url), str(DOCS), "exec"), namespace)
    result = namespace["result"]
    assert isinstance(result, combee.TrainResult)
    run_dir = tmp_path / "runs" / "percent"
    assert result.run_dir == Path("runs/percent")
    assert result.test_accuracy is not None and 0.0 <= result.test_accuracy <= 1.0
    # 4 training samples in one batch (too small for the gate to hold one out of, the task
    # having no validation split): 4 rollouts, 4 reflections, floor(sqrt(4)) = 2 curators over
    # shuffled duplicates, then the 2 test rollouts.
    calls = result.llm_calls
    assert (calls["generator"], calls["reflector"], calls["curator"]) == (4 + 2, 4, 2)
    saved = json.loads((run_dir / "final_results.json").read_text())
    assert saved["llm_calls"] == calls and saved["test_samples"] == 2
    assert (run_dir / "playbook.txt").read_text() == result.text
    assert result.summary["playbook_bullets"] >= 1
    config = json.loads((run_dir / "config.json").read_text())
    assert config["task"] == "percent" and config["strategy"] == "combee"


def _samples(count: int) -> list[Sample]:
    return [
        Sample(f"s{i}", f"Use formula F{i % 2} to answer: case {i}?", "1") for i in range(count)
    ]


async def test_names_and_objects_are_interchangeable(server: RunningServer) -> None:
    task = combee.SampleTask("t", train=_samples(6), test=_samples(2)[:0], scorer=lambda p, s: 0.5)
    llm = connect("sim", base_url=server.base_url)
    try:
        by_name = await combee.train_async(task, strategy="naive", batch_size=3, llm=llm)
        by_object = await combee.train_async(
            task, strategy=combee.STRATEGIES.create("naive"), batch_size=3, llm=llm
        )
    finally:
        await llm.aclose()
    assert by_name.summary["iterations"] == by_object.summary["iterations"] == 2
    assert by_name.text == by_object.text
    assert by_name.run_dir is None


@pytest.mark.parametrize(
    ("settings", "setting"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": "lots"}, "batch_size"),
        ({"epochs": 0}, "epochs"),
        ({"strategy": "nope"}, "strategy"),
        ({"method": "nope"}, "method"),
        ({"temperature": float("nan")}, "temperature"),
        ({"train_limit": -1}, "train_limit"),
        ({"duplication": 1.5}, "duplication"),
        ({"fan_in": 1}, "fan_in"),
        ({"strategy": "sequential", "batch_size": "auto"}, "batch_size"),
        ({"progress": "yes"}, "progress"),
    ],
)
def test_a_bad_setting_raises_config_error_naming_the_parameter(
    settings: dict[str, Any], setting: str
) -> None:
    # Checked before any model is connected: the endpoint here does not exist.
    llm = Endpoint("sim", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError) as raised:
        combee.train("formula", llm=llm, **settings)
    assert raised.value.setting == setting
    assert str(raised.value).startswith(setting)
    assert "--" not in str(raised.value)


def test_an_unknown_task_names_the_choices() -> None:
    with pytest.raises(ConfigError, match="formula, finer, jsonl") as raised:
        combee.train("gsm8k", llm=Endpoint("sim", base_url="http://127.0.0.1:9/v1"))
    assert raised.value.setting == "task"


def test_endpoint_settings_are_checked_when_described() -> None:
    for settings, setting in (
        ({"concurrency": 0}, "concurrency"),
        ({"timeout_s": float("nan")}, "timeout_s"),
        ({"json_mode": "xml"}, "json_mode"),
        ({"client": "curl"}, "client"),
        ({"prices": (-1.0, 0.0)}, "prices"),
    ):
        with pytest.raises(ConfigError) as raised:
            Endpoint("sim", **settings)
        assert raised.value.setting == setting


async def test_a_failed_call_carries_its_role_kind_status_and_attempts() -> None:
    def refuse(body: Any) -> str:
        raise HTTPFault(400, "bad request")

    with serve_in_thread(refuse) as refusing:
        llm = connect("sim", base_url=refusing.base_url, max_retries=2)
        try:
            with pytest.raises(LLMCallError) as raised:
                await llm.complete([{"role": "user", "content": "hi"}], role="generator")
        finally:
            await llm.aclose()
    error = raised.value
    assert (error.role, error.status, error.attempts) == ("generator", 400, 1)
    assert error.kind is not None and error.kind not in ("429", "5xx")


def test_the_docs_progress_observer_runs_as_written(
    server: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    text = DOCS.read_text(encoding="utf-8")
    example = first_python_block(text[text.index("## Progress in a terminal") :])
    task = combee.SampleTask(
        "percent",
        train=[
            Sample(id=f"q{i}", question=f"What is {i}% of 100?", answer=str(i)) for i in range(4)
        ],
        test=[Sample(id="t", question="What is 5% of 100?", answer="5")],
        scorer=lambda prediction, sample: prediction == sample.answer,
    )
    llm = Endpoint("sim", base_url=server.base_url)
    namespace: dict[str, Any] = {"combee": combee, "task": task, "llm": llm}
    exec(compile(example, str(DOCS), "exec"), namespace)
    assert isinstance(namespace["result"], combee.TrainResult)
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in printed] == ["iteration 1", "test"]
    assert re.fullmatch(r"test: accuracy \d\.\d{3} on 1 samples", printed[1])


def test_a_start_playbook_that_does_not_parse_is_named_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "start.txt"
    bad.write_text("## STRATEGIES\nnot a bullet\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        combee.train(
            "formula",
            initial_context=bad,
            run_dir=tmp_path / "run",
            llm=Endpoint("sim", base_url="http://127.0.0.1:9/v1"),
        )
    assert raised.value.setting == "initial_context"
    assert f"{bad} is not a valid playbook: line 1" in str(raised.value)
    assert not (tmp_path / "run").exists()


async def test_a_sync_entry_point_inside_a_running_loop_runs_on_a_thread_of_its_own(
    server: RunningServer,
) -> None:
    # As in a notebook: this test's event loop is running while combee.train is called.
    threads: list[int] = []

    class Where(combee.LoopObserver):
        def on_run_start(self, config: Any) -> None:
            threads.append(threading.get_ident())

    result = combee.train(
        "formula", strategy="naive", batch_size=2, train_limit=2, val_limit=0, test_limit=1,
        llm=Endpoint("sim", base_url=server.base_url), observers=[Where()],
    )  # fmt: skip
    assert isinstance(result, combee.TrainResult)
    assert result.summary["test_samples"] == 1 and result.summary["iterations"] == 1
    assert len(threads) == 1 and threads[0] != threading.get_ident()
    # A user's error comes back from that thread as it was raised.
    with pytest.raises(ConfigError) as caught:
        combee.train("formula", llm=Endpoint("sim", base_url="http://127.0.0.1:9/v1"), epochs=0)
    assert caught.value.setting == "epochs"
