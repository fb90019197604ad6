"""Which conversation a request continues, when the agent sends no session id.

A chat agent resends the whole conversation on every call: the messages it sent before, the
assistant's reply, then its new turns. So a request continues an earlier exchange when its
messages start with that exchange's messages and reply. Each exchange is stored under the digest
of those messages (its ``chain_key``); a request's running digest over its own messages is
compared with the stored keys at every assistant turn, the longest match wins. One pass over the
messages: linear in the request's length.

Messages are compared in a canonical form (role, text, tool calls by id, name and arguments), so
a framework that resends ``content: null`` as ``""`` or re-encodes the arguments' JSON still
continues its conversation. A framework that writes the reply's tool calls back in a form of its
own is linked by :mod:`combee.serve.resent_calls`: the request's digest is also compared, at every
message, with those of earlier requests whose reply called tools.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from combee.serve.resent_calls import CalledTool, arguments_of, reappears
from combee.tasks.traces.chat import content_text

Resent = Mapping[tuple[str, str], tuple[str, Sequence[CalledTool]]]
"""(namespace, digest of an exchange's request) -> its trace and its reply's tool calls."""


def canonical(message: Mapping[str, Any]) -> bytes:
    """The parts of ``message`` that identify it, as bytes."""
    calls = message.get("tool_calls") or []
    shown_calls = []
    if isinstance(calls, list):
        for call in calls:
            if not isinstance(call, Mapping):
                continue
            function = call.get("function")
            function = function if isinstance(function, Mapping) else {}
            shown_calls.append(
                [str(call.get("id") or ""), str(function.get("name") or ""), arguments_of(function)]
            )
    role = str(message.get("role") or "")
    parts = [
        "system" if role == "developer" else role,
        content_text(message.get("content")),
        shown_calls,
        str(message.get("tool_call_id") or ""),
    ]
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode()


class Chain:
    """The running digest of a conversation's messages, in a namespace."""

    __slots__ = ("_digest",)

    def __init__(self, namespace: str) -> None:
        self._digest = hashlib.sha256(namespace.encode())

    def add(self, message: Mapping[str, Any]) -> None:
        self._digest.update(hashlib.sha256(canonical(message)).digest())

    def key(self) -> str:
        """The digest of the messages added so far."""
        return self._digest.copy().hexdigest()

    def extended(self, message: Mapping[str, Any]) -> str:
        """The key after ``message``, leaving this chain as it is."""
        after = Chain.__new__(Chain)
        after._digest = self._digest.copy()
        after.add(message)
        return after.key()


def chain_key(
    namespace: str, messages: Sequence[Mapping[str, Any]], reply: Mapping[str, Any] | None
) -> str:
    """The key an exchange is stored under: the digest of its messages and its reply."""
    chain = Chain(namespace)
    for message in messages:
        chain.add(message)
    return chain.extended(reply) if reply is not None else chain.key()


def continued(
    namespace: str,
    messages: Sequence[Mapping[str, Any]],
    known: Mapping[tuple[str, str], str],
    resent: Resent | None = None,
) -> tuple[str | None, Chain]:
    """The trace ``messages`` continue, or None: the longest prefix that is an exchange's
    messages and reply (ending at an assistant turn whose digest ``known`` maps to a trace), or
    an exchange's messages whose reply's tool calls reappear after it (``resent``). Also the
    chain of all of ``messages`` (whose :meth:`Chain.extended` by the reply is the exchange's
    key)."""
    found = None
    chain = Chain(namespace)
    for position, message in enumerate(messages):
        chain.add(message)
        if message.get("role") == "assistant":
            trace = known.get((namespace, chain.key()))
            if trace is not None:
                found = trace
        if resent:
            earlier = resent.get((namespace, chain.key()))
            if earlier is not None and reappears(earlier[1], messages[position + 1 :]):
                found = earlier[0]
    return found, chain
