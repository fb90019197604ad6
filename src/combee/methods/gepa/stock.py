"""gepa's own reflection step, through Combee's LLM client: the ``sequential`` baseline.

:class:`StockReflectionLM` is a gepa ``LanguageModel`` (a callable from a prompt, or chat
messages, to the reply text), so ::

    gepa.optimize(..., reflection_lm=StockReflectionLM(llm, runner), reflection_strategy=None)

runs gepa's stock reflection, with gepa's own instruction-proposal prompt and its own parsing of
the reply, while every call goes through our client (retries, rate limits, response cache,
accounting under the role ``proposal``). It also offers ``batch_complete``, which gepa uses to
issue the reflections of several tasks of one iteration concurrently, and ``total_cost`` /
``total_tokens_in`` / ``total_tokens_out``, which gepa reads for its cost budget.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from combee.core.loop_state import rng_state, set_rng_state
from combee.errors import LLMCallError
from combee.llm.types import DEFAULT_MAX_TOKENS, Completion, JsonSchema, Message
from combee.methods.gepa.runner import LoopRunner
from combee.methods.gepa.usage import ReduceLog, ReflectionUsage, UsageTotals

log = logging.getLogger(__name__)

STOCK_ROLE = "proposal"
_SEED_BITS = 31


class TextModel(Protocol):
    """What the stock reflection needs from the LLM layer: a plain-text completion
    (:class:`combee.llm.client.LLM` provides it)."""

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        json_schema: JsonSchema | None = None,
        seed: int | None = None,
    ) -> Completion: ...


class StockReflectionLM(UsageTotals):
    """gepa's ``reflection_lm`` over ``llm`` (which must belong to ``runner``'s loop).

    Each call's sampling seed is drawn from ``random.Random(seed)``, so a prompt gepa repeats
    gets a fresh reply rather than a cached one, and a run stays deterministic for a seed; with
    ``seed=None`` the client's own seed is used. A call that fails for good raises
    :class:`LLMCallError`, which gepa logs before skipping that proposal.
    """

    def __init__(
        self,
        llm: TextModel,
        runner: LoopRunner,
        *,
        seed: int | None = 0,
        temperature: float = 0.0,
        max_tokens: int = 4096,
    ) -> None:
        self.llm = llm
        self.runner = runner
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.usage = ReflectionUsage()
        self.reduce_log = ReduceLog()
        self._rng = None if seed is None else random.Random(seed)
        self._warned_non_text = False

    def state(self) -> dict[str, Any]:
        """The seed generator and the usage so far, for a run's checkpoint."""
        rng = None if self._rng is None else rng_state(self._rng)
        return {"rng": rng, "usage": vars(self.usage).copy()}

    def restore(self, state: dict[str, Any]) -> None:
        if self._rng is not None and state["rng"] is not None:
            set_rng_state(self._rng, state["rng"])
        vars(self.usage).update(state["usage"])

    def __call__(self, prompt: str | list[dict[str, Any]]) -> str:
        return self.runner.run(self._complete(self._messages(prompt), self._seed()))

    def batch_complete(self, messages_list: Sequence[Sequence[Mapping[str, Any]]]) -> list[str]:
        """One reply per chat, all requested concurrently; the first failure is raised once
        every call has finished (gepa then retries task by task)."""
        chats = [self._messages(list(chat)) for chat in messages_list]
        seeds = [self._seed() for _ in chats]
        outcomes = self.runner.gather(
            [self._complete(chat, seed) for chat, seed in zip(chats, seeds, strict=True)]
        )
        texts: list[str] = []
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
            texts.append(outcome)
        return texts

    def _seed(self) -> int | None:
        return None if self._rng is None else self._rng.getrandbits(_SEED_BITS)

    async def _complete(self, messages: list[Message], seed: int | None) -> str:
        self.reduce_log.add([[[]]])  # one call over the records gepa put in its prompt
        try:
            completion = await self.llm.complete(
                messages,
                role=STOCK_ROLE,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                seed=seed,
            )
        except LLMCallError:
            self.usage.failed_calls += 1
            raise
        usage = self.usage
        usage.proposal_calls += 1
        usage.tokens_in += completion.prompt_tokens
        usage.tokens_out += completion.completion_tokens
        usage.cost += completion.cost or 0.0
        return completion.text

    def _messages(self, prompt: str | Sequence[Mapping[str, Any]]) -> list[Message]:
        """gepa's prompt as our chat messages: a string is one user message; a message whose
        content is a list of parts keeps its text parts (images cannot travel as text)."""
        if isinstance(prompt, str):
            return [{"role": "user", "content": prompt}]
        messages: list[Message] = []
        for message in prompt:
            role = str(message.get("role", "user"))
            content = message.get("content", "")
            if isinstance(content, str):
                messages.append({"role": role, "content": content})
                continue
            texts: list[str] = []
            dropped = 0
            for part in content or []:
                if isinstance(part, Mapping) and part.get("type") == "text":
                    texts.append(str(part.get("text", "")))
                else:
                    dropped += 1
            if dropped and not self._warned_non_text:
                self._warned_non_text = True
                log.warning(
                    "the reflection prompt has %d non-text part(s) (images); only its text is "
                    "sent to the model",
                    dropped,
                )
            messages.append({"role": role, "content": "\n\n".join(texts)})
        return messages


__all__ = ["StockReflectionLM", "TextModel"]
