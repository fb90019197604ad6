"""The run's LLM client as one episode of an agent sees it.

Each episode gets its own :class:`EpisodeLLM` around the run's client: the same calls (plain,
structured, with tools, and the OpenAI SDK's ``chat.completions.create``), with redaction made
reversible for the episode: a secret or an e-mail address in the conversation leaves for the
endpoint as a stable placeholder (the same value, the same placeholder, all episode long) and
comes back as itself in the model's text and tool-call arguments, so the agent's tools get real
values while the endpoint and the response cache never see them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from combee.llm.client import LLM
from combee.llm.placeholders import Placeholders
from combee.llm.types import Completion, Message

if TYPE_CHECKING:
    from combee.llm.openai_compat import AsyncChat


class EpisodeLLM:
    """The run's client (an :class:`~combee.llm.LLM`) for one episode."""

    def __init__(self, llm: LLM) -> None:
        self._llm = llm
        self.placeholders = Placeholders()
        """Placeholder -> value for this episode's conversation."""

    @property
    def chat(self) -> AsyncChat:
        """The OpenAI SDK's call shape: ``await llm.chat.completions.create(messages=...)``
        (role ``agent``)."""
        from combee.llm.openai_compat import AsyncChat  # the openai SDK, when an agent asks

        return AsyncChat(self.complete)

    @property
    def model(self) -> str:
        return self._llm.model

    async def complete(self, messages: Sequence[Message], **options: Any) -> Completion:
        return await self._llm.complete(messages, placeholders=self.placeholders, **options)

    async def complete_json(
        self, messages: Sequence[Message], **options: Any
    ) -> tuple[dict[str, Any], Completion]:
        return await self._llm.complete_json(messages, placeholders=self.placeholders, **options)


def for_episode(llm: Any) -> Any:
    """The client an episode's agent receives: an :class:`EpisodeLLM` around Combee's own
    client; any other client (a test's own) as it is."""
    return EpisodeLLM(llm) if isinstance(llm, LLM) else llm
