"""ACE as the run engine drives it: a playbook trained by Combee's loop."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from combee.core.episodes import BASELINE_TEST_EPISODES_FILE, TEST_EPISODES_FILE
from combee.core.learner import LoopLearner
from combee.errors import ConfigError
from combee.llm.provenance import shared_text
from combee.llm.types import DEFAULT_MAX_TOKENS, ChatModel
from combee.methods.ace.agent import AgentAceMethod
from combee.methods.ace.dedup import NearDuplicates, default_near_duplicates
from combee.methods.ace.method import AceMethod
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.settings import AceSettings
from combee.methods.ace.traces import TRANSCRIPT_TOKENS, TraceAceMethod
from combee.tasks.agent import MAX_THREADS, Agent, AgentLLM, playbook_section
from combee.tasks.base import Sample, Score
from combee.tasks.traces.model import Trace

EPISODES_FILE = "episodes.jsonl"
"""The training episodes of an ``ace-agent`` run, in its run directory."""


class AceLearner(LoopLearner[Playbook]):
    """:class:`AceMethod` with its playbook's text form and size figures."""

    context_file = "playbook.txt"
    files = frozenset(
        {
            context_file,
            "playbook_last.txt",
            EPISODES_FILE,
            TEST_EPISODES_FILE,
            BASELINE_TEST_EPISODES_FILE,
        }
    )
    """The files an ACE run writes beside the run's own."""

    def __init__(self, method: AceMethod, *, name: str = "ace") -> None:
        super().__init__(
            method,
            method.score,
            initial=Playbook(),
            parse=_parse,
            render=lambda playbook: playbook.render(),
            stats=self._playbook_stats,
            name=name,
        )
        self.ace = method

    def dump_context(self, context: Playbook) -> Any:
        # The text alone would renumber: an evicted bullet's number is never given again.
        return {"text": context.render(), "next_id": context.next_id}

    def load_context(self, data: Any) -> Playbook:
        playbook = _parse(str(data["text"]))
        return playbook.with_bullets(playbook.bullets, next_id=int(data["next_id"]))

    def _playbook_stats(self, playbook: Playbook) -> Mapping[str, Any]:
        return {"playbook_bullets": len(playbook), "playbook_tokens": playbook.token_count()}

    def iteration_stats(self, playbook: Playbook) -> Mapping[str, Any]:
        """The playbook's size and what the iteration's update did, for ``metrics.jsonl``."""
        stats = dict(self.stats(playbook))
        applied = self.ace.last_apply
        if applied is not None:
            stats["ops_applied"] = len(applied.applied)
            stats["ops_rejected"] = len(applied.rejected)
            stats["bullets_evicted"] = len(applied.evicted)
            stats["lessons_dropped"] = dict(sorted(applied.dropped.items()))
            stats["lessons_repaired"] = dict(sorted(applied.repaired.items()))
            stats["lessons_combined"] = applied.combined
            stats["near_duplicates"] = applied.near_duplicates
        return stats

    def results(self) -> Mapping[str, Any]:
        """The whole run's counts, named ``*_total`` where ``metrics.jsonl`` holds the same
        count for one iteration: operations applied, rejected, bullets evicted, lessons dropped
        (by reason), repaired (by defect), combined, folded and screened out; for an agent's
        episodes, the planted text shown and repeated (0 when nothing was planted)."""
        counts = self.ace.lessons
        planted = (
            {"planted_shown": counts.planted_shown, "planted_in_lessons": counts.planted_in_lessons}
            if isinstance(self.ace, AgentAceMethod)
            else {}
        )
        return {
            **planted,
            "ops_applied_total": counts.applied,
            "ops_rejected_total": counts.rejected,
            "bullets_evicted_total": counts.evicted,
            "lessons_dropped_total": dict(sorted(counts.dropped.items())),
            "lessons_repaired_total": dict(sorted(counts.repaired.items())),
            "lessons_combined_total": counts.combined,
            "near_duplicates_total": counts.near_duplicates,
            "screened_out_total": dict(sorted(counts.screened.items())),
            "lesson_sources": dict(sorted(counts.sources.items())),
        }


def _parse(text: str) -> Playbook:
    try:
        return Playbook.parse(text)
    except ValueError as error:
        raise ConfigError(f"is not a valid playbook: {error}", setting="initial_context") from None


class _MethodOptions(TypedDict):
    ace: AceSettings
    temperature: float
    max_tokens: int
    near_duplicates: NearDuplicates | None


def _method_options(ace: AceSettings, temperature: float, max_tokens: int) -> _MethodOptions:
    """What every ACE method takes from the settings its factory shares with the others."""
    return {
        "ace": ace,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "near_duplicates": default_near_duplicates(ace.dedup),
    }


def ace_learner(
    llm: ChatModel,
    score: Callable[[str, Sample], Score],
    *,
    task_samples: Sequence[Sample] = (),
    ace: AceSettings = AceSettings(),
    temperature: float = 0.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> AceLearner:
    """The registered ``ace`` method, with ACE's settings ``ace`` (:class:`AceSettings`:
    ``token_budget``, ``dedup``, ``screen``, ...). With ``ace.screen`` and ``task_samples``
    (which the engine passes), a lesson that copies a sample's own question or context rather
    than the task's shared wording is kept out too."""
    shared = (
        shared_text(
            (f"{s.question}\n{s.context}" for s in task_samples),
            (s.answer for s in task_samples),
        )
        if ace.screen and task_samples
        else None
    )
    method = AceMethod(llm, score, shared=shared, **_method_options(ace, temperature, max_tokens))
    return AceLearner(method)


def ace_traces_learner(
    llm: ChatModel,
    score: Callable[[str, Sample], Score],
    *,
    traces: Sequence[Trace] = (),
    contrast: bool = False,
    transcript_tokens: int = TRANSCRIPT_TOKENS,
    ace: AceSettings = AceSettings(),
    temperature: float = 0.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> AceLearner:
    """The registered ``ace-traces`` method: ACE reflecting on recorded trajectories (the
    samples of a :class:`combee.tasks.traces.TraceTask`); ``score`` is not used, the record's
    outcome is."""
    method = TraceAceMethod(
        llm,
        traces=traces,
        contrast=contrast,
        transcript_tokens=transcript_tokens,
        **_method_options(ace, temperature, max_tokens),
    )
    return AceLearner(method, name="ace-traces")


def ace_agent_learner(
    llm: AgentLLM,
    score: Callable[[str, Sample], Score],
    *,
    agent: Agent,
    playbook_text: Callable[[str], str] = playbook_section,
    max_threads: int = MAX_THREADS,
    transcript_tokens: int = TRANSCRIPT_TOKENS,
    run_dir: Path | None = None,
    ace: AceSettings = AceSettings(),
    temperature: float = 0.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> AceLearner:
    """The registered ``ace-agent`` method: ACE on live episodes of ``agent`` (the samples of a
    :class:`combee.tasks.agent.AgentTask`); with ``run_dir``, the training episodes are kept in
    ``episodes.jsonl`` there."""
    method = AgentAceMethod(
        llm,
        agent=agent,
        playbook_text=playbook_text,
        episodes_file=None if run_dir is None else Path(run_dir) / EPISODES_FILE,
        max_threads=max_threads,
        transcript_tokens=transcript_tokens,
        **_method_options(ace, temperature, max_tokens),
    )
    return AceLearner(method, name="ace-agent")
