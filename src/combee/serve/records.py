"""What the gateway's store holds: exchanges, outcomes and playbook versions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_NAMESPACE = "default"
"""The agent namespace of a request that names none."""


@dataclass(frozen=True)
class Exchange:
    """One request through the gateway and the upstream's answer, as stored (redacted).

    ``messages`` are the agent's own messages (without the playbook the gateway put in),
    ``reply`` the assistant message the upstream returned (assembled from the stream for a
    streamed answer), ``chain_key`` the digest of both (see :mod:`combee.serve.chaining`).
    """

    id: str
    trace_id: str
    namespace: str
    created: float
    messages: Sequence[Mapping[str, Any]]
    reply: Mapping[str, Any] | None
    status: int
    playbook_version: int | None = None
    model: str = ""
    tools: Sequence[Mapping[str, Any]] = ()
    chain_key: str = ""
    session_id: str = ""
    task_id: str = ""
    latency_s: float = 0.0


@dataclass(frozen=True)
class Feedback:
    """An outcome reported for a trace: a reward, a success flag and/or feedback text.

    ``trusted``: the text came with the operator's token, so it is trusted as a task's checker
    is; otherwise (the agent token, no token, or a report stored before the gateway told them
    apart) it is untrusted data, which a lesson may not copy."""

    trace_id: str
    namespace: str
    reward: float | None = None
    success: bool | None = None
    text: str = ""
    created: float = 0.0
    trusted: bool = False


@dataclass(frozen=True)
class PlaybookVersion:
    """One playbook of a namespace. ``status``: ``active`` (served now), ``retired`` (served
    before), ``refused`` (the offline check kept it out) or ``candidate``.

    ``provenance`` maps each bullet the version added to the traces it was learned from;
    ``traces`` lists every trace the round folded; ``check`` is the offline check's result.
    """

    namespace: str
    version: int
    text: str
    created: float
    status: str
    parent: int | None = None
    traces: Sequence[str] = ()
    provenance: Mapping[str, Sequence[str]] = field(default_factory=dict)
    check: Mapping[str, Any] | None = None
    note: str = ""
