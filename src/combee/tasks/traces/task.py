"""Recorded traces as a task: each trace is one training sample; held-out tasks stay out."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from combee.errors import ConfigError
from combee.tasks.base import Sample, Score, Splits
from combee.tasks.traces.model import Trace


@dataclass
class TraceTask:
    """A task whose training samples are recorded trajectories.

    ``holdout_tasks`` task ids, chosen by ``seed``, are kept out of learning (all their traces);
    :attr:`held_out` lists them for an offline evaluation. ``limit``: learn from only that many
    traces, chosen by ``seed`` one task at a time (a first trace of every task before any
    second). Nothing is generated, so the test split is empty: a trace-learned playbook is
    judged offline or in the user's environment.
    """

    traces: Sequence[Trace]
    holdout_tasks: int = 0
    seed: int = 0
    limit: int | None = None
    name: str = "traces"
    held_out: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        task_ids = sorted({trace.task_id for trace in self.traces})
        if not 0 <= self.holdout_tasks < len(task_ids):
            raise ConfigError(
                f"must be from 0 to {len(task_ids) - 1}: the traces hold {len(task_ids)} "
                f"task ids (got {self.holdout_tasks})",
                setting="holdout_tasks",
            )
        self.held_out = sorted(random.Random(self.seed).sample(task_ids, self.holdout_tasks))
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"must be at least 1 (got {self.limit})", setting="limit")

    def load(self) -> Splits:
        held = set(self.held_out)
        learned = [t for t in self.traces if t.task_id not in held]
        if self.limit is not None and self.limit < len(learned):
            learned = _spread(learned, self.limit, random.Random(self.seed + 1))
        return Splits(train=[trace_sample(t) for t in learned], val=[], test=[])

    def held_out_traces(self) -> list[Trace]:
        held = set(self.held_out)
        return [t for t in self.traces if t.task_id in held]

    def score(self, prediction: str, sample: Sample) -> Score:
        """The recorded outcome (nothing is predicted when learning from traces)."""
        return recorded_score(sample.meta["trace"])


def _spread(traces: Sequence[Trace], count: int, rng: random.Random) -> list[Trace]:
    """``count`` of ``traces``, one task at a time in a shuffled order, kept in file order."""
    by_task: dict[str, list[Trace]] = {}
    for trace in traces:
        by_task.setdefault(trace.task_id, []).append(trace)
    queues = [rng.sample(group, len(group)) for group in by_task.values()]
    rng.shuffle(queues)
    chosen: set[str] = set()
    while len(chosen) < count:
        for queue in queues:
            if queue and len(chosen) < count:
                chosen.add(queue.pop().id)
    return [t for t in traces if t.id in chosen]


def trace_sample(trace: Trace) -> Sample:
    first_user = next((m.content for m in trace.messages if m.role == "user"), "")
    return Sample(
        id=trace.id,
        question=first_user,
        answer="",
        meta={"trace": trace, "task_id": trace.task_id},
    )


def recorded_score(trace: Trace) -> Score:
    outcome = trace.outcome
    success = bool(outcome.success)
    feedback = outcome.feedback or ("no outcome recorded" if not outcome.known else "")
    return Score(correct=success, matched=int(success), total=1, feedback=feedback)
