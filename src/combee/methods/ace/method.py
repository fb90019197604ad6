"""ACE as a Combee base method: generator, reflector, curator and merge over a playbook."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from combee.core.types import Reflection, Trajectory
from combee.errors import ConfigError
from combee.llm.types import ChatModel, JsonSchema, Message
from combee.methods.ace import prompts, schemas
from combee.methods.ace.operations import ApplyResult, apply_operations
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.update import AceUpdate
from combee.tasks.base import Sample, Score

log = logging.getLogger(__name__)


class AceMethod:
    """ACE (arXiv 2510.04618) with ADD/UPDATE/MERGE/DELETE operations and a token budget.

    ``score`` judges a final answer against a sample. ``token_budget`` caps the playbook's
    approximate token count on every :meth:`apply` (None: unbounded, as the published ACE).
    LLM failures (``combee.errors.LLMCallError``) propagate; the training loop records them.
    """

    def __init__(
        self,
        llm: ChatModel,
        score: Callable[[str, Sample], Score],
        *,
        token_budget: int | None = 8000,
        temperature: float = 0.0,
        max_tokens: int = 2048,
    ) -> None:
        floor = Playbook().token_count()
        if token_budget is not None and token_budget <= floor:
            raise ConfigError(
                f"is {token_budget}, but the empty playbook alone uses about {floor} tokens; "
                "set it well above that (e.g. 8000), or to None for no limit",
                setting="token_budget",
            )
        if max_tokens < 1:
            raise ConfigError(f"must be at least 1 (got {max_tokens})", setting="max_tokens")
        self.llm = llm
        self.score = score
        self.token_budget = token_budget
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.last_apply: ApplyResult | None = None
        """The result of the latest :meth:`apply` (applied, rejected and evicted operations)."""

    async def _ask(
        self, messages: Sequence[Message], role: str, schema: JsonSchema
    ) -> dict[str, Any]:
        reply, _ = await self.llm.complete_json(
            messages,
            role=role,
            schema=schema,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        return reply

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
        return Reflection(
            sample_id=trajectory.sample.id, fields=reply, correct=trajectory.score.correct
        )

    async def curate(self, context: Playbook, reflections: Sequence[Reflection]) -> AceUpdate:
        if not reflections:
            return AceUpdate(source="none")
        messages = prompts.curator_messages(context, reflections, token_budget=self.token_budget)
        return _update(await self._ask(messages, "curator", schemas.CURATOR), "curator")

    async def merge(self, context: Playbook, updates: Sequence[AceUpdate]) -> AceUpdate:
        useful = [u for u in updates if u.operations]
        if not useful:
            return AceUpdate(source="none")
        if len(useful) == 1:
            return useful[0]
        messages = prompts.merge_messages(context, useful, token_budget=self.token_budget)
        merged = _update(await self._ask(messages, "merge", schemas.MERGE), "merge")
        if apply_operations(context, merged.operations, token_budget=self.token_budget).applied:
            return merged
        # Curators only propose what is new, so a merge with no operation that applies has
        # dropped the lessons (small models do): keep the local updates, in order; apply
        # rejects what is invalid or duplicated among them.
        log.warning(
            "merge kept no valid operation of %d local updates; keeping the updates", len(useful)
        )
        return AceUpdate(
            operations=[op for update in useful for op in update.operations],
            reasoning=merged.reasoning,
            source="merge-fallback",
        )

    def tally(self, context: Playbook, reflections: Sequence[Reflection]) -> Playbook:
        """Count the reflectors' bullet tags: helpful and harmful add one to that counter."""
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

    def apply(self, context: Playbook, update: AceUpdate) -> Playbook:
        self.last_apply = apply_operations(
            context, update.operations, token_budget=self.token_budget
        )
        return self.last_apply.playbook


def _update(reply: Mapping[str, Any], source: str) -> AceUpdate:
    operations = reply.get("operations")
    items = operations if isinstance(operations, list) else []
    ops = [dict(op) for op in items if isinstance(op, Mapping)]
    return AceUpdate(operations=ops, reasoning=str(reply.get("reasoning", "")), source=source)
