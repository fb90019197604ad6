"""What every trace reader shares: the :class:`Reader` record and file helpers."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from combee import files
from combee.errors import DatasetError
from combee.tasks.traces.model import Trace


class TraceFileEmpty(DatasetError):
    """A file in a trace format that holds no trace (an export of other spans, an empty log):
    an error when the user named the file, skipped with this reason when a folder held it."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(path, None, problem)
        self.problem = problem


GroupReader = Callable[[Sequence[Path]], tuple[list[Trace], list["TraceFileEmpty"]]]
"""Reads several files together: their traces, and the files that held none."""


@dataclass(frozen=True)
class Reader:
    """One trace format: its name, the file names it reads, a cheap test of whether a file
    is in it, and the reader proper (a :class:`DatasetError` naming the file and position
    for anything malformed)."""

    name: str
    description: str
    suffixes: tuple[str, ...]
    """File name endings it reads, before an optional ``.gz``."""
    sniff: Callable[[Path], bool]
    read: Callable[[Path], Sequence[Trace]]
    read_group: GroupReader | None = None
    """Reads several files together (a format that may spread one trace over several files),
    giving the traces and the files that held none; None: each file is read on its own."""


def read_text(path: Path) -> str:
    """The file's text, gunzipped when it ends in ``.gz``."""
    try:
        return files.read_text(path)
    except OSError as error:
        raise DatasetError(str(path), None, f"cannot be read ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise DatasetError(str(path), None, f"is not UTF-8 text ({error.reason})") from None


def problem(path: Path) -> str | None:
    """Why a JSON or JSON Lines file cannot be a trace file whatever its format (not UTF-8,
    empty, a JSON document cut off before its end), or None (other files, such as archives,
    are left to their readers). Said precisely, for the import's summary."""
    if not name_ends(path, _TEXT_SUFFIXES):
        return None
    try:
        text = read_text(path)
    except DatasetError as error:
        return error.problem
    if not text.strip():
        return "empty"
    if name_ends(path, (".json",)):
        try:
            json.loads(text)
        except json.JSONDecodeError as error:
            if error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated"):
                return f"not JSON: cut off at line {error.lineno} (the document ends unfinished)"
        except (ValueError, RecursionError):
            return None  # JSON Lines in a .json file, or deep: the readers say what is wrong
    return None


_TEXT_SUFFIXES = (".json", ".jsonl", ".ndjson")


def load_json(path: Path) -> Any:
    """The file parsed as one JSON document."""
    try:
        return json.loads(read_text(path))
    except (ValueError, RecursionError) as error:
        raise DatasetError(str(path), None, f"is not JSON ({error})") from None


def first_json_value(path: Path) -> Any:
    """The file's JSON document, or its first JSON Lines record; None when neither parses.
    For sniffing only: readers report what is wrong."""
    try:
        text = read_text(path)
    except DatasetError:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    line = next((line for line in text.splitlines() if line.strip()), "")
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def name_ends(path: Path, suffixes: tuple[str, ...]) -> bool:
    """Whether ``path``'s name, without a trailing ``.gz``, ends in one of ``suffixes``."""
    return path.name.removesuffix(".gz").endswith(suffixes)


def one_file(read_group: GroupReader) -> Callable[[Path], list[Trace]]:
    """A reader of one file made from a reader of several: the file's traces, or the error
    saying why it holds none."""

    def read(path: Path) -> list[Trace]:
        traces, empty = read_group([path])
        if empty:
            raise empty[0]
        return traces

    return read
