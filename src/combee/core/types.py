"""The contract between Combee and a base method (ACE, GEPA, ...).

A base method exposes rollout, reflect, curate, merge and apply. Combee runs rollouts and
reflections of a batch concurrently against a frozen context, then aggregates the reflections
with a :class:`Strategy` (sequential, naive, combee, ...).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from combee.tasks.base import Sample, Score

C = TypeVar("C")
"""The learned context: an ACE playbook, a GEPA system prompt."""
U = TypeVar("U")
"""An update to the context: ACE delta operations, a GEPA instruction."""


@dataclass(frozen=True)
class Trajectory:
    """The generator's attempt on one sample, scored."""

    sample: Sample
    prediction: str
    score: Score
    details: Mapping[str, Any] = field(default_factory=dict)
    """Method-specific fields of the attempt (ACE: reasoning, bullet_ids used)."""


@dataclass(frozen=True)
class Reflection:
    """The lesson drawn from one trajectory."""

    sample_id: str
    fields: Mapping[str, Any]
    """The reflector's structured answer (ACE: key_insight, bullet_tags, ...)."""
    correct: bool = False
    shown_data: tuple[str, ...] = ()
    """Untrusted text the reflector was shown (tool results): a lesson that copies it, beyond
    what the task and the feedback say, is kept out by a method's screen."""
    trusted: tuple[str, ...] = ()
    """Text the lesson may repeat (the task statement, the checker's feedback)."""
    record: Mapping[str, Any] | None = None
    """What the method keeps of the attempt on the driver (an agent's episode, for
    ``episodes.jsonl``); never shown to a model."""
    feedback: str = ""
    """What the scorer or checker said of the attempt, shown to aggregators beside the lesson
    (empty when the lesson already carries it)."""
    lesson_source: str = ""
    """Where the lesson came from (ACE: :mod:`combee.methods.ace.grounding`), for counting."""
    evidence: str = ""
    """What the feedback states beyond its verdict (a rule, a reference answer, a failed
    check; "" when it is a verdict alone): what a curator must not lose."""

    def render(self) -> str:
        """A compact text form for aggregator prompts."""
        lines = [f"sample {self.sample_id} ({'correct' if self.correct else 'wrong'}):"]
        if self.feedback:
            lines.append(f"  feedback: {self.feedback}")
        for key, value in self.fields.items():
            if value in ("", None, [], {}):
                continue
            lines.append(f"  {key}: {value}")
        return "\n".join(lines)


@runtime_checkable
class Method(Protocol[C, U]):
    """A base prompt-learning method, as Combee drives it."""

    async def rollout(self, context: C, sample: Sample) -> Trajectory: ...

    async def reflect(self, context: C, trajectory: Trajectory) -> Reflection: ...

    async def curate(self, context: C, reflections: Sequence[Reflection]) -> U: ...

    async def merge(self, context: C, updates: Sequence[U]) -> U: ...

    def tally(self, context: C, reflections: Sequence[Reflection]) -> C:
        """Fold per-reflection feedback that needs no LLM (ACE: helpful/harmful counters)."""
        ...

    def apply(self, context: C, update: U) -> C:
        """Apply an update deterministically and atomically."""
        ...


@runtime_checkable
class Screens(Protocol):
    """An optional capability of a method: keep out, before curation, reflections it must not
    learn from (ACE: a planted instruction, or a copy of untrusted data). Returns the
    reflections to curate and how many were kept out, by kind."""

    def screen(
        self, reflections: Sequence[Reflection]
    ) -> tuple[list[Reflection], dict[str, int]]: ...


C_contra = TypeVar("C_contra", contravariant=True)


@runtime_checkable
class Condenser(Protocol[C_contra]):
    """An optional capability of a method: condense reflections into one (the ``summarize``
    and ``hier-summarize`` strategies need it).

    :meth:`condense` is one LLM call (role ``summarize``) that keeps each reflection's key
    lesson; its result is itself a reflection, so it can be condensed again or curated.
    """

    async def condense(
        self, context: C_contra, reflections: Sequence[Reflection]
    ) -> Reflection: ...


@dataclass
class ReduceTrace(Generic[U]):
    """What one reduction did: the groups at each level and the update it produced."""

    levels: list[list[list[int]]] = field(default_factory=list)
    """levels[l][g] = indices (into the level's inputs) that group g of level l received."""
    update: U | None = None
    groups: dict[str, Any] | None = None
    """How the level-1 group count was chosen (rule, count, fan_in, reason), when a strategy
    chose one; kept in the run's metrics."""


@runtime_checkable
class Named(Protocol):
    """An object with a name to show and record (a task, a strategy); optional."""

    name: str


@runtime_checkable
class Reduces(Protocol):
    """What the loop needs of a strategy: its batch size and its reduction."""

    def batch_size(self, requested: int) -> int:
        """The batch size this strategy runs at given the user's request (sequential: 1)."""
        ...

    async def reduce(
        self, method: Method[C, U], context: C, reflections: Sequence[Reflection]
    ) -> ReduceTrace[U]: ...


class Strategy(Reduces, Named, Protocol):
    """How a batch of reflections becomes one update."""


def protocol_members(protocol: type) -> set[str]:
    """The names a Protocol declares, its Protocol bases' included: what an object must have
    to be one (for messages naming what it lacks)."""
    names: set[str] = set()
    for base in protocol.__mro__:
        if base is object or base.__module__ == "typing":
            continue
        names |= {name for name in vars(base) if not name.startswith("_")}
        names |= set(inspect.get_annotations(base))
    return names
