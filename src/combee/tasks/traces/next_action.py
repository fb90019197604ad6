"""Offline evaluation of a trace-learned playbook: predict the agent's next action.

The environment the traces came from is often not at hand, so the playbook is judged on the
records themselves. A *decision point* is a recorded assistant turn that called a tool, in a
trace of a held-out task; the agent model sees the trajectory up to that turn and names the next
action (a tool and its arguments), once without the playbook and once with it. The reference
is the task's gold action of that name when the trace records gold actions (tau-bench does),
else the call of a successful trace; a failed trace without gold actions has no reference and
gives no points. Scores: the tool's name, and the name with every checkable argument (scalars
compared after normalising case, spaces and number form; lists and objects as canonical JSON).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from combee.llm.tags import block
from combee.llm.types import JsonSchema, Message
from combee.tasks.traces.model import ToolCall, Trace
from combee.tasks.traces.transcript import render_transcript

RESPOND = "respond_to_user"
"""The action of answering the user in text instead of calling a tool."""

SKIPPED_TOOLS: tuple[str, ...] = ("think",)
"""Tools that change nothing and decide nothing (tau-bench's scratchpad): never a decision point."""


@dataclass(frozen=True)
class DecisionPoint:
    """The turn ``index`` of ``trace``, where the agent called ``expected`` (the reference:
    ``gold`` from the task's gold actions, ``success`` from a successful trace's own call)."""

    trace: Trace
    index: int
    expected: ToolCall
    reference: str

    @property
    def id(self) -> str:
        return f"{self.trace.id}@{self.index}"


def decision_points(
    traces: Iterable[Trace],
    *,
    tasks: Sequence[str] | None = None,
    points_per_task: int = 3,
    seed: int = 0,
) -> list[DecisionPoint]:
    """Up to ``points_per_task`` decision points for each task id in ``tasks`` (default: every
    task of ``traces``), chosen by ``seed`` from one trace per task: a successful trace when the
    task has one, else a trace with gold actions."""
    by_task: dict[str, list[Trace]] = {}
    for trace in traces:
        by_task.setdefault(trace.task_id, []).append(trace)
    chosen: list[DecisionPoint] = []
    rng = random.Random(seed)
    for task in sorted(by_task) if tasks is None else tasks:
        candidates = by_task.get(task, [])
        ranked = sorted(candidates, key=lambda t: (not t.outcome.success, t.id))
        for trace in ranked:
            points = _points_of(trace)
            if points:
                picked = rng.sample(points, min(points_per_task, len(points)))
                chosen.extend(sorted(picked, key=lambda p: p.index))
                break
    return chosen


def _points_of(trace: Trace) -> list[DecisionPoint]:
    gold = _gold_actions(trace)
    points: list[DecisionPoint] = []
    used: set[int] = set()
    for index, message in enumerate(trace.messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        call = message.tool_calls[0]
        if call.name in SKIPPED_TOOLS:
            continue
        match = next((i for i, g in enumerate(gold) if g.name == call.name and i not in used), None)
        if match is not None:
            used.add(match)
            points.append(DecisionPoint(trace, index, gold[match], "gold"))
        elif trace.outcome.success:
            points.append(DecisionPoint(trace, index, call, "success"))
    return points


def _gold_actions(trace: Trace) -> list[ToolCall]:
    raw = trace.meta.get("gold_actions")
    if not isinstance(raw, list):
        return []
    return [
        ToolCall(name=str(a["name"]), arguments=a.get("kwargs", a.get("arguments", {})))
        for a in raw
        if isinstance(a, Mapping) and "name" in a
    ]


def tool_names(traces: Iterable[Trace]) -> list[str]:
    """Every tool the traces call or hold as gold actions, sorted, then :data:`RESPOND`."""
    names = {
        call.name
        for trace in traces
        for message in trace.messages
        for call in message.tool_calls
        if call.name not in SKIPPED_TOOLS
    }
    names.update(g.name for trace in traces for g in _gold_actions(trace))
    return [*sorted(names), RESPOND]


def next_action_schema(tools: Sequence[str]) -> JsonSchema:
    """The reply: the action (one of ``tools``) and its arguments as name/value pairs, a shape
    that small models and grammar-constrained decoding both handle."""
    argument = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
        "required": ["name", "value"],
    }
    return JsonSchema(
        name="next_action",
        schema={
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(tools)},
                "arguments": {"type": "array", "items": argument},
            },
            "required": ["action", "arguments"],
        },
    )


NEXT_ACTION_SYSTEM = """\
You are the AI agent of the recorded conversation below, and it is your turn. Decide your next \
action: the tool you call now and its arguments, or respond_to_user when you should answer the \
user in text first. Follow the policy in the agent's instructions (turn [0]), and use only \
values that the conversation or the tool results have given.

Reply with one JSON object and nothing else:
{"action": "<tool name or respond_to_user>",
 "arguments": [{"name": "<argument>", "value": "<its value; lists and objects as JSON>"}]}"""


def next_action_messages(
    point: DecisionPoint,
    *,
    tools: Sequence[str],
    playbook: str | None,
    transcript_tokens: int,
) -> tuple[list[Message], tuple[str, ...]]:
    """The question at ``point``, and what was cut from the trajectory to fit. The playbook
    comes after the trajectory, so the calls with and without it share their prompt's prefix
    (a server's prefix cache then reads the trajectory once)."""
    shown = render_transcript(point.trace.messages[: point.index], max_tokens=transcript_tokens)
    parts = [
        block("task_id", point.trace.task_id),
        block("trajectory", shown.text),
        block("tools", ", ".join(tools)),
    ]
    if shown.cuts:
        parts.append(f"(Shortened to fit: {'; '.join(shown.cuts)}.)")
    if playbook is not None:
        lessons = "Lessons learned from earlier recorded attempts; use those that fit this "
        parts.append(block("playbook", f"{lessons}situation:\n{playbook}"))
    parts.append(f"What is the agent's next action after turn [{point.index - 1}]?")
    return [
        {"role": "system", "content": NEXT_ACTION_SYSTEM},
        {"role": "user", "content": "\n\n".join(parts)},
    ], shown.cuts


@dataclass(frozen=True)
class ActionCheck:
    """How a predicted action compares with the reference."""

    tool: bool
    """The tool's name matches."""
    arguments: bool
    """The name matches and so does every argument of the reference."""


def check_action(reply: Mapping[str, Any], expected: ToolCall) -> ActionCheck:
    """Compare a :func:`next_action_schema` reply with ``expected``."""
    tool = str(reply.get("action", "")).strip() == expected.name
    given: dict[str, Any] = {}
    raw = reply.get("arguments")
    for pair in raw if isinstance(raw, list) else []:
        if isinstance(pair, Mapping) and "name" in pair:
            given[str(pair["name"]).strip()] = pair.get("value")
    wanted = expected.arguments if isinstance(expected.arguments, Mapping) else {}
    matches = all(
        name in given and _normal(given[name]) == _normal(value) for name, value in wanted.items()
    )
    return ActionCheck(tool=tool, arguments=tool and matches)


def _normal(value: Any) -> str:
    """A comparable form: text stripped and lower-cased, numbers in one form, JSON (also
    JSON given as text) canonical."""
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed = json.loads(text)
        except ValueError:
            return " ".join(text.lower().split())
        if isinstance(parsed, str):
            return " ".join(parsed.lower().split())
        value = parsed
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(float(value))
    return json.dumps(value, sort_keys=True, default=str, separators=(",", ":")).lower()


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95% by default) of a proportion; (0, 1) when ``n`` is 0."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
