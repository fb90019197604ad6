"""The Combee reflection strategy for gepa: ``gepa.optimize(..., reflection_strategy=...)``.

For each job and each component to update, the component's reflective records become
:class:`combee.core.types.Reflection` objects and are reduced by a Combee
:class:`~combee.core.types.Strategy` (``CombeeStrategy``: augmented shuffle into
``floor(sqrt(n))`` groups, one proposal call per group, merged level by level with at most
``fan_in`` proposals per merge call; ``NaiveStrategy``: one proposal call over all records).
The strategy drives a small proposer whose ``curate`` is one proposal call and whose ``merge``
is one merge call, so GEPA gets exactly the grouping ACE gets.

:meth:`CombeeReflection.reflect_many` reduces every (job, component) unit concurrently on the
runner's loop, so the proposal calls of all jobs of an iteration overlap.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gepa.proposer.reflective_mutation.reflection_lm import ReflectionJob, ReflectionProposal

from combee.core.loop_state import rng_state, set_rng_state
from combee.core.scan import SINGLE_CALL_BELOW
from combee.core.types import ReduceTrace, Reflection, Strategy, Trajectory
from combee.errors import LLMCallError
from combee.llm.types import ChatModel, JsonSchema, Message
from combee.methods.gepa import prompts, schemas
from combee.methods.gepa.records import canonical
from combee.methods.gepa.runner import LoopRunner
from combee.methods.gepa.usage import Levels, ReduceLog, ReflectionUsage, UsageTotals
from combee.tasks.base import Sample

log = logging.getLogger(__name__)

"""How a GEPA plan groups the records: ``combee`` (a ``CombeeStrategy``) or ``single`` (one
call over all records, a ``NaiveStrategy``)."""

PROPOSAL_ROLE = "proposal"
MERGE_ROLE = "merge"
SUMMARIZE_ROLE = "summarize"
_SEED_BITS = 31
"""Per-call seeds stay below 2**31, which every server accepts."""
_RETRY_KEYS = 256


@dataclass(frozen=True)
class _Call:
    """One finished proposal or merge call."""

    instruction: str
    messages: list[Message]
    raw: str


@dataclass
class _MapCall:
    """One proposal call of a unit, as reported in the proposal's metadata."""

    records: list[int]
    messages: list[Message]
    output: str | None = None


@dataclass
class _Unit:
    """One component of one job: its records, its RNG and what its reduction did."""

    job: int
    component: str
    current: str
    records: list[Mapping[str, Any]]
    rng: random.Random
    """Draws the record order and the seed of every call of this unit."""
    order: list[int] = field(default_factory=list)
    """order[i] = the record behind the i-th reflection handed to the strategy."""
    maps: list[_MapCall] = field(default_factory=list)
    finished: dict[str, _Call] = field(default_factory=dict)
    """Successful calls by their instruction (to find the call behind the final text)."""
    proposal_calls: int = 0
    merge_calls: int = 0
    summary_calls: int = 0
    failed_calls: int = 0
    trace: ReduceTrace[str] | None = None

    @property
    def where(self) -> str:
        return f"job {self.job} component {self.component!r}"


class CombeeReflection(UsageTotals):
    """A gepa ``ReflectionLM`` (with ``reflect_many``) that reduces records with ``strategy``.

    ``llm`` must belong to ``runner``'s loop. Each unit draws its record order and the sampling
    seed of each of its calls from one ``random.Random(seed)``, advanced per unit, so repeated
    identical jobs get fresh calls (distinct requests even through a response cache) while a run
    stays deterministic for a seed.

    A proposal call that fails for good is logged and its group dropped (by the strategy); a
    unit left without an update raises :class:`LLMCallError` once the wave is done. gepa then
    retries task by task through :meth:`reflect`: the units that succeeded in the failed wave
    are reused once by the retry of their job, and forgotten at the next :meth:`reflect_many`.
    """

    def __init__(
        self,
        llm: ChatModel,
        runner: LoopRunner,
        strategy: Strategy,
        *,
        seed: int = 0,
        temperature: float = 0.0,
        max_tokens: int = 4096,
    ) -> None:
        self.llm = llm
        self.runner = runner
        self.strategy = strategy
        self.seed = seed
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.usage = ReflectionUsage()
        self.reduce_log = ReduceLog()
        self._rng = random.Random(seed)
        self._retry: OrderedDict[str, list[dict[str, _Unit]]] = OrderedDict()
        self._lock = threading.Lock()

    def state(self) -> dict[str, Any]:
        """The seed generator and the usage so far, for a run's checkpoint."""
        return {"rng": rng_state(self._rng), "usage": vars(self.usage).copy()}

    def restore(self, state: dict[str, Any]) -> None:
        set_rng_state(self._rng, state["rng"])
        vars(self.usage).update(state["usage"])

    def reflect(
        self,
        candidate: dict[str, str],
        reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
        components_to_update: list[str],
    ) -> tuple[ReflectionProposal, CombeeReflection]:
        return self._reflect([(candidate, reflective_dataset, components_to_update)])[0]

    def reflect_many(
        self, jobs: Sequence[ReflectionJob]
    ) -> list[tuple[ReflectionProposal, CombeeReflection]]:
        with self._lock:
            self._retry.clear()
        return self._reflect(jobs)

    def _reflect(
        self, jobs: Sequence[ReflectionJob]
    ) -> list[tuple[ReflectionProposal, CombeeReflection]]:
        keys = [_job_key(job) for job in jobs]
        done: list[dict[str, _Unit]] = [self._recall(key) for key in keys]
        units = self._plan(jobs, done)
        outcomes = self.runner.gather([self._reduce(unit) for unit in units])
        for unit in units:
            if unit.trace is not None:
                self.reduce_log.add(_record_levels(unit, unit.trace))
        problems: list[str] = []
        unexpected: BaseException | None = None
        for unit, outcome in zip(units, outcomes, strict=True):
            if isinstance(outcome, LLMCallError):
                problems.append(f"{unit.where}: {outcome}")
            elif isinstance(outcome, BaseException):
                unexpected = unexpected or outcome
            elif unit.trace is None or unit.trace.update is None:
                problems.append(f"{unit.where}: every proposal call failed")
            else:
                done[unit.job][unit.component] = unit
        if problems or unexpected is not None:
            self._keep_for_retry(keys, done)
            if unexpected is not None:
                raise unexpected
            raise LLMCallError("; ".join(problems), role=PROPOSAL_ROLE)
        proposals = [ReflectionProposal(new_texts={}) for _ in jobs]
        for job, (_, _, components) in enumerate(jobs):
            for component in components:
                finished = done[job].get(component)
                if finished is not None:
                    _settle(finished, proposals[job])
        return [(proposal, self) for proposal in proposals]

    def _plan(self, jobs: Sequence[ReflectionJob], done: list[dict[str, _Unit]]) -> list[_Unit]:
        units: list[_Unit] = []
        for job, (candidate, dataset, components) in enumerate(jobs):
            for component in components:
                if component in done[job]:
                    self.usage.memo_hits += 1
                    continue
                if component not in candidate:
                    log.warning(
                        "job %d: component %r is not in the candidate (it has %s); skipped",
                        job,
                        component,
                        ", ".join(repr(name) for name in candidate) or "no components",
                    )
                    continue
                records = list(dataset.get(component) or [])
                if not records:
                    log.info("component %r has no reflective records; not updated", component)
                    continue
                if len(records) < SINGLE_CALL_BELOW:
                    log.info(
                        "job %d component %r: %d records (fewer than %d): one proposal call",
                        job,
                        component,
                        len(records),
                        SINGLE_CALL_BELOW,
                    )
                rng = random.Random(self._rng.getrandbits(64))
                units.append(_Unit(job, component, candidate[component], records, rng))
        return units

    async def _reduce(self, unit: _Unit) -> None:
        unit.order = list(range(len(unit.records)))
        unit.rng.shuffle(unit.order)
        reflections = [Reflection(str(i), unit.records[i]) for i in unit.order]
        unit.trace = await self.strategy.reduce(_Proposer(self, unit), unit.current, reflections)

    async def _ask(
        self,
        unit: _Unit,
        messages: list[Message],
        role: str,
        schema: JsonSchema,
        key: str = "instruction",
    ) -> _Call:
        """One call; its reply's ``key`` (an instruction, or a summary) must not be empty."""
        seed = unit.rng.getrandbits(_SEED_BITS)
        _count(unit, role)
        try:
            reply, completion = await self.llm.complete_json(
                messages,
                role=role,
                schema=schema,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                seed=seed,
            )
            usage = self.usage
            _count(usage, role)
            usage.tokens_in += completion.prompt_tokens
            usage.tokens_out += completion.completion_tokens
            usage.cost += completion.cost or 0.0
            instruction = str(reply.get(key, "")).strip()
            if not instruction:
                raise LLMCallError(
                    f"{role}: the reply's {key} is empty", role=role, kind="invalid_reply"
                )
        except LLMCallError:
            unit.failed_calls += 1
            self.usage.failed_calls += 1
            raise
        call = _Call(instruction, messages, completion.text)
        if role != SUMMARIZE_ROLE:
            unit.finished[instruction] = call
        return call

    def _recall(self, key: str) -> dict[str, _Unit]:
        """The units a failed wave finished for this job, once (popped)."""
        with self._lock:
            kept = self._retry.get(key)
            if not kept:
                return {}
            found = kept.pop(0)
            if not kept:
                del self._retry[key]
            return dict(found)

    def _keep_for_retry(self, keys: Sequence[str], done: Sequence[dict[str, _Unit]]) -> None:
        with self._lock:
            for key, units in zip(keys, done, strict=True):
                if units:
                    self._retry.setdefault(key, []).append(units)
                    self._retry.move_to_end(key)
            while len(self._retry) > _RETRY_KEYS:
                self._retry.popitem(last=False)


class _Proposer:
    """The GEPA side of the Method contract for one unit: ``curate`` is one proposal call over a
    group of records, ``merge`` one merge call over proposed instructions. Rollouts and
    reflections are gepa's own, so those steps are not offered."""

    def __init__(self, owner: CombeeReflection, unit: _Unit) -> None:
        self._owner = owner
        self._unit = unit

    async def curate(self, context: str, reflections: Sequence[Reflection]) -> str:
        unit = self._unit
        chosen = [r.fields for r in reflections]
        messages = prompts.proposal_messages(unit.component, context, chosen)
        entry = _MapCall(_record_ids(reflections), messages)
        unit.maps.append(entry)
        call = await self._owner._ask(unit, messages, PROPOSAL_ROLE, schemas.PROPOSAL)
        entry.output = call.instruction
        return call.instruction

    async def merge(self, context: str, updates: Sequence[str]) -> str:
        unit = self._unit
        messages = prompts.merge_messages(unit.component, context, updates)
        call = await self._owner._ask(unit, messages, MERGE_ROLE, schemas.MERGE)
        return call.instruction

    async def condense(self, context: str, reflections: Sequence[Reflection]) -> Reflection:
        """One ``summarize`` call: the records (or earlier summaries) condensed into one record
        whose ``Feedback`` is the summary; its id lists the records it covers."""
        unit = self._unit
        covered = _record_ids(reflections)
        messages = prompts.summarize_messages(
            unit.component, context, [r.fields for r in reflections]
        )
        call = await self._owner._ask(
            unit, messages, SUMMARIZE_ROLE, schemas.SUMMARIZE, key="summary"
        )
        record = {"Inputs": f"a summary of {len(covered)} attempts", "Feedback": call.instruction}
        return Reflection(",".join(map(str, covered)), record)

    async def rollout(self, context: str, sample: Sample) -> Trajectory:
        raise NotImplementedError("gepa's adapter runs the rollouts")

    async def reflect(self, context: str, trajectory: Trajectory) -> Reflection:
        raise NotImplementedError("gepa's adapter builds the reflective records")

    def tally(self, context: str, reflections: Sequence[Reflection]) -> str:
        return context

    def apply(self, context: str, update: str) -> str:
        return update


def _settle(unit: _Unit, proposal: ReflectionProposal) -> None:
    """Fill ``proposal`` with ``unit``'s final text and what its reduction did."""
    trace = unit.trace
    assert trace is not None and trace.update is not None
    component = unit.component
    proposal.new_texts[component] = trace.update
    final = unit.finished.get(trace.update)
    if final is not None:
        proposal.prompts[component] = [dict(m) for m in final.messages]
        proposal.raw_lm_outputs[component] = final.raw
    levels = _record_levels(unit, trace)
    prefix = f"combee:{component}"
    metadata = proposal.metadata
    metadata[f"{prefix}:n"] = len(unit.records)
    metadata[f"{prefix}:k"] = len(levels[0]) if levels else 0
    metadata[f"{prefix}:groups"] = levels[0] if levels else []
    metadata[f"{prefix}:levels"] = levels
    metadata[f"{prefix}:map_prompts"] = [[dict(m) for m in e.messages] for e in unit.maps]
    metadata[f"{prefix}:map_outputs"] = [entry.output for entry in unit.maps]
    metadata[f"{prefix}:local_instructions"] = [e.output for e in unit.maps if e.output]
    metadata[f"{prefix}:calls"] = unit.proposal_calls + unit.merge_calls + unit.summary_calls
    metadata[f"{prefix}:proposal_calls"] = unit.proposal_calls
    metadata[f"{prefix}:merge_calls"] = unit.merge_calls
    metadata[f"{prefix}:summary_calls"] = unit.summary_calls
    metadata[f"{prefix}:failed_calls"] = unit.failed_calls


def _record_levels(unit: _Unit, trace: ReduceTrace[str]) -> Levels:
    """The trace's groups, level 1 by record index (it indexes the shuffled reflections)."""
    levels = [[list(group) for group in level] for level in trace.levels]
    if levels:
        levels[0] = [[unit.order[i] for i in group] for group in levels[0]]
    return levels


def _count(counts: _Unit | ReflectionUsage, role: str) -> None:
    if role == MERGE_ROLE:
        counts.merge_calls += 1
    elif role == SUMMARIZE_ROLE:
        counts.summary_calls += 1
    else:
        counts.proposal_calls += 1


def _record_ids(reflections: Sequence[Reflection]) -> list[int]:
    """The records behind ``reflections`` (a summary's id lists every record it covers)."""
    return [int(part) for r in reflections for part in r.sample_id.split(",") if part]


def _job_key(job: ReflectionJob) -> str:
    candidate, dataset, components = job
    relevant = {name: list(dataset.get(name) or []) for name in components}
    content = canonical([candidate, relevant, list(components)])
    return hashlib.sha256(content.encode()).hexdigest()


__all__ = ["CombeeReflection"]
