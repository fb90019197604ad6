"""Trace files in the formats agents record, read into :class:`~combee.tasks.traces.Trace`.

One module per format, each exposing a :class:`Reader` as ``READER``. :func:`load_traces`
reads files, folders and bundled sets, detecting each file's format when asked to. A malformed
trace is a :class:`~combee.errors.DatasetError` naming the file and the line or entry.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from combee.errors import ConfigError, DatasetError
from combee.tasks.traces.formats.common import Reader, name_ends
from combee.tasks.traces.model import Trace

logger = logging.getLogger(__name__)

# Detection tries them in this order: the most specific shapes first.
_MODULES: Mapping[str, str] = {
    "atif": "atif",
    "swe-agent": "swe_agent",
    "inspect": "inspect_log",
    "otel": "otel",
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
    (``tau-airline``). A file named in ``paths`` is read in ``format`` (or the one detected); a
    file found in a folder is read only when it is in that format (or any known one), others
    are skipped with a warning (run records such as ``result.json`` quietly)."""
    chosen = None if format == "auto" else reader(format)
    traces: list[Trace] = []
    skipped: list[Path] = []
    for path, named in _files(paths, chosen):
        if named:
            kind = chosen or _detect(path)
        else:
            kind = (chosen if chosen.sniff(path) else None) if chosen else _detect(path)
        if kind is None:
            if named:
                raise _unknown(path)
            skipped.append(path)
            continue
        traces.extend(kind.read(path))
    _report_skipped(skipped)
    if not traces:
        raise ConfigError("hold no traces", setting="traces")
    return traces


COMPANION_FILES = frozenset(
    {"result.json", "results.json", "report.json", "config.json", "summaries.json"}
)
"""Files that sit beside traces in the folders agent harnesses write (a trial's result, a
run's configuration, a benchmark report): read by the readers that need them, never traces."""


def _report_skipped(skipped: list[Path]) -> None:
    odd = [p for p in skipped if p.name not in COMPANION_FILES]
    if odd:
        logger.warning(
            "skipped %d file(s) in no trace format Combee reads: %s",
            len(odd),
            ", ".join(str(p) for p in odd[:5]) + (" ..." if len(odd) > 5 else ""),
        )
    if len(odd) < len(skipped):
        logger.info("skipped %d run record(s) beside the traces", len(skipped) - len(odd))


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
        else:
            raise ConfigError(f"{str(path)!r} does not exist", setting="traces")
    return found


__all__ = ["BUNDLED", "FORMATS", "Reader", "bundled_path", "detect_format", "load_traces", "reader"]
