"""The Combee reflection strategy for gepa: ``gepa.optimize(..., reflection_strategy=...)``.

For each component to update, the ``n`` records of its reflective dataset are duplicated ``p``
times, shuffled with a seeded RNG and dealt into ``k = floor(sqrt(n))`` groups
(:func:`combee.core.scan.level_one_groups`); each group gets its own proposal call, all issued
concurrently, and one merge call turns the ``k`` proposed texts into the final text. With
``n < 4`` (or ``grouping="single"``) one proposal call over all records is the whole reflection.

:meth:`CombeeReflection.reflect_many` flattens the proposal calls of every job of an iteration
into one concurrent wave, then issues all merges as a second wave.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gepa.proposer.reflective_mutation.reflection_lm import ReflectionJob, ReflectionProposal

from combee.core.scan import level_one_groups
from combee.errors import ConfigError, LLMCallError
from combee.llm.types import ChatModel, JsonSchema, Message
from combee.methods.gepa import prompts, schemas
from combee.methods.gepa.records import canonical
from combee.methods.gepa.runner import LoopRunner

log = logging.getLogger(__name__)

Grouping = Literal["combee", "single"]

PROPOSAL_ROLE = "proposal"
MERGE_ROLE = "merge"


@dataclass(frozen=True)
class _Call:
    """A finished proposal or merge call."""

    instruction: str
    messages: list[Message]
    raw: str


@dataclass
class _Unit:
    """One component of one job: its records, their groups and the calls they need."""

    job: int
    component: str
    current: str
    records: list[Mapping[str, Any]]
    groups: list[list[int]]
    map_keys: list[str] = field(default_factory=list)
    map_messages: list[list[Message]] = field(default_factory=list)


@dataclass
class ReflectionUsage:
    """What the strategy's own calls cost (memo hits cost nothing and are counted apart)."""

    proposal_calls: int = 0
    merge_calls: int = 0
    failed_calls: int = 0
    memo_hits: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0


class CombeeReflection:
    """A gepa ``ReflectionLM`` (with ``reflect_many``) that aggregates by shuffle and scan.

    ``llm`` must belong to ``runner``'s loop. Finished calls are memoised by their inputs, so
    when gepa retries a failed batch task by task, only the calls that failed are paid again.
    A proposal call that fails for good is logged and its group dropped; a component whose
    calls all failed, or whose merge failed, raises :class:`LLMCallError` once the wave is done
    (gepa then retries per task and skips that proposal if it fails again).
    """

    def __init__(
        self,
        llm: ChatModel,
        runner: LoopRunner,
        *,
        grouping: Grouping = "combee",
        p: int = 2,
        seed: int = 0,
        temperature: float = 0.0,
        max_tokens: int = 4096,
        memo_size: int = 4096,
    ) -> None:
        if p < 1:
            raise ConfigError(f"GEPA reflection duplication p must be at least 1 (got {p})")
        if grouping not in ("combee", "single"):
            raise ConfigError(f"GEPA reflection grouping must be combee or single ({grouping!r})")
        self.llm = llm
        self.runner = runner
        self.grouping: Grouping = grouping
        self.p = p
        self.seed = seed
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.usage = ReflectionUsage()
        self._memo: OrderedDict[str, _Call] = OrderedDict()
        self._memo_size = memo_size
        self._lock = threading.Lock()

    @property
    def total_cost(self) -> float:
        return self.usage.cost

    @property
    def total_tokens_in(self) -> int:
        return self.usage.tokens_in

    @property
    def total_tokens_out(self) -> int:
        return self.usage.tokens_out

    def reflect(
        self,
        candidate: dict[str, str],
        reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
        components_to_update: list[str],
    ) -> tuple[ReflectionProposal, CombeeReflection]:
        return self.reflect_many([(candidate, reflective_dataset, components_to_update)])[0]

    def reflect_many(
        self, jobs: Sequence[ReflectionJob]
    ) -> list[tuple[ReflectionProposal, CombeeReflection]]:
        units = self._plan(jobs)
        self._wave(
            {k: m for u in units for k, m in zip(u.map_keys, u.map_messages, strict=True)},
            PROPOSAL_ROLE,
            schemas.PROPOSAL,
        )
        merges: dict[str, list[Message]] = {}
        merge_key: dict[int, str] = {}
        for index, unit in enumerate(units):
            local = self._recalled(unit.map_keys)
            if len(local) > 1:
                texts = [call.instruction for call in local]
                key = _digest("merge", unit.component, unit.current, texts)
                merge_key[index] = key
                merges[key] = prompts.merge_messages(unit.component, unit.current, texts)
        self._wave(merges, MERGE_ROLE, schemas.MERGE)
        proposals = [ReflectionProposal(new_texts={}) for _ in jobs]
        problems: list[str] = []
        for index, unit in enumerate(units):
            problem = self._settle(unit, merge_key.get(index), proposals[unit.job])
            if problem is not None:
                problems.append(problem)
        if problems:
            raise LLMCallError("; ".join(problems))
        return [(proposal, self) for proposal in proposals]

    def _plan(self, jobs: Sequence[ReflectionJob]) -> list[_Unit]:
        units: list[_Unit] = []
        for job, (candidate, dataset, components) in enumerate(jobs):
            for component in components:
                records = list(dataset.get(component) or [])
                if not records:
                    log.info("component %r has no reflective records; not updated", component)
                    continue
                current = candidate[component]
                unit_digest = _digest("unit", component, current, records)
                if self.grouping == "single":
                    groups = [list(range(len(records)))]
                else:
                    rng = random.Random(f"{self.seed}:{unit_digest}")
                    groups = level_one_groups(len(records), p=self.p, rng=rng)
                unit = _Unit(job, component, current, records, groups)
                for group in groups:
                    chosen = [records[i] for i in group]
                    unit.map_keys.append(_digest("proposal", component, current, chosen))
                    unit.map_messages.append(prompts.proposal_messages(component, current, chosen))
                units.append(unit)
        return units

    def _settle(
        self, unit: _Unit, merge_key: str | None, proposal: ReflectionProposal
    ) -> str | None:
        """Fill ``proposal`` for ``unit``; a reason when the unit has no final text."""
        where = f"job {unit.job} component {unit.component!r}"
        local = self._recalled(unit.map_keys)
        if not local:
            return f"{where}: every proposal call failed"
        final = local[0]
        if merge_key is not None:
            merged = self._recalled([merge_key])
            if not merged:
                return f"{where}: the merge of {len(local)} proposals failed"
            final = merged[0]
        elif len(unit.groups) > 1:
            log.warning(
                "%s: only 1 of %d proposal calls succeeded; using it", where, len(unit.groups)
            )
        proposal.new_texts[unit.component] = final.instruction
        proposal.prompts[unit.component] = [dict(m) for m in final.messages]
        proposal.raw_lm_outputs[unit.component] = final.raw
        proposal.metadata[f"combee:{unit.component}:n"] = len(unit.records)
        proposal.metadata[f"combee:{unit.component}:groups"] = unit.groups
        proposal.metadata[f"combee:{unit.component}:local_instructions"] = [
            call.instruction for call in local
        ]
        return None

    def _recalled(self, keys: Sequence[str]) -> list[_Call]:
        with self._lock:
            return [self._memo[k] for k in keys if k in self._memo]

    def _wave(self, calls: Mapping[str, list[Message]], role: str, schema: JsonSchema) -> None:
        """Issue every call not memoised yet, all at once; memoise the successes."""
        with self._lock:
            self.usage.memo_hits += sum(1 for key in calls if key in self._memo)
            todo = [(key, m) for key, m in calls.items() if key not in self._memo]
        if not todo:
            return
        outcomes = self.runner.gather([self._ask(m, role, schema) for _, m in todo])
        unexpected: BaseException | None = None
        for (key, _), outcome in zip(todo, outcomes, strict=True):
            if isinstance(outcome, _Call):
                self._remember(key, outcome)
                continue
            self.usage.failed_calls += 1
            if isinstance(outcome, LLMCallError):
                log.warning("%s call failed and is skipped: %s", role, outcome)
            elif unexpected is None:
                unexpected = outcome
        if unexpected is not None:
            raise unexpected

    async def _ask(self, messages: list[Message], role: str, schema: JsonSchema) -> _Call:
        reply, completion = await self.llm.complete_json(
            messages,
            role=role,
            schema=schema,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        usage = self.usage
        if role == MERGE_ROLE:
            usage.merge_calls += 1
        else:
            usage.proposal_calls += 1
        usage.tokens_in += completion.prompt_tokens
        usage.tokens_out += completion.completion_tokens
        usage.cost += completion.cost or 0.0
        instruction = str(reply.get("instruction", "")).strip()
        if not instruction:
            raise LLMCallError(f"{role}: the reply's instruction is empty")
        return _Call(instruction, messages, completion.text)

    def _remember(self, key: str, call: _Call) -> None:
        with self._lock:
            self._memo[key] = call
            self._memo.move_to_end(key)
            while len(self._memo) > self._memo_size:
                self._memo.popitem(last=False)


def _digest(*parts: Any) -> str:
    return hashlib.sha256(canonical(list(parts)).encode()).hexdigest()


__all__ = ["CombeeReflection", "Grouping", "ReflectionUsage"]
