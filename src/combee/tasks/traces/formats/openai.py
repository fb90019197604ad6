"""OpenAI chat JSON Lines: one ``{"messages": [...], "tools": [...]}`` per line, with outcome
fields beside them (``reward``, ``success``/``passed``/``resolved``, ``feedback``) and an
optional task id (``task_id``, ``id`` or ``metadata.task_id``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from combee.errors import DatasetError
from combee.tasks.traces.chat import MessageError, chat_messages
from combee.tasks.traces.formats.common import Reader, mapping, name_ends, read_text
from combee.tasks.traces.model import Outcome, Trace


def sniff(path: Path) -> bool:
    if not name_ends(path, (".jsonl", ".json")):
        return False
    text = read_text(path).lstrip()
    if not text.startswith("{"):
        return False
    try:
        first = json.loads(text.splitlines()[0])
    except ValueError:
        return False
    return isinstance(first, Mapping) and "messages" in first


def read(path: Path) -> list[Trace]:
    traces: list[Trace] = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as error:
            raise DatasetError(str(path), number, f"is not JSON ({error})") from None
        if not isinstance(record, Mapping):
            raise DatasetError(str(path), number, "is not a JSON object")
        try:
            messages = chat_messages(record.get("messages"))
        except MessageError as error:
            raise DatasetError(str(path), number, str(error)) from None
        meta = mapping(record.get("metadata"))
        task = record.get("task_id", record.get("id", meta.get("task_id", f"line-{number}")))
        traces.append(
            Trace(
                id=f"{path.stem}-{number}",
                task_id=str(task),
                messages=messages,
                outcome=outcome(record),
                source=f"{path}:{number}",
                meta={k: v for k, v in record.items() if k not in ("messages", "tools")},
            )
        )
    return traces


def outcome(record: Mapping[str, Any]) -> Outcome:
    """The outcome fields beside a record's messages: ``reward``, a success flag named
    ``success``, ``passed`` or ``resolved``, and ``feedback`` (text, or JSON shown as text)."""
    reward = record.get("reward")
    success = next(
        (record[k] for k in ("success", "passed", "resolved") if isinstance(record.get(k), bool)),
        None,
    )
    if isinstance(reward, bool) or not isinstance(reward, int | float):
        reward = None
    if success is None and reward is not None:
        success = reward >= 1.0
    feedback = record.get("feedback", "")
    return Outcome(
        success=success,
        reward=None if reward is None else float(reward),
        feedback=feedback if isinstance(feedback, str) else json.dumps(feedback),
    )


READER = Reader(
    name="openai",
    description="OpenAI chat JSON Lines with 'messages' per line",
    suffixes=(".jsonl", ".json"),
    sniff=sniff,
    read=read,
)
