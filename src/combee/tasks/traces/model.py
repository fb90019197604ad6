"""One internal form for a recorded agent trajectory, whatever format it came from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """A tool the agent called: its name and arguments (as recorded; usually a JSON object)."""

    name: str
    arguments: Any = None
    id: str = ""


@dataclass(frozen=True)
class TraceMessage:
    """One turn: ``role`` is ``system``, ``user``, ``assistant`` or ``tool``. An assistant turn
    may carry tool calls; a tool turn carries the result of the call ``tool_call_id`` names."""

    role: str
    content: str = ""
    tool_calls: Sequence[ToolCall] = ()
    tool_call_id: str = ""
    name: str = ""


@dataclass(frozen=True)
class Outcome:
    """How the attempt ended, as far as the record says: a success flag, a reward, or neither
    (then the reflector judges the trajectory itself), plus any feedback text.

    ``feedback`` is the checker's (trusted: a lesson may repeat it); ``untrusted_feedback`` is
    text sent with the outcome by someone who is not (a gateway's agent or its user): the
    reflector sees it as data, never as the verdict, and a lesson may not copy it."""

    success: bool | None = None
    reward: float | None = None
    feedback: str = ""
    untrusted_feedback: str = ""

    @property
    def known(self) -> bool:
        return self.success is not None or self.reward is not None


@dataclass(frozen=True)
class Trace:
    """A recorded attempt at one task."""

    id: str
    task_id: str
    messages: Sequence[TraceMessage]
    outcome: Outcome = field(default_factory=Outcome)
    source: str = ""
    """Where it was read: ``file`` or ``file:position``."""
    meta: Mapping[str, Any] = field(default_factory=dict)
