"""An exchange while its reply is on the way, and what the store keeps of it."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from combee.llm.redact import redact
from combee.llm.wire import loads
from combee.serve.chaining import Chain
from combee.serve.records import Exchange


class ExchangeDraft:
    """What the gateway knows of an exchange before the upstream has answered."""

    __slots__ = (
        "chain", "messages", "model", "namespace", "session", "started", "task", "tools",
        "trace_id", "version",
    )  # fmt: skip

    def __init__(
        self,
        *,
        trace_id: str,
        namespace: str,
        session: str,
        task: str,
        messages: list[dict[str, Any]],
        tools: list[Any],
        model: str,
        version: int | None,
        started: float,
        chain: Chain,
    ) -> None:
        self.trace_id = trace_id
        self.namespace = namespace
        self.session = session
        self.task = task
        self.messages = messages
        self.tools = tools
        self.model = model
        self.version = version
        self.started = started
        self.chain = chain

    def exchange(
        self,
        exchange_id: str,
        reply: Mapping[str, Any] | None,
        status: int,
        chain_key: str,
        *,
        redacts: bool,
    ) -> Exchange:
        """The exchange to store, its texts redacted when ``redacts``."""
        shown = redacted if redacts else _same
        return Exchange(
            id=exchange_id,
            trace_id=self.trace_id,
            namespace=self.namespace,
            created=time.time(),
            messages=shown(self.messages),
            reply=None if reply is None else shown(reply),
            status=status,
            playbook_version=self.version,
            model=self.model,
            tools=shown(self.tools),
            chain_key=chain_key,
            session_id=self.session,
            task_id=self.task,
            latency_s=time.perf_counter() - self.started,
        )


def reply_message(content: bytes) -> dict[str, Any] | None:
    """The assistant message of a non-streamed reply's body, if it has one."""
    try:
        body = loads(content)
        message = body["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    return message if isinstance(message, dict) else None


_API_IDS = frozenset({"id", "tool_call_id", "call_id"})
"""Fields that hold an id the API assigned (``call_...``, ``toolu_...``, ``fc_...``): random
by design, so the detectors would take them for keys, and a trace read back needs them whole to
pair each tool call with its result."""


def redacted(value: Any) -> Any:
    """``value`` (JSON) with every text redacted, but the API's ids."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redacted(item) for item in value]
    if isinstance(value, dict):
        return {
            key: item if key in _API_IDS and isinstance(item, str) else redacted(item)
            for key, item in value.items()
        }
    return value


def _same(value: Any) -> Any:
    return value
