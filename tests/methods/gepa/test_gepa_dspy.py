"""The DSPy hook: ``dspy.GEPA(instruction_proposer=CombeeInstructionProposer(...))``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from combee.methods.gepa import CombeeInstructionProposer
from combee.sim import RunningServer, SimConfig, serve_in_thread
from combee.sim.gepa_script import gepa_responder
from combee.strategies import CombeeStrategy, NaiveStrategy
from tests.methods.gepa.gepa_support import by_schema, records, user_text

dspy = pytest.importorskip("dspy")


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(gepa_responder, SimConfig()) as running:
        yield running


def proposer(server: RunningServer, **options: Any) -> CombeeInstructionProposer:
    return CombeeInstructionProposer.from_endpoint(
        "sim", base_url=server.base_url, seed=1, **options
    )


def test_the_proposer_answers_gepas_proposal_protocol(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig())
    with proposer(server) as propose:
        default = propose.reflection.strategy
        assert isinstance(default, CombeeStrategy) and (
            default.settings.duplication,
            default.settings.fan_in,
        ) == (2, 32)
        texts = propose(
            candidate={"a": "Solve it.", "b": "Untouched."},
            reflective_dataset={"a": records(9)},
            components_to_update=["a"],
        )
    assert list(texts) == ["a"]
    assert texts["a"].startswith("Solve it.") and "Topic 8" in texts["a"]
    assert len(by_schema(server.records, "gepa_proposal")) == 3
    assert len(by_schema(server.records, "gepa_merge")) == 1


def test_the_proposer_reduces_with_the_strategy_it_is_given(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig())
    with proposer(server, strategy=NaiveStrategy()) as propose:
        texts = propose(
            candidate={"a": "Solve it."},
            reflective_dataset={"a": records(9)},
            components_to_update=["a"],
        )
    assert "Topic 8" in texts["a"]
    assert [r.schema_name for r in server.records] == ["gepa_proposal"]


def test_dspy_gepa_calls_the_proposer(server: RunningServer) -> None:
    server.reset(gepa_responder, SimConfig())
    questions = [f"Use formula Topic {i} to answer: the value for case {i}?" for i in range(6)]
    lm = dspy.utils.DummyLM({q: {"answer": "0"} for q in questions})
    examples = [
        dspy.Example(question=q, answer=str(i + 1)).with_inputs("question")
        for i, q in enumerate(questions)
    ]

    def metric(
        gold: Any, pred: Any, trace: Any = None, pred_name: Any = None, pred_trace: Any = None
    ) -> Any:
        right = pred.answer == gold.answer
        feedback = "Correct." if right else f"Wrong: the correct answer is {gold.answer}."
        return dspy.Prediction(score=float(right), feedback=feedback)

    program = dspy.Predict("question -> answer")
    program.signature = program.signature.with_instructions("Answer the question.")
    with proposer(server) as propose, dspy.context(lm=lm):
        optimizer = dspy.GEPA(
            metric=metric,
            instruction_proposer=propose,
            max_metric_calls=30,
            reflection_minibatch_size=4,
            num_threads=1,
        )
        optimizer.compile(program, trainset=examples[:4], valset=examples[4:])
    proposals = by_schema(server.records, "gepa_proposal")
    assert len(proposals) >= 2
    text = user_text(proposals[0])
    assert "Answer the question." in text
    assert "Feedback" in text and "Wrong: the correct answer is" in text
    assert len(by_schema(server.records, "gepa_merge")) >= 1
