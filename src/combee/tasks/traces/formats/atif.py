"""ATIF, the Agent Trajectory Interchange Format that Harbor (and Terminal-Bench 2.0 through it)
records agents in, with the trial's verifier reward as the outcome.

A Harbor trial folder holds the trajectory at ``agent/trajectory.json``: a JSON object with
``schema_version`` (``"ATIF-v1.6"``), ``agent`` and ``steps``. Each step has a ``source``
(``system``, ``user`` or ``agent``) and a ``message``; an agent step may carry ``tool_calls``
(``tool_call_id``, ``function_name``, ``arguments``) and an ``observation`` whose ``results``
answer them (``source_call_id``, ``content``). System and user steps keep their role, an agent
step is an assistant turn with its tool calls, and each observation result is a tool turn
answering the call it names (a result naming no call answers the step's only call; after a step
that made no call it is a user turn, the environment speaking).

The outcome is the trial's ``result.json`` (Harbor's trial result), looked for beside the
trajectory and up to three folders above it: ``verifier_result.rewards.reward`` is the reward
(success when it is 1), ``task_name`` the task id, ``trial_name`` the trace id, and an exception
the trial recorded (``exception_info``) the feedback. Without one the outcome is unknown and the
task id is the trial folder's name up to its last ``__`` (else the file's name).

Files are checked against the published schema (Harbor's RFC 0001) by the ``atif`` package's
models, installed with ``pip install 'combee[traces]'``. Each file is one trace: a continuation
(``trajectory.cont-1.json``) is a trace of its own; embedded subagent trajectories are not read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from combee.errors import ConfigError, DatasetError
from combee.tasks.traces.formats.common import Reader, load_json, mapping, name_ends, read_text
from combee.tasks.traces.model import Outcome, ToolCall, Trace, TraceMessage

if TYPE_CHECKING:
    from atif import ContentPart, ObservationResult, Step, Trajectory

RESULT = "result.json"
RESULT_LEVELS = 3
"""Folders above the trajectory's searched for the trial result: ``agent/`` sits in the trial
folder, ``steps/<step>/agent/`` (a multi-step trial) three below it."""

INSTALL = "pip install 'combee[traces]'"


def sniff(path: Path) -> bool:
    if not name_ends(path, (".json",)):
        return False
    try:
        text = read_text(path)
    except DatasetError:
        return False
    if '"schema_version"' not in text or "ATIF-" not in text:
        return False
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(document, Mapping)
        and str(document.get("schema_version")).startswith("ATIF-")
        and isinstance(document.get("steps"), list)
    )


def read(path: Path) -> list[Trace]:
    trajectory = _validated(path, load_json(path))
    where = path.resolve()
    found = _trial_result(where)
    in_trial = where.parent.name == "agent"
    result: Mapping[str, Any] = {}
    if found is None:  # no result: the trial folder (or the file itself) names it
        folder = where.parents[1] if in_trial else where.parent
        trial = folder.name if in_trial else _stem(where.name)
        task_id = trial.rsplit("__", 1)[0] if in_trial else trial
    else:
        folder, result = found
        trial = str(result.get("trial_name") or folder.name)
        task_id = str(result.get("task_name") or trial.rsplit("__", 1)[0])
    inside = (where.parent.relative_to(folder) / _stem(where.name)).as_posix()
    trace_id = trial if inside in ("agent/trajectory", trial) else f"{trial}/{inside}"
    return [
        Trace(
            id=trace_id,
            task_id=task_id,
            messages=_messages(trajectory.steps),
            outcome=_outcome(folder / RESULT, result),
            source=str(path),
            meta={
                "session_id": trajectory.session_id,
                "agent": trajectory.agent.name,
                "model": trajectory.agent.model_name,
                "schema_version": trajectory.schema_version,
                "continued_trajectory_ref": trajectory.continued_trajectory_ref,
            },
        )
    ]


def _stem(name: str) -> str:
    return name.removesuffix(".gz").removesuffix(".json")


def _validated(path: Path, document: Any) -> Trajectory:
    try:
        from atif import Trajectory
        from pydantic import ValidationError
    except ImportError:
        raise ConfigError(f"reading ATIF trajectories needs the atif package: {INSTALL}") from None
    try:
        return Trajectory.model_validate(document)
    except ValidationError as error:
        problems = error.errors()
        first = problems[0]
        where = _json_path(first["loc"])
        problem = (
            f"{where}: {first['msg']}" if where else f"is not an ATIF trajectory: {first['msg']}"
        )
        value = first.get("input")
        if value is None or isinstance(value, str | int | float | bool):
            problem += f" (got {json.dumps(value)[:60]})"
        if len(problems) > 1:
            problem += f"; and {len(problems) - 1} more problem(s)"
        raise DatasetError(str(path), None, problem) from None


def _json_path(loc: Sequence[int | str]) -> str:
    """A pydantic error location as a JSON path (``steps[1].tool_calls[0].function_name``),
    leaving out the names of union members pydantic adds (``str``, ``list[...]``)."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part.isidentifier() and part not in ("str", "int", "float", "bool", "dict", "list"):
            text += f".{part}" if text else part
    return text


def _messages(steps: Sequence[Step]) -> list[TraceMessage]:
    messages: list[TraceMessage] = []
    for step in steps:
        calls = tuple(
            ToolCall(name=c.function_name, arguments=c.arguments, id=c.tool_call_id)
            for c in step.tool_calls or ()
        )
        role = "assistant" if step.source == "agent" else step.source
        messages.append(TraceMessage(role, _text(step.message), tool_calls=calls))
        for result in step.observation.results if step.observation else ():
            messages.append(_observed(result, calls))
    return messages


def _observed(result: ObservationResult, calls: Sequence[ToolCall]) -> TraceMessage:
    """One observation result: the answer to a tool call, or (after a step that called
    nothing) what the environment said."""
    text = "" if result.content is None else _text(result.content)
    for ref in result.subagent_trajectory_ref or ():
        name = ref.trajectory_path or ref.trajectory_id or ref.session_id
        text += f"\n[delegated to a subagent: {name}]"
    if not calls:
        return TraceMessage("user", text.strip())
    call_id = result.source_call_id or (calls[0].id if len(calls) == 1 else "")
    name = next((c.name for c in calls if c.id == call_id), "")
    return TraceMessage("tool", text.strip(), tool_call_id=call_id, name=name)


def _text(content: str | Sequence[ContentPart]) -> str:
    if isinstance(content, str):
        return content
    parts = [
        (part.text or "")
        if part.type == "text"
        else f"[{part.type}: {getattr(part.source, 'path', '')}]"
        for part in content
    ]
    return "\n".join(part for part in parts if part)


def _trial_result(path: Path) -> tuple[Path, Mapping[str, Any]] | None:
    """The nearest trial result (a ``result.json`` naming a trial, not a job's summary) in the
    trajectory's folder or the folders above it, with the folder it is in."""
    for folder in [path.parent, *path.parent.parents][: RESULT_LEVELS + 1]:
        candidate = folder / RESULT
        if not candidate.is_file():
            continue
        result = load_json(candidate)
        if isinstance(result, Mapping) and ("trial_name" in result or "verifier_result" in result):
            return folder, result
    return None


def _outcome(where: Path, result: Mapping[str, Any]) -> Outcome:
    """The reward the verifier gave (``verifier_result.rewards``: ``reward``, or its only
    value), success when it is 1, and any exception the trial ended with as feedback."""
    rewards = mapping(mapping(result.get("verifier_result")).get("rewards"))
    key = "reward" if "reward" in rewards or len(rewards) != 1 else next(iter(rewards))
    reward = rewards.get(key)
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, int | float)):
        raise DatasetError(
            str(where), None, f"verifier_result.rewards.{key} must be a number (got {reward!r})"
        )
    feedback = []
    if len(rewards) > 1:
        feedback.append(f"verifier rewards: {json.dumps(dict(rewards), sort_keys=True)}")
    error = mapping(result.get("exception_info"))
    if error:
        message = str(error.get("exception_message", "")).strip()[:300]
        feedback.append(
            f"the trial ended with {error.get('exception_type', 'an error')}: {message}"
        )
    return Outcome(
        success=None if reward is None else float(reward) >= 1.0,
        reward=None if reward is None else float(reward),
        feedback="; ".join(feedback),
    )


READER = Reader(
    name="atif",
    description="an ATIF trajectory (Harbor, Terminal-Bench 2.0) with the trial's result.json",
    suffixes=(".json",),
    sniff=sniff,
    read=read,
)
