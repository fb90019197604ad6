"""Trace files in the formats agents record, read into :class:`Trace`.

- ``openai``: JSON Lines, one ``{"messages": [...], "tools": [...]}`` per line, with outcome
  fields beside them (``reward``, ``success``/``passed``/``resolved``, ``feedback``) and an
  optional ``task_id`` (``id``/``metadata.task_id``);
- ``tau``: tau-bench and tau2-bench result files, a JSON list of ``{"task_id", "reward",
  "info", "traj"}`` (tau2: ``messages`` and ``reward_info.reward``).

:func:`load_traces` reads files of either, detecting the format when asked to. A malformed trace
is a :class:`~combee.errors.DatasetError` naming the file and the line or entry.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from combee.errors import ConfigError, DatasetError
from combee.tasks.traces.chat import MessageError, chat_messages
from combee.tasks.traces.model import Outcome, Trace

FORMATS = ("openai", "tau")


def load_traces(paths: Iterable[str | Path], *, format: str = "auto") -> list[Trace]:
    """Every trace in ``paths`` (files, folders read for ``*.json``/``*.jsonl``, each possibly
    gzipped, or the name of a bundled set: ``tau-airline``)."""
    if format != "auto" and format not in FORMATS:
        raise ConfigError(
            f"{format!r} is not a trace format; use auto or one of {', '.join(FORMATS)}",
            setting="format",
        )
    traces: list[Trace] = []
    for path in _files(paths):
        kind = detect_format(path) if format == "auto" else format
        traces.extend(READERS[kind](path))
    if not traces:
        raise ConfigError("hold no traces", setting="traces")
    return traces


BUNDLED: Mapping[str, str] = {"tau-airline": "tau-bench/gpt-4o-airline.json.gz"}
"""Trace sets that ship with Combee, by the name ``traces`` accepts in place of a path."""


def bundled_path(name: str) -> Path:
    """The file of a bundled trace set (see :data:`BUNDLED`)."""
    return Path(__file__).resolve().parents[1] / "data" / BUNDLED[name]


def _files(paths: Iterable[str | Path]) -> list[Path]:
    found: list[Path] = []
    for raw in paths:
        path = bundled_path(raw) if isinstance(raw, str) and raw in BUNDLED else Path(raw)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if _is_trace_file(p)))
        elif path.is_file():
            found.append(path)
        else:
            raise ConfigError(f"{str(path)!r} does not exist", setting="traces")
    return found


def _is_trace_file(path: Path) -> bool:
    name = path.name.removesuffix(".gz")
    return path.is_file() and name.endswith((".json", ".jsonl"))


def detect_format(path: Path) -> str:
    """``openai`` or ``tau`` from the file's first record; a DatasetError naming what was
    found when it is neither."""
    head = _read(path).lstrip()[:1]
    if head == "[":
        records = _json(path)
        first = records[0] if isinstance(records, list) and records else None
        if isinstance(first, Mapping) and ("traj" in first or "reward_info" in first):
            return "tau"
        if isinstance(first, Mapping) and "messages" in first and "task_id" in first:
            return "tau"
    elif head == "{":
        line = _read(path).lstrip().splitlines()[0]
        try:
            first = json.loads(line)
        except ValueError:
            first = None
        if isinstance(first, Mapping) and "messages" in first:
            return "openai"
    raise DatasetError(
        str(path),
        None,
        "is not a trace format Combee reads (expected OpenAI chat JSON Lines with "
        f"'messages', or a tau-bench result list with 'traj'); give format= one of "
        f"{', '.join(FORMATS)} to be told what is wrong with it",
    )


def read_openai(path: Path) -> list[Trace]:
    traces: list[Trace] = []
    for number, line in enumerate(_read(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            raise DatasetError(str(path), number, f"is not JSON ({error})") from None
        if not isinstance(record, Mapping):
            raise DatasetError(str(path), number, "is not a JSON object")
        try:
            messages = chat_messages(record.get("messages"))
        except MessageError as error:
            raise DatasetError(str(path), number, str(error)) from None
        meta = _mapping(record.get("metadata"))
        task = record.get("task_id", record.get("id", meta.get("task_id", f"line-{number}")))
        traces.append(
            Trace(
                id=f"{path.stem}-{number}",
                task_id=str(task),
                messages=messages,
                outcome=_outcome(record),
                source=f"{path}:{number}",
                meta={k: v for k, v in record.items() if k not in ("messages", "tools")},
            )
        )
    return traces


def read_tau(path: Path) -> list[Trace]:
    records = _json(path)
    if not isinstance(records, list):
        raise DatasetError(str(path), None, "is not a list of tau-bench results")
    traces: list[Trace] = []
    for index, record in enumerate(records):
        where = f"entry {index}"
        if not isinstance(record, Mapping) or "task_id" not in record:
            raise DatasetError(str(path), None, f"{where} has no task_id")
        raw = record.get("traj", record.get("messages"))
        try:
            messages = chat_messages(raw)
        except MessageError as error:
            raise DatasetError(str(path), None, f"{where}: {error}") from None
        reward_info = record.get("reward_info")
        reward = record.get("reward")
        if reward is None and isinstance(reward_info, Mapping):
            reward = reward_info.get("reward")
        if reward is not None and not isinstance(reward, int | float):
            raise DatasetError(str(path), None, f"{where}: reward must be a number")
        info = _mapping(record.get("info"))
        task = _mapping(info.get("task"))
        trial = record.get("trial", index)
        traces.append(
            Trace(
                id=f"{record['task_id']}-{trial}",
                task_id=str(record["task_id"]),
                messages=messages,
                outcome=Outcome(
                    success=None if reward is None else float(reward) >= 1.0,
                    reward=None if reward is None else float(reward),
                    feedback=_tau_feedback(info),
                ),
                source=f"{path}:entry {index}",
                meta={"trial": trial, "gold_actions": task.get("actions", [])},
            )
        )
    return traces


def _tau_feedback(info: Mapping[str, Any]) -> str:
    """What tau-bench's checker found: whether the database ended as the task's gold actions
    leave it, whether the required outputs were said, and the gold actions themselves."""
    reward_info = _mapping(info.get("reward_info"))
    checks = _mapping(reward_info.get("info"))
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


def _outcome(record: Mapping[str, Any]) -> Outcome:
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


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _read(path: Path) -> str:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                return handle.read()
        return path.read_text(encoding="utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise DatasetError(str(path), None, f"cannot be read ({error})") from None


def _json(path: Path) -> Any:
    try:
        return json.loads(_read(path))
    except ValueError as error:
        raise DatasetError(str(path), None, f"is not JSON ({error})") from None


READERS: Mapping[str, Callable[[Path], Sequence[Trace]]] = {
    "openai": read_openai,
    "tau": read_tau,
}
