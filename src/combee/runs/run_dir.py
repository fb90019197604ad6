"""A run directory on disk. Every file is written so that an interrupted run keeps what it did."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from combee.errors import OVERWRITE, ConfigError
from combee.files import UnwritableRunDir, append_whole, write_whole
from combee.runs.layout import (
    CACHE_FILES,
    CONTEXTS_DIR,
    MARKER_FILE,
    RESULTS_FILE,
    RUN_FILES,
)

METHOD_FILES = frozenset(
    {
        "playbook.txt", "playbook_last.txt", "episodes.jsonl", "test_episodes.jsonl",
        "baseline_test_episodes.jsonl", "prompt.txt", "prompt_last.txt", "gepa_state",
        "gepa_result.json", "next_action",
    }
)  # fmt: skip
"""The files the built-in methods write beside the run's (each learner names its own as
``files``; a test checks that they are these)."""

OWNED = RUN_FILES | METHOD_FILES
"""What a run writes in its directory (the response cache aside, which ``--overwrite`` keeps)."""


def missing_folders(folder: str | os.PathLike[str]) -> list[Path]:
    """``folder`` and the folders above it that do not exist yet, the deepest first."""
    missing = []
    above = Path(folder).absolute()
    while not above.exists() and above != above.parent:
        missing.append(above)
        above = above.parent
    return missing


def _check_can_create(folder: Path) -> None:
    """Make ``folder`` (and the folders above it that are missing) and remove them again, so
    that a folder that cannot be made is named as the run's folder before anything starts."""
    missing = missing_folders(folder)
    try:
        folder.mkdir(parents=True)
    except OSError as error:
        reason = error.strerror or str(error)
        raise ConfigError(
            f"{folder} cannot be made ({reason}); choose a folder you can write in",
            setting="run_dir",
        ) from None
    for made in missing:  # the deepest first
        made.rmdir()


def check_run_dir(path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
    """Refuse ``path`` before anything is created: a finished run (unless ``overwrite``), or a
    folder holding files Combee did not write (with ``overwrite``: only when none of them has
    the name of a file a run writes)."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is a file, not a folder", setting="run_dir")
    if not folder.is_dir():
        _check_can_create(folder)
        return
    entries = {entry.name for entry in folder.iterdir()}
    if MARKER_FILE in entries:
        if RESULTS_FILE in entries and not overwrite:
            raise ConfigError(
                f"{folder} already holds a finished run ({RESULTS_FILE}); "
                f"choose another directory or pass {OVERWRITE}",
                setting="run_dir",
            )
        return
    foreign = sorted(entries - CACHE_FILES)
    if not foreign:
        return
    clashing = sorted(set(foreign) & OWNED)
    if not overwrite or clashing:
        shown = ", ".join((clashing or foreign)[:4]) + (" ..." if len(foreign) > 4 else "")
        raise ConfigError(
            f"{folder} holds files that no Combee run wrote ({shown}); give a new or empty "
            "folder" + ("" if clashing else f", or pass {OVERWRITE} to write the run beside them"),
            setting="run_dir",
        )


class RunDir:
    """``config.json``, ``metrics.jsonl``, ``contexts/iter_NNNN.txt``, the final context and
    ``final_results.json``; ``failures.jsonl`` lists samples skipped after failed calls."""

    def __init__(
        self, path: str | os.PathLike[str], *, overwrite: bool = False, resume: bool = False
    ) -> None:
        """``resume``: continue the unfinished run in ``path``; otherwise whatever an earlier
        run wrote there (an unfinished one, or a finished one with ``overwrite``) is cleared."""
        self.path = Path(path)
        check_run_dir(self.path, overwrite=overwrite)
        ours = (self.path / MARKER_FILE).exists()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self._lock = _locked_marker(self.path)
            if ours and not resume:
                self._clear()
            (self.path / CONTEXTS_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(
                f"{self.path}: cannot create the run directory: {error.strerror or error}",
                setting="run_dir",
            ) from None

    def close(self) -> None:
        """Let go of the folder: another process may write a run here now."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _clear(self) -> None:
        """Remove everything an earlier run wrote here (its response cache stays, and so does
        any file of the user's inside ``contexts/``)."""
        for name in OWNED - {MARKER_FILE, CONTEXTS_DIR}:
            target = self.path / name
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
        for version in (self.path / CONTEXTS_DIR).glob("iter_*.txt*"):
            version.unlink()

    def write_json(self, name: str, data: Mapping[str, Any]) -> Path:
        return self.write_text(name, json.dumps(data, indent=2, sort_keys=False) + "\n")

    def write_text(self, name: str, text: str) -> Path:
        """Write atomically: a reader never sees half a file, and a failed write leaves the
        file as it was (:class:`UnwritableRunDir`)."""
        target = self.path / name
        try:
            write_whole(target, text)
        except OSError as error:
            raise UnwritableRunDir(target, error) from None
        return target

    def append_jsonl(self, name: str, row: Mapping[str, Any]) -> None:
        """Append one line, whole or not at all (:class:`UnwritableRunDir`)."""
        try:
            append_whole(self.path / name, json.dumps(row) + "\n")
        except OSError as error:
            raise UnwritableRunDir(self.path / name, error) from None

    def write_context(self, iteration: int, text: str) -> Path:
        return self.write_text(f"contexts/iter_{iteration:04d}.txt", text)


def _locked_marker(folder: Path) -> IO[str] | None:
    """The marker file, created if need be and held locked while this process writes the run:
    a second process given the same folder is refused instead of interleaving its writes."""
    marker = (folder / MARKER_FILE).open("a+", encoding="utf-8")
    try:
        import fcntl
    except ImportError:  # not on a Unix: no lock
        fcntl = None  # type: ignore[assignment]
    if fcntl is not None:
        try:
            # A record lock: held per process, so the same process may open the folder again.
            fcntl.lockf(marker, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            marker.close()
            raise ConfigError(
                f"{folder}: another process is writing a run in this folder now; wait for it "
                "to end (then the same command continues or reruns it), or choose another "
                "folder",
                setting="run_dir",
            ) from None
    if marker.tell() == 0:
        marker.write("written by combee\n")
        marker.flush()
    return marker
