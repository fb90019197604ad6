"""The LLM interface: one async call returning text plus usage."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from combee.llm.messages import (
    ToolChoice,
    check_tool_choice,
    message_texts,
    wire_messages,
    wire_tools,
)

Message = Mapping[str, Any]
"""An OpenAI chat message: ``{"role": ..., "content": ...}``, an assistant's ``tool_calls``
(``[{"id", "type": "function", "function": {"name", "arguments"}}]``), a tool result's
``tool_call_id`` (see :mod:`combee.llm.messages`)."""

JsonMode = Literal["json_schema", "json_object_schema", "json_object", "none"]
"""How a JSON schema reaches the server:

- ``json_schema``: ``response_format={"type": "json_schema", "json_schema": {...}}`` (OpenAI, vLLM).
- ``json_object_schema``: ``{"type": "json_object", "schema": {...}}`` (llama.cpp server).
- ``json_object``: ``{"type": "json_object"}``, the schema only described in the prompt.
- ``none``: no ``response_format`` at all; the prompt carries the schema.
"""


DEFAULT_KEY_ENV = "OPENAI_API_KEY"
"""The environment variable that holds the API key when none is named."""

DEFAULT_MAX_TOKENS = 2048
"""Completion tokens per call unless a run says otherwise."""

DEFAULT_JSON_MODE: JsonMode = "json_schema"
"""How replies are held to a schema unless the endpoint needs another mode."""

Sampling = Literal["temperature", "max_tokens", "seed"]
"""A sampling setting a request may leave to the endpoint's own default."""


@dataclass(frozen=True)
class JsonSchema:
    """A named JSON schema a role's reply must satisfy."""

    name: str
    schema: Mapping[str, Any]
    accepts: Mapping[str, Any] | None = None
    """What a reply is validated against when the caller repairs more than ``schema`` admits
    (``schema`` still constrains decoding); None: ``schema`` itself."""


@dataclass(frozen=True)
class Completion:
    """One model reply with its usage."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    model: str
    cost: float | None = None
    cached: bool = False
    tool_calls: tuple[dict[str, Any], ...] = ()
    """The tool calls the model asked for, as the OpenAI chat API writes them:
    ``{"id", "type": "function", "function": {"name", "arguments": <JSON string>}}``."""
    finish_reason: str | None = None
    """Why the model stopped, as the server said it (``stop``, ``length`` when the reply was
    cut off at ``max_tokens``, ``tool_calls``); None when it did not say."""

    @property
    def message(self) -> dict[str, Any]:
        """The reply as the assistant message to append to the conversation (content None
        when the model only called tools, as the OpenAI chat API returns it)."""
        if not self.tool_calls:
            return {"role": "assistant", "content": self.text}
        return {
            "role": "assistant",
            "content": self.text or None,
            "tool_calls": [dict(call) for call in self.tool_calls],
        }


@dataclass(frozen=True)
class Request:
    """Everything that determines a reply; also the response-cache key."""

    messages: tuple[dict[str, Any], ...]
    """The messages as they are sent (checked by :func:`combee.llm.messages.wire_messages`)."""
    temperature: float
    max_tokens: int
    json_schema: JsonSchema | None = None
    seed: int | None = None
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: ToolChoice | None = None
    unsent: frozenset[Sampling] = frozenset()
    """Sampling settings left out of the request, so the endpoint's defaults apply (an agent's
    call through the OpenAI SDK's call shape sends only what the agent set). Their fields
    above still hold Combee's values: ``max_tokens`` bounds the reply the client accepts, and
    an embedded model, which has no defaults of a server, samples with them."""

    @staticmethod
    def build(
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        json_schema: JsonSchema | None = None,
        seed: int | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        unsent: Collection[Sampling] = (),
    ) -> Request:
        """A request; a message, tool or tool choice that cannot be sent as it is raises
        :class:`combee.llm.messages.MessageError`. A seed ``unsent`` names is dropped."""
        wired_tools = wire_tools(tools)
        check_tool_choice(tool_choice, wired_tools)
        return Request(
            messages=wire_messages(messages),
            temperature=temperature,
            max_tokens=max_tokens,
            json_schema=json_schema,
            seed=None if "seed" in unsent else seed,
            tools=wired_tools,
            tool_choice=tool_choice,
            unsent=frozenset(unsent),
        )

    def sends(self, setting: Sampling) -> bool:
        """Whether the request carries ``setting`` (the seed only when there is one)."""
        return setting not in self.unsent and (setting != "seed" or self.seed is not None)

    def chat_messages(self) -> list[dict[str, Any]]:
        return [dict(m) for m in self.messages]

    def uses_tools(self) -> bool:
        """Whether the request offers tools or its conversation holds tool calls or results."""
        return bool(self.tools) or any(
            m["role"] == "tool" or m.get("tool_calls") for m in self.messages
        )

    def text(self) -> str:
        """Every text the request sends, joined (for token estimates)."""
        return "".join(t for m in self.messages for t in message_texts(m))


class Backend(Protocol):
    """A provider of completions (an OpenAI-compatible endpoint, a local model, ...).

    Backends do one attempt per call and raise; retries, caching, concurrency limits and
    accounting live in :class:`combee.llm.client.LLM` around them.
    """

    model: str

    async def complete(self, request: Request) -> Completion: ...

    async def aclose(self) -> None: ...


@dataclass
class RoleUsage:
    """Accumulated usage of one role (generator, reflector, curator, merge, ...)."""

    calls: int = 0
    failed_calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    reasks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    replayed_s: float = 0.0
    """What the cached calls replayed here took when they were first made."""
    cost: float = 0.0
    retries_by_kind: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class ChatModel(Protocol):
    """What a base method needs from the LLM layer: one structured call per role
    (:class:`combee.llm.client.LLM` provides it; tests may pass anything with this method).

    ``seed``, when given, is this request's sampling seed in place of the model's own."""

    async def complete_json(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        schema: JsonSchema,
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        seed: int | None = None,
    ) -> tuple[dict[str, Any], Completion]: ...


@dataclass(frozen=True)
class ModelLimits:
    """What a model can read and how its replies are held, as far as the client knows."""

    context_window: int | None = None
    """Tokens one call may read and write together (None: not known)."""
    bounded_replies: bool = False
    """Replies are decoded under :func:`combee.llm.bounded.bounded_schema`'s grammar, so a
    payload array never holds more items than that schema allows (the embedded model)."""


@runtime_checkable
class StatesLimits(Protocol):
    """A client or backend that knows its model's limits; optional."""

    def limits(self) -> ModelLimits: ...


@runtime_checkable
class Widens(Protocol):
    """A client whose concurrency follows the run (:class:`combee.llm.client.LLM`): it can be
    told how many calls the run will make at once; optional."""

    def widen(self, calls: int) -> None: ...


@runtime_checkable
class RemoteBackend(Protocol):
    """A backend that calls an endpoint over the network; optional (an embedded model is not
    one). Its URL names it in messages and cache keys, its key variable in messages, and its
    JSON mode is what the endpoint accepts."""

    base_url: str
    api_key_env: str
    json_mode: JsonMode


@runtime_checkable
class SharesUsage(Protocol):
    """A client whose copies in other processes (Ray workers) report their usage back to it;
    :class:`combee.llm.client.LLM` is one."""

    def usage(self) -> Mapping[str, RoleUsage]: ...

    def absorb(self, usage: Mapping[str, RoleUsage]) -> None: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class HoldsClient(Protocol):
    """A method that makes its calls through one client, its ``llm``; optional (a method that
    does is run in Ray workers with that client's usage brought back)."""

    llm: object
