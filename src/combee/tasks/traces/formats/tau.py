"""tau-bench result files: a JSON list of ``{"task_id", "reward", "info", "traj"}``; a list of
tau2 simulations (``messages`` and ``reward_info``) is read as :mod:`.tau2` reads them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from combee.errors import DatasetError
from combee.tasks.traces.chat import MessageError, chat_messages
from combee.tasks.traces.formats.common import (
    Reader,
    first_json_value,
    load_json,
    mapping,
    name_ends,
)
from combee.tasks.traces.formats.tau2 import simulation_trace
from combee.tasks.traces.model import Outcome, Trace


def sniff(path: Path) -> bool:
    if not name_ends(path, (".json",)):
        return False
    records = first_json_value(path)
    first = records[0] if isinstance(records, list) and records else None
    if not isinstance(first, Mapping):
        return False
    return "traj" in first or "reward_info" in first or ("messages" in first and "task_id" in first)


def read(path: Path) -> list[Trace]:
    records = load_json(path)
    if not isinstance(records, list):
        raise DatasetError(
            str(path),
            None,
            "is not a list of tau-bench results (tau2 saves a run as one object with "
            "'simulations': read it with --format tau2)",
        )
    return [_trace(path, index, record) for index, record in enumerate(records)]


def _trace(path: Path, index: int, record: Any) -> Trace:
    where = f"entry {index}"
    if not isinstance(record, Mapping) or "task_id" not in record:
        raise DatasetError(str(path), None, f"{where} has no task_id")
    if "reward_info" in record and "traj" not in record:
        return simulation_trace(path, where, record)
    try:
        messages = chat_messages(record.get("traj", record.get("messages")))
    except MessageError as error:
        raise DatasetError(str(path), None, f"{where}: {error}") from None
    reward_info = record.get("reward_info")
    reward = record.get("reward")
    if reward is None and isinstance(reward_info, Mapping):
        reward = reward_info.get("reward")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, int | float)):
        raise DatasetError(str(path), None, f"{where}: reward must be a number")
    info = mapping(record.get("info"))
    task = mapping(info.get("task"))
    trial = record.get("trial", index)
    return Trace(
        id=f"{record['task_id']}-{trial}",
        task_id=str(record["task_id"]),
        messages=messages,
        outcome=Outcome(
            success=None if reward is None else float(reward) >= 1.0,
            reward=None if reward is None else float(reward),
            feedback=_feedback(info),
        ),
        source=f"{path}:entry {index}",
        meta={
            "trial": trial,
            "gold_actions": task.get("actions", []),
            "task_key": _task_key(task),
        },
    )


def _task_key(task: Mapping[str, Any]) -> str:
    """What makes a task the task it is: the user and what the checker expects (gold actions and
    outputs). Not the instruction's wording, which tau-bench revised between releases ("You are
    mia_li_3668." became "Your user id is mia_li_3668."): two runs of one task on either side of
    that revision are still attempts at one task."""
    checked = {key: task[key] for key in ("user_id", "actions", "outputs") if task.get(key)}
    if not checked:
        return str(task.get("instruction") or "")
    return json.dumps(checked, sort_keys=True, default=str)


def _feedback(info: Mapping[str, Any]) -> str:
    """What tau-bench's checker found: whether the database ended as the task's gold actions
    leave it, whether the required outputs were said, and the gold actions themselves."""
    reward_info = mapping(info.get("reward_info"))
    checks = mapping(reward_info.get("info"))
    parts = []
    if "r_actions" in checks:
        matched = float(checks["r_actions"]) >= 1.0
        parts.append(
            "the database ended as the expected actions leave it"
            if matched
            else "the database did not end as the expected actions leave it"
        )
    if "r_outputs" in checks:
        parts.append(f"required outputs said: {checks['r_outputs']}")
    actions = reward_info.get("actions")
    if isinstance(actions, list) and actions:
        shown = "; ".join(
            f"{a.get('name')}({json.dumps(a.get('kwargs', {}), sort_keys=True)})"
            for a in actions
            if isinstance(a, Mapping)
        )
        parts.append(f"expected actions: {shown}")
    return ". ".join(parts)


READER = Reader(
    name="tau",
    description="a tau-bench result list with 'traj' (or tau2 simulations) per task",
    suffixes=(".json",),
    sniff=sniff,
    read=read,
)
