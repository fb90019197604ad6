"""A trajectory as text for the reflector, cut to a token budget without losing its decisions.

The system prompt(s) and the first user turn (the task statement) open every transcript. A
trajectory that fits the budget is shown whole; otherwise the rule, in order, until it fits:

1. long texts are cut in the middle (head and tail kept): the system prompt to
   :data:`SYSTEM_CHARS`, each tool result to :data:`TOOL_CHARS`, other turns to
   :data:`TURN_CHARS`; tool results that report an error keep twice as much;
2. whole turns are dropped from the middle of the trajectory, prose before tool results, never
   the agent's tool calls, a turn with an error, a system prompt, the first user turn or the
   last :data:`KEEP_LAST` turns;
3. the turns after the task statement are cut hard, keeping their end. The system prompt and
   the task statement are never cut here; if they alone would leave less than a quarter of the
   budget to the rest, they are cut to leave it: a system prompt in the middle (its beginning
   and end kept), the task statement at its end (its beginning, the issue or request itself,
   kept; harnesses append their instructions after it).

The task statement is shown whole whenever the budget allows: step 1 does not cut it.

Every cut is said in the text (``[... 1,234 characters cut ...]``) and returned as a note, so
the run can record it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
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
    """The numbered turns of ``messages``, cut to at most ``max_tokens`` tokens (counted as
    :data:`CHARS_PER_TOKEN` characters each)."""
    budget = max(200, max_tokens) * CHARS_PER_TOKEN
    whole = _join([_block(i, m, limit=budget)[0] for i, m in enumerate(messages)])
    if len(whole) <= budget:  # it fits: nothing is cut
        return Transcript(whole, ())
    opening = _opening(messages)
    task = max(opening, default=-1)
    cuts: list[str] = []
    blocks: list[str] = []
    trimmed = [0] * len(messages)
    for index, message in enumerate(messages):
        # The task statement is never cut in step 1: whole unless it must give way (step 3).
        block, trimmed[index] = _block(index, message, budget if index == task else None)
        blocks.append(block)
    shortened = {i: trimmed[i] for i in opening if trimmed[i]}
    for index in shortened:
        trimmed[index] = 0
    total = sum(len(b) + 1 for b in blocks)
    dropped = 0
    if total > budget:
        for index in _droppable(messages):
            if total <= budget:
                break
            total -= len(blocks[index]) + 1
            blocks[index] = ""
            dropped += 1
    text = _join(blocks)
    cut = 0
    if len(text) > budget:
        # Turns left before the task statement are the first the hard cut would take.
        for index in range(task):
            if index not in opening and blocks[index]:
                blocks[index] = ""
                dropped += 1
        head, rest = _join(blocks[: task + 1]), _join(blocks[task + 1 :])
        if rest and len(head) + 1 + len(rest) > budget:
            room = budget - min(len(rest) + 1, budget // 4)
        else:
            room = budget
        if len(head) > room:
            head, shortened = _shorten_opening(messages, blocks, opening, task, room)
        if rest:
            rest, cut = _keep_end(rest, budget - len(head) - 1)
        text = "\n".join(part for part in (head, rest) if part)
    if shortened:
        cuts.append(f"{sum(shortened.values())} characters cut from {_names(messages, shortened)}")
    if sum(trimmed):
        cuts.append(f"{sum(trimmed)} characters cut inside long turns")
    if dropped:
        cuts.append(f"{dropped} turns dropped from the middle")
    if cut:
        cuts.append(f"{cut} characters cut from the middle, keeping the end")
    return Transcript(text, tuple(cuts))


def _opening(messages: Sequence[TraceMessage]) -> list[int]:
    """The turns every transcript shows: the system prompts up to the first user turn and that
    turn (without a user turn, the leading system prompts)."""
    first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
    if first_user is None:
        leading = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
        return list(range(leading))
    return [i for i in range(first_user) if messages[i].role == "system"] + [first_user]


def _shorten_opening(
    messages: Sequence[TraceMessage],
    blocks: Sequence[str],
    opening: Sequence[int],
    task: int,
    room: int,
) -> tuple[str, dict[int, int]]:
    """The opening turns rendered again to fit ``room`` characters together, each cut in the
    middle as needed; and, for each turn cut, how many of its characters are not shown."""
    sizes = {i: len(blocks[i]) for i in opening}
    # Newlines and "turns cut" markers between the opening turns take their share first.
    spare = room - (len(_join(blocks[: task + 1])) - sum(sizes.values()))
    shares: dict[int, int] = {}
    for n, index in enumerate(sorted(opening, key=sizes.__getitem__)):
        shares[index] = min(sizes[index], max(0, spare) // (len(opening) - n))
        spare -= shares[index]
    parts = list(blocks[: task + 1])
    cuts: dict[int, int] = {}
    for index in opening:
        parts[index], cut = _fit_block(index, messages[index], shares[index], task)
        if cut:
            cuts[index] = cut
    head = _join(parts)
    if len(head) > room:  # only when there are more opening turns than room for their labels
        cuts[task] = cuts.get(task, 0) + len(head) - room
        head = head[:room]
    return head, cuts


def _names(messages: Sequence[TraceMessage], indices: Collection[int]) -> str:
    system = sum(messages[i].role == "system" for i in indices)
    names = ["the system prompt" + ("s" if system > 1 else "")] if system else []
    if len(indices) > system:
        names.append("the task statement")
    return " and ".join(names)


def _fit_block(index: int, message: TraceMessage, size: int, task: int) -> tuple[str, int]:
    """The turn's block in at most ``size`` characters: the task statement keeps its beginning
    (the issue, the request) and loses its end (where harnesses append their boilerplate), any
    other turn is cut in the middle."""
    whole = len(message.content.strip())
    limit = whole if index == task else min(_limit(message), whole)
    head = index == task
    block, cut = _block(index, message, limit, keep_head=head)
    while len(block) > size and limit > 0:
        limit = max(0, limit - (len(block) - size))
        block, cut = _block(index, message, limit, keep_head=head)
    if len(block) > size:
        cut += len(block) - size
        block = block[:size]
    return block, cut


def _keep_end(text: str, room: int) -> tuple[str, int]:
    """``text`` in at most ``room`` characters: its end, after a note of what was cut."""
    if len(text) <= room:
        return text, 0
    cut = len(text) - room
    marker = ""
    while cut < len(text):
        marker = f"[... {cut:,} characters cut ...]\n"
        need = len(text) - room + len(marker)
        if cut >= need:
            break
        cut = need
    return (marker + text[cut:])[: max(0, room)], cut


def _limit(message: TraceMessage) -> int:
    limit = {"system": SYSTEM_CHARS, "tool": TOOL_CHARS}.get(message.role, TURN_CHARS)
    if message.role == "tool" and _ERROR.search(message.content):
        limit *= 2
    return limit


def _block(
    index: int, message: TraceMessage, limit: int | None = None, *, keep_head: bool = False
) -> tuple[str, int]:
    size = _limit(message) if limit is None else limit
    content, cut = (_head_cut if keep_head else _middle_cut)(message.content, size)
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


def _head_cut(text: str, limit: int) -> tuple[str, int]:
    text = text.strip()
    if len(text) <= limit:
        return text, 0
    cut = len(text) - limit
    return f"{text[:limit]} [... the last {cut:,} characters of the task statement cut ...]", cut


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
