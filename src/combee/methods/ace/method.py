"""ACE as a Combee base method: generator, reflector, curator and merge over a playbook."""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from combee.core.call_counts import MethodCalls
from combee.core.capacity import CallCapacity
from combee.core.types import Reflection, Trajectory
from combee.errors import ConfigError, LLMCallError, parameter
from combee.llm.provenance import SharedText
from combee.llm.types import (
    DEFAULT_MAX_TOKENS,
    ChatModel,
    JsonSchema,
    Message,
    ModelLimits,
    StatesLimits,
)
from combee.methods.ace import merging, prompts, schemas
from combee.methods.ace.capacity import SAFETY, CuratorMeter, merge_fan_in, tokens_in
from combee.methods.ace.coverage import with_stated_rules
from combee.methods.ace.dedup import NearDuplicates
from combee.methods.ace.grounding import grounded_reflection
from combee.methods.ace.lesson_counts import LessonCounts
from combee.methods.ace.operations import ApplyResult, apply_operations
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.screening import screen_reflections
from combee.methods.ace.settings import AceSettings
from combee.methods.ace.summary import summary_of
from combee.methods.ace.update import AceUpdate, curator_update
from combee.tasks.base import Sample, Score

log = logging.getLogger(__name__)


class AceMethod:
    """ACE (arXiv 2510.04618) with ADD/UPDATE/MERGE/DELETE operations and a token budget.

    ``score`` judges a final answer against a sample. ``ace``: ACE's settings
    (:class:`AceSettings`), kept whole as :attr:`settings`; its ``token_budget`` caps the
    playbook's approximate token count on every :meth:`apply` (None: unbounded, as the published
    ACE). ``near_duplicates``: what folds a lesson that repeats a bullet in other words (the
    factories make it from ``ace.dedup``; None: exact repeats only). LLM failures
    (``combee.errors.LLMCallError``) propagate; the training loop records them.
    """

    CALLS = MethodCalls(
        rollout={"generator": 1},
        reflect={"reflector": 1},
        steps={
            "curate": ("curator", 1, 1),
            "merge": ("merge", 0, 1),
            "condense": ("summarize", 1, 1),
        },
    )
    """One generator call a rollout, one reflector call a reflection; a merge step makes its
    call only with two updates that hold operations (see :meth:`merge`)."""

    def __init__(
        self,
        llm: ChatModel,
        score: Callable[[str, Sample], Score],
        *,
        ace: AceSettings = AceSettings(),
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        near_duplicates: NearDuplicates | None = None,
        shared: SharedText | None = None,
    ) -> None:
        floor = Playbook().token_count()
        budget = ace.token_budget
        if budget is not None and budget <= floor:
            raise ConfigError(
                f"is {budget}, but the empty playbook alone uses about {floor} tokens; "
                f"set it well above that (e.g. 8000), or {parameter('token_budget', None)} for "
                "no limit",
                setting="token_budget",
            )
        if max_tokens < 1:
            raise ConfigError(f"must be at least 1 (got {max_tokens})", setting="max_tokens")
        self.llm = llm
        self.score = score
        self.settings = ace
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.near_duplicates = near_duplicates
        """Folds ADDs that repeat a bullet in other words into it (None: exact repeats only)."""
        self.last_apply: ApplyResult | None = None
        """The result of this iteration's :meth:`apply` (applied, rejected, evicted, dropped and
        repaired); :meth:`tally` starts an iteration and clears it."""
        self.lessons = LessonCounts()
        """Lessons dropped, repaired and combined over every :meth:`apply` so far."""
        self.shared = shared
        """Text the training samples have in common (:func:`combee.llm.provenance.shared_text`):
        with it, a lesson that copies a sample's own question or context is kept out; without
        it, question-answer lessons are not checked for copies (a good lesson repeats the
        task's wording, which only this tells apart from a sample's)."""
        self.check_copies = shared is not None
        self.meter = CuratorMeter()
        """What earlier curator replies measured, for :meth:`call_capacity`."""

    def __getstate__(self) -> dict[str, Any]:
        """A copy for a remote worker (rollouts and reflections only): without the near-duplicate
        model, which only the driver's :meth:`apply` uses."""
        return {**self.__dict__, "near_duplicates": None, "shared": None}

    async def _ask(
        self, messages: Sequence[Message], role: str, schema: JsonSchema
    ) -> dict[str, Any]:
        reply, completion = await self.llm.complete_json(
            messages,
            role=role,
            schema=schema,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        if role == "curator":
            written = reply.get("operations")
            self.meter.observe(
                messages, completion, len(written) if isinstance(written, list) else 0
            )
        return reply

    def state(self) -> dict[str, Any]:
        """The running lesson totals, for a run's checkpoint."""
        return {"lessons": self.lessons.to_dict()}

    def restore(self, state: dict[str, Any]) -> None:
        self.lessons.load(state["lessons"])

    async def rollout(self, context: Playbook, sample: Sample) -> Trajectory:
        reply = await self._ask(
            prompts.generator_messages(context, sample), "generator", schemas.GENERATOR
        )
        answer = str(reply.get("final_answer", "")).strip()
        cited = reply.get("bullet_ids")
        bullet_ids = [b for b in cited if isinstance(b, str)] if isinstance(cited, list) else []
        return Trajectory(
            sample=sample,
            prediction=answer,
            score=self.score(answer, sample),
            details={"reasoning": str(reply.get("reasoning", "")), "bullet_ids": bullet_ids},
        )

    async def reflect(self, context: Playbook, trajectory: Trajectory) -> Reflection:
        reply = await self._ask(
            prompts.reflector_messages(context, trajectory), "reflector", schemas.REFLECTOR
        )
        sample = trajectory.sample
        return self.grounded(
            sample.id,
            reply,
            correct=trajectory.score.correct,
            feedback=trajectory.score.feedback,
            shown_data=(sample.question, sample.context) if self.check_copies else (),
            trusted=(sample.answer, trajectory.score.feedback),
        )

    def grounded(
        self,
        sample_id: str,
        reply: Mapping[str, Any],
        *,
        correct: bool,
        feedback: str,
        shown_data: tuple[str, ...],
        trusted: tuple[str, ...],
    ) -> Reflection:
        """A reflector's ``reply`` as a reflection, its lesson grounded in ``feedback`` with
        the repairs :attr:`settings` turns on (:mod:`combee.methods.ace.grounding`)."""
        return grounded_reflection(
            sample_id,
            reply,
            correct=correct,
            feedback=feedback,
            shown_data=shown_data,
            trusted=trusted,
            copy_rules=self.settings.copy_rules,
            drop_contradictions=self.settings.drop_contradictions,
        )

    async def curate(self, context: Playbook, reflections: Sequence[Reflection]) -> AceUpdate:
        reflections = with_lessons(reflections)
        if not reflections:
            return AceUpdate(source="none")
        messages = prompts.curator_messages(
            context, reflections, token_budget=self.settings.token_budget
        )
        schema = schemas.curator_schema(tuple(s.key for s in context.sections))
        update = curator_update(await self._ask(messages, "curator", schema))
        return with_stated_rules(
            update,
            context,
            reflections,
            copy_rules=self.settings.copy_rules,
            drop_contradictions=self.settings.drop_contradictions,
        )

    def call_capacity(self, context: Playbook, reflections: Sequence[Reflection]) -> CallCapacity:
        """How many of ``reflections`` one curator call can turn into operations against
        ``context`` (see :mod:`combee.methods.ace.capacity`): the ``capacity`` group rule."""
        limits = self._limits()
        budget = self.settings.token_budget
        return self.meter.measure(
            schema=schemas.curator_schema(tuple(s.key for s in context.sections)),
            max_tokens=self.max_tokens,
            limits=limits,
            without=prompts.curator_messages(context, [], token_budget=budget),
            with_all=prompts.curator_messages(context, reflections, token_budget=budget),
            count=len(reflections),
        )

    def merge_capacity(self, context: Playbook, updates: Sequence[AceUpdate]) -> int | None:
        """How many updates the size of ``updates`` one merge call can read (None: the
        context window is not known)."""
        window = self._limits().context_window
        if window is None or not updates:
            return None
        budget = self.settings.token_budget
        return merge_fan_in(
            meter=self.meter,
            window=window,
            max_tokens=self.max_tokens,
            without=prompts.merge_messages(context, [], token_budget=budget),
            with_all=prompts.merge_messages(context, updates, token_budget=budget),
            count=len(updates),
        )

    def _limits(self) -> ModelLimits:
        llm = self.llm
        return llm.limits() if isinstance(llm, StatesLimits) else ModelLimits()

    async def merge(self, context: Playbook, updates: Sequence[AceUpdate]) -> AceUpdate:
        """One call that answers by reference (keep, combine, drop the numbered operations);
        when it fails or places nothing that applies, the union of the local updates."""
        useful = [u for u in updates if u.operations]
        idle = [u for u in updates if not u.operations]
        if not useful:
            return merging.carried(AceUpdate(source="none"), idle)
        if len(useful) == 1:
            return merging.carried(useful[0], idle)
        count = len(merging.operations_of(useful))
        by_exception = count > merging.LIST_KEEP_UP_TO
        messages = prompts.merge_messages(
            context, useful, token_budget=self.settings.token_budget, by_exception=by_exception
        )
        schema = schemas.merge_schema(count, by_exception=by_exception)
        window = self._limits().context_window
        asked = tokens_in(messages, self.meter) + self.max_tokens
        if window is not None and asked > SAFETY * window:
            log.warning(
                "merge of %d local updates skipped: its prompt and reply (~%d tokens) would not "
                "fit the %d-token context window; applying the updates",
                len(useful), asked, window,
            )  # fmt: skip
            return merging.carried(merging.union(useful, "merge skipped: over the window"), idle)
        try:
            reply = await self._ask(messages, "merge", schema)
        except LLMCallError as error:
            log.warning("merge call failed (%s); applying the %d local updates", error, len(useful))
            return merging.carried(merging.union(useful), idle)
        merged = merging.resolve_merge(
            useful,
            reply,
            by_exception=by_exception,
            known=context.render(),
            overrule_drops=self.settings.overrule_drops,
        )
        if merged is not None and self._applies(context, merged):
            return merging.carried(merged, idle)
        # Curators only propose what is new, so a merge that keeps nothing that applies has
        # dropped the lessons (small models do): keep the local updates instead.
        log.warning(
            "merge kept no valid operation of %d local updates; keeping the updates", len(useful)
        )
        return merging.carried(merging.union(useful, str(reply.get("reasoning", ""))), idle)

    async def condense(self, context: Playbook, reflections: Sequence[Reflection]) -> Reflection:
        """One ``summarize`` call: the reflections' (or earlier summaries') lessons in one
        :class:`~combee.methods.ace.summary.Summary` (the ``summarize`` strategies' step)."""
        reflections = with_lessons(reflections)
        if not reflections:
            return summary_of({}, reflections)
        messages = prompts.summarize_messages(reflections)
        return summary_of(await self._ask(messages, "summarize", schemas.SUMMARIZE), reflections)

    def _applies(self, context: Playbook, update: AceUpdate) -> bool:
        trial = apply_operations(
            context, update.operations, token_budget=self.settings.token_budget, quiet=True
        )
        return bool(trial.applied)

    def screen(self, reflections: Sequence[Reflection]) -> tuple[list[Reflection], dict[str, int]]:
        """The reflections to curate, and how many were kept out by kind: a planted
        instruction (:mod:`combee.llm.screening`), or ``copied-from-data`` when the lesson
        repeats untrusted text it was shown (:mod:`combee.llm.provenance`)."""
        return screen_reflections(
            reflections, lessons=self.lessons, screen=self.settings.screen, shared=self.shared
        )

    def tally(self, context: Playbook, reflections: Sequence[Reflection]) -> Playbook:
        """Count the reflectors' bullet tags: helpful and harmful add one to that counter.

        Called once at the start of each iteration's update, it also clears :attr:`last_apply`.
        """
        self.last_apply = None
        helpful: Counter[str] = Counter()
        harmful: Counter[str] = Counter()
        for reflection in reflections:
            tags = reflection.fields.get("bullet_tags")
            for tag in tags if isinstance(tags, list) else ():
                if not isinstance(tag, Mapping) or not isinstance(tag.get("id"), str):
                    continue
                bullet_id = tag["id"].strip().strip("[]").strip()
                if tag.get("tag") == "helpful":
                    helpful[bullet_id] += 1
                elif tag.get("tag") == "harmful":
                    harmful[bullet_id] += 1
        return context.with_counts(helpful, harmful)

    def preview(self, context: Playbook, update: AceUpdate) -> Playbook:
        """The playbook ``update`` would give, neither logged nor counted (the gate's trial)."""
        return apply_operations(
            context,
            update.operations,
            token_budget=self.settings.token_budget,
            quiet=True,
            near_duplicates=self.near_duplicates,
        ).playbook

    def parts(self, update: AceUpdate) -> list[AceUpdate]:
        """One update per operation."""
        return [dataclasses.replace(update, operations=[op]) for op in update.operations]

    def keeping(self, update: AceUpdate, parts: Sequence[AceUpdate], left_out: int) -> AceUpdate:
        """``update`` with the operations of ``parts`` only, in its order; the ``left_out``
        others counted as dropped (``gated``)."""
        chosen = {id(op) for part in parts for op in part.operations}
        dropped = dict(Counter(update.dropped) + Counter({"gated": left_out}))
        return dataclasses.replace(
            update,
            operations=[op for op in update.operations if id(op) in chosen],
            dropped=dropped,
        )

    def describe(self, part: AceUpdate) -> str:
        """A part's operations in words: their type, the bullet they touch and their text."""
        return "; ".join(
            " ".join(
                str(op.get(key, "")).strip()
                for key in ("type", "bullet_id", "content")
                if str(op.get(key, "")).strip()
            )[:300]
            for op in part.operations
        )

    def apply(self, context: Playbook, update: AceUpdate) -> Playbook:
        result = apply_operations(
            context,
            update.operations,
            token_budget=self.settings.token_budget,
            near_duplicates=self.near_duplicates,
        )
        self.last_apply = dataclasses.replace(
            result,
            dropped=dict(Counter(update.dropped) + Counter(result.dropped)),
            repaired=dict(Counter(update.repaired) + Counter(result.repaired)),
            combined=update.combined,
        )
        self.lessons.add(self.last_apply)
        return result.playbook


def with_lessons(reflections: Sequence[Reflection]) -> list[Reflection]:
    """``reflections`` without those that hold no lesson: the reflector called its key insight a
    remark and no repair replaced it (``dropped``). Their analysis still speaks of the playbook
    or the attempt, and a curator shown it writes that down; their bullet tags still count
    (:meth:`AceMethod.tally`)."""
    return [r for r in reflections if r.lesson_source != "dropped"]
