"""ACE on recorded trajectories: the "rollout" is the record, the reflector reads the trace.

Everything after reflection (curator, merge, strategies, batch size controller, run directory)
is ACE's as it is. With ``contrast``, a trace is shown beside a recorded trace of the same task
with the other outcome (a success beside a failure), when the batch's traces hold one.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from combee.core.types import Reflection, Trajectory
from combee.llm.placeholders import Placeholders
from combee.llm.types import ChatModel
from combee.methods.ace import schemas
from combee.methods.ace.grounding import EVIDENCE_CHARS
from combee.methods.ace.method import AceMethod
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.trace_prompts import outcome_text, trace_reflector_messages
from combee.tasks.base import Sample, Score
from combee.tasks.traces.hidden import hidden_trace
from combee.tasks.traces.model import Trace
from combee.tasks.traces.settings import LearnSettings
from combee.tasks.traces.task import recorded_score
from combee.tasks.traces.transcript import render_transcript

log = logging.getLogger(__name__)

TRANSCRIPT_TOKENS: int = LearnSettings.transcript_tokens
"""The trajectory's share of the reflector's prompt, in tokens (the rest is the playbook)."""


class TraceAceMethod(AceMethod):
    """:class:`AceMethod` whose samples carry a recorded :class:`Trace` (``sample.meta``)."""

    CALLS = dataclasses.replace(AceMethod.CALLS, rollout={})
    """A recorded trace is its own rollout: no call."""

    def __init__(
        self,
        llm: ChatModel,
        *,
        traces: Sequence[Trace] = (),
        transcript_tokens: int = TRANSCRIPT_TOKENS,
        contrast: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(llm, _recorded, **options)
        self.transcript_tokens = transcript_tokens
        self.contrast = contrast
        self._by_task: dict[str, list[Trace]] = {}
        for trace in traces:
            self._by_task.setdefault(trace.task_id, []).append(trace)
        self.cut_traces: dict[str, tuple[str, ...]] = {}
        """Trace id -> what was cut to fit its transcript (only traces that were cut)."""
        self.placeholders = Placeholders()
        """The run's placeholders: what the reflector reads of every trace (and an agent's
        episode, as stored) names each secret and address by its own placeholder."""

    async def rollout(self, context: Playbook, sample: Sample) -> Trajectory:
        trace = _trace_of(sample)
        return Trajectory(sample=sample, prediction="", score=recorded_score(trace))

    async def reflect(self, context: Playbook, trajectory: Trajectory) -> Reflection:
        trace = hidden_trace(_trace_of(trajectory.sample), self.placeholders)
        return await self.reflect_on(context, trace, trajectory)

    async def reflect_on(
        self, context: Playbook, trace: Trace, trajectory: Trajectory
    ) -> Reflection:
        """One reflector call on ``trace`` (the attempt behind ``trajectory``), in the run's
        placeholders (:func:`~combee.tasks.traces.hidden.hidden_trace`)."""
        shown = render_transcript(trace.messages, max_tokens=self.transcript_tokens)
        if shown.cuts:
            self.cut_traces[trace.id] = shown.cuts
            log.info("trace %s shortened for the reflector: %s", trace.id, "; ".join(shown.cuts))
        messages = trace_reflector_messages(
            context,
            trace_id=trace.id,
            task_id=trace.task_id,
            transcript=shown.text,
            outcome=trace.outcome,
            cuts=shown.cuts,
            contrast=self._contrast(trace),
        )
        reply = await self._ask(messages, "reflector", schemas.REFLECTOR)
        return self.grounded(
            trajectory.sample.id,
            reply,
            correct=trajectory.score.correct,
            feedback=trace.outcome.feedback,
            # The screens compare a lesson with the real values (in canonical form): a lesson
            # that writes a shown address out in its own way is caught, placeholders or not.
            shown_data=tuple(map(self.placeholders.reveal, untrusted_text(trace))),
            trusted=tuple(map(self.placeholders.reveal, trusted_text(trace))),
        )

    def _contrast(self, trace: Trace) -> str:
        if not self.contrast or trace.outcome.success is None:
            return ""
        other = next(
            (
                t
                for t in self._by_task.get(trace.task_id, ())
                if t.outcome.success is not None and t.outcome.success != trace.outcome.success
            ),
            None,
        )
        if other is None:
            return ""
        other = hidden_trace(other, self.placeholders)
        shown = render_transcript(other.messages, max_tokens=self.transcript_tokens // 2)
        said = other.outcome.feedback
        said = said if len(said) <= EVIDENCE_CHARS else said[:EVIDENCE_CHARS] + " [...]"
        feedback = f"\nIts feedback: {said}" if said else ""
        return (
            f"Another recorded attempt at the same task ({other.id}), which ended in "
            f"{outcome_text(other.outcome)}:\n{shown.text}{feedback}"
        )


def tool_results(trace: Trace) -> tuple[str, ...]:
    """What the trace's tools returned: data, never instructions (the lesson must not copy it)."""
    return tuple(m.content for m in trace.messages if m.role == "tool" and m.content)


def untrusted_text(trace: Trace) -> tuple[str, ...]:
    """What the reflector is shown as data, which a lesson must not copy: the tools' results
    and feedback text from someone other than the checker."""
    sent = trace.outcome.untrusted_feedback
    return (*tool_results(trace), sent) if sent else tool_results(trace)


def trusted_text(trace: Trace) -> tuple[str, ...]:
    """What a lesson may repeat: the system prompt, the task statement, the checker's verdict."""
    system = [m.content for m in trace.messages if m.role == "system"]
    task = next((m.content for m in trace.messages if m.role == "user"), "")
    return (*system, task, trace.outcome.feedback)


def _trace_of(sample: Sample) -> Trace:
    trace = sample.meta.get("trace")
    if not isinstance(trace, Trace):
        raise TypeError(f"sample {sample.id!r} carries no recorded trace")
    return trace


def _recorded(prediction: str, sample: Sample) -> Score:
    return recorded_score(_trace_of(sample))
