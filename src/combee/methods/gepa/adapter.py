"""A gepa adapter for Combee tasks (formula, finer, JSONL): the candidate is a system prompt."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from gepa.core.adapter import EvaluationBatch

from combee.core.executor import AsyncioExecutor, Executor, MapOutcome, all_or_none
from combee.core.types import Reflection, Trajectory
from combee.llm.types import DEFAULT_MAX_TOKENS, ChatModel
from combee.methods.gepa import prompts, schemas
from combee.methods.gepa.runner import LoopRunner
from combee.tasks.base import Sample, Score

log = logging.getLogger(__name__)
T = TypeVar("T")

COMPONENT = "system_prompt"
"""The one component a task candidate has."""

GENERATOR_ROLE = "generator"

DEFAULT_SEED_PROMPT = (
    "You are a careful problem solver. Read the context and the question, reason step by step, "
    "and give the final answer exactly in the format the question asks for."
)


@dataclass(frozen=True)
class Attempt:
    """The generator's attempt on one sample under one system prompt, scored."""

    sample: Sample
    answer: str
    reasoning: str
    score: Score
    error: str | None = None
    """Why no answer came back (the call failed for good); the attempt then scores as wrong."""

    @property
    def value(self) -> float:
        """The score gepa sums and averages: the matched fraction (FiNER: entity level)."""
        if self.score.total:
            return self.score.matched / self.score.total
        return 1.0 if self.score.correct else 0.0


class PromptGenerator:
    """The generator under a candidate system prompt, as the map step's executor runs it."""

    def __init__(
        self,
        llm: ChatModel,
        score: Callable[[str, Sample], Score],
        *,
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self.llm = llm
        self.score = score
        self.temperature = temperature
        self.max_tokens = max_tokens

    async def rollout(self, context: str, sample: Sample) -> Trajectory:
        reply, _ = await self.llm.complete_json(
            prompts.generator_messages(context, sample),
            role=GENERATOR_ROLE,
            schema=schemas.GENERATOR,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        answer = str(reply.get("final_answer", "")).strip()
        return Trajectory(
            sample,
            answer,
            self.score(answer, sample),
            {"reasoning": str(reply.get("reasoning", ""))},
        )

    async def reflect(self, context: str, trajectory: Trajectory) -> Reflection:
        raise NotImplementedError("GEPA reflects through its reflection step, not per sample")


class TaskAdapter:
    """``GEPAAdapter[Sample, Attempt, str]``: runs the generator with the candidate's system
    prompt on the run's executor, concurrently over each batch, and builds reflective records
    from the scores.

    ``llm`` must belong to ``runner``'s loop; :meth:`evaluate_async` is the same evaluation for
    callers already on that loop. Evaluations whose samples are all in ``validation`` (compared
    by identity) add their wall time to :attr:`validation_seconds`, so iteration timings can
    leave out GEPA's validation of accepted candidates.
    """

    propose_new_texts = None

    def __init__(
        self,
        llm: ChatModel,
        runner: LoopRunner,
        score: Callable[[str, Sample], Score],
        *,
        component: str = COMPONENT,
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        executor: Executor | None = None,
        validation: Sequence[Sample] = (),
    ) -> None:
        self.generator = PromptGenerator(llm, score, temperature=temperature, max_tokens=max_tokens)
        self.runner = runner
        self.score = score
        self.component = component
        self.executor: Executor = executor or AsyncioExecutor()
        self.validation_ids = {id(sample) for sample in validation}
        self.validation_seconds = 0.0

    def evaluate(
        self, batch: list[Sample], candidate: dict[str, str], capture_traces: bool = False
    ) -> EvaluationBatch[Attempt, str]:
        return self.runner.run(
            self._timed([batch], self.evaluate_async(batch, candidate, capture_traces))
        )

    def batch_evaluate(
        self, items: list[tuple[dict[str, str], list[Sample]]], capture_traces: bool = True
    ) -> list[EvaluationBatch[Attempt, str]]:
        """Every (candidate, batch) pair at once: all their rollouts form one concurrent wave."""
        batches = [batch for _, batch in items]
        return self.runner.run(self._timed(batches, self._evaluate_all(items, capture_traces)))

    async def _timed(self, batches: Sequence[Sequence[Sample]], work: Awaitable[T]) -> T:
        started = time.perf_counter()
        try:
            return await work
        finally:
            samples = [sample for batch in batches for sample in batch]
            if samples and all(id(sample) in self.validation_ids for sample in samples):
                self.validation_seconds += time.perf_counter() - started

    async def _evaluate_all(
        self, items: Sequence[tuple[dict[str, str], list[Sample]]], capture_traces: bool
    ) -> list[EvaluationBatch[Attempt, str]]:
        return await all_or_none(
            self.evaluate_async(batch, cand, capture_traces) for cand, batch in items
        )

    async def evaluate_async(
        self, batch: Sequence[Sample], candidate: Mapping[str, str], capture_traces: bool = False
    ) -> EvaluationBatch[Attempt, str]:
        attempts = await self.attempts(batch, candidate[self.component])
        return EvaluationBatch(
            outputs=[a.answer for a in attempts],
            scores=[a.value for a in attempts],
            trajectories=attempts if capture_traces else None,
        )

    async def attempts(self, samples: Sequence[Sample], system_prompt: str) -> list[Attempt]:
        outcomes = await self.executor.map(
            self.generator, system_prompt, samples, reflect=False, score=self.score
        )
        return [_attempt(outcome, self.score) for outcome in outcomes]

    def make_reflective_dataset(
        self,
        candidate: dict[str, str],
        eval_batch: EvaluationBatch[Attempt, str],
        components_to_update: list[str],
    ) -> dict[str, list[dict[str, Any]]]:
        attempts = eval_batch.trajectories or []
        records = [reflective_record(a) for a in attempts]
        return {name: list(records) for name in components_to_update if name == self.component}


def _attempt(outcome: MapOutcome, score: Callable[[str, Sample], Score]) -> Attempt:
    sample, trajectory = outcome.sample, outcome.trajectory
    if trajectory is None:
        error = outcome.failure.error if outcome.failure is not None else "no answer"
        log.warning("generator call for %s failed; scored as wrong: %s", sample.id, error)
        return Attempt(sample, "", "", score("", sample), error=error)
    reasoning = str(trajectory.details.get("reasoning", ""))
    return Attempt(sample, trajectory.prediction, reasoning, trajectory.score)


def reflective_record(attempt: Attempt) -> dict[str, Any]:
    """The inputs, the generated output and feedback (gold answer, why it was wrong)."""
    sample = attempt.sample
    inputs = {"question": sample.question}
    if sample.context:
        inputs = {"context": sample.context, **inputs}
    outputs = {"reasoning": attempt.reasoning, "final_answer": attempt.answer}
    return {"Inputs": inputs, "Generated Outputs": outputs, "Feedback": feedback(attempt)}


def feedback(attempt: Attempt) -> str:
    score = attempt.score
    detail = f" {score.feedback}" if score.feedback else ""
    gold = attempt.sample.answer
    if attempt.error is not None:
        return f"No answer was produced ({attempt.error}). The correct answer is {gold!r}."
    if score.correct:
        return f"Correct: the answer matches the gold answer {gold!r}.{detail}"
    return (
        f"Wrong: the answer {attempt.answer!r} does not match the correct answer {gold!r}.{detail}"
    )
