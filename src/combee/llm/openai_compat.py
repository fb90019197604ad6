"""The OpenAI SDK's call shape on Combee's client: ``llm.chat.completions.create(...)``.

An agent written against the ``openai`` SDK (``client.chat.completions.create(model=...,
messages=..., tools=...)``, then ``reply.choices[0].message.tool_calls``, and the message
appended to the conversation as it came) runs unchanged with the client Combee hands it: the
reply is the SDK's own ``ChatCompletion``, and the SDK's message objects are accepted back as
messages. Every call is still Combee's (counted, cached, retried, bounded, redacted).

An agent written with the OpenAI Agents SDK (``openai-agents``) takes :func:`async_openai` as
its model's client: ``OpenAIChatCompletionsModel(model="any", openai_client=async_openai(llm))``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import openai
from openai.types.chat import ChatCompletion

from combee.llm.messages import MessageError
from combee.llm.model_objects import plain_value
from combee.llm.types import Completion, JsonSchema, Sampling

Complete = Callable[..., Awaitable[Completion]]

_IGNORED = frozenset(
    {
        "model",
        "user",
        "metadata",
        "store",
        "timeout",
        "extra_headers",
        "stream_options",
        "prompt_cache_key",
        "prompt_cache_retention",
        "prompt_cache_options",
    }
)
"""Arguments that do not change the reply Combee asks for (the model is the run's)."""

_DEFAULTS: Mapping[str, object] = {
    "stream": False,
    "n": 1,
    "parallel_tool_calls": True,
    "top_p": 1,
    "frequency_penalty": 0,
    "presence_penalty": 0,
    "logprobs": False,
    "extra_query": {},
    "extra_body": {},
}
"""Arguments Combee does not carry, accepted at the value that leaves the reply as it is."""

_CARRIED = (
    "messages",
    "tools",
    "tool_choice",
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "seed",
    "response_format",
)

_KNOWN = _IGNORED | _DEFAULTS.keys() | set(_CARRIED)

SAMPLING: tuple[Sampling, ...] = ("temperature", "max_tokens", "seed")
"""Sent only when the caller sets them (``max_completion_tokens`` counts as ``max_tokens``)."""


def given(value: object) -> bool:
    """Whether a keyword argument counts as given: None and the SDK's sentinels
    (``openai.NOT_GIVEN``, ``openai.omit``) do not."""
    return value is not None and not isinstance(value, openai.NotGiven | openai.Omit)


def plain_messages(messages: Sequence[Any]) -> list[Mapping[str, Any]]:
    """``messages`` with the SDK's message objects (a whole message, or its ``tool_calls``
    put into a dict) written as the dicts they stand for."""
    return [plain_value(m) for m in messages]


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
    """``create``'s keyword arguments as :meth:`combee.llm.LLM.complete` takes them.

    None and the SDK's sentinels count as not given; an argument that does not change the
    reply (``extra_headers``, ``store``, ``metadata``, ...) is accepted and dropped; one that
    would change it and that Combee does not carry (``stream=True``, ``n=2``, ``top_p=0.5``,
    ``reasoning_effort``, ...) is refused with one :class:`MessageError` naming it. The
    ``temperature``, ``max_tokens`` and ``seed`` the caller did not set are named in
    ``unsent``: the request leaves them to the endpoint, as the SDK's own request would.
    ``response_format`` of type ``json_schema`` becomes ``json_schema=JsonSchema(...)``."""
    options = {k: v for k, v in options.items() if given(v)}
    refused = sorted(
        [k for k in options if k not in _KNOWN]
        + [
            k if isinstance(v, Mapping) else f"{k}={v!r}"
            for k, v in options.items()
            if k in _DEFAULTS and v != _DEFAULTS[k]
        ]
    )
    if refused:
        defaults = ", ".join(f"{k}={v!r}" for k, v in _DEFAULTS.items())
        raise MessageError(
            f"chat.completions.create: {', '.join(refused)} not carried by Combee's client; "
            f"leave {'it' if len(refused) == 1 else 'them'} out (it takes "
            f"{', '.join(_CARRIED)}, and only {defaults})"
        )
    limit = options.get("max_completion_tokens", options.get("max_tokens"))
    if limit is not None:
        options["max_tokens"] = limit
    out: dict[str, Any] = {"role": role}
    for name in ("tools", "tool_choice", "temperature", "max_tokens", "seed"):
        if name in options:
            out[name] = options[name]
    unsent = [name for name in SAMPLING if name not in options]
    if unsent:  # sent only as the agent set them: the endpoint's defaults for the rest
        out["unsent"] = unsent
    if "response_format" in options:
        schema = json_schema(options["response_format"])
        if schema is not None:
            out["json_schema"] = schema
    return out


def json_schema(response_format: Any) -> JsonSchema | None:
    """``response_format`` as Combee's :class:`JsonSchema` (None for ``{"type": "text"}``);
    any other kind (``json_object``, ...) is refused."""
    kind = response_format.get("type") if isinstance(response_format, Mapping) else None
    if kind == "text":
        return None
    spec = response_format.get("json_schema") if kind == "json_schema" else None
    if (
        isinstance(spec, Mapping)
        and isinstance(spec.get("name"), str)
        and isinstance(spec.get("schema"), Mapping)
    ):
        return JsonSchema(name=spec["name"], schema=spec["schema"])
    raise MessageError(
        f"chat.completions.create: response_format {response_format!r} not carried by "
        "Combee's client; give {'type': 'json_schema', 'json_schema': {'name': str, "
        "'schema': <JSON schema>}} or leave it out"
    )


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


class HasAsyncChat(Protocol):
    """A client with the SDK's async call shape, such as the ``llm`` an agent receives."""

    @property
    def chat(self) -> AsyncChat: ...


@runtime_checkable
class BlocksOffLoop(Protocol):
    """A client whose ``chat`` blocks (the ``llm`` of an agent written as a plain function, on
    a thread of its own) and which offers the same calls to await on an event loop the agent
    makes on that thread (``asyncio.run``, the Agents SDK's ``Runner.run_sync``)."""

    @property
    def async_chat(self) -> AsyncChat: ...


class OpenAIClient:
    """What the OpenAI Agents SDK's ``OpenAIChatCompletionsModel`` uses of the SDK's
    ``AsyncOpenAI``: ``chat.completions.create`` and ``base_url``."""

    base_url = "combee://llm"
    """Not an OpenAI address, so the Agents SDK adds no OpenAI-only defaults (``store``)."""

    def __init__(self, chat: AsyncChat) -> None:
        self.chat = chat


def async_openai(llm: HasAsyncChat | BlocksOffLoop) -> OpenAIClient:
    """``llm`` (the client an agent receives) as the ``openai_client`` of the OpenAI Agents
    SDK: ``OpenAIChatCompletionsModel(model="any", openai_client=async_openai(llm))``. Each
    of the agent's model calls is one of Combee's (role ``agent``). An agent written as a plain
    function runs the SDK with ``Runner.run_sync`` (or ``asyncio.run(Runner.run(...))``) on its
    own thread; an ``async def`` agent awaits ``Runner.run``."""
    return OpenAIClient(llm.async_chat if isinstance(llm, BlocksOffLoop) else llm.chat)


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
