"""The gepa adapter on real Formula rows, over real HTTP to the scripted GEPA server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from combee.methods.gepa import COMPONENT, TaskAdapter
from combee.sim import RunningServer, SimConfig, peak_concurrency, serve_in_thread
from combee.sim.ace_script import topic_of, wrong_answer
from combee.sim.gates import wave
from combee.sim.gepa_script import gepa_responder, rule_for
from combee.tasks.base import Sample
from combee.tasks.formula import FormulaTask
from tests.methods.gepa.gepa_support import by_schema, llm_on_runner


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(gepa_responder) as running:
        yield running


@pytest.fixture(scope="module")
def rows() -> list[Sample]:
    return list(FormulaTask().load().train[:4])


def test_evaluate_scores_and_traces(server: RunningServer, rows: list[Sample]) -> None:
    server.reset(gepa_responder, SimConfig())
    task = FormulaTask()
    with llm_on_runner(server.base_url) as (runner, llm):
        adapter = TaskAdapter(llm, runner, task.score)
        plain = adapter.evaluate(rows, {COMPONENT: "Be careful."}, capture_traces=False)
        traced = adapter.evaluate(rows, {COMPONENT: "Be careful."}, capture_traces=True)
    assert plain.trajectories is None
    assert plain.outputs == [wrong_answer(s.question) for s in rows]
    assert plain.scores == [0.0] * len(rows)
    assert traced.trajectories is not None and len(traced.trajectories) == len(rows)
    calls = by_schema(server.records, "gepa_generator")
    assert len(calls) == 2 * len(rows)
    system = calls[0].body["messages"][0]
    assert system == {"role": "system", "content": "Be careful."}


def test_a_correct_answer_scores_one(server: RunningServer, rows: list[Sample]) -> None:
    server.reset(gepa_responder, SimConfig())
    row = rows[0]

    prompt = rule_for(topic_of(row.question, row.context))
    with llm_on_runner(server.base_url) as (runner, llm):
        adapter = TaskAdapter(llm, runner, FormulaTask().score)
        result = adapter.evaluate([row], {COMPONENT: prompt})
        gold = Sample(row.id, row.question, result.outputs[0], row.context)
        again = adapter.evaluate([gold], {COMPONENT: prompt})
    assert result.scores == [0.0]
    assert again.scores == [1.0]


def test_reflective_dataset_has_inputs_output_and_feedback(
    server: RunningServer, rows: list[Sample]
) -> None:
    server.reset(gepa_responder, SimConfig())
    with llm_on_runner(server.base_url) as (runner, llm):
        adapter = TaskAdapter(llm, runner, FormulaTask().score)
        batch = adapter.evaluate(rows, {COMPONENT: "Be careful."}, capture_traces=True)
        dataset = adapter.make_reflective_dataset(
            {COMPONENT: "Be careful."}, batch, [COMPONENT, "other"]
        )
    assert list(dataset) == [COMPONENT]
    records = dataset[COMPONENT]
    assert len(records) == len(rows)
    for record, sample in zip(records, rows, strict=True):
        assert record["Inputs"] == {"context": sample.context, "question": sample.question}
        assert record["Generated Outputs"]["final_answer"] == wrong_answer(sample.question)
        assert record["Feedback"].startswith("Wrong")
        assert repr(sample.answer) in record["Feedback"]
        assert f"expected {sample.answer}" in record["Feedback"]


def test_batch_evaluate_is_one_concurrent_wave(server: RunningServer, rows: list[Sample]) -> None:
    # The server holds the 8 rollouts (2 candidates x 4 rows) until all have arrived.
    server.reset(gepa_responder, SimConfig(gates=(wave("gepa_generator", 8),)))
    items = [({COMPONENT: "First."}, rows), ({COMPONENT: "Second."}, rows)]
    with llm_on_runner(server.base_url) as (runner, llm):
        adapter = TaskAdapter(llm, runner, FormulaTask().score)
        results = adapter.batch_evaluate(items, capture_traces=True)
    assert len(results) == 2
    assert all(r.trajectories is not None and len(r.trajectories) == 4 for r in results)
    assert peak_concurrency(server.records) == 8


def test_a_failed_generator_call_scores_wrong_with_its_reason(
    server: RunningServer, rows: list[Sample]
) -> None:
    server.reset(gepa_responder, SimConfig(rate_500=1.0))
    with llm_on_runner(server.base_url, max_retries=0) as (runner, llm):
        adapter = TaskAdapter(llm, runner, FormulaTask().score)
        batch = adapter.evaluate(rows[:2], {COMPONENT: "x"}, capture_traces=True)
        dataset = adapter.make_reflective_dataset({COMPONENT: "x"}, batch, [COMPONENT])
    assert batch.scores == [0.0, 0.0]
    assert all(r["Feedback"].startswith("No answer was produced") for r in dataset[COMPONENT])
