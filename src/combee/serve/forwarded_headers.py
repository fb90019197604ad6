"""Which headers cross the gateway.

To the upstream: the OpenAI request headers an SDK sets (organization, project, beta features,
an idempotency key, the SDK's ``X-Stainless-*`` description of itself). Never the agent's
``Authorization`` or ``api-key`` (the upstream gets the gateway's own key), nor the gateway's
``X-Combee-*`` headers or the connection's own.

Back to the agent: the reply's content type, the upstream's request id, its rate-limit state
(``x-ratelimit-*``), its ``openai-*`` headers and ``retry-after``, so an SDK's retries and
backoff work through the gateway as they do without it.
"""

from __future__ import annotations

from collections.abc import Iterable

_TO_UPSTREAM = frozenset(
    {"openai-organization", "openai-project", "openai-beta", "idempotency-key",
     "x-client-request-id"}
)  # fmt: skip
_TO_UPSTREAM_PREFIXES = ("x-stainless-",)
_TO_AGENT = frozenset({"content-type", "x-request-id", "retry-after", "retry-after-ms"})
_TO_AGENT_PREFIXES = ("x-ratelimit-", "openai-")


def to_upstream(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The agent's request headers that go on to the upstream (names in lower case)."""
    return _kept(headers, _TO_UPSTREAM, _TO_UPSTREAM_PREFIXES)


def to_agent(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The upstream's reply headers that go back to the agent (names in lower case)."""
    return _kept(headers, _TO_AGENT, _TO_AGENT_PREFIXES)


def _kept(
    headers: Iterable[tuple[str, str]], names: frozenset[str], prefixes: tuple[str, ...]
) -> dict[str, str]:
    kept = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered in names or lowered.startswith(prefixes):
            kept[lowered] = value
    return kept
