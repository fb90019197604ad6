"""The client's test call before a run: a wrong URL, key or model, or a server that cannot give
structured replies, fails here with a message naming the setting, before any work starts.

This module does not import the client: it asks only for the public members in
:class:`Probed` (``json_mode``, ``shown_endpoint``, ``build_request`` and ``probe``),
and :meth:`combee.llm.client.LLM.preflight` calls :func:`run_preflight` with itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from combee.errors import EndpointError, LLMCallError, parameter
from combee.llm.types import DEFAULT_MAX_TOKENS, Completion, JsonMode, JsonSchema, Message, Request

_PREFLIGHT_ROLE = "preflight"
_PREFLIGHT_SCHEMA = JsonSchema(
    name="preflight",
    schema={"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
)


class Probed(Protocol):
    """What the test call needs of a client: :class:`combee.llm.client.LLM` has it."""

    @property
    def json_mode(self) -> JsonMode: ...

    @property
    def shown_endpoint(self) -> str: ...

    def build_request(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        json_schema: JsonSchema | None = None,
        seed: int | None = None,
    ) -> Request: ...

    async def probe(self, request: Request, *, role: str) -> tuple[Completion, str | None]: ...


async def run_preflight(llm: Probed) -> None:
    """One tiny call, so a wrong URL, key or model fails before any work starts: with
    ``json_schema`` a structured one, which also checks that schemas are honoured. A reply
    already in the response cache (a rerun against the same endpoint) answers it."""
    if llm.json_mode == "json_schema":
        await _preflight_json_schema(llm)
        return
    request = llm.build_request([{"role": "user", "content": "Reply with OK."}], max_tokens=1)
    try:
        await llm.probe(request, role=_PREFLIGHT_ROLE)
    except EndpointError:
        raise
    except LLMCallError as error:
        raise EndpointError(
            f"the LLM endpoint at {llm.shown_endpoint} failed a test call: {error}"
        ) from None


async def _preflight_json_schema(llm: Probed) -> None:
    """Servers without ``json_schema`` response formats (llama.cpp's) answer 400: say so
    before any work starts, with the setting that fixes it. The reply must be the object
    asked for: a server that answers 200 with no content would fail every call."""
    request = llm.build_request(
        [{"role": "user", "content": 'Reply with {"ok": true}.'}],
        max_tokens=16,
        json_schema=_PREFLIGHT_SCHEMA,
    )
    try:
        completion, problem = await llm.probe(request, role=_PREFLIGHT_ROLE)
    except EndpointError:
        raise
    except LLMCallError as error:
        about_format = any(word in str(error) for word in ("json_schema", "response_format"))
        if error.kind != "4xx" and not about_format:  # down, overloaded, slow: not the format
            raise EndpointError(
                f"the LLM endpoint at {llm.shown_endpoint} failed a test call: {error}"
            ) from None
        raise EndpointError(
            f"the LLM endpoint at {llm.shown_endpoint} refused a structured-output "
            f"call ({error}). If the server lacks response_format type json_schema, set "
            f"{parameter('json_mode', 'json_object_schema')} (llama.cpp server) or "
            + parameter("json_mode", "json_object"),
            setting="json_mode",
        ) from None
    if problem is not None:
        shown = completion.text.strip()[:120] or "no content"
        raise EndpointError(
            f"the LLM endpoint at {llm.shown_endpoint} answered a structured test "
            f"call with {shown!r} ({problem}); every call of the run would fail the same way. "
            "Check that the model supports structured output, or set json_mode",
            setting="json_mode",
        )
