"""Trace files in the formats agents record, read into :class:`~combee.tasks.traces.Trace`.

One module per format, each exposing a :class:`Reader` as ``READER``. :func:`load_traces`
reads files, folders and bundled sets, detecting each file's format when asked to. A malformed
trace is a :class:`~combee.errors.DatasetError` naming the file and the line or entry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path

from combee.errors import ConfigError, DatasetError
from combee.tasks.traces.formats.common import Reader, TraceFileEmpty, name_ends, problem
from combee.tasks.traces.formats.mlflow_traces import is_mlflow, read_mlflow
from combee.tasks.traces.formats.trace_import import COMPANION_FILES, TraceImport
from combee.tasks.traces.model import Trace

logger = logging.getLogger(__name__)

# Detection tries them in this order: the most specific shapes first.
_MODULES: Mapping[str, str] = {
    "atif": "atif",
    "swe-agent": "swe_agent",
    "inspect": "inspect_log",
    "otel": "otel",
    "tau2": "tau2",
    "tau": "tau",
    "openai": "openai",
}

FORMATS: tuple[str, ...] = tuple(_MODULES)
"""The format names ``load_traces(format=...)`` and ``combee learn --format`` take."""

BUNDLED: Mapping[str, str] = {"tau-airline": "tau-bench/gpt-4o-airline.json.gz"}
"""Trace sets that ship with Combee, by the name ``traces`` accepts in place of a path."""


@cache
def reader(name: str) -> Reader:
    """The reader of format ``name`` (one of :data:`FORMATS`)."""
    if name not in _MODULES:
        raise ConfigError(
            f"{name!r} is not a trace format; use auto or one of {', '.join(FORMATS)}",
            setting="format",
        )
    module = importlib.import_module(f"{__name__}.{_MODULES[name]}")
    found: Reader = module.READER
    return found


def load_traces(paths: Iterable[str | Path], *, format: str = "auto") -> list[Trace]:
    """Every trace in ``paths``: files, folders, or the name of a bundled set
    (``tau-airline``); see :func:`read_traces`, which also says what was skipped."""
    return read_traces(paths, format=format).traces


def read_traces(
    paths: Iterable[str | Path],
    *,
    format: str = "auto",
    tracking_uri: str | None = None,
    since: str | None = None,
) -> TraceImport:
    """Every trace in ``paths``: files, folders, or the name of a bundled set (``tau-airline``).

    A file named in ``paths`` is read in ``format`` (or the one detected), and one that holds no
    trace is an error. A file found in a folder is read only when it is in that format (or any
    known one); others, and files of a known format that hold no trace, are skipped with their
    reason (run records such as ``result.json`` quietly). Files of a format that spreads one
    trace over several files (OpenTelemetry exports) are read together. A trace whose id an
    earlier one already has (one log saved as ``.eval`` and as ``.json``) is left out.
    ``mlflow:EXPERIMENT`` reads that experiment's traces from the MLflow server at
    ``tracking_uri`` (newer than the ISO time ``since``; see :mod:`.mlflow_traces`)."""
    paths = list(paths)
    served = [str(p) for p in paths if is_mlflow(p)]
    chosen = None if format == "auto" else reader(format)
    files = _files([p for p in paths if not is_mlflow(p)], chosen)
    by_reader: dict[str, list[Path]] = {}
    skipped: list[tuple[Path, str]] = []
    for path, named in files:
        broken = problem(path)
        if broken is not None and named:
            raise DatasetError(str(path), None, broken)
        if broken is not None:
            skipped.append((path, broken))
            continue
        if named:
            kind = chosen or _detect(path)
        else:
            kind = (chosen if chosen.sniff(path) else None) if chosen else _detect(path)
        if kind is None:
            if named:
                raise _unknown(path)
            skipped.append((path, "in no trace format Combee reads"))
            continue
        by_reader.setdefault(kind.name, []).append(path)
    named_files = {path for path, named in files if named}
    traces: list[Trace] = []
    for spec in served:
        traces.extend(read_mlflow(spec, tracking_uri=tracking_uri, since=since))
    for name, found in by_reader.items():
        for path, read in _read_all(reader(name), found):
            if isinstance(read, TraceFileEmpty):
                if path in named_files:
                    raise read
                skipped.append((path, read.problem))
            else:
                traces.extend(read)
    kept, repeated = _first_of_each_id(traces)
    kept = _tasks_apart(kept)
    imported = TraceImport(
        kept,
        files=len(files) - len(skipped),
        skipped=skipped,
        repeated=repeated,
        experiments=len(served),
    )
    _report(imported)
    if not kept:
        reasons = "; ".join(f"{p}: {why}" for p, why in skipped[:3])
        empty = [str(path) for path, _ in files if path not in {p for p, _ in skipped}]
        if not reasons:
            reasons = (
                f"{', '.join(empty[:3])}: read, no trace in it" if empty else "no trace files found"
            )
        raise ConfigError(f"hold no traces ({reasons})", setting="traces")
    return imported


def _read_all(
    kind: Reader, paths: list[Path]
) -> Iterable[tuple[Path, Sequence[Trace] | TraceFileEmpty]]:
    """Each file's traces, or why it holds none (a reader that reads its files together gives
    all its traces with the first file)."""
    if kind.read_group is not None:
        traces, empty = kind.read_group(paths)
        yield from ((Path(e.path), e) for e in empty)
        yield paths[0], traces
        return
    for path in paths:
        try:
            yield path, kind.read(path)
        except TraceFileEmpty as empty:
            yield path, empty


def _first_of_each_id(traces: list[Trace]) -> tuple[list[Trace], list[Trace]]:
    """The distinct attempts, and the repeats left out. Two traces with one id are the same
    attempt read twice (an Inspect log saved as ``.eval`` and as ``.json``, a trajectory beside
    its run's report) when their turns are the same, and the copy that knows the outcome is
    kept; otherwise they are two attempts whose ids only coincide (tau-bench's ``5-0`` of two
    runs), and the later one's id gets its file's name, so every attempt keeps a distinct id."""
    at: dict[tuple[str, str], int] = {}  # (id as read, its turns) -> where it is in kept
    ids: set[str] = set()
    kept: list[Trace] = []
    repeated = []
    for trace in traces:
        key = (trace.id, _said(trace))
        if key in at:
            first = kept[at[key]]
            if trace.outcome.known and not first.outcome.known:  # keep the copy with a verdict
                trace, kept[at[key]] = first, dataclasses.replace(trace, id=first.id)
            repeated.append(trace)
            continue
        if trace.id in ids:
            trace = dataclasses.replace(trace, id=_unique(f"{trace.id}@{_file_of(trace)}", ids))
        at[key] = len(kept)
        ids.add(trace.id)
        kept.append(trace)
    return kept, repeated


def _tasks_apart(traces: list[Trace]) -> list[Trace]:
    """Traces whose task ids coincide but whose records define different tasks (tau-bench's
    retail and airline task ``5``; a format says what defines one in ``meta["task_key"]``) get
    task ids of their own: the id, then the name of the file that first held that task
    (``5@gpt-4o-retail.json``); attempts at one task from several runs keep one task id."""
    names: dict[tuple[str, str], str] = {}
    apart: list[Trace] = []
    for trace in traces:
        text = str(trace.meta.get("task_key") or "")
        key = (trace.task_id, text)
        if key not in names:
            taken = any(task == trace.task_id for task, _ in names)
            names[key] = f"{trace.task_id}@{_file_of(trace)}" if taken and text else trace.task_id
        named = names[key]
        apart.append(trace if named == trace.task_id else dataclasses.replace(trace, task_id=named))
    return apart


def _said(trace: Trace) -> str:
    """What an attempt says, to tell a file read twice from two attempts: its turns and tool
    calls, hashed (a copy that lacks the run's verdict is still the same attempt)."""
    turns = [
        [m.role, m.content, m.name, [[c.name, c.arguments] for c in m.tool_calls]]
        for m in trace.messages
    ]
    text = json.dumps(turns, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _file_of(trace: Trace) -> str:
    return Path(trace.source.split(":", 1)[0]).name or "trace"


def _unique(name: str, taken: set[str]) -> str:
    found, number = name, 2
    while found in taken:
        found, number = f"{name}#{number}", number + 1
    return found


def _report(imported: TraceImport) -> None:
    odd = [(p, why) for p, why in imported.skipped if p.name not in COMPANION_FILES]
    if odd:
        logger.warning(
            "skipped %d file(s): %s",
            len(odd),
            "; ".join(f"{p} ({why})" for p, why in odd[:5]) + (" ..." if len(odd) > 5 else ""),
        )
    quiet = len(imported.skipped) - len(odd)
    if quiet:
        logger.info("skipped %d run record(s) beside the traces", quiet)
    if imported.repeated:
        first = imported.repeated[0]
        logger.warning(
            "left out %d trace(s) whose id an earlier trace has (e.g. %s from %s): the same "
            "attempt read twice",
            len(imported.repeated),
            first.id,
            first.source,
        )


def detect_format(path: Path) -> str:
    """The name of ``path``'s format; a DatasetError naming the formats tried when it is in
    none of them."""
    found = _detect(path)
    if found is None:
        raise _unknown(path)
    return found.name


def bundled_path(name: str) -> Path:
    """The file of a bundled trace set (see :data:`BUNDLED`)."""
    return Path(__file__).resolve().parents[2] / "data" / BUNDLED[name]


def _detect(path: Path) -> Reader | None:
    return next((r for r in map(reader, FORMATS) if r.sniff(path)), None)


def _unknown(path: Path) -> DatasetError:
    known = "; ".join(f"{r.name}: {r.description}" for r in map(reader, FORMATS))
    return DatasetError(
        str(path),
        None,
        f"is in no trace format Combee reads ({known}); give the format by name to be "
        "told what is wrong with it",
    )


def _files(paths: Iterable[str | Path], chosen: Reader | None) -> list[tuple[Path, bool]]:
    """Each file to read, and whether the user named it (rather than a folder holding it)."""
    suffixes = (
        chosen.suffixes if chosen else tuple(s for r in map(reader, FORMATS) for s in r.suffixes)
    )
    found: list[tuple[Path, bool]] = []
    for raw in paths:
        path = bundled_path(raw) if isinstance(raw, str) and raw in BUNDLED else Path(raw)
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.is_file() and name_ends(p, suffixes))
            found.extend((p, False) for p in inside)
        elif path.is_file():
            found.append((path, True))
        elif path.exists():
            raise ConfigError(f"{str(path)!r} is a device, not a file or folder", setting="traces")
        else:
            raise ConfigError(f"{str(path)!r} does not exist", setting="traces")
    return found


__all__ = [
    "BUNDLED",
    "FORMATS",
    "Reader",
    "TraceImport",
    "bundled_path",
    "detect_format",
    "load_traces",
    "read_traces",
    "reader",
]
