"""The OpenAI SDK's call shape on Combee's client: ``llm.chat.completions.create(...)``.

An agent written against the ``openai`` SDK (``client.chat.completions.create(model=...,
messages=..., tools=...)``, then ``reply.choices[0].message.tool_calls``, and the message
appended to the conversation as it came) runs unchanged with the client Combee hands it: the
reply is the SDK's own ``ChatCompletion``, and the SDK's message objects are accepted back as
messages. Every call is still Combee's (counted, cached, retried, bounded, redacted).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from combee.llm.messages import MessageError
from combee.llm.types import DEFAULT_MAX_TOKENS, Completion

Complete = Callable[..., Awaitable[Completion]]

_IGNORED = frozenset({"model", "user", "metadata", "store", "parallel_tool_calls", "timeout"})
"""Arguments that do not change the reply Combee asks for (the model is the run's)."""


def plain_messages(messages: Sequence[Any]) -> list[Mapping[str, Any]]:
    """``messages`` with the SDK's message objects written as the dicts they stand for."""
    return [
        m.model_dump(exclude_none=True, exclude_unset=False, mode="json")
        if isinstance(m, openai.BaseModel)
        else m
        for m in messages
    ]


def chat_completion(completion: Completion) -> ChatCompletion:
    """A :class:`Completion` as the SDK's ``ChatCompletion``."""
    message = completion.message
    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-combee",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": completion.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if completion.tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
                "total_tokens": completion.prompt_tokens + completion.completion_tokens,
            },
        }
    )


def call_options(role: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``create``'s keyword arguments as :meth:`combee.llm.LLM.complete` takes them; one that
    would change the reply and that Combee does not carry is refused."""
    unknown = sorted(k for k, v in options.items() if k not in _KNOWN and v is not None)
    if unknown:
        raise MessageError(
            f"chat.completions.create: {', '.join(unknown)} not carried by Combee's client "
            f"(it takes {', '.join(sorted(_KNOWN - _IGNORED))})"
        )
    if options.get("stream"):
        raise MessageError("chat.completions.create: stream=True is not carried; leave it out")
    if options.get("n", 1) != 1:
        raise MessageError("chat.completions.create: n must be 1")
    limit = options.get("max_completion_tokens") or options.get("max_tokens")
    out: dict[str, Any] = {
        "role": role,
        "temperature": 0.0 if options.get("temperature") is None else options["temperature"],
        "max_tokens": limit or DEFAULT_MAX_TOKENS,
    }
    for name in ("tools", "tool_choice", "seed"):
        if options.get(name) is not None:
            out[name] = options[name]
    return out


_KNOWN = _IGNORED | {
    "messages",
    "tools",
    "tool_choice",
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "seed",
    "stream",
    "n",
}


class AsyncCompletions:
    """``chat.completions`` of the SDK's async client."""

    def __init__(self, complete: Complete, role: str) -> None:
        self._complete = complete
        self._role = role

    async def create(self, *, messages: Sequence[Any], **options: Any) -> ChatCompletion:
        completion = await self._complete(
            plain_messages(messages), **call_options(self._role, options)
        )
        return chat_completion(completion)


class AsyncChat:
    """``chat`` of the SDK's async client: ``await llm.chat.completions.create(...)``."""

    def __init__(self, complete: Complete, role: str = "agent") -> None:
        self.completions = AsyncCompletions(complete, role)


class Completions:
    """``chat.completions`` of the SDK's synchronous client."""

    def __init__(self, complete: Callable[..., Completion], role: str) -> None:
        self._complete = complete
        self._role = role

    def create(self, *, messages: Sequence[Any], **options: Any) -> ChatCompletion:
        completion = self._complete(plain_messages(messages), **call_options(self._role, options))
        return chat_completion(completion)


class Chat:
    """``chat`` of the SDK's synchronous client: ``llm.chat.completions.create(...)``."""

    def __init__(self, complete: Callable[..., Completion], role: str = "agent") -> None:
        self.completions = Completions(complete, role)
