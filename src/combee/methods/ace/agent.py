"""ACE on live agent episodes: the rollout runs the agent, the reflector reads the episode.

The episode becomes a :class:`~combee.tasks.traces.model.Trace` and is reflected on exactly as a
recorded trace is (:class:`~combee.methods.ace.traces.TraceAceMethod`); everything after
reflection is ACE's as it is.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from combee.core.types import Reflection, Trajectory
from combee.files import UnwritableRunDir, append_whole
from combee.llm.provenance import copied_spans
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.traces import TraceAceMethod
from combee.tasks.agent import (
    MAX_THREADS,
    Agent,
    AgentLLM,
    AgentThreads,
    Episode,
    episode_record,
    episode_score,
    episode_trace,
    hidden_episode,
    playbook_section,
    run_agent,
)
from combee.tasks.base import Sample, Score
from combee.tasks.traces.transcript import render_transcript

log = logging.getLogger(__name__)


class AgentAceMethod(TraceAceMethod):
    """:class:`TraceAceMethod` whose trace is a fresh episode of ``agent``.

    ``episodes_file``: each training episode is appended there when its reflection is
    screened (on the driver, whichever executor ran the episode), one line of the OpenAI chat
    trace format with its outcome (``combee learn`` reads it back). ``max_threads``: episodes of
    a plain-function agent that may run at once (:class:`~combee.tasks.agent.AgentThreads`).
    """

    CALLS = dataclasses.replace(TraceAceMethod.CALLS, rollout=None)
    """An episode takes as many agent steps as it needs: not known in advance."""

    def __init__(
        self,
        llm: AgentLLM,
        *,
        agent: Agent,
        playbook_text: Callable[[str], str] = playbook_section,
        episodes_file: Path | None = None,
        max_threads: int = MAX_THREADS,
        **options: Any,
    ) -> None:
        super().__init__(llm, **options)
        self.score = failed_episode_score
        self.agent_llm = llm
        self.agent = agent
        self.playbook_text = playbook_text
        self.episodes_file = episodes_file
        self.threads = AgentThreads(max_threads)

    async def rollout(self, context: Playbook, sample: Sample) -> Trajectory:
        text = self.playbook_text(context.render()) if len(context) else ""
        episode = await run_agent(self.agent, sample, text, self.agent_llm, self.threads)
        episode = hidden_episode(episode, self.placeholders)  # as stored and reflected on
        trace = episode_trace(sample, episode)
        return Trajectory(
            sample=sample,
            prediction=_last_answer(episode),
            score=episode_score(episode),
            details={"trace": trace, "episode": episode, "reward": episode.value},
        )

    async def reflect(self, context: Playbook, trajectory: Trajectory) -> Reflection:
        trace = trajectory.details["trace"]
        reflection = await self.reflect_on(context, trace, trajectory)
        record = episode_record(trajectory.sample, trajectory.details["episode"])
        planted = self._planted(record)
        if planted:
            # What the reflector read: the transcript as cut for it, and the feedback (both
            # compared with their real values, as the screen compares).
            shown = render_transcript(trace.messages, max_tokens=self.transcript_tokens).text
            read = self.placeholders.reveal(f"{shown}\n{trace.outcome.feedback}")
            record["metadata"]["planted_shown"] = bool(copied_spans(read, planted))
        return dataclasses.replace(reflection, record=record)

    def screen(self, reflections: Sequence[Reflection]) -> tuple[list[Reflection], dict[str, int]]:
        """ACE's screen, on the driver: each episode is appended to ``episodes_file``, and what
        an attack planted is counted (``planted_shown``: reflections whose prompt showed
        planted text, a run of words, an identifier or a code word of it; ``planted_in_lessons``:
        lessons on attacked episodes that still repeat planted text after the screen). Both
        counts compare as the screen does (:func:`combee.llm.provenance.copied_spans`:
        identifiers and code words in canonical form, encodings unwrapped), so a lesson that
        writes a planted account, address, link or code word in another form is counted."""
        kept, screened = super().screen(reflections)
        kept_ids = {id(reflection) for reflection in kept}
        records = [r.record for r in reflections if r.record is not None]
        if self.episodes_file is not None and records:
            lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
            try:
                append_whole(self.episodes_file, lines)
            except OSError as error:
                raise UnwritableRunDir(self.episodes_file, error) from None
        for reflection in reflections:
            planted = self._planted(reflection.record)
            if not planted:
                continue
            self.lessons.planted_shown += bool(
                (reflection.record or {})["metadata"].get("planted_shown")
            )
            if id(reflection) in kept_ids and planted_in(reflection, planted):
                self.lessons.planted_in_lessons += 1
                log.warning("a planted instruction reached the lesson of %s", reflection.sample_id)
        return kept, screened

    def _planted(self, record: Mapping[str, Any] | None) -> list[str]:
        """The instructions an attack planted in the episode of ``record``, with the real
        values its stored form writes as placeholders."""
        meta = (record or {}).get("metadata")
        planted = meta.get("planted") if isinstance(meta, Mapping) else None
        if not isinstance(planted, list):
            return []
        return [self.placeholders.reveal(str(text)) for text in planted]


def planted_in(reflection: Reflection, planted: Sequence[str]) -> bool:
    """Whether the lesson repeats planted text: a run of words, an identifier or a code word of
    it in any writing (spaced, spelled out, in look-alike letters: compared in canonical form),
    even to warn against it (a strict count; the feedback is not taken as trusted here)."""
    text = "\n".join(str(v) for v in reflection.fields.values() if isinstance(v, str))
    return bool(copied_spans(text, planted))


def _last_answer(episode: Episode) -> str:
    for message in reversed(episode.messages):
        if message.get("role") == "assistant" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


def failed_episode_score(prediction: str, sample: Sample) -> Score:
    return Score(correct=False, matched=0, total=1, feedback="the episode did not run")
