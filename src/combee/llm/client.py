"""The LLM client every role calls: cache, concurrency limit, retries, JSON checking, accounting."""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from combee.errors import ConfigError, InvalidReplyError
from combee.llm.accounting import Accounting, CallRecord, Prices
from combee.llm.attempts import Attempts
from combee.llm.cache import ResponseCache, cache_key
from combee.llm.call_gate import CallGate
from combee.llm.guards import (
    DEFAULT_CONCURRENCY,
    MAX_CONCURRENCY,
    MAX_FAILURES_IN_A_ROW,
    FailureStreak,
    check_limits,
    oversized_reply,
)
from combee.llm.messages import ToolChoice
from combee.llm.placeholders import Placeholders
from combee.llm.preflight import run_preflight
from combee.llm.redact import without_credentials
from combee.llm.redaction import Redaction, reply_text, revealed
from combee.llm.screening import planted_kind
from combee.llm.structured import (
    SchemaInstructions,
    SchemaValidators,
    cut_off,
    reask_request,
)
from combee.llm.types import (
    DEFAULT_JSON_MODE,
    DEFAULT_MAX_TOKENS,
    Backend,
    Completion,
    JsonMode,
    JsonSchema,
    Message,
    ModelLimits,
    RemoteBackend,
    Request,
    RoleUsage,
    Sampling,
    StatesLimits,
)

__all__ = ["LLM", "CallRecord", "Prices"]


class LLM:
    """Wraps a :class:`Backend` with everything a training run needs around each call.

    ``json_mode`` says how schemas reach the model; unless it is ``json_schema`` (or the
    backend's own ``json_mode`` is something else) the schema is also written into the system
    prompt. The LLM owns ``cache``: :meth:`aclose` closes it. With ``redact`` (the default),
    secret-like strings are replaced in every message before it is sent or cached and in every
    reply (see :mod:`combee.llm.redact`); :attr:`redacted` counts them by kind.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        concurrency: int | None = None,
        max_concurrency: int = MAX_CONCURRENCY,
        max_retries: int = 4,
        timeout_s: float | None = 120.0,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        cache: ResponseCache | None = None,
        json_mode: JsonMode = DEFAULT_JSON_MODE,
        prices: Prices | None = None,
        seed: int | None = None,
        redact: bool = True,
        max_failures_in_a_row: int | None = MAX_FAILURES_IN_A_ROW,
        described: Mapping[str, object] | None = None,
    ) -> None:
        check_limits(concurrency, max_retries, timeout_s, max_failures_in_a_row)
        self._backend = backend
        self._gate = CallGate(
            concurrency or min(DEFAULT_CONCURRENCY, max_concurrency),
            follows_run=concurrency is None,
            most=max_concurrency,
        )
        self._cache = cache
        remote = backend if isinstance(backend, RemoteBackend) else None
        backend_mode: JsonMode = remote.json_mode if remote else json_mode
        self._json_mode: JsonMode = json_mode if json_mode != "json_schema" else backend_mode
        self._seed = seed
        self._base_url: str | None = remote.base_url if remote else None
        key_env = remote.api_key_env if remote else None
        self._shown_url = without_credentials(self._base_url)
        self._streak = FailureStreak(max_failures_in_a_row, self._shown_url or backend.model)
        self._accounting = Accounting(prices)
        self._attempts = Attempts(
            backend, self._gate, self._accounting, self._streak, max_retries, timeout_s,
            backoff_base_s, backoff_max_s, random.Random(seed), self._shown_url,
            key_env,
        )  # fmt: skip
        self._validators = SchemaValidators()
        self._instructions = SchemaInstructions()
        self._redaction = Redaction(redact)
        self.redacted: Counter[str] = self._redaction.counts
        """Secret-like strings replaced so far, by kind."""
        self.endpoint: Any = None
        """The :class:`combee.llm.Endpoint` this client was made from, when it was."""
        self.origin: str | None = None
        """The run these calls are made for (set by the run engine): replies are cached with
        it, and a reply this same run paid for in an attempt that stopped before its
        checkpoint counts as spent when a resume replays it, not as saved."""
        self.settings: dict[str, object] = {
            "model": backend.model,
            "base_url": self._shown_url,
            "api_key_env": key_env,
            "json_mode": self._json_mode,
            "concurrency": concurrency,
            "timeout_s": timeout_s,
            "max_retries": max_retries,
            "cache": os.path.abspath(cache.path) if cache is not None else None,
            "redact": redact,
            "max_failures_in_a_row": max_failures_in_a_row,
            "prices": None
            if prices is None
            else [prices.prompt_per_mtok, prices.completion_per_mtok],
            **(described or {}),
        }
        """How this client was set up, as recorded in a run's config.json (never a key);
        ``described`` adds or replaces entries (the endpoint's own names for them)."""

    def absorb(self, usage: Mapping[str, RoleUsage]) -> None:
        """Count usage that copies of this client spent in other processes (Ray workers)."""
        for role, spent in usage.items():
            self._accounting.absorb(role, spent)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """A copy for another process (a Ray worker): the same endpoint, connected there on
        first use, without the response cache (a file on this machine)."""
        endpoint = self.endpoint
        if endpoint is None:
            raise ConfigError(
                "this client cannot be sent to another process: make it with "
                "combee.llm.connect or a combee.llm.Endpoint",
                setting="llm",
            )
        return (endpoint.without_cache().connect, ())

    @property
    def concurrency(self) -> int:
        """Calls in flight at most, now."""
        return self._gate.limit

    def widen(self, calls: int) -> int:
        """Let ``calls`` calls run at once, when the concurrency was left to follow the run
        (``concurrency=None``), up to ``max_concurrency``; return the limit now in force."""
        return self._gate.widen(calls)

    @property
    def model(self) -> str:
        return self._backend.model

    @property
    def json_mode(self) -> JsonMode:
        return self._json_mode

    @property
    def shown_endpoint(self) -> str:
        """Where the calls go, as error messages name it: the base URL without credentials,
        or the model's name when the backend has no URL (an embedded model)."""
        return self._shown_url or self.model

    def limits(self) -> ModelLimits:
        """The model's context window and reply bounds, as its backend states them."""
        backend = self._backend
        return backend.limits() if isinstance(backend, StatesLimits) else ModelLimits()

    def usage(self) -> dict[str, RoleUsage]:
        """Usage per role, a copy."""
        return self._accounting.snapshot()

    @property
    def calls(self) -> list[CallRecord]:
        """Every logical call so far, in completion order, a copy."""
        return list(self._accounting.calls)

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        json_schema: JsonSchema | None = None,
        seed: int | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        placeholders: Placeholders | None = None,
        unsent: Collection[Sampling] = (),
    ) -> Completion:
        """One completion; ``seed``, when given, replaces the client's sampling seed for this
        request (it is sent to the server and is part of the response-cache key). A setting
        named in ``unsent`` is left out of the request, so the endpoint's default applies.

        ``messages`` are OpenAI chat messages, tool calls and tool results included; ``tools``
        and ``tool_choice`` are sent as the OpenAI chat API defines them, and the model's tool
        calls come back in :attr:`Completion.tool_calls` (append :attr:`Completion.message` to
        the conversation). A message that cannot be sent as it is raises
        :class:`~combee.llm.messages.MessageError`. With ``placeholders`` (and redaction on),
        secrets leave as that object's stable placeholders and are put back in the reply."""
        request = self.build_request(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            json_schema=json_schema,
            seed=seed,
            tools=tools,
            tool_choice=tool_choice,
            placeholders=placeholders,
            unsent=unsent,
        )
        completion, key = await self._call(request, role, placeholders=placeholders)
        if key is not None and not completion.cached:
            await self._remember(key, completion)
        return revealed(completion, placeholders)

    async def complete_json(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        schema: JsonSchema,
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        seed: int | None = None,
        placeholders: Placeholders | None = None,
    ) -> tuple[dict[str, Any], Completion]:
        """A reply parsed and validated against ``schema``, re-asking once when it is not
        (``seed`` and ``placeholders`` as in :meth:`complete`)."""
        request = self.build_request(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            json_schema=schema,
            seed=seed,
            placeholders=placeholders,
        )
        value, problem, completion = await self._checked(request, role, placeholders=placeholders)
        if value is None and completion.finish_reason == "length":
            self._accounting.role(role).failed_calls += 1
            raise cut_off(role, request.max_tokens, completion.text)
        if value is None:
            self._accounting.reasked(role)
            retry_request = reask_request(request, completion.text, problem or "")
            value, problem, completion = await self._checked(
                retry_request, role, placeholders=placeholders
            )
        if value is not None:
            if placeholders is None:
                return value, completion
            return placeholders.reveal_value(value), revealed(completion, placeholders)
        self._accounting.role(role).failed_calls += 1
        raise InvalidReplyError(
            f"{role}: the reply is still invalid after one re-ask: {problem}; "
            f"the reply starts with {completion.text[:200]!r}",
            role=role,
            kind="invalid_reply",
            attempts=2,
        )

    async def preflight(self) -> None:
        """One tiny call, so a wrong URL, key or model fails before any work starts: with
        ``json_schema`` a structured one, which also checks that schemas are honoured. A reply
        already in the response cache (a rerun against the same endpoint) answers it."""
        await run_preflight(self)

    async def probe(self, request: Request, *, role: str) -> tuple[Completion, str | None]:
        """Send ``request`` to test the endpoint (what :meth:`preflight` does): like any call
        it is answered from the response cache when the cache holds it, retried and counted
        under ``role``, but an endpoint that cannot be reached raises :class:`EndpointError`
        naming ``base_url`` at once. Returns the completion and, when the request carries a
        JSON schema, why the reply does not match it (None: it matches, or there is no
        schema). A reply that matches its schema is stored in the cache; nothing else is."""
        _, problem, completion = await self._checked(request, role, preflight=True)
        return completion, problem

    async def _checked(
        self,
        request: Request,
        role: str,
        *,
        preflight: bool = False,
        placeholders: Placeholders | None = None,
    ) -> tuple[dict[str, Any] | None, str | None, Completion]:
        """A reply to ``request`` with its check against the request's schema (value, problem;
        both None without a schema). Only a reply that matches is stored in the cache."""
        completion, key = await self._call(
            request, role, preflight=preflight, placeholders=placeholders
        )
        if request.json_schema is None:
            return None, None, completion
        value, problem = self._validators.check(completion.text, request.json_schema)
        if value is not None and key is not None and not completion.cached:
            await self._remember(key, completion)
        return value, problem, completion

    async def aclose(self) -> None:
        try:
            await self._backend.aclose()
        finally:
            if self._cache is not None:
                self._cache.close()

    def build_request(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        json_schema: JsonSchema | None = None,
        seed: int | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        placeholders: Placeholders | None = None,
        unsent: Collection[Sampling] = (),
    ) -> Request:
        """The request :meth:`complete` sends for these arguments: secret-like strings
        redacted (unless ``redact=False``; as ``placeholders`` when given) in every message's
        content and tool-call arguments, the schema written into the system prompt when
        ``json_mode`` is not ``json_schema``, and the client's seed unless ``seed`` is given or
        ``unsent`` names it."""
        request = Request.build(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            json_schema=json_schema,
            seed=self._seed if seed is None else seed,
            tools=tools,
            tool_choice=tool_choice,
            unsent=unsent,
        )
        sent = self._redaction.messages(request.messages, placeholders)
        if json_schema is not None and self._json_mode != "json_schema":
            sent = tuple(dict(m) for m in self._instructions.add(sent, json_schema))
        return request if sent is request.messages else replace(request, messages=sent)

    async def _call(
        self,
        request: Request,
        role: str,
        *,
        preflight: bool = False,
        placeholders: Placeholders | None = None,
    ) -> tuple[Completion, str | None]:
        """A completion from the cache or the backend, and its cache key (None: no cache)."""
        start = time.perf_counter()
        if self._cache is None:
            completion = await self._attempts.run(request, role, start, preflight=preflight)
            return self._cleaned(completion, request, role, placeholders), None
        key = cache_key(
            request, model=self.model, base_url=self._base_url, json_mode=self._json_mode
        )
        found = await self._cache.get_with_origin(key)
        if found is None:
            completion = await self._attempts.run(request, role, start, preflight=preflight)
            return self._cleaned(completion, request, role, placeholders), key
        hit, origin = found
        if origin is not None and origin == self.origin:
            self._accounting.spent_earlier(role, hit, start=start)
            return replace(hit, cached=True), key
        self._accounting.cache_hit(role, hit, start=start)
        return replace(hit, cached=True, cost=None if hit.cost is None else 0.0), key

    def _cleaned(
        self,
        completion: Completion,
        request: Request,
        role: str,
        placeholders: Placeholders | None = None,
    ) -> Completion:
        """The reply with secret-like strings replaced (before it is parsed or cached; as
        ``placeholders`` when given) in its text and tool-call arguments; a reply far longer
        than ``max_tokens`` allows is refused, never parsed, cached or sent back."""
        oversized = oversized_reply(reply_text(completion), request.max_tokens, role)
        if oversized is not None:
            self._accounting.role(role).failed_calls += 1
            raise oversized
        return self._redaction.reply(completion, placeholders)

    async def _remember(self, key: str, completion: Completion) -> None:
        if self._redaction.on and planted_kind(reply_text(completion)) is not None:
            return  # a reply repeating a planted instruction is used once, never stored
        if self._cache is not None:
            await self._cache.put(key, completion, self.origin)
