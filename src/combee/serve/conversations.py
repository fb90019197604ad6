"""Which conversation (trace) each exchange belongs to: the agent's session id, else the
messages' prefix (:mod:`combee.serve.chaining`). Both are remembered in memory, read back from
the store when the gateway starts. Requests whose reply called tools are remembered too, for an
agent that writes those calls back as text (:mod:`combee.serve.resent_calls`); those live in
memory only (a gateway restarted in the middle of such a run starts a new trace)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Any

from combee.serve.chaining import Chain, continued
from combee.serve.resent_calls import CalledTool, called_tools
from combee.serve.store import TraceStore

REMEMBERED = 200_000
"""Conversations (sessions and exchange digests) kept in memory for chaining."""


class Conversations:
    """The traces of the sessions and exchange digests seen, the newest :data:`REMEMBERED`."""

    def __init__(self, store: TraceStore) -> None:
        self._sessions: dict[tuple[str, str], str] = {}
        self._chains: dict[tuple[str, str], str] = {}
        self._resent: dict[tuple[str, str], tuple[str, tuple[CalledTool, ...]]] = {}
        for namespace, session, trace in store.session_traces(REMEMBERED):
            self._sessions[(namespace, session)] = trace
        for namespace, key, trace in store.chain_keys(REMEMBERED):
            self._chains[(namespace, key)] = trace

    def trace_for(
        self, namespace: str, session: str, messages: Sequence[Mapping[str, Any]]
    ) -> tuple[str, Chain]:
        """The trace a request belongs to (a new one when it continues none) and its chain."""
        found, chain = continued(namespace, messages, self._chains, self._resent)
        if session:
            key = (namespace, session)
            trace = self._sessions.get(key)
            if trace is None:
                trace = self._sessions[key] = new_id("tr")
                _forget_oldest(self._sessions)
            return trace, chain
        return found or new_id("tr"), chain

    def session_trace(self, namespace: str, session: str) -> str | None:
        """The trace of the agent's session id, if one was seen."""
        return self._sessions.get((namespace, session))

    def remember(
        self,
        namespace: str,
        chain_key: str,
        trace_id: str,
        chain: Chain | None = None,
        reply: Mapping[str, Any] | None = None,
    ) -> None:
        """A stored exchange's digest: a request that continues it belongs to ``trace_id``.
        With the exchange's ``chain`` and ``reply``: a reply that called tools, so a request
        that begins with this one's messages and writes one of those calls again in any form
        belongs to ``trace_id`` too."""
        self._chains[(namespace, chain_key)] = trace_id
        _forget_oldest(self._chains)
        calls = called_tools(reply) if chain is not None and reply is not None else ()
        if chain is not None and calls:
            self._resent[(namespace, chain.key())] = (trace_id, calls)
            _forget_oldest(self._resent)


_PROCESS = os.urandom(6).hex()
_COUNTER = itertools.count(1)


def new_id(prefix: str) -> str:
    """Unique across processes and restarts (a random part per process, then a count): no
    call to the system's random source per request. The two parts are apart (``-``), so the
    id reads as an id and not as a key where it is quoted (a reflector's prompt, a lesson)."""
    return f"{prefix}-{_PROCESS}-{next(_COUNTER):010x}"


def _forget_oldest(remembered: dict[Any, Any]) -> None:
    excess = len(remembered) - REMEMBERED
    if excess > 0:
        for key in list(islice(remembered, excess)):
            del remembered[key]
