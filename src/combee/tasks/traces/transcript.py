"""A trajectory as text for the reflector, cut to a token budget without losing its decisions.

The rule, in order, until the text fits:

1. long texts are cut in the middle (head and tail kept): the system prompt to
   :data:`SYSTEM_CHARS`, each tool result to :data:`TOOL_CHARS`, other turns to
   :data:`TURN_CHARS`; tool results that report an error keep twice as much;
2. whole turns are dropped from the middle of the trajectory, prose before tool results, never
   the agent's tool calls, a turn with an error, the first user turn or the last
   :data:`KEEP_LAST` turns;
3. what is left is cut hard at the budget, keeping the end.

Every cut is said in the text (``[... 1,234 characters cut ...]``) and returned as a note, so
the run can record it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from combee.tasks.traces.model import TraceMessage

CHARS_PER_TOKEN = 4
SYSTEM_CHARS = 1500
TOOL_CHARS = 700
TURN_CHARS = 1200
KEEP_LAST = 6
_ERROR = re.compile(
    r"\b(error|exception|failed|failure|invalid|denied|not found|traceback)\b", re.I
)


@dataclass(frozen=True)
class Transcript:
    text: str
    cuts: tuple[str, ...] = ()
    """What was cut, one note per kind of cut (empty: the whole trajectory is shown)."""


def render_transcript(messages: Sequence[TraceMessage], *, max_tokens: int) -> Transcript:
    """The numbered turns of ``messages``, cut to about ``max_tokens`` tokens."""
    budget = max(200, max_tokens) * CHARS_PER_TOKEN
    cuts: list[str] = []
    trimmed = 0
    blocks: list[str] = []
    for index, message in enumerate(messages):
        block, cut = _block(index, message)
        trimmed += cut
        blocks.append(block)
    if trimmed:
        cuts.append(f"{trimmed} characters cut inside long turns")
    total = sum(len(b) + 1 for b in blocks)
    if total > budget:
        dropped = 0
        for index in _droppable(messages):
            if total <= budget:
                break
            total -= len(blocks[index]) + 1
            blocks[index] = ""
            dropped += 1
        if dropped:
            cuts.append(f"{dropped} turns dropped from the middle")
    text = _join(blocks)
    if len(text) > budget:
        cut = len(text) - budget
        text = f"[... the first {cut} characters cut ...]\n" + text[cut:]
        cuts.append(f"{cut} characters cut from the start")
    return Transcript(text, tuple(cuts))


def _block(index: int, message: TraceMessage) -> tuple[str, int]:
    limit = {"system": SYSTEM_CHARS, "tool": TOOL_CHARS}.get(message.role, TURN_CHARS)
    if message.role == "tool" and _ERROR.search(message.content):
        limit *= 2
    content, cut = _middle_cut(message.content, limit)
    label = message.role if not message.name else f"{message.role} {message.name}"
    lines = [f"[{index}] {label}: {content}" if content else f"[{index}] {label}:"]
    for call in message.tool_calls:
        arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
        args, more = _middle_cut(arguments, TURN_CHARS)
        cut += more
        lines.append(f"    -> call {call.name}({args})")
    return "\n".join(lines), cut


def _middle_cut(text: str, limit: int) -> tuple[str, int]:
    text = text.strip()
    if len(text) <= limit:
        return text, 0
    cut = len(text) - limit
    head = text[: limit * 2 // 3]
    tail = text[len(text) - (limit - len(head)) :]
    return f"{head} [... {cut:,} characters cut ...] {tail}", cut


def _droppable(messages: Sequence[TraceMessage]) -> list[int]:
    """Turns that may go, nearest the middle first within each kind: assistant and user prose,
    then tool results that report no error."""
    last = len(messages) - KEEP_LAST
    first_user = next((i for i, m in enumerate(messages) if m.role == "user"), -1)
    middle = len(messages) / 2

    def kept(i: int, m: TraceMessage) -> bool:
        return (
            i >= last
            or i == first_user
            or m.role == "system"
            or bool(m.tool_calls)
            or _ERROR.search(m.content) is not None
        )

    prose = [i for i, m in enumerate(messages) if not kept(i, m) and m.role != "tool"]
    tools = [i for i, m in enumerate(messages) if not kept(i, m) and m.role == "tool"]
    return sorted(prose, key=lambda i: abs(i - middle)) + sorted(
        tools, key=lambda i: abs(i - middle)
    )


def _join(blocks: Sequence[str]) -> str:
    out: list[str] = []
    gap = 0
    for block in blocks:
        if not block:
            gap += 1
            continue
        if gap:
            out.append(f"[... {gap} turn(s) cut ...]")
            gap = 0
        out.append(block)
    if gap:
        out.append(f"[... {gap} turn(s) cut ...]")
    return "\n".join(out)
